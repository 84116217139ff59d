"""Vector search (sqlite-vec ``vec0``, cosine): top-k key vectors per key type (MERIT
retrieval, Eq. 6 takes the max over types in :mod:`edge.retrieval`) and top-k fact vectors
(PyraVid seeds). A mixin of :class:`edge.store.Memory` (uses ``self.db``)."""

from __future__ import annotations

import logging

import numpy as np

from edge.store.keyindex import KeyIndex, index_path, read_vectors
from edge.store.scope import day_scope, time_scope

log = logging.getLogger(__name__)

KNN_MAX = 4096
"""sqlite-vec's largest ``k``; larger requests are capped."""


class VectorIndex:
    """KNN over ``key_vec`` (one 384-d unit vector per key) and ``fact_vec`` (one per fact
    node). Similarities are cosine, ``1 - distance``, best first.

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

        ``query`` is a 384-d float32 unit vector; ``key_type`` one of
        :data:`~edge.store.INDEX_TYPES`. The time scope (``after < clip_end <= before``,
        timeline seconds, either open) is applied inside the search (vec0 partition and
        metadata constraints, or the index's selector), so it never drops results after
        the top-k was cut. ``k`` is capped at 4096 (sqlite-vec's limit).
        """
        k = max(1, min(int(k), KNN_MAX))
        hits = None
        index = self._key_index() if k <= 256 else None
        if index is not None:
            cands = index.candidates(query, key_type, k, before, after)
            if cands is not None:
                hits = self._rescore(query, cands, k)
        if hits is None:
            hits = self._knn_exact(query, key_type, k, before, after)
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        owner = dict(self.db.execute(
            f"SELECT id, clip_id FROM keys WHERE id IN ({marks})", [h[0] for h in hits]))
        return [(owner[kid], sim) for kid, sim in hits if kid in owner]

    def _knn_exact(self, query: np.ndarray, key_type: str, k: int,
                   before: float | None, after: float | None) -> list[tuple[int, float]]:
        """vec0's exact top-``k`` ``(key_id, cosine)``, reading only the days in scope."""
        q = np.asarray(query, dtype=np.float32).tobytes()
        scope, scope_args = time_scope("v.clip_end", before=before, after=after)
        days, day_args = day_scope("v.day", before=before, after=after)
        sql = ("SELECT v.key_id, v.distance FROM key_vec v WHERE v.embedding MATCH ? AND k = ?"
               " AND v.key_type = ?" + days + scope)
        rows = self.db.execute(sql, [q, k, key_type, *day_args, *scope_args])
        return [(int(kid), 1.0 - float(dist)) for kid, dist in rows]

    def _rescore(self, query: np.ndarray, key_ids: np.ndarray, k: int
                 ) -> list[tuple[int, float]]:
        """The best ``k`` of ``key_ids`` by the exact cosine of their stored vectors."""
        found, vecs = read_vectors(self.db, np.unique(key_ids))
        if not len(found):
            return []
        q = np.asarray(query, dtype=np.float32)
        sims = (vecs @ q) / (np.linalg.norm(vecs, axis=1) * np.linalg.norm(q))
        order = sorted(range(len(found)), key=lambda i: (-sims[i], found[i]))[:k]
        return [(int(found[i]), float(sims[i])) for i in order]

    def _key_index(self) -> KeyIndex | None:
        """The whole-history index, current with the ``keys`` table, or ``None`` below
        :attr:`index_min_keys` keys or when it cannot be built (exact search then).

        Checked again only when the database changed (``PRAGMA data_version`` for other
        connections' commits, ``total_changes`` for ours): keys stored since are added;
        a count that disagrees (keys deleted) rebuilds it. Saved beside the memory after a
        build and when a twentieth of it is new."""
        stamp = (self.db.execute("PRAGMA data_version").fetchone()[0],
                 self.db.total_changes())
        if getattr(self, "_kidx_stamp", None) == stamp:
            return self._kidx
        self._kidx, self._kidx_stamp = self._current_key_index(), stamp
        return self._kidx

    def _current_key_index(self) -> KeyIndex | None:
        """:meth:`_key_index` without the cache: load, update or rebuild, and save. Any
        failure on the way (sqlite-vec's layout, faiss missing, a read error) drops the
        index and searches exactly: never a half-updated index."""
        count = self.db.execute("SELECT count(*) FROM keys").fetchone()[0]
        if count < self.index_min_keys:
            return None
        path = index_path(self.path)
        try:
            ki = getattr(self, "_kidx", None) or KeyIndex.load(path)
            if ki is not None and ki.upto <= self._max_key_id():
                ki.add_new(self.db)
            if ki is None or ki.count != count or ki.upto != self._max_key_id():
                ki = KeyIndex.build(self.db)
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
        """Top-``k`` ``(fact_id, cosine similarity)`` for a 384-d unit ``query``, best first.

        ``before``/``after`` (timeline seconds: facts of clips ending in ``(after, before]``)
        and ``day`` (a day label) are vec0 metadata constraints applied inside the KNN, so they
        never drop results after the top-k was cut (PyraVid B.3/B.4 seed retrieval,
        time-scoped). ``k`` ≤ 4096.
        """
        k = max(1, min(int(k), KNN_MAX))
        scope, args = time_scope("clip_end", before=before, after=after)
        sql = "SELECT fact_id, distance FROM fact_vec WHERE embedding MATCH ? AND k = ?" + scope
        args = [np.asarray(query, dtype=np.float32).tobytes(), k, *args]
        if day is not None:
            sql += " AND day = ?"
            args.append(day)
        return [(int(fid), 1.0 - float(d)) for fid, d in self.db.execute(sql, args)]
