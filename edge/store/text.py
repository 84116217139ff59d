"""Full-text search (SQLite FTS5, BM25) over clip texts (caption, transcript, keys, facts)
and fact texts. A mixin of :class:`edge.store.Memory` (uses ``self.db``)."""

from __future__ import annotations

from edge.store.scope import time_scope


class TextIndex:
    """BM25 over ``clip_text`` and ``fact_text``. Scores are ``-bm25()``: positive, larger is
    better, not bounded; ties go to the lower rowid."""

    def bm25(self, match: str, k: int, before: float | None = None,
             after: float | None = None) -> list[tuple[int, float]]:
        """Top-``k`` ``(clip_id, BM25 score)`` for an FTS5 ``match`` expression, best first
        (scores are positive; larger is better). The time scope (clips ending in
        ``(after, before]``, timeline seconds) is part of the same query, so it applies
        before the top-k cut. A malformed ``match`` raises ``apsw.SQLError``."""
        scope, args = time_scope("c.t_end", before=before, after=after)
        sql = ("SELECT t.rowid, -bm25(clip_text) AS score FROM clip_text t "
               "JOIN clips c ON c.id = t.rowid WHERE clip_text MATCH ?" + scope +
               " ORDER BY score DESC, t.rowid LIMIT ?")
        rows = self.db.execute(sql, [match, *args, int(k)])
        return [(cid, float(score)) for cid, score in rows]

    def bm25_facts(self, match: str, k: int, before: float | None = None,
                   after: float | None = None) -> list[tuple[int, float]]:
        """Top-``k`` ``(fact_id, BM25 score)`` for an FTS5 ``match`` over fact texts, best
        first (larger is better); the time scope (facts of clips ending in
        ``(after, before]``, timeline seconds) applies before the cut."""
        scope, args = time_scope("c.t_end", before=before, after=after)
        sql = ("SELECT t.rowid, -bm25(fact_text) AS score FROM fact_text t JOIN facts f "
               "ON f.id = t.rowid JOIN clips c ON c.id = f.clip_id WHERE fact_text MATCH ?"
               + scope + " ORDER BY score DESC, t.rowid LIMIT ?")
        rows = self.db.execute(sql, [match, *args, int(k)])
        return [(fid, float(score)) for fid, score in rows]
