"""Same questions, same memory, two versions of the code: do the answers stay the same?

A refactor must not change what ``edge ask`` retrieves, keeps and cites. This script asks a
spread sample of the EgoLife day-1 questions with ``edge ask --json`` (the CLI, as a user
would, with its defaults: hybrid retrieval, the MERIT loop, R ≤ 5) on one EgoLife day
memory, and writes what each question produced. Run it on the old checkout, then on the new
one, then compare::

    # in the old checkout (builds the memory once from the caption file, keys from the file)
    .venv/bin/python benchmarks/ask_compare.py run --out /tmp/before.json
    # in the new checkout, on the SAME memory file
    .venv/bin/python benchmarks/ask_compare.py run --memory /path/day1.db --out /tmp/after.json
    .venv/bin/python benchmarks/ask_compare.py diff /tmp/before.json /tmp/after.json

``diff`` prints per question whether the anchors (every round), the evidence, the cited
clips and the answer are the same, and exits 1 when any differs. Seconds are left out of
the comparison (they depend on the machine's load); scores are compared to 6 decimals.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared/data/egolife/A1_JAKE_day1_captions.json"


def sample(questions: list[dict], n: int) -> list[dict]:
    """``n`` questions evenly spread over the list (as ``edge bench qa --sample``)."""
    if n >= len(questions):
        return questions
    step = len(questions) / n
    return [questions[int(i * step)] for i in range(n)]


def edge(*args: str) -> subprocess.CompletedProcess:
    """Run the ``edge`` CLI of the checkout this script lives in."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([str(Path(sys.executable).parent / "edge"), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT)


def fingerprint(result: dict) -> dict:
    """What must not change: per round the queries, anchors (clip id, score, key) and
    evidence ids; the moments with their roles and citations; the answer."""
    rounds = []
    for r in result.get("rounds", []):
        rounds.append({
            "queries": r.get("queries") or [r.get("query")],
            "anchors": [[a.get("clip_id"), round(a.get("score") or 0.0, 6), a.get("key")]
                        for a in r.get("anchors", [])],
            "evidence": r.get("evidence"),
            "decision": {k: v for k, v in (r.get("decision") or {}).items() if k != "seconds"},
        })
    return {
        "answer": result.get("answer"),
        "rounds": rounds,
        "moments": [[m["clip_id"], m["role"], m["round"], m["cited"]]
                    for m in result.get("moments", [])],
        "cited": sorted(m["clip_id"] for m in result.get("moments", []) if m["cited"]),
        "calls": (result.get("usage") or {}).get("llm", {}).get("calls"),
    }


def run(args: argparse.Namespace) -> int:
    memory = args.memory
    if not memory.exists():
        memory.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        p = edge("--memory", str(memory), "ingest-captions", str(args.captions), "--no-pyramid")
        if p.returncode:
            sys.exit(f"ingest-captions failed:\n{p.stdout}\n{p.stderr}")
        print(f"memory built in {time.perf_counter() - t0:.0f} s: {memory}")
    questions = sample(json.loads(args.questions.read_text()), args.n)
    out = {"memory": str(memory), "questions": []}
    for q in questions:
        at = f"{q['query_time']['date']} {q['query_time']['time'][:2]}:" \
             f"{q['query_time']['time'][2:4]}:{q['query_time']['time'][4:6]}"
        choices = "|".join(q[f"choice_{c}"] for c in "abcd")
        t0 = time.perf_counter()
        p = edge("--memory", str(memory), "ask", "--json", "--at", at, "--choices", choices,
                 q["question"])
        secs = time.perf_counter() - t0
        if p.returncode:
            print(f"{q['ID']}: edge ask failed: {p.stderr.strip()}", file=sys.stderr)
            out["questions"].append({"id": q["ID"], "error": p.stderr.strip()})
            continue
        result = json.loads(p.stdout)
        fp = fingerprint(result)
        print(f"{q['ID']}: answer {fp['answer']} (truth {q['answer']}), "
              f"{len(fp['rounds'])} round(s), {fp['calls']} calls, cited {fp['cited']}, "
              f"{secs:.0f} s", flush=True)
        out["questions"].append({"id": q["ID"], "at": at, "seconds": round(secs, 1), **fp})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}")
    return 0


def diff(args: argparse.Namespace) -> int:
    a = {q["id"]: q for q in json.loads(args.before.read_text())["questions"]}
    b = {q["id"]: q for q in json.loads(args.after.read_text())["questions"]}
    fields = ("rounds", "moments", "cited", "answer", "calls")
    same_all = True
    print(f"{'question':10} " + " ".join(f"{f:8}" for f in fields))
    for qid in a:
        if qid not in b:
            print(f"{qid:10} missing after")
            same_all = False
            continue
        row = []
        for f in fields:
            same = a[qid].get(f) == b[qid].get(f)
            same_all &= same
            row.append("same" if same else "DIFFERS")
        print(f"{qid:10} " + " ".join(f"{r:8}" for r in row))
    print("all the same" if same_all else "some answers changed")
    return 0 if same_all else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="ask the questions, write what each produced")
    r.add_argument("--memory", type=Path, default=ROOT / "benchmarks/results/compare_day1.db")
    r.add_argument("--captions", type=Path, default=DATA)
    r.add_argument("--questions", type=Path,
                   default=ROOT / "benchmarks/egolife_day1_questions.json")
    r.add_argument("--n", type=int, default=10, help="questions, spread over the set")
    r.add_argument("--out", type=Path, required=True)
    d = sub.add_parser("diff", help="compare two runs")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    args = ap.parse_args()
    return run(args) if args.cmd == "run" else diff(args)


if __name__ == "__main__":
    sys.exit(main())
