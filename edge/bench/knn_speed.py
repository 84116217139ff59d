"""Key search latency versus memory size (issue 13 item 3; ``edge bench speed`` part
``knn``; ``benchmarks/knn_scale.py`` is a wrapper of it).

Builds memories of N key vectors (clustered synthetic unit vectors, five key types, 30 s
clips laid out 16 h a day) in the product's own schema (:func:`build_synthetic`) and
measures through the product's own code path (:meth:`Memory.knn_keys`,
:func:`edge.recall.retrieval.max_sim_retrieve`) in :func:`measure`:

- ``exact``: vec0's exact scan (the whole-history index off), the reference for recall;
- ``index``: the whole-history path (:mod:`edge.store.keyindex`: IVF-SQ8 candidates,
  exact rescoring), its threshold lowered so it is used at every size;
- per scope (``7d``, ``180d``: the last days before the newest clip) the same two.

Latency is wall time per query (p50/p95, ms); recall@10 is against the exact result of the
same query; sizes are MB per stored vector (memory file, index file); RSS is this process's
resident memory added by loading the index (MB).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from edge.recall.retrieval import max_sim_retrieve
from edge.store import INDEX_TYPES, Memory
from edge.store.keyindex import KeyIndex, index_path

from .measure import percentiles, self_rss_mb

DIM = 384
"""MiniLM's width, a new memory's; EmbeddingGemma's is 768 or a Matryoshka cut (512)."""
CLIPS_PER_DAY = 16 * 120  # 16 h of 30 s clips
DAY = 86400.0
TOPICS = 4000
SIZES = {"1k": 1_000, "10k": 10_000, "100k": 100_000, "1M": 1_000_000, "3M": 3_000_000}
"""Named sizes (key vectors) of ``--sizes``; any other count is read as an integer."""

Say = Callable[[str], None]


def parse_size(name: str) -> int:
    """Key vectors of a ``--sizes`` item: a name of :data:`SIZES` or an integer (``"500"``,
    ``"250000"``); raises ``ValueError`` otherwise or below one clip's five keys."""
    n = SIZES.get(name.strip()) or int(name.strip().replace("_", ""))
    if n < len(INDEX_TYPES):
        raise ValueError(f"a memory size of {n} holds no clip ({len(INDEX_TYPES)} keys each)")
    return n


def centers(dim: int = DIM, topics: int = TOPICS) -> np.ndarray:
    """``(topics, dim)`` unit topic centers (fixed seed)."""
    c = np.random.default_rng(12345).normal(size=(topics, dim)).astype(np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def clustered(n: int, seed: int, centers: np.ndarray, noise: float = 1.2) -> np.ndarray:
    """``(n, dim)`` unit vectors: a random topic center plus Gaussian noise (cosine to the
    center ≈ 0.65), like sentence embeddings of a few thousand recurring activities."""
    dim = centers.shape[1]
    rng = np.random.default_rng(seed)
    x = centers[rng.integers(0, len(centers), n)]
    x = x + rng.normal(scale=noise / np.sqrt(dim), size=(n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def build_synthetic(path: Path, n_vectors: int, dim: int = DIM,
                    chunk_clips: int = 20_000) -> dict:
    """A memory at ``path`` of ``n_vectors`` keys (one per type per clip, ``dim``-d) written
    in the product's schema in chunks of clips; returns ``insert_s`` (seconds) and
    ``clips``."""
    cents = centers(dim)
    n_clips = n_vectors // len(INDEX_TYPES)
    t = time.perf_counter()
    with Memory(path) as m:
        if dim != DIM:  # the width of the profile's embedder (EmbeddingGemma: 768 or a cut)
            m.adopt_embedder(f"synthetic-{dim}", dim)
        db = m.db
        db.execute("INSERT INTO sources(id, path, sha256, kind, clock, start_from, t_start,"
                   " duration, n_clips, status, added_at) VALUES(1,'syn','syn','captions',"
                   "'dayclock','file',0,0,?,'done',0)", (n_clips,))
        for s in range(0, n_clips, chunk_clips):
            e = min(n_clips, s + chunk_clips)
            vecs = clustered((e - s) * len(INDEX_TYPES), seed=s, centers=cents)
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
    return {"insert_s": round(time.perf_counter() - t, 2), "clips": n_clips}


def _pct(ts: list[float]) -> dict:
    """p50/p95 of ``ts`` (seconds) in ms (:func:`~edge.bench.measure.percentiles`)."""
    return {f"{q}_ms": v for q, v in percentiles((t * 1000 for t in ts), digits=2).items()}


def _recall(got: list, want: list) -> float:
    if not want:
        return 1.0
    return len(set(got) & set(want)) / len(want)


def run_queries(m: Memory, queries: np.ndarray, *, use_index: bool, scope=(None, None),
                key_type: str = "event", full: bool = True) -> dict:
    """Per key-type KNN (top 10 of ``key_type``) and, with ``full``, max_sim_retrieve over
    all key types, each timed per query: ``knn``/``retrieve`` p50/p95 ms and the results
    (``knn_res``/``full_res``, clip ids). ``scope``: (before, after) timeline seconds."""
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


def speedup(row: dict) -> float:
    """How many times faster the index path's full retrieval is than the exact one."""
    return row["exact"]["retrieve"]["p50_ms"] / max(row["index"]["retrieve"]["p50_ms"], 1e-9)


def _index_sizes(m: Memory, n: int) -> dict:
    """Build, save and load the key index of ``m`` (``n`` vectors): seconds, MB per
    vector, RSS the loaded index adds (MB)."""
    res: dict = {}
    rss0 = self_rss_mb()
    space = m.vector_space()  # the key table and width of the memory's vectors
    ipath = index_path(m.path, space.key_table)
    ipath.unlink(missing_ok=True)
    t = time.perf_counter()
    ki = KeyIndex.build(m.db, space.key_table, space.dim)
    res["index_build_s"] = round(time.perf_counter() - t, 2)
    ki.save(ipath)
    res["index_mb_per_vector"] = os.path.getsize(ipath) / 1e6 / n
    t = time.perf_counter()
    KeyIndex.load(ipath, space.key_table, space.dim)
    res["index_load_s"] = round(time.perf_counter() - t, 3)
    m._kidx = None
    res["rss_index_mb"] = round(self_rss_mb() - rss0, 1)
    return res


def measure(m: Memory, queries: np.ndarray, label: str, scopes: dict,
            say: Say = lambda _line: None) -> dict:
    """exact vs index, whole history (``all``) and each of ``scopes`` ({name: (before,
    after)}), for one memory: per scope ``{"exact"|"index": {"knn", "retrieve" (p50/p95
    ms), "recall_knn", "recall_retrieve"}}`` plus ``vectors``, MB per vector and the
    index's build/load seconds and RSS."""
    n = m.db.execute("SELECT count(*) FROM keys").fetchone()[0]
    res: dict = {"vectors": n, "memory_mb_per_vector": os.path.getsize(m.path) / 1e6 / n}
    res |= _index_sizes(m, n)
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
        say(f"{label:>6} {name:>5} exact knn {row['exact']['knn']['p50_ms']:8.1f} ms  "
            f"retrieve {row['exact']['retrieve']['p50_ms']:8.1f} | index knn "
            f"{row['index']['knn']['p50_ms']:6.1f} ms retrieve "
            f"{row['index']['retrieve']['p50_ms']:6.1f} ms  recall@10 knn "
            f"{row['index']['recall_knn']:.3f} retrieve {row['index']['recall_retrieve']:.3f}"
            f"  ({speedup(row):.0f}×)")
    return res


def scopes_for(m: Memory) -> dict:
    """Last 7 days and last 180 days before the newest clip (timeline seconds)."""
    end = m.db.execute("SELECT max(t_end) FROM clips").fetchone()[0]
    return {"7d": (end, end - 7 * DAY), "180d": (end, end - 180 * DAY)}


def _remove(path: Path) -> None:
    """A memory file and what goes with it (WAL, SHM, key index files)."""
    for p in (path, *path.parent.glob(f"{path.name}*.keyindex"), Path(f"{path}-wal"),
              Path(f"{path}-shm"), index_path(path)):
        p.unlink(missing_ok=True)


def synthetic(size: str, workdir: Path, n_queries: int, *, dim: int = DIM,
              keep: bool = False, say: Say = lambda _line: None) -> dict:
    """Build the synthetic memory of ``size`` (:func:`parse_size`) in ``workdir``, measure
    it with ``n_queries`` clustered queries (:func:`measure`), remove it unless ``keep``.
    Returns ``insert_s``, ``clips`` and :func:`measure`'s result."""
    path = workdir / f"knn_{size}.db" if dim == DIM else workdir / f"knn_{size}_{dim}d.db"
    _remove(path)
    say(f"building {size} ({dim}-d) ...")
    info = build_synthetic(path, parse_size(size), dim)
    say(f"  inserted in {info['insert_s']:.1f} s")
    queries = clustered(n_queries, seed=999_999, centers=centers(dim))
    with Memory(path) as m:
        m.db.execute("PRAGMA mmap_size = 0")
        res = info | measure(m, queries, size, scopes_for(m), say)
    if not keep:
        _remove(path)
    return res


def real(source: Path, workdir: Path, questions: list[str], hub,
         say: Say = lambda _line: None) -> dict:
    """A real memory (``source``, copied into ``workdir``; the copy is migrated): its
    migration seconds, then exact vs index with ``questions`` embedded as queries by the
    embedder of the memory's vectors, whole history and its last day."""
    import shutil

    from edge.store.embedding import memory_embedder

    path = workdir / "real.db"
    _remove(path)
    shutil.copyfile(source, path)
    t = time.perf_counter()
    with Memory(path) as m:
        migrate_s = time.perf_counter() - t
        queries = memory_embedder(m, hub).embed(questions, query=True)
        end = m.db.execute("SELECT max(t_end) FROM clips").fetchone()[0]
        res = {"migrate_s": round(migrate_s, 2), "queries": len(queries)} | measure(
            m, queries, "real", {"1d": (end, end - DAY)}, say)
    _remove(path)
    return res
