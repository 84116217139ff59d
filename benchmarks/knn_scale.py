"""Key search at a year of memory (issue 13 item 3): latency, recall and cost by size.

Builds memories of 10k / 100k / 1M / 3M key vectors (clustered synthetic 384-d unit
vectors, five key types, 30 s clips laid out 16 h a day) in the product's own schema, and
measures through the product's own code path (:meth:`Memory.knn_keys`,
:func:`edge.retrieval.max_sim_retrieve`):

- ``exact``: vec0's exact scan (the whole-history index off), the reference for recall;
- ``index``: the whole-history path (:mod:`edge.store.keyindex`: IVF-SQ8 candidates,
  exact rescoring), threshold lowered so it is used at every size;
- ``exact-7d`` / ``index-180d``: time-scoped searches, last 7 days (day partitions, exact)
  and last 180 days (wide: the index with a time selector), recall against exact.

It also runs the four-day EgoLife memory (real MiniLM key vectors, the hard questions'
embeddings as queries): its m007 → m008 migration time and the same methods.

Latency is wall time per query on an otherwise idle process (p50/p95, ms); recall@10 is
against the exact result of the same query; sizes are MB per stored vector (memory file,
index file); RSS is the process's resident memory after building/loading the index.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/knn_scale.py --sizes 10k,100k
    PYTHONPATH=$PWD .venv/bin/python benchmarks/knn_scale.py --sizes 1M --queries 100
    PYTHONPATH=$PWD .venv/bin/python benchmarks/knn_scale.py --sizes 3M --queries 50 --no-real

Writes ``benchmarks/results/knn_scale_<sizes>.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.retrieval import max_sim_retrieve  # noqa: E402
from edge.store import INDEX_TYPES, Memory  # noqa: E402
from edge.store.keyindex import KeyIndex, index_path  # noqa: E402

DIM = 384
CLIPS_PER_DAY = 16 * 120  # 16 h of 30 s clips
DAY = 86400.0
TOPICS = 4000
SIZES = {"10k": 10_000, "100k": 100_000, "1M": 1_000_000, "3M": 3_000_000}


# ---- data ----------------------------------------------------------------------------------

def _centers() -> np.ndarray:
    c = np.random.default_rng(12345).normal(size=(TOPICS, DIM)).astype(np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def clustered(n: int, seed: int, centers: np.ndarray, noise: float = 1.2) -> np.ndarray:
    """``(n, DIM)`` unit vectors: a random topic center plus Gaussian noise (cosine to the
    center ≈ 0.65), like sentence embeddings of a few thousand recurring activities."""
    rng = np.random.default_rng(seed)
    x = centers[rng.integers(0, len(centers), n)]
    x = x + rng.normal(scale=noise / np.sqrt(DIM), size=(n, DIM)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def build_synthetic(path: Path, n_vectors: int, chunk_clips: int = 20_000) -> dict:
    """A memory of ``n_vectors`` keys (one per type per clip) written in the product's
    schema in chunks of clips; returns insert seconds and sizes."""
    centers = _centers()
    n_clips = n_vectors // len(INDEX_TYPES)
    t = time.perf_counter()
    with Memory(path) as m:
        if DIM != 384:  # the width of the profile's embedder (EmbeddingGemma: 768 or a cut)
            m.adopt_embedder(f"synthetic-{DIM}", DIM)
        db = m.db
        db.execute("INSERT INTO sources(id, path, sha256, kind, clock, start_from, t_start,"
                   " duration, n_clips, status, added_at) VALUES(1,'syn','syn','captions',"
                   "'dayclock','file',0,0,?,'done',0)", (n_clips,))
        for s in range(0, n_clips, chunk_clips):
            e = min(n_clips, s + chunk_clips)
            vecs = clustered((e - s) * len(INDEX_TYPES), seed=s, centers=centers)
            with m._write():
                for i in range(s, e):
                    day, slot = divmod(i, CLIPS_PER_DAY)
                    t_end = day * DAY + 7 * 3600 + 30.0 * (slot + 1)
                    db.execute("INSERT INTO clips(id, source_id, idx, t_start, t_end, day,"
                               " day_start, caption) VALUES(?,1,?,?,?,?,?,'')",
                               (i + 1, i, t_end - 30, t_end, f"DAY{day + 1}", day * DAY))
                    m._add_keys(i + 1, t_end, {k: (k, "file") for k in INDEX_TYPES},
                                {k: vecs[(i - s) * len(INDEX_TYPES) + j]
                                 for j, k in enumerate(INDEX_TYPES)})
    return {"insert_s": time.perf_counter() - t, "clips": n_clips}


# ---- measuring -----------------------------------------------------------------------------

def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _pct(ts: list[float]) -> dict:
    a = np.asarray(ts) * 1000
    return {"p50_ms": round(float(np.percentile(a, 50)), 2),
            "p95_ms": round(float(np.percentile(a, 95)), 2)}


def _recall(got: list, want: list) -> float:
    if not want:
        return 1.0
    return len({x for x in got} & {x for x in want}) / len(want)


def run_queries(m: Memory, queries: np.ndarray, *, use_index: bool, scope=(None, None),
                key_type: str = "event", full: bool = True) -> dict:
    """Per key-type KNN and full max_sim_retrieve over all key types, timed; results too."""
    m.index_min_keys = 0 if use_index else 10**12
    m._kidx_stamp = None  # re-decide the path
    before, after = scope
    per_type, full_ts, knn_res, full_res = [], [], [], []
    for q in queries:
        t = time.perf_counter()
        knn_res.append([c for c, _ in m.knn_keys(q, key_type, 10, before=before, after=after)])
        per_type.append(time.perf_counter() - t)
        if full:
            t = time.perf_counter()
            full_res.append([s.clip_id for s in max_sim_retrieve(
                m, q, top_n=10, key_types=INDEX_TYPES, before=before, after=after)])
            full_ts.append(time.perf_counter() - t)
    out = {"knn": _pct(per_type), "knn_res": knn_res}
    if full:
        out |= {"retrieve": _pct(full_ts), "full_res": full_res}
    return out


def _ratio(row: dict) -> float:
    """How many times faster the index path's full retrieval is than the exact one."""
    return row["exact"]["retrieve"]["p50_ms"] / max(row["index"]["retrieve"]["p50_ms"], 1e-9)


def measure(m: Memory, queries: np.ndarray, label: str, scopes: dict) -> dict:
    """exact vs index, whole history and the given scopes, for one memory."""
    n = m.db.execute("SELECT count(*) FROM keys").fetchone()[0]
    rss0 = _rss_mb()
    res: dict = {"vectors": n, "memory_mb_per_vector": os.path.getsize(m.path) / 1e6 / n}
    space = m.vector_space()  # the key table and width of the memory's vectors
    ipath = index_path(m.path, space.key_table)
    ipath.unlink(missing_ok=True)
    t = time.perf_counter()
    ki = KeyIndex.build(m.db, space.key_table, space.dim)
    res["index_build_s"] = round(time.perf_counter() - t, 1)
    ki.save(ipath)
    res["index_mb_per_vector"] = os.path.getsize(ipath) / 1e6 / n
    t = time.perf_counter()
    KeyIndex.load(ipath, space.key_table, space.dim)
    res["index_load_s"] = round(time.perf_counter() - t, 2)
    m._kidx = None
    res["rss_index_mb"] = round(_rss_mb() - rss0, 1)
    del ki
    for name, scope in {"all": (None, None), **scopes}.items():
        ex = run_queries(m, queries, use_index=False, scope=scope)
        ix = run_queries(m, queries, use_index=True, scope=scope)
        row = {}
        for meth, r in (("exact", ex), ("index", ix)):
            row[meth] = {"knn": r["knn"], "retrieve": r["retrieve"],
                         "recall_knn": float(np.mean([_recall(g, w) for g, w in
                                                      zip(r["knn_res"], ex["knn_res"])])),
                         "recall_retrieve": float(np.mean([_recall(g, w) for g, w in
                                                           zip(r["full_res"], ex["full_res"])]))}
        res[name] = row
        print(f"{label:>6} {name:>5} exact knn {row['exact']['knn']['p50_ms']:8.1f} ms  "
              f"retrieve {row['exact']['retrieve']['p50_ms']:8.1f} | index knn "
              f"{row['index']['knn']['p50_ms']:6.1f} ms retrieve "
              f"{row['index']['retrieve']['p50_ms']:6.1f} ms  recall@10 knn "
              f"{row['index']['recall_knn']:.3f} retrieve {row['index']['recall_retrieve']:.3f}"
              f"  ({_ratio(row):.0f}×)", flush=True)
    return res


def scopes_for(m: Memory) -> dict:
    """Last 7 days and last 180 days before the newest clip (timeline seconds)."""
    end = m.db.execute("SELECT max(t_end) FROM clips").fetchone()[0]
    return {"7d": (end, end - 7 * DAY), "180d": (end, end - 180 * DAY)}


def synthetic(size: str, workdir: Path, n_queries: int, keep: bool) -> dict:
    path = workdir / f"knn_{size}.db"
    for p in (path, index_path(path)):
        p.unlink(missing_ok=True)
    print(f"building {size} ...", flush=True)
    info = build_synthetic(path, SIZES[size])
    print(f"  inserted in {info['insert_s']:.0f} s", flush=True)
    queries = clustered(n_queries, seed=999_999, centers=_centers())
    with Memory(path) as m:
        m.db.execute("PRAGMA mmap_size = 0")
        res = info | measure(m, queries, size, scopes_for(m))
    if not keep:
        for p in (path, *path.parent.glob(f"{path.name}*.keyindex"), Path(f"{path}-wal"),
                  Path(f"{path}-shm")):
            p.unlink(missing_ok=True)
    return res


def real(source: Path, workdir: Path) -> dict:
    """The EgoLife four-day memory: migrate a copy, then exact vs index with the hard
    questions embedded as queries by the embedder of the memory's vectors."""
    from edge.config import models_dir
    from models import ModelHub, load_manifest

    path = workdir / "real.db"
    for p in (path, index_path(path)):
        p.unlink(missing_ok=True)
    shutil.copyfile(source, path)
    t = time.perf_counter()
    with Memory(path) as m:
        migrate_s = time.perf_counter() - t
        qs = json.loads((ROOT / "benchmarks/egolife_hard_questions.json").read_text())
        from edge.embedding import memory_embedder

        hub = ModelHub(load_manifest().profile("tiny"), models_dir())
        queries = memory_embedder(m, hub).embed([q["question"] for q in qs], query=True)
        end = m.db.execute("SELECT max(t_end) FROM clips").fetchone()[0]
        res = {"migrate_s": round(migrate_s, 2), "queries": len(queries)} | measure(
            m, queries, "real", {"1d": (end, end - DAY)})
    return res


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
    global DIM
    DIM = args.dim
    args.workdir.mkdir(parents=True, exist_ok=True)
    out = {"queries": args.queries, "dim": DIM, "results": {}}
    for size in args.sizes.split(","):
        out["results"][size] = synthetic(size, args.workdir, args.queries, args.keep)
    if not args.no_real and args.real.exists():
        out["results"]["real"] = real(args.real, args.workdir)
    tag = args.sizes.replace(",", "_") + ("" if DIM == 384 else f"_{DIM}d")
    dest = ROOT / "benchmarks/results" / f"knn_scale_{tag}.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=1))
    print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
