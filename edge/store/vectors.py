"""Vector search (sqlite-vec ``vec0``, cosine): top-k key vectors per key type (MERIT
retrieval, Eq. 6 takes the max over types in :mod:`edge.retrieval`) and top-k fact vectors
(PyraVid seeds). A mixin of :class:`edge.store.Memory` (uses ``self.db``)."""

from __future__ import annotations

import numpy as np

from edge.store.scope import time_scope

KNN_MAX = 4096
"""sqlite-vec's largest ``k``; larger requests are capped."""


class VectorIndex:
    """KNN over ``key_vec`` (one 384-d unit vector per key) and ``fact_vec`` (one per fact
    node). Similarities are cosine, ``1 - distance``, best first."""

    def knn_keys(self, query: np.ndarray, key_type: str, k: int,
                 before: float | None = None, after: float | None = None
                 ) -> list[tuple[int, float]]:
        """Top-``k`` ``(clip_id, cosine similarity)`` for one key type, best first.

        ``query`` is a 384-d float32 unit vector; ``key_type`` one of
        :data:`~edge.store.INDEX_TYPES`. The time scope (``after < clip_end <= before``,
        timeline seconds, either open) is applied inside the KNN as vec0 metadata
        constraints, so it never drops results after the top-k was cut. ``k`` is capped at
        4096 (sqlite-vec's limit).
        """
        k = max(1, min(int(k), KNN_MAX))
        q = np.asarray(query, dtype=np.float32).tobytes()
        scope, scope_args = time_scope("v.clip_end", before=before, after=after)
        sql = ("SELECT v.key_id, v.distance FROM key_vec v WHERE v.embedding MATCH ? AND k = ?"
               " AND v.key_type = ?" + scope)
        hits = list(self.db.execute(sql, [q, k, key_type, *scope_args]))
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        owner = dict(self.db.execute(
            f"SELECT id, clip_id FROM keys WHERE id IN ({marks})", [h[0] for h in hits]))
        return [(owner[kid], 1.0 - float(dist)) for kid, dist in hits]

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
