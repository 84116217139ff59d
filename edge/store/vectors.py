"""Vector search (sqlite-vec ``vec0``, cosine): top-k key vectors per key type (MERIT
retrieval, Eq. 6 takes the max over types in :mod:`edge.recall.retrieval`) and top-k fact vectors
(PyraVid seeds). A mixin of :class:`edge.store.Memory` (uses ``self.db``)."""

from __future__ import annotations

import logging

import numpy as np

from edge.store.keyindex import KeyIndex, index_path, read_vectors
from edge.store.records import id_marks
from edge.store.scope import day_scope, time_scope

log = logging.getLogger(__name__)

KNN_MAX = 4096
"""sqlite-vec's largest ``k``; larger requests are capped."""


class VectorIndex:
    """KNN over the active vector space's key table (``key_vec`` until a re-embedding: one
    unit vector per key, 384-d for MiniLM) and fact table (``fact_vec``: one per fact node;
    :mod:`edge.store.spaces`). Similarities are cosine, ``1 - distance``, best first.

    Key search is exact (vec0, reading only the days in the time scope) until the memory
    holds :attr:`index_min_keys` keys; above, a whole-history or wide search takes its
    candidates from :class:`~edge.store.keyindex.KeyIndex` (kept in ``<memory>.keyindex``,
    built on first need, brought up to date with new keys before every search) and
    rescores them exactly."""

    index_min_keys = 100_000
    """Keys (all types) from which the whole-history index is used: ~20k per type, where
    one exact key-type scan passes ~15 ms on 2 cores (benchmarks/knn_scale.py)."""

    def knn_keys(self, query: np.ndarray, key_type: str, k: int,
                 before: float | None = None, after: float | None = None
                 ) -> list[tuple[int, float]]:
        """Top-``k`` ``(clip_id, cosine similarity)`` for one key type, best first.

        ``query`` is a float32 unit vector of the active space's width (the embedder that
        wrote the memory's vectors: :meth:`vector_space`; ``ValueError`` otherwise);
        ``key_type`` one of
        :data:`~edge.store.INDEX_TYPES`. The time scope (``after < clip_end <= before``,
        timeline seconds, either open) is applied inside the search (vec0 partition and
        metadata constraints, or the index's selector), so it never drops results after
        the top-k was cut. ``k`` is capped at 4096 (sqlite-vec's limit).
        """
        k = max(1, min(int(k), KNN_MAX))
        space = self._query_space(query)
        hits = None
        index = self._key_index(space) if k <= 256 else None
        if index is not None:
            cands = index.candidates(query, key_type, k, before, after)
            if cands is not None:
                hits = self._rescore(query, cands, k, space)
        if hits is None:
            hits = self._knn_exact(query, key_type, k, before, after, space)
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        owner = dict(self.db.execute(
            f"SELECT id, clip_id FROM keys WHERE id IN ({marks})", [h[0] for h in hits]))
        return [(owner[kid], sim) for kid, sim in hits if kid in owner]

    def clip_key_vectors(self, clip_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Every stored key vector of ``clip_ids`` in the active space: ``(owner clip id
        per row (m,) int64, unit vectors (m, dim) float32)`` — all key types, the caption
        key included; ``m = 0`` (and ``(0, dim)``) when none has a vector."""
        space = self.vector_space()
        ids, marks = id_marks(int(c) for c in clip_ids)
        owner = dict(self.db.execute(
            f"SELECT id, clip_id FROM keys WHERE clip_id IN ({marks})", ids)) if ids else {}
        if not owner:
            return np.empty(0, np.int64), np.empty((0, space.dim), np.float32)
        found, vecs = read_vectors(self.db, np.asarray(sorted(owner), np.int64),
                                   space.key_table, space.dim)
        return np.asarray([owner[int(k)] for k in found], np.int64), vecs

    def _query_space(self, query: np.ndarray):
        """The active space, after checking that ``query`` has its width: a query embedded
        by another model than the one that wrote the vectors would match nothing."""
        space = self.vector_space()
        width = np.asarray(query).shape[-1]
        if width != space.dim:
            raise ValueError(f"a {width}-d query against {space.dim}-d vectors: this memory "
                             f"was embedded by {space.embedder}; embed queries with it")
        return space

    def _knn_exact(self, query: np.ndarray, key_type: str, k: int,
                   before: float | None, after: float | None, space
                   ) -> list[tuple[int, float]]:
        """vec0's exact top-``k`` ``(key_id, cosine)``, reading only the days in scope."""
        q = np.asarray(query, dtype=np.float32).tobytes()
        scope, scope_args = time_scope("v.clip_end", before=before, after=after)
        days, day_args = day_scope("v.day", before=before, after=after)
        sql = (f"SELECT v.key_id, v.distance FROM {space.key_table} v WHERE v.embedding MATCH ?"
               " AND k = ?"
               " AND v.key_type = ?" + days + scope)
        rows = self.db.execute(sql, [q, k, key_type, *day_args, *scope_args])
        return [(int(kid), 1.0 - float(dist)) for kid, dist in rows]

    def _rescore(self, query: np.ndarray, key_ids: np.ndarray, k: int, space
                 ) -> list[tuple[int, float]]:
        """The best ``k`` of ``key_ids`` by the exact cosine of their stored vectors."""
        found, vecs = read_vectors(self.db, np.unique(key_ids), space.key_table, space.dim)
        if not len(found):
            return []
        q = np.asarray(query, dtype=np.float32)
        sims = (vecs @ q) / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(q))
        order = sorted(range(len(found)), key=lambda i: (-sims[i], found[i]))[:k]
        return [(int(found[i]), float(sims[i])) for i in order]

    def _key_index(self, space=None) -> KeyIndex | None:
        """The whole-history index, current with the ``keys`` table, or ``None`` below
        :attr:`index_min_keys` keys or when it cannot be built (exact search then).

        Checked again only when the database changed (``PRAGMA data_version`` for other
        connections' commits, ``total_changes`` for ours): keys stored since are added;
        a count that disagrees (keys deleted) rebuilds it. Saved beside the memory after a
        build and when a twentieth of it is new."""
        space = space or self.vector_space()
        stamp = (self.db.execute("PRAGMA data_version").fetchone()[0],
                 self.db.total_changes(), space.key_table)
        if getattr(self, "_kidx_stamp", None) == stamp:
            return self._kidx
        if getattr(self, "_kidx", None) is not None and self._kidx.table != space.key_table:
            self._kidx = None  # re-embedded since: the old space's index is gone
        self._kidx, self._kidx_stamp = self._current_key_index(space), stamp
        return self._kidx

    def _current_key_index(self, space) -> KeyIndex | None:
        """:meth:`_key_index` without the cache: load, update or rebuild, and save. Any
        failure on the way (sqlite-vec's layout, faiss missing, a read error) drops the
        index and searches exactly: never a half-updated index."""
        count = self.db.execute("SELECT count(*) FROM keys").fetchone()[0]
        if count < self.index_min_keys:
            return None
        path = index_path(self.path, space.key_table)
        try:
            ki = getattr(self, "_kidx", None) or KeyIndex.load(path, space.key_table, space.dim)
            if ki is not None and ki.upto <= self._max_key_id():
                ki.add_new(self.db)
            if ki is None or ki.count != count or ki.upto != self._max_key_id():
                ki = KeyIndex.build(self.db, space.key_table, space.dim)
        except Exception as e:  # noqa: BLE001 - exact search is always a correct answer
            log.warning("exact key search: the key index cannot be used (%s)", e)
            return None
        if ki.unsaved * 20 >= ki.count:
            try:
                ki.save(path, like=self.path)
            except OSError as e:
                log.info("the key index is kept in memory only: %s", e)
        return ki

    def _max_key_id(self) -> int:
        return self.db.execute("SELECT coalesce(max(id), 0) FROM keys").fetchone()[0]

    def knn_facts(self, query: np.ndarray, k: int, before: float | None = None,
                  day: str | None = None, after: float | None = None
                  ) -> list[tuple[int, float]]:
        """Top-``k`` ``(fact_id, cosine similarity)`` for a unit ``query`` of the active
        space's width, best first.

        ``before``/``after`` (timeline seconds: facts of clips ending in ``(after, before]``)
        and ``day`` (a day label) are vec0 metadata constraints applied inside the KNN, so they
        never drop results after the top-k was cut (PyraVid B.3/B.4 seed retrieval,
        time-scoped). ``k`` ≤ 4096.
        """
        k = max(1, min(int(k), KNN_MAX))
        space = self._query_space(query)
        scope, args = time_scope("clip_end", before=before, after=after)
        sql = (f"SELECT fact_id, distance FROM {space.fact_table} WHERE embedding MATCH ? "
               "AND k = ?" + scope)
        args = [np.asarray(query, dtype=np.float32).tobytes(), k, *args]
        if day is not None:
            sql += " AND day = ?"
            args.append(day)
        return [(int(fid), 1.0 - float(d)) for fid, d in self.db.execute(sql, args)]
