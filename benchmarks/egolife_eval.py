"""Retrieval and answering on the shared EgoLife day, per configuration.

Questions: ``benchmarks/egolife_day1_questions.json`` (EgoLifeQA record format plus
``target_clips``: indices of the caption records holding the evidence). Memory: the day's
caption file ingested with its own keys (built once into ``benchmarks/results/day1.db``).

Retrieval metrics (no LLM, seconds per configuration):
- hit rate@Δ (MERIT): a target clip lies inside the retrieved anchors widened by ±Δ clips;
- all-targets: every target clip inside that window;
- R@5, R@10, nDCG@10 of the anchors against the target clips (``ir-measures``).
Answering (``--answer``, one solver call per round, slow on CPU): accuracy on the choices,
rounds, LLM calls and tokens per question.

    .venv/bin/python benchmarks/egolife_eval.py                  # retrieval table
    .venv/bin/python benchmarks/egolife_eval.py --answer keys --limit 10 --rounds 1

Writes ``benchmarks/results/egolife_eval.json`` and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import ir_measures  # noqa: E402
from ir_measures import R, nDCG  # noqa: E402

from edge.answer import ask  # noqa: E402
from edge.captions import ingest_caption_file  # noqa: E402
from edge.config import models_dir  # noqa: E402
from edge.ingest import file_sha256  # noqa: E402
from edge.retrieval import hybrid_retrieve, max_sim_retrieve  # noqa: E402
from edge.store import KEY_TYPES, Memory  # noqa: E402
from edge.timeline import day_clock, egolife_time  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402

CONFIGS = {
    "caption": {"key_types": ("caption",)},
    "keys": {"key_types": KEY_TYPES},
    "keys+caption": {"key_types": (*KEY_TYPES, "caption")},
    "hybrid": {"key_types": KEY_TYPES, "hybrid": True},
}
DELTAS = (0, 1, 2, 4)


def query_time(q: dict) -> float:
    day = int(q["query_time"]["date"].upper().replace("DAY", ""))
    return day_clock(day, egolife_time(q["query_time"]["time"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=Path,
                    default=ROOT / "benchmarks/egolife_day1_questions.json")
    ap.add_argument("--captions", type=Path,
                    default=ROOT.parent / "shared/data/egolife/A1_JAKE_day1_captions.json")
    ap.add_argument("--memory", type=Path, default=ROOT / "benchmarks/results/day1.db")
    ap.add_argument("--top-n", type=int, default=5)
    ap.add_argument("--answer", nargs="*", default=[], choices=list(CONFIGS),
                    help="also answer the questions with these configurations")
    ap.add_argument("--delta", type=int, default=2, help="neighbor window Δ when answering")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/egolife_eval.json")
    args = ap.parse_args()

    questions = json.loads(args.questions.read_text())[: args.limit]
    hub = ModelHub(load_manifest().profile(args.profile), models_dir())
    args.memory.parent.mkdir(parents=True, exist_ok=True)
    memory = Memory(args.memory)
    ingest_caption_file(memory, hub, args.captions)
    source = memory.source_by_hash(file_sha256(args.captions))
    idx_of = dict(memory.db.execute("SELECT id, idx FROM clips WHERE source_id = ?",
                                    (source.id,)))
    id_of = {v: k for k, v in idx_of.items()}

    out: dict = {"questions": len(questions), "top_n": args.top_n, "retrieval": {},
                 "answering": {}}
    rows = []
    for name, cfg in CONFIGS.items():
        hits = {d: 0 for d in DELTAS}
        all_hits = {d: 0 for d in DELTAS}
        run, qrels = [], []
        t0 = time.perf_counter()
        for q in questions:
            at = query_time(q)
            vec = hub.embedder.embed_one(q["question"])
            depth = 10
            if cfg.get("hybrid"):
                ranked = hybrid_retrieve(memory, q["question"], vec, top_n=depth,
                                         key_types=cfg["key_types"], before=at)
            else:
                ranked = max_sim_retrieve(memory, vec, top_n=depth,
                                          key_types=cfg["key_types"], before=at)
            anchors = [idx_of[s.clip_id] for s in ranked[: args.top_n]]
            targets = set(q["target_clips"])
            for d in DELTAS:
                window = {a + off for a in anchors for off in range(-d, d + 1)}
                hits[d] += bool(targets & window)
                all_hits[d] += targets <= window
            qid = q["ID"]
            qrels += [ir_measures.Qrel(qid, str(id_of[t]), 1) for t in targets]
            run += [ir_measures.ScoredDoc(qid, str(s.clip_id), float(s.score))
                    for s in ranked]
        agg = ir_measures.calc_aggregate([R @ 5, R @ 10, nDCG @ 10], qrels, run)
        n = len(questions)
        res = {f"hit@Δ{d}": round(hits[d] / n, 3) for d in DELTAS}
        res.update({f"all@Δ{d}": round(all_hits[d] / n, 3) for d in DELTAS})
        res.update({"R@5": round(agg[R @ 5], 3), "R@10": round(agg[R @ 10], 3),
                    "nDCG@10": round(agg[nDCG @ 10], 3),
                    "ms_per_query": round(1000 * (time.perf_counter() - t0) / n, 1)})
        out["retrieval"][name] = res
        rows.append((name, res))

    print(f"Retrieval, {len(questions)} questions, top-{args.top_n} anchors "
          "(hit/all = a / every target clip inside anchors ± Δ):\n")
    print("| config | hit Δ0 | hit Δ1 | hit Δ2 | hit Δ4 | all Δ2 | R@5 | R@10 | nDCG@10 "
          "| ms/query |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['hit@Δ0']} | {r['hit@Δ1']} | {r['hit@Δ2']} | {r['hit@Δ4']} "
              f"| {r['all@Δ2']} | {r['R@5']} | {r['R@10']} | {r['nDCG@10']} "
              f"| {r['ms_per_query']} |")

    for name in args.answer:
        cfg = CONFIGS[name]
        correct, rounds, calls, tin, tout, secs = 0, [], [], [], [], []
        for q in questions:
            choices = [q[f"choice_{c}"] for c in "abcd"]
            mark = hub.usage.mark()
            res = ask(memory, hub, q["question"], at=query_time(q), top_n=args.top_n,
                      delta=args.delta, max_rounds=args.rounds, key_types=cfg["key_types"],
                      retrieval="hybrid" if cfg.get("hybrid") else "keys", choices=choices)
            u = hub.usage.summary(mark)["llm"]
            correct += res.answer == q["answer"]
            rounds.append(len(res.rounds))
            calls.append(u["calls"])
            tin.append(u["tokens_in"])
            tout.append(u["tokens_out"])
            secs.append(res.seconds)
            print(f"  {name} {q['ID']}: {res.answer} (truth {q['answer']}) "
                  f"{res.seconds:.0f} s", file=sys.stderr, flush=True)
        n = len(questions)
        out["answering"][name] = {
            "accuracy": round(correct / n, 3), "rounds_mean": round(statistics.mean(rounds), 2),
            "calls_mean": round(statistics.mean(calls), 2),
            "tokens_in_mean": round(statistics.mean(tin)), "tokens_out_mean":
            round(statistics.mean(tout)), "seconds_median": round(statistics.median(secs), 1),
            "delta": args.delta, "max_rounds": args.rounds, "profile": args.profile}
    if args.answer:
        print(f"\nAnswering ({args.profile} profile, Δ={args.delta}, R≤{args.rounds}):\n")
        print("| config | accuracy | rounds | LLM calls | tokens in | tokens out | s/question |")
        print("|---|---|---|---|---|---|---|")
        for name, r in out["answering"].items():
            print(f"| {name} | {r['accuracy']} | {r['rounds_mean']} | {r['calls_mean']} "
                  f"| {r['tokens_in_mean']} | {r['tokens_out_mean']} | {r['seconds_median']} |")
    args.out.write_text(json.dumps(out, indent=2))
    print(f"\nwritten {args.out}")
    memory.close()
    hub.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
