"""Retrieval and answering on the shared EgoLife day, per configuration.

Questions: ``benchmarks/egolife_day1_questions.json`` (EgoLifeQA record format plus
``target_clips``: indices of the caption records holding the evidence). Memory: the day's
caption file ingested with its own keys (built once into ``benchmarks/results/day1.db``).

Configurations (MERIT Table 4/5 style ablation plus ours): ``caption`` (max-sim over the
caption vector alone), ``keys`` (the four MERIT keys), ``keys+caption``, ``hybrid`` (keys
fused with FTS5/BM25 by RRF), ``hybrid+decomp`` (MARQUIS sub-queries from the solver, each
searched hybrid, fused by RRF; one LLM call per question even for retrieval).

Retrieval metrics (seconds per configuration; ``hybrid+decomp`` needs the solver):
- hit rate@Δ (MERIT): a target clip lies inside the retrieved anchors widened by ±Δ clips;
- all-targets: every target clip inside that window;
- R@5, R@10, nDCG@10 of the anchors against the target clips (``ir-measures``).
A question whose target clips are not all in the memory (a partial one) is skipped for
these and for hit/all when answering; the count of skipped questions is printed.
Answering (``--answer``, slow on CPU): for each configuration and each ``--delta``:
accuracy on the choices, hit@Δ2 / all@Δ2 over every round's anchors, rounds, LLM calls,
tokens in/out per question and seconds (median).

    .venv/bin/python benchmarks/egolife_eval.py                          # retrieval table
    .venv/bin/python benchmarks/egolife_eval.py --answer keys hybrid --delta 0 2 --limit 20

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
from edge.decompose import decompose  # noqa: E402
from edge.ingest import file_sha256  # noqa: E402
from edge.retrieval import multi_query_retrieve  # noqa: E402
from edge.store import KEY_TYPES, Memory  # noqa: E402
from edge.timeline import day_clock, egolife_time  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402

CONFIGS = {
    "caption": {"key_types": ("caption",)},
    "keys": {"key_types": KEY_TYPES},
    "keys+caption": {"key_types": (*KEY_TYPES, "caption")},
    "hybrid": {"key_types": KEY_TYPES, "hybrid": True},
    "hybrid+caption": {"key_types": (*KEY_TYPES, "caption"), "hybrid": True},
    "hybrid+decomp": {"key_types": KEY_TYPES, "hybrid": True, "decompose": True},
}
DELTAS = (0, 1, 2, 4)


def query_time(q: dict) -> float:
    day = int(q["query_time"]["date"].upper().replace("DAY", ""))
    return day_clock(day, egolife_time(q["query_time"]["time"]))


def target_clip_ids(q: dict, id_of: dict[int, int]) -> list[int] | None:
    """The memory clip ids of the question's target clips (``target_clips`` holds caption
    record indices; ``id_of`` maps an index to its clip id); None when one of them is not in
    the memory (a partial one): the question cannot be scored for hits or recall."""
    if any(t not in id_of for t in q["target_clips"]):
        return None
    return [id_of[t] for t in q["target_clips"]]


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
    ap.add_argument("--delta", type=int, nargs="+", default=[2],
                    help="neighbor window(s) Δ when answering")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loop", choices=["merit", "single"], default="merit")
    ap.add_argument("--retrieval-configs", nargs="*", default=list(CONFIGS),
                    choices=list(CONFIGS), help="configurations of the retrieval table")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--sample", type=int, default=None,
                    help="N questions evenly spread over the set (after --limit)")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/egolife_eval.json")
    args = ap.parse_args()

    questions = json.loads(args.questions.read_text())[: args.limit]
    if args.sample and args.sample < len(questions):
        step = len(questions) / args.sample
        questions = [questions[int(i * step)] for i in range(args.sample)]
    hub = ModelHub(load_manifest().profile(args.profile), models_dir())
    args.memory.parent.mkdir(parents=True, exist_ok=True)
    memory = Memory(args.memory)
    ingest_caption_file(memory, hub, args.captions)
    source = memory.source_by_hash(file_sha256(args.captions))
    idx_of = memory.clip_index_map(source.id)
    id_of = {v: k for k, v in idx_of.items()}

    scored = [q for q in questions if target_clip_ids(q, id_of) is not None]
    skipped = len(questions) - len(scored)
    if skipped:
        print(f"skipped {skipped} of {len(questions)} question(s) for the hit/recall metrics: "
              f"a target clip is not in the memory {args.memory}", file=sys.stderr)
    out: dict = {"questions": len(questions), "skipped": skipped, "top_n": args.top_n,
                 "retrieval": {}, "answering": {}}
    rows = []
    def window_hits(anchor_idx: list[int], targets: set[int], d: int) -> tuple[bool, bool]:
        window = {a + off for a in anchor_idx for off in range(-d, d + 1)}
        return bool(targets & window), targets <= window

    for name in args.retrieval_configs if scored else []:
        cfg = CONFIGS[name]
        hits = {d: 0 for d in DELTAS}
        all_hits = {d: 0 for d in DELTAS}
        run, qrels = [], []
        t0 = time.perf_counter()
        for q in scored:
            at = query_time(q)
            queries = [q["question"]]
            if cfg.get("decompose"):
                queries += decompose(hub.llm("solver"), q["question"],
                                     choices=[q[f"choice_{c}"] for c in "abcd"])
            vecs = list(hub.embedder.embed(queries))
            ranked = multi_query_retrieve(memory, queries, vecs, top_n=10,
                                          key_types=cfg["key_types"],
                                          lexical=bool(cfg.get("hybrid")), before=at)
            anchors = [idx_of[s.clip_id] for s in ranked[: args.top_n]]
            targets = set(q["target_clips"])
            for d in DELTAS:
                hit, every = window_hits(anchors, targets, d)
                hits[d] += hit
                all_hits[d] += every
            qid = q["ID"]
            qrels += [ir_measures.Qrel(qid, str(cid), 1) for cid in target_clip_ids(q, id_of)]
            run += [ir_measures.ScoredDoc(qid, str(s.clip_id), float(s.score))
                    for s in ranked]
        agg = ir_measures.calc_aggregate([R @ 5, R @ 10, nDCG @ 10], qrels, run)
        n = len(scored)
        res = {f"hit@Δ{d}": round(hits[d] / n, 3) for d in DELTAS}
        res.update({f"all@Δ{d}": round(all_hits[d] / n, 3) for d in DELTAS})
        res.update({"R@5": round(agg[R @ 5], 3), "R@10": round(agg[R @ 10], 3),
                    "nDCG@10": round(agg[nDCG @ 10], 3),
                    "ms_per_query": round(1000 * (time.perf_counter() - t0) / n, 1)})
        out["retrieval"][name] = res
        rows.append((name, res))

    print(f"Retrieval, {len(scored)} questions ({skipped} skipped), top-{args.top_n} anchors "
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
        for delta in args.delta:
            label = f"{name} Δ{delta}"
            correct, hit2, all2 = 0, 0, 0
            rounds, calls, tin, tout, secs = [], [], [], [], []
            for q in questions:
                choices = [q[f"choice_{c}"] for c in "abcd"]
                mark = hub.usage.mark()
                res = ask(memory, hub, q["question"], at=query_time(q), top_n=args.top_n,
                          delta=delta, max_rounds=args.rounds, key_types=cfg["key_types"],
                          retrieval="hybrid" if cfg.get("hybrid") else "keys",
                          decompose=bool(cfg.get("decompose")), loop=args.loop,
                          choices=choices)
                u = hub.usage.summary(mark)["llm"]
                correct += res.answer == q["answer"]
                if target_clip_ids(q, id_of) is not None:
                    seen = [idx_of[a["clip_id"]] for r in res.rounds for a in r.anchors]
                    hit, every = window_hits(seen, set(q["target_clips"]), 2)
                    hit2 += hit
                    all2 += every
                rounds.append(len(res.rounds))
                calls.append(u["calls"])
                tin.append(u["tokens_in"])
                tout.append(u["tokens_out"])
                secs.append(res.seconds)
                print(f"  {label} {q['ID']}: {res.answer} (truth {q['answer']}) "
                      f"{len(res.rounds)} rounds {u['calls']} calls {res.seconds:.0f} s",
                      file=sys.stderr, flush=True)
            n, m = len(questions), len(scored)
            out["answering"][label] = {
                "accuracy": round(correct / n, 3),
                "hit@Δ2": round(hit2 / m, 3) if m else None,
                "all@Δ2": round(all2 / m, 3) if m else None,
                "rounds_mean": round(statistics.mean(rounds), 2),
                "calls_mean": round(statistics.mean(calls), 2),
                "tokens_in_mean": round(statistics.mean(tin)),
                "tokens_out_mean": round(statistics.mean(tout)),
                "seconds_median": round(statistics.median(secs), 1), "delta": delta,
                "max_rounds": args.rounds, "loop": args.loop, "profile": args.profile}
            args.out.write_text(json.dumps(out, indent=2))  # partial results survive
    if args.answer:
        print(f"\nAnswering ({len(questions)} questions, {args.profile} profile, "
              f"loop {args.loop}, R≤{args.rounds}, top-{args.top_n}):\n")
        print("| config | accuracy | hit Δ2 | all Δ2 | rounds | LLM calls | tokens in "
              "| tokens out | s/question |")
        print("|---|---|---|---|---|---|---|---|---|")
        for label, r in out["answering"].items():
            print(f"| {label} | {r['accuracy']} | {r['hit@Δ2']} | {r['all@Δ2']} "
                  f"| {r['rounds_mean']} | {r['calls_mean']} | {r['tokens_in_mean']} "
                  f"| {r['tokens_out_mean']} | {r['seconds_median']} |")
    args.out.write_text(json.dumps(out, indent=2))
    print(f"\nwritten {args.out}")
    memory.close()
    hub.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
