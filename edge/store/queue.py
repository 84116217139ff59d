"""The deferred LLM tier's queue (migration m007): per clip stored by the real-time tier,
the memory-LLM work still to do — the four MERIT keys (``keys``) and the PyraVid fact/clip
nodes, links and global updates (``pyramid``) — and the log of finished builds with their
wall seconds, for the ETA. :mod:`edge.build` consumes the queue; each clip's results and the
removal of its queue row are one transaction (:meth:`BuildQueue.complete_build`), so a
killed build loses and duplicates nothing. A mixin of :class:`edge.store.Memory` (uses
``self.db``, ``self._write`` and the clip/graph mixins' private writers)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edge.store.entities import index_clip_entities
from edge.store.records import Fact
from edge.store.scope import time_scope

ETA_WINDOW = 50
"""Builds (the latest) whose mean seconds per clip give the ETA."""


@dataclass(frozen=True)
class QueueItem:
    """One clip waiting for the LLM tier: its id, times (timeline seconds) and day, and
    what is to build: ``keys`` (the four MERIT keys) and/or ``pyramid``."""

    clip_id: int
    t_start: float
    t_end: float
    day: str
    keys: bool
    pyramid: bool


@dataclass(frozen=True)
class BuildResult:
    """What the LLM tier made of one clip, to store with :meth:`BuildQueue.complete_build`.

    ``keys``: key type → ``(text, origin)`` for the four keys when they were built (else
    empty) with ``key_vectors`` (type → 384-d float32); ``facts`` with ``fact_vectors``
    ``(len(facts), 384)``; ``clip_node``: ``(summary, scene, origin)`` or ``None``;
    ``links``: accepted relational links ``(new fact, earlier fact id, relation)`` — the new
    fact's id is known only once it is stored; ``seconds``: wall seconds of the build."""

    keys: dict[str, tuple[str, str]]
    key_vectors: dict[str, np.ndarray]
    facts: Sequence[Fact] = ()
    fact_vectors: np.ndarray | None = None
    clip_node: tuple[str, str, str] | None = None
    links: Sequence[tuple[Fact, int, str]] = ()
    seconds: float = 0.0


class BuildQueue:
    """The ``build_queue`` and ``builds`` tables."""

    def _enqueue(self, clip_id: int, keys: bool, pyramid: bool) -> None:
        """Inside the clip's write transaction: queue what its LLM tier must still build
        (nothing when neither ``keys`` nor ``pyramid``)."""
        if keys or pyramid:
            self.db.execute(
                "INSERT INTO build_queue(clip_id, keys, pyramid, enqueued_at) VALUES(?,?,?,?) "
                "ON CONFLICT(clip_id) DO UPDATE SET keys = max(keys, excluded.keys), "
                "pyramid = max(pyramid, excluded.pyramid)",
                (clip_id, int(keys), int(pyramid), time.time()))

    def enqueue_pyramid_backfill(self) -> int:
        """Queue the pyramid of every clip that has no clip node (a memory made with
        ``--no-pyramid``, or clips queued for keys only); the number of clips newly given
        pyramid work."""
        with self._write():
            before = self.db.execute(
                "SELECT count(*) FROM build_queue WHERE pyramid = 1").fetchone()[0]
            self.db.execute(
                "INSERT INTO build_queue(clip_id, keys, pyramid, enqueued_at) "
                "SELECT c.id, 0, 1, ? FROM clips c WHERE NOT EXISTS(SELECT 1 FROM nodes_clip n "
                "WHERE n.clip_id = c.id)"
                "ON CONFLICT(clip_id) DO UPDATE SET pyramid = 1", (time.time(),))
            return self.db.execute(
                "SELECT count(*) FROM build_queue WHERE pyramid = 1").fetchone()[0] - before

    def queued(self, limit: int | None = None) -> list[QueueItem]:
        """The queue in clip order (timeline), at most ``limit`` items."""
        sql = ("SELECT q.clip_id, c.t_start, c.t_end, c.day, q.keys, q.pyramid FROM build_queue q"
               " JOIN clips c ON c.id = q.clip_id ORDER BY c.t_start, c.id")
        args: list = []
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [QueueItem(r[0], r[1], r[2], r[3], bool(r[4]), bool(r[5]))
                for r in self.db.execute(sql, args)]

    def unbuilt_ids(self, clip_ids: Sequence[int]) -> set[int]:
        """Those of ``clip_ids`` still waiting for the LLM tier."""
        ids = [int(i) for i in clip_ids]
        if not ids:
            return set()
        marks = ",".join("?" * len(ids))
        return {r[0] for r in self.db.execute(
            f"SELECT clip_id FROM build_queue WHERE clip_id IN ({marks})", ids)}

    def backlog(self, before: float | None = None, after: float | None = None) -> dict:
        """The LLM tier's backlog for clips ending in ``(after, before]`` (timeline seconds,
        either open): ``clips``, ``hours`` of footage, ``keys``/``pyramid`` (clips with that
        work) and ``eta_seconds`` (clips × the mean wall seconds of the latest
        :data:`ETA_WINDOW` builds of the same kind, else of any kind; ``None`` before the
        first build)."""
        scope, args = time_scope("c.t_end", before=before, after=after)
        rows = self.db.execute(
            "SELECT q.keys, q.pyramid, count(*), coalesce(sum(c.t_end - c.t_start), 0) "
            f"FROM build_queue q JOIN clips c ON c.id = q.clip_id WHERE 1{scope} "
            "GROUP BY q.keys, q.pyramid", args).fetchall()
        clips = sum(r[2] for r in rows)
        eta: float | None = 0.0
        for keys, pyramid, n, _ in rows:
            rate = self.build_seconds(bool(keys), bool(pyramid))
            eta = None if eta is None or rate is None else eta + n * rate
        return {"clips": clips, "hours": round(sum(r[3] for r in rows) / 3600.0, 3),
                "keys": sum(r[2] for r in rows if r[0]),
                "pyramid": sum(r[2] for r in rows if r[1]),
                "eta_seconds": round(eta, 1) if eta is not None else None}

    def build_seconds(self, keys: bool | None = None, pyramid: bool | None = None
                      ) -> float | None:
        """Mean wall seconds per clip of the latest :data:`ETA_WINDOW` builds with this
        ``keys``/``pyramid`` work (``None``: any), falling back to builds of any kind;
        ``None`` when nothing was built yet."""
        for where, args in ((" WHERE keys = ? AND pyramid = ?", [int(bool(keys)),
                                                                  int(bool(pyramid))]),
                            ("", [])):
            if where and (keys is None or pyramid is None):
                continue
            row = self.db.execute(
                f"SELECT avg(seconds), count(*) FROM (SELECT seconds FROM builds{where} "
                "ORDER BY id DESC LIMIT ?)", [*args, ETA_WINDOW]).fetchone()
            if row[1]:
                return float(row[0])
        return None

    def complete_build(self, item: QueueItem, result: BuildResult) -> bool:
        """Store one clip's LLM tier and remove its queue row in ONE transaction: the keys
        and their vectors, fact nodes (vectors, FTS, fact→clip links), clip node, relational
        links, the clip's FTS row and entities rebuilt with them, and a ``builds`` row.
        False (nothing written) when the clip is no longer queued — another build stored it."""
        with self._write():
            if not self.db.execute("SELECT 1 FROM build_queue WHERE clip_id = ?",
                                   (item.clip_id,)).fetchone():
                return False
            clip_end = item.t_end
            self._add_keys(item.clip_id, clip_end, result.keys, result.key_vectors)
            self._add_facts(item.clip_id, item.day, clip_end, result.facts,
                            result.fact_vectors)
            if result.clip_node is not None:
                self.db.execute("INSERT INTO nodes_clip(clip_id, summary, scene, origin) "
                                "VALUES(?,?,?,?)", (item.clip_id, *result.clip_node))
            if result.links:
                self.add_relational_links([(a.id, b, r) for a, b, r in result.links])
            self._reindex_clip(item)
            self.db.execute(
                "INSERT INTO builds(clip_id, keys, pyramid, seconds, built_at) VALUES(?,?,?,?,?)",
                (item.clip_id, int(item.keys), int(item.pyramid), float(result.seconds),
                 time.time()))
            self.db.execute("DELETE FROM build_queue WHERE clip_id = ?", (item.clip_id,))
            return True

    def _reindex_clip(self, item: QueueItem) -> None:
        """The clip's FTS row and entity rows again, from what is stored now (its keys and
        facts included), as :meth:`store_clip` writes them."""
        cid = item.clip_id
        caption, transcript = self.db.execute(
            "SELECT caption, transcript FROM clips WHERE id = ?", (cid,)).fetchone()
        keys = {t: (text, o) for t, text, o in self.db.execute(
            "SELECT type, text, origin FROM keys WHERE clip_id = ? ORDER BY id", (cid,))}
        facts = self.facts_of([cid])[cid]
        self.db.execute("DELETE FROM clip_text WHERE rowid = ?", (cid,))
        self._index_clip_text(cid, caption, transcript, keys, facts)
        self.db.execute("DELETE FROM entities WHERE clip_id = ?", (cid,))
        index_clip_entities(self.db, cid, item.t_start, item.t_end, caption, transcript,
                            {k: t for k, (t, _) in keys.items()},
                            [n for f in facts for n in f.names])
