"""Re-run the recall levers on one memory (issue 25: with a new embedder every lever is
measured again): one ``edge bench qa`` per lever setting on the same question half, the
round-1 totals side by side.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/lever_sweep.py MEMORY --split dev \\
        [--profile small] [--only default,spread0]

Each lever is ``edge bench qa --set KEY=VALUE`` (or another bench flag); the LLM ones
(decomposition, HyDE statements) make one solver call per question. Writes
``benchmarks/results/lever_sweep_<split>.json`` and prints a Markdown table: hit@5(±2) with
the question alone and with the options, the multi-day part of each, all targets within
±2, nDCG@10 and ms per question (p50), question alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.embedder_dims import bench, summary, table  # noqa: E402

LEVERS: dict[str, list[str]] = {
    "default": [],
    "choice slots": ["--set", "choice_slots=true"],
    "no option queries": ["--set", "choice_queries=false"],
    "spread 0": ["--set", "spread=0"],
    "spread 1": ["--set", "spread=1"],
    "no event split": ["--set", "split_events=false"],
    "dense only (keys)": ["--retrieval", "keys"],
    "dense weight 2": ["--set", "dense_weight=2"],
    "dense weight 0.5": ["--set", "dense_weight=0.5"],
    "rrf k 10": ["--set", "rrf_k=10"],
    "four keys only": ["--key-types", "event,dialogue,object,summary"],
    "caption only": ["--key-types", "caption"],
    "day part soft": ["--set", "day_part=soft"],
    "aggregate episodes": ["--set", "aggregate=true"],
    "rrf k 10 + spread 0": ["--set", "rrf_k=10", "--set", "spread=0"],
    "rrf k 10 + dense weight 2": ["--set", "rrf_k=10", "--set", "dense_weight=2"],
    "rrf k 30": ["--set", "rrf_k=30"],
    "decompose phrases (LLM)": ["--set", "decompose=true"],
    "HyDE statements (LLM)": ["--set", "decompose=true", "--set", "decompose_style=statements"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("memory", type=Path)
    ap.add_argument("--split", default="dev", choices=["dev", "test"])
    ap.add_argument("--profile", default="small")
    ap.add_argument("--only", default=None, help="comma list of lever names to run")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(LEVERS)
    unknown = [n for n in names if n not in LEVERS]
    if unknown:  # before any run: a lever name never holds a comma
        ap.error(f"unknown lever(s) {unknown}; known: {', '.join(LEVERS)}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            result = bench(args.memory, args.profile, args.split, None, Path(tmp) / "r.json",
                           LEVERS[name])
            rows.append({"lever": name, "flags": LEVERS[name], **summary(result)})
            print(json.dumps(rows[-1]), flush=True)
    dest = args.out or ROOT / "benchmarks" / "results" / f"lever_sweep_{args.split}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps({"memory": str(args.memory), "profile": args.profile,
                                "split": args.split, "rows": rows}, indent=1))
    print("\n".join(table(rows, "lever")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
