"""Key search at a year of memory (issue 13 item 3): latency, recall and cost by size.

A thin wrapper of :mod:`edge.bench.knn_speed` (``edge bench speed --only knn --sizes …``
runs the synthetic part too, beside ingest, answer latency and peak RSS). Builds memories
of 10k / 100k / 1M / 3M key vectors (clustered synthetic unit vectors, five key types, 30 s
clips laid out 16 h a day) in the product's own schema and measures exact vs the
whole-history index, whole history and the last 7 / 180 days, through the product's own
code path (:meth:`Memory.knn_keys`, :func:`edge.recall.retrieval.max_sim_retrieve`).

It also runs the four-day EgoLife memory (real key vectors, the hard questions'
embeddings as queries): its migration time and the same methods.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/knn_scale.py --sizes 10k,100k
    PYTHONPATH=$PWD .venv/bin/python benchmarks/knn_scale.py --sizes 1M --queries 100
    PYTHONPATH=$PWD .venv/bin/python benchmarks/knn_scale.py --sizes 3M --queries 50 --no-real

Writes ``benchmarks/results/knn_scale_<sizes>.json`` (``edge bench report --knn`` plots it)
and prints a table.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.bench import knn_speed  # noqa: E402


def _real(source: Path, workdir: Path) -> dict:
    """The four-day memory with the hard questions as queries (the tiny profile's hub
    loads the embedder of the memory's vectors)."""
    from edge.config import models_dir
    from models import ModelHub, load_manifest

    qs = json.loads((ROOT / "benchmarks/egolife_hard_questions.json").read_text())
    hub = ModelHub(load_manifest().profile("tiny"), models_dir())
    try:
        return knn_speed.real(source, workdir, [q["question"] for q in qs], hub, say=print)
    finally:
        hub.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10k,100k", help="comma list of 10k,100k,1M,3M")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--dim", type=int, default=384,
                    help="vector width (384: MiniLM; 768 or a Matryoshka cut: EmbeddingGemma)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/knn"))
    ap.add_argument("--real", type=Path, default=ROOT / "benchmarks/results/days1-4.db",
                    help="a memory built from the four-day EgoLife file (copied, not changed)")
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the synthetic memories")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    out = {"queries": args.queries, "dim": args.dim, "results": {}}
    for size in args.sizes.split(","):
        out["results"][size] = knn_speed.synthetic(size, args.workdir, args.queries,
                                                   dim=args.dim, keep=args.keep, say=print)
    if not args.no_real and args.real.exists():
        out["results"]["real"] = _real(args.real, args.workdir)
    tag = args.sizes.replace(",", "_") + ("" if args.dim == 384 else f"_{args.dim}d")
    dest = ROOT / "benchmarks/results" / f"knn_scale_{tag}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=1))
    print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
