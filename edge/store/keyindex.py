"""Whole-history key search for large memories: an in-memory index beside SQLite.

Exact vec0 search reads every vector of a key type (~0.6 µs each here, no SIMD in
sqlite-vec 0.1.9): 0.5–0.8 s per key type at a year (3M keys) on 2 cores. Above a size threshold
:class:`~edge.store.vectors.VectorIndex` asks this index for candidates instead: per key
type a faiss IVF index (inner product, 8-bit scalar-quantized vectors: 384 bytes a key)
probes 1/3 of its lists (all of a small type) and returns the best few dozen keys, which
are rescored exactly with their float vectors read from ``key_vec`` itself, so the cosines
returned are exact and a key no longer stored is never returned. Measured in
``benchmarks/knn_scale.py``.

SQLite stays the source of truth. The index is kept in ``<memory>.keyindex`` (an ``.npz``
written to a temporary file and renamed), covers the keys up to an id and a count, and
takes the keys written since (ids above it) on its next use; when the count disagrees
(a key was deleted) it is rebuilt. faiss is imported only here, when a memory is large.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edge.store.records import EMBED_DIM, INDEX_TYPES

log = logging.getLogger(__name__)

FORMAT = 1
"""Version of the ``.keyindex`` file; another version is rebuilt, never read."""

PROBE_SHARE = 3
"""A search probes at least 1/3 of the lists: real question embeddings are far from every
key (cosine 0.3–0.5); on the EgoLife memory 1/16 of the lists held recall@10 at 0.82, 1/8
at 0.91, 1/4 at 0.97; at 3M synthetic keys 1/4 held 0.953 at 23 ms a key type
(benchmarks/knn_scale.py), 1/3 leaves a margin."""

SCAN_BUDGET = 100_000
"""A search scans at least this many 8-bit vectors (~10 ms) when the type has them: small
types are scanned whole (recall@10 0.80 at 20k synthetic keys a type with 1/4 probed)."""

_BATCH = 4096


def index_path(memory_path: Path, table: str = "key_vec") -> Path:
    """Where the index of the memory file ``memory_path`` over the key table ``table`` is
    kept: ``<memory>.keyindex`` for ``key_vec``, ``<memory>.<table>.keyindex`` for the key
    table of a later vector space (another embedder)."""
    name = Path(memory_path).name
    suffix = ".keyindex" if table == "key_vec" else f".{table}.keyindex"
    return Path(memory_path).with_name(name + suffix)


# ---- exact vectors out of key_vec ----------------------------------------------------------

def read_vectors(db, key_ids: np.ndarray, table: str = "key_vec", dim: int = EMBED_DIM
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The stored float32 vectors of ``key_ids``: ``(found ids (m,), vectors (m, dim))``;
    ids with no vector (deleted) are left out. Order follows ``key_ids``.

    Reads vec0's shadow tables of the key table ``table`` (``key_vec``, or a later vector
    space's; sqlite-vec 0.1.9, pinned in pyproject): ``<table>_rowids`` gives each key's
    chunk and slot; a lone slot is read by incremental blob I/O, a chunk holding many of
    the ids whole. ~50 µs a key with 128-vector chunks
    (``SELECT embedding`` reads the whole chunk, 3× slower). :func:`check_layout` verifies
    the layout against vec0 itself."""
    ids = [int(i) for i in key_ids]
    where: dict[int, tuple[int, int]] = {}
    for s in range(0, len(ids), _BATCH):
        part = ids[s:s + _BATCH]
        marks = ",".join("?" * len(part))
        for rid, chunk, slot in db.execute(
                f"SELECT rowid, chunk_id, chunk_offset FROM {table}_rowids "
                f"WHERE rowid IN ({marks})", part):
            where[rid] = (chunk, slot)
    found = [i for i in ids if i in where]
    out = np.empty((len(found), dim), np.float32)
    by_chunk: dict[int, list[int]] = {}
    for row, kid in enumerate(found):
        by_chunk.setdefault(where[kid][0], []).append(row)
    for chunk, rows in by_chunk.items():
        blob = db.blob_open("main", f"{table}_vector_chunks00", "vectors", chunk, False)
        try:
            if len(rows) > 8:
                whole = np.frombuffer(blob.read(), np.float32).reshape(-1, dim)
                out[rows] = whole[[where[found[r]][1] for r in rows]]
            else:
                for r in rows:
                    blob.seek(where[found[r]][1] * dim * 4)
                    blob.readinto(out[r])
        finally:
            blob.close()
    return np.asarray(found, np.int64), out


def check_layout(db, table: str = "key_vec", dim: int = EMBED_DIM) -> bool:
    """Whether :func:`read_vectors` reads what vec0 returns for the first and last key
    (True on an empty table). False means another sqlite-vec storage layout: don't use it."""
    row = db.execute(f"SELECT min(key_id), max(key_id) FROM {table}").fetchone()
    if row[0] is None:
        return True
    for kid in set(row):
        ref = db.execute(f"SELECT embedding FROM {table} WHERE key_id = ?", (kid,)).fetchone()
        got_ids, got = read_vectors(db, np.array([kid]), table, dim)
        if ref is None or len(got_ids) != 1 or got[0].tobytes() != bytes(ref[0]):
            return False
    return True


# ---- the index -----------------------------------------------------------------------------

@dataclass
class _Part:
    """One key type: the faiss index (ids are positions), and per position the key id and
    the clip's end (timeline seconds, for the time scope)."""

    index: object
    ids: np.ndarray
    ends: np.ndarray


def _train(vectors: np.ndarray):
    """A trained, empty IVF-SQ8 index for vectors like ``vectors`` ((n, dim) float32):
    nlist = 4·√n lists (16…1024), k-means on at most 40 vectors a list (fewer lists held
    less recall on the EgoLife memory at the same share probed);
    searches probe 1/:data:`PROBE_SHARE` of the lists."""
    import faiss

    nlist = int(min(1024, max(16, 4 * math.sqrt(len(vectors)))))
    dim = vectors.shape[1]
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist,
                                          faiss.ScalarQuantizer.QT_8bit,
                                          faiss.METRIC_INNER_PRODUCT)
    index.cp.min_points_per_centroid = 1  # small types: fewer than 39 a list is fine
    rng = np.random.default_rng(0)
    sample = vectors[np.sort(rng.choice(len(vectors), min(len(vectors), 40 * nlist),
                                        replace=False))]
    index.train(sample)
    index.nprobe = max(1, nlist // PROBE_SHARE)
    return index


class KeyIndex:
    """The candidates of a whole-history key search, per key type (see the module doc).

    ``upto`` is the largest key id and ``count`` the number of keys covered. Build with
    :meth:`build`, read with :meth:`load`, bring up to date with :meth:`add_new`."""

    CANDIDATES = 32
    """Keys taken from the index per search (at least 3·k), then rescored exactly."""
    MIN_PART = 1000
    """A key type with fewer keys is not indexed (its exact scan takes < 1 ms)."""
    MIN_SCOPE = 0.25
    """Narrower time scopes (share of a type's keys) go to the exact day-partitioned scan."""

    def __init__(self, parts: dict[str, _Part], upto: int, count: int,
                 table: str = "key_vec", dim: int = EMBED_DIM) -> None:
        self.parts, self.upto, self.count = parts, upto, count
        self.table, self.dim = table, dim
        self.unsaved = 0

    # -- building, updating
    @classmethod
    def build(cls, db, table: str = "key_vec", dim: int = EMBED_DIM) -> KeyIndex:
        """Read every key vector of the key table ``table`` (``dim`` wide; per type, in id
        order) and index it. Raises ``RuntimeError`` when vec0's storage layout is not the
        one :func:`read_vectors` reads. ~1 min per 500k 384-d keys on 2 cores."""
        if not check_layout(db, table, dim):
            raise RuntimeError("sqlite-vec's storage layout is not the expected one")
        upto, count = db.execute(
            "SELECT coalesce(max(id), 0), count(*) FROM keys").fetchone()
        parts = {}
        for ktype in INDEX_TYPES:
            ids, ends = _key_rows(db, "k.type = ? AND k.id <= ?", (ktype, upto))
            if len(ids) < cls.MIN_PART:
                continue
            found, vecs = read_vectors(db, ids, table, dim)
            keep = np.isin(ids, found)
            index = _train(vecs)
            index.add(vecs)
            parts[ktype] = _Part(index, ids[keep], ends[keep])
        ki = cls(parts, upto, count, table, dim)
        ki.unsaved = count
        return ki

    def add_new(self, db) -> int:
        """Add the keys stored since (ids above :attr:`upto`) to their types' indexes;
        returns how many keys were stored since. A type without an index stays served by
        the exact scan (until a rebuild indexes it)."""
        top, new = db.execute("SELECT coalesce(max(id), 0), count(*) FROM keys WHERE id > ?",
                              (self.upto,)).fetchone()
        if not new:
            return 0
        todo = []  # read everything first: a failed read changes nothing
        for ktype in self.parts:
            ids, ends = _key_rows(db, "k.type = ? AND k.id > ? AND k.id <= ?",
                                  (ktype, self.upto, top))
            found, vecs = read_vectors(db, ids, self.table, self.dim)
            keep = np.isin(ids, found)
            todo.append((self.parts[ktype], ids[keep], ends[keep], vecs))
        for part, ids, ends, vecs in todo:
            if len(ids):
                part.index.add(vecs)
                part.ids = np.concatenate([part.ids, ids])
                part.ends = np.concatenate([part.ends, ends])
        self.upto, self.count = top, self.count + new
        self.unsaved += new
        return new

    # -- searching
    def candidates(self, query: np.ndarray, key_type: str, k: int,
                   before: float | None, after: float | None) -> np.ndarray | None:
        """Up to max(32, 3·``k``) key ids of ``key_type`` near ``query``, among keys of
        clips ending in ``(after, before]``; ``None`` when the scope holds less than
        :attr:`MIN_SCOPE` of the type's keys (the exact scan is then cheap and exact)."""
        import faiss

        part = self.parts.get(key_type)
        if part is None:  # too few keys of this type to index: the exact scan is cheap
            return None
        params = faiss.SearchParametersIVF()
        nlist = part.index.nlist
        nprobe = max(part.index.nprobe, math.ceil(nlist * SCAN_BUDGET / len(part.ids)))
        if before is not None or after is not None:
            mask = np.ones(len(part.ends), bool)
            if before is not None:
                mask &= part.ends <= before
            if after is not None:
                mask &= part.ends > after
            share = mask.mean() if len(mask) else 0.0
            if share < self.MIN_SCOPE:
                return None
            bits = np.packbits(mask, bitorder="little")
            params.sel = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bits))
            nprobe = math.ceil(nprobe / share)
        params.nprobe = min(nlist, nprobe)
        want = min(len(part.ids), max(self.CANDIDATES, 3 * k))
        _, pos = part.index.search(np.asarray(query, np.float32)[None], want, params=params)
        pos = pos[0][pos[0] >= 0]
        return part.ids[pos]

    # -- the file
    def save(self, path: Path, like: Path | None = None) -> None:
        """Write the index to ``path`` through a temporary file renamed over it, so a
        reader never sees half a file; with the permissions of ``like`` (the memory file)
        when given. Raises ``OSError`` when it cannot be written."""
        import faiss

        arrays = {"meta": np.frombuffer(json.dumps(
            {"format": FORMAT, "upto": self.upto, "count": self.count,
             "types": sorted(self.parts), "table": self.table, "dim": self.dim}
        ).encode(), np.uint8)}
        for t, p in self.parts.items():
            arrays[f"index_{t}"] = faiss.serialize_index(p.index)
            arrays[f"ids_{t}"], arrays[f"ends_{t}"] = p.ids, p.ends
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
            if like is not None:
                shutil.copymode(like, tmp)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.unsaved = 0

    @classmethod
    def load(cls, path: Path, table: str = "key_vec", dim: int = EMBED_DIM
             ) -> KeyIndex | None:
        """The index of key table ``table`` (``dim`` wide) kept in ``path``, or ``None``
        when there is none or it cannot be read (another format, another table or width, a
        damaged file: it is then rebuilt)."""
        import faiss

        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(bytes(z["meta"]).decode())
                if meta.get("format") != FORMAT or (
                        meta.get("table", "key_vec"), meta.get("dim", EMBED_DIM)) != (table, dim):
                    return None
                parts = {}
                for t in meta["types"]:
                    index = faiss.deserialize_index(z[f"index_{t}"])
                    parts[t] = _Part(index, z[f"ids_{t}"], z[f"ends_{t}"])
            return cls(parts, int(meta["upto"]), int(meta["count"]), table, dim)
        except FileNotFoundError:
            return None
        except Exception as e:  # a damaged or foreign file is rebuilt, never trusted
            log.warning("ignoring the key index %s (%s); it will be rebuilt", path, e)
            return None


def _key_rows(db, where: str, args: tuple) -> tuple[np.ndarray, np.ndarray]:
    """``(key ids, clip ends)`` of the keys matching ``where`` (on ``keys k``), by id."""
    rows = db.execute(
        f"SELECT k.id, c.t_end FROM keys k JOIN clips c ON c.id = k.clip_id WHERE {where}"
        " ORDER BY k.id", args).fetchall()
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    arr = np.asarray(rows, np.float64)
    return arr[:, 0].astype(np.int64), arr[:, 1]
