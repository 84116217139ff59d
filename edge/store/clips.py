"""Sources and clips: registering an ingested file, storing a clip with its keys, key
vectors, fact nodes, clip node and FTS text in one transaction, and reading clips back by id,
by time and by day. A mixin of :class:`edge.store.Memory` (uses ``self.db``, ``self._write``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from edge.store.entities import index_clip_entities
from edge.store.records import (
    CLIP_COLS,
    CLIP_COLS_C,
    Clip,
    Fact,
    Source,
    clip_from_row,
    id_marks,
)
from edge.store.scope import day_of, time_scope

FOOTAGE_GAP_SECONDS = 30.0
"""A break of this many seconds or more between two clips ends their footage: ±Δ
neighbors never cross it (EgoLife caption records are a few seconds apart; a missing
30 s clip is a break)."""
SEAM_SECONDS = 1.0
"""How far a file may start before the previous one's end (or its clips overlap) and still
continue it: start times from metadata are rounded, clips are cut at keyframes."""
_SOURCE_COLS = "id, path, sha256, kind, clock, t_start, duration, n_clips, status, start_from"


class ClipStore:
    """Sources (files ingested) and clips (the timeline's units, with caption, transcript,
    keyframes and the MERIT keys)."""

    # -- sources
    def source_by_hash(self, sha256: str) -> Source | None:
        """The source whose content hash is ``sha256`` (hex), or ``None``."""
        row = self.db.execute(
            f"SELECT {_SOURCE_COLS} FROM sources WHERE sha256 = ?", (sha256,)).fetchone()
        return Source(*row) if row else None

    def sources_overlapping(self, start: float, end: float) -> list[Source]:
        """Sources whose span ``[t_start, t_start + duration)`` meets ``[start, end)``
        (timeline seconds), earliest first."""
        return [Source(*r) for r in self.db.execute(
            f"SELECT {_SOURCE_COLS} FROM sources WHERE t_start < ? AND t_start + duration > ?"
            " ORDER BY t_start, id", (float(end), float(start)))]

    def registering(self):
        """A write transaction (BEGIN IMMEDIATE) to look a source up and add it as one step:
        a second process registering the same content waits, then finds this one's row
        (:func:`edge.ingest.memory_writer.register_or_resume`). Rolls back on any exception."""
        return self._write()

    def add_source(self, *, path: str, sha256: str, kind: str, clock: str, start_from: str,
                   t_start: float, duration: float, n_clips: int, info: dict) -> int:
        """Register a source as ``ingesting``; returns its id. ``t_start`` is timeline
        seconds, ``duration`` seconds; ``info`` is stored as JSON."""
        with self._write():
            self.db.execute(
                "INSERT INTO sources(path, sha256, kind, clock, start_from, t_start, duration,"
                " n_clips, status, added_at, info) VALUES(?,?,?,?,?,?,?,?,'ingesting',?,?)",
                (path, sha256, kind, clock, start_from, t_start, duration, n_clips, time.time(),
                 json.dumps(info)),
            )
            return self.db.last_insert_rowid()

    def finish_source(self, source_id: int) -> None:
        """Mark a source ``done``: every clip of it is stored."""
        with self._write():
            self.db.execute("UPDATE sources SET status = 'done' WHERE id = ?", (source_id,))

    def clip_indices(self, source_id: int) -> set[int]:
        """Indices of the clips of ``source_id`` already stored (for resuming)."""
        return {r[0] for r in self.db.execute("SELECT idx FROM clips WHERE source_id = ?",
                                              (source_id,))}

    def done_source_paths(self) -> set[str]:
        """Paths of the sources whose every clip is stored (status ``done``)."""
        return {r[0] for r in self.db.execute("SELECT path FROM sources WHERE status = 'done'")}

    def clip_index_map(self, source_id: int) -> dict[int, int]:
        """``{clip id: index of the clip within its source}`` for ``source_id``."""
        return dict(self.db.execute("SELECT id, idx FROM clips WHERE source_id = ?",
                                    (source_id,)))

    def has_clip(self, source_id: int, idx: int) -> bool:
        """Whether clip ``idx`` of ``source_id`` is stored (by this or another process)."""
        return self.db.execute("SELECT 1 FROM clips WHERE source_id = ? AND idx = ?",
                               (source_id, idx)).fetchone() is not None

    # -- writing a clip
    def add_clip(self, **clip: Any) -> int:
        """:meth:`store_clip` (same keyword arguments), returning only the clip's id, new or
        already stored."""
        return self.store_clip(**clip)[0]

    def store_clip(
        self,
        *,
        source_id: int,
        idx: int,
        t_start: float,
        t_end: float,
        day: str,
        day_start: float,
        caption: str,
        transcript: str,
        keyframes: Sequence[str],
        signals: dict,
        keys: dict[str, tuple[str, str]],
        vectors: dict[str, np.ndarray],
        facts: Sequence[Fact] = (),
        fact_vectors: np.ndarray | None = None,
        clip_node: tuple[str, str, str] | None = None,
        build: tuple[bool, bool] = (False, False),
        with_clip: Callable[[int], None] | None = None,
    ) -> tuple[int, bool]:
        """Store one clip with its keys and key vectors in ONE transaction; returns its id
        and whether this call stored it.

        ``t_start``/``t_end``/``day_start`` are timeline seconds. ``keys`` maps a type in
        :data:`INDEX_TYPES` to ``(text, origin)``; ``vectors`` maps the same types to float32
        unit vectors of the active space's width (:meth:`vector_space`: 384-d MiniLM,
        768-d or a Matryoshka cut of EmbeddingGemma). A clip already stored under
        ``(source_id, idx)`` — e.g. by a second ingest of the same file running at the
        same time — is left as it is: ``(its id, False)``.

        PyraVid pyramid (§3.2), in the same transaction: ``facts`` with their
        ``(len(facts), dim)`` ``fact_vectors`` (fact rows, fact_vec, fact_text FTS, and a
        hierarchical fact→clip link each; each ``Fact`` gets its ``id``/``clip_id``) and
        ``clip_node = (summary, scene, origin)``. The clip's entities (people, objects,
        places: :mod:`edge.store.entities`) are indexed in the same transaction. ``build``:
        ``(keys, pyramid)`` still to build by the deferred LLM tier, queued in the same
        transaction (:mod:`edge.store.queue`; the real-time tier). ``with_clip(clip_id)``
        runs last in it, for a clip this call stores (its people: :mod:`edge.people.online`).
        Raises ``ValueError`` when a vector has the wrong shape, and what ``with_clip``
        raises: nothing is stored then.
        """
        with self._write():
            row = self.db.execute("SELECT id FROM clips WHERE source_id = ? AND idx = ?",
                                  (source_id, idx)).fetchone()
            if row:
                return row[0], False
            clip_id = self._insert_clip(source_id, idx, t_start, t_end, day, day_start,
                                        caption, transcript, keyframes, signals)
            self._add_keys(clip_id, t_end, keys, vectors)
            self._add_facts(clip_id, day, t_end, facts, fact_vectors)
            if clip_node is not None:
                self.db.execute("INSERT INTO nodes_clip(clip_id, summary, scene, origin) "
                                "VALUES(?,?,?,?)", (clip_id, *clip_node))
            self._index_clip(clip_id, t_start, t_end, caption, transcript, keys, facts)
            self._enqueue(clip_id, *build)
            if with_clip is not None:
                with_clip(clip_id)
            return clip_id, True

    def _insert_clip(self, source_id: int, idx: int, t_start: float, t_end: float, day: str,
                     day_start: float, caption: str, transcript: str,
                     keyframes: Sequence[str], signals: dict) -> int:
        """The clip's own row (the caller's transaction); its id."""
        self.db.execute(
            "INSERT INTO clips(source_id, idx, t_start, t_end, day, day_start, caption,"
            " transcript, keyframes, signals, added_at) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
            (source_id, idx, t_start, t_end, day, day_start, caption, transcript,
             json.dumps(list(keyframes)), json.dumps(signals, ensure_ascii=False),
             time.time()))
        return self.db.last_insert_rowid()

    def _index_clip(self, clip_id: int, t_start: float, t_end: float, caption: str,
                    transcript: str, keys: dict[str, tuple[str, str]],
                    facts: Sequence[Fact]) -> None:
        """Index a clip being stored (the caller's transaction): its text for BM25 and its
        entities (people named by ``facts`` included) for the entity-time index."""
        self._index_clip_text(clip_id, caption, transcript, keys, facts)
        index_clip_entities(self.db, clip_id, t_start, t_end, caption, transcript,
                            {k: t for k, (t, _) in keys.items()},
                            [n for f in facts for n in f.names])

    def _add_keys(self, clip_id: int, clip_end: float, keys: dict[str, tuple[str, str]],
                  vectors: dict[str, np.ndarray]) -> None:
        """Each key's row and its vector in the active space's key table (``key_vec``
        before a re-embedding; partitions = key type and the timeline day of the clip's
        end, metadata = the clip's end for time-scoped KNN). ``ValueError`` on a vector
        not of the space's width (``(dim,)``)."""
        space = self.vector_space()
        for ktype, (text, origin) in keys.items():
            self.db.execute(
                "INSERT INTO keys(clip_id, type, text, origin) VALUES(?,?,?,?)",
                (clip_id, ktype, text, origin),
            )
            key_id = self.db.last_insert_rowid()
            vec = np.asarray(vectors[ktype], dtype=np.float32)
            if vec.shape != (space.dim,):
                raise ValueError(f"vector for {ktype} has shape {vec.shape}, "
                                 f"expected ({space.dim},) ({space.embedder}'s vectors)")
            self.db.execute(
                f"INSERT INTO {space.key_table}(key_id, key_type, day, clip_end, embedding)"
                " VALUES(?,?,?,?,?)",
                (key_id, ktype, day_of(clip_end), float(clip_end), vec.tobytes()),
            )

    def _index_clip_text(self, clip_id: int, caption: str, transcript: str,
                         keys: dict[str, tuple[str, str]], facts: Sequence[Fact]) -> None:
        """The clip's row in the ``clip_text`` FTS5 index: caption, transcript, the key texts
        (not the caption key) and the fact texts, each joined by `` | ``."""
        self.db.execute(
            "INSERT INTO clip_text(rowid, caption, transcript, keys, facts)"
            " VALUES(?,?,?,?,?)",
            (clip_id, caption, transcript,
             " | ".join(t for k, (t, _) in keys.items() if k != "caption"),
             " | ".join(f.text for f in facts)),
        )

    # -- reading clips
    def clips(self, ids: Iterable[int], *, with_keys: bool = False) -> dict[int, Clip]:
        """Clips by id (missing ids are absent from the result); ``with_keys`` fills
        ``Clip.keys`` (type → text)."""
        ids, marks = id_marks(ids)
        if not ids:
            return {}
        out = {
            r[0]: clip_from_row(r)
            for r in self.db.execute(
                f"SELECT {CLIP_COLS} FROM clips WHERE id IN ({marks})", ids)
        }
        if with_keys:
            for clip_id, ktype, text in self.db.execute(
                f"SELECT clip_id, type, text FROM keys WHERE clip_id IN ({marks})", ids
            ):
                out[clip_id].keys[ktype] = text
        return out

    def all_clips(self) -> list[Clip]:
        """Every clip in timeline order."""
        return [clip_from_row(r) for r in self.db.execute(
            f"SELECT {CLIP_COLS} FROM clips ORDER BY t_start, id")]

    def neighbors(self, clip: Clip, delta: int) -> tuple[list[Clip], list[Clip]]:
        """Up to ``delta`` clips before and after ``clip`` in its continuous footage, nearest
        first (MERIT Eq. 8 window).

        A step goes to the next (previous) clip of the same source when it is the very next
        index, on the same day, less than :data:`FOOTAGE_GAP_SECONDS` away; past the last
        (first) clip of a source it goes on into ONE other source that continues it — starts
        where this one ends (±:data:`SEAM_SECONDS`), without overlapping it — so consecutive
        files of one recording connect. A gap in the footage, or two sources that could
        continue it, end the window: clips of overlapping sources (two cameras at the same
        time, copies given the same start) are never mixed.
        """
        if delta <= 0:
            return [], []
        return self._walk(clip, delta, -1), self._walk(clip, delta, 1)

    def _walk(self, clip: Clip, delta: int, step: int) -> list[Clip]:
        """Up to ``delta`` clips from ``clip`` in direction ``step`` (±1) of its footage."""
        out: list[Clip] = []
        while len(out) < delta:
            row = self.db.execute(
                f"SELECT {CLIP_COLS} FROM clips WHERE source_id = ? AND idx "
                f"{'>' if step > 0 else '<'} ? ORDER BY idx {'' if step > 0 else 'DESC'} "
                "LIMIT 1", (clip.source_id, clip.idx)).fetchone()
            nxt = clip_from_row(row) if row else self._seam(clip, step)
            if nxt is None or not _continues(clip, nxt, step):
                break
            out.append(nxt)
            clip = nxt
        return out

    def _seam(self, clip: Clip, step: int, *, both_ways: bool = True) -> Clip | None:
        """The clip of another source that continues ``clip``'s source past its last
        (``step`` 1) or before its first (``step`` -1) clip, or ``None`` when no source, or
        more than one, does — on either side of the seam (``both_ways``)."""
        lo, hi = self.db.execute(
            "SELECT min(s.t_start, min(c.t_start)), max(s.t_start + s.duration, max(c.t_end)) "
            "FROM sources s JOIN clips c ON c.source_id = s.id WHERE s.id = ?",
            (clip.source_id,)).fetchone()
        if step > 0:  # the first clip of a source that starts where this one ends
            rows = self.db.execute(
                f"SELECT {CLIP_COLS_C} FROM clips c JOIN sources s ON s.id = c.source_id "
                "WHERE c.day = ? AND c.source_id != ? AND c.t_start >= ? AND c.t_start < ? "
                "AND s.t_start >= ? "
                "AND c.idx = (SELECT min(idx) FROM clips WHERE source_id = c.source_id) "
                "LIMIT 2", (clip.day, clip.source_id, clip.t_end - SEAM_SECONDS,
                            clip.t_end + FOOTAGE_GAP_SECONDS, hi - SEAM_SECONDS)).fetchall()
        else:  # the last clip of a source that ends where this one starts
            rows = self.db.execute(
                f"SELECT {CLIP_COLS_C} FROM clips c JOIN sources s ON s.id = c.source_id "
                "WHERE c.day = ? AND c.source_id != ? AND c.t_start < ? AND c.t_end > ? "
                "AND c.t_end <= ? AND s.t_start + s.duration <= ? "
                "AND c.idx = (SELECT max(idx) FROM clips WHERE source_id = c.source_id) "
                "LIMIT 2", (clip.day, clip.source_id, clip.t_start,
                            clip.t_start - FOOTAGE_GAP_SECONDS, clip.t_start + SEAM_SECONDS,
                            lo + SEAM_SECONDS)).fetchall()
        if len(rows) != 1:
            return None
        other = clip_from_row(rows[0])
        if both_ways:
            back = self._seam(other, -step, both_ways=False)
            return other if back is not None and back.id == clip.id else None
        return other

    def count_clips(self, before: float | None = None, after: float | None = None) -> int:
        """Clips that end in ``(after, before]`` (timeline seconds, either open)."""
        scope, args = time_scope("t_end", before=before, after=after)
        return self.db.execute(f"SELECT count(*) FROM clips WHERE 1{scope}",
                               args).fetchone()[0]

    def find_clip(self, t_start: float, t_end: float, caption: str) -> int | None:
        """The id of a stored clip with exactly these times and caption, from any source."""
        row = self.db.execute(
            "SELECT id FROM clips WHERE t_start = ? AND t_end = ? AND caption = ? LIMIT 1",
            (t_start, t_end, caption)).fetchone()
        return row[0] if row else None

    def clips_between(self, start: float, end: float) -> list[Clip]:
        """Clips that start in ``[start, end)`` (timeline seconds), in timeline order."""
        return [clip_from_row(r) for r in self.db.execute(
            f"SELECT {CLIP_COLS} FROM clips WHERE t_start >= ? AND t_start < ? "
            "ORDER BY t_start, id", (float(start), float(end)))]

    def clips_ending_in(self, start: float | None, end: float | None) -> list[Clip]:
        """Clips that end in ``(start, end]`` (timeline seconds; ``None`` = open), in
        timeline order — a time scope's clips (:class:`edge.timeline.TimeWindow`)."""
        lo = float("-inf") if start is None else float(start)
        hi = float("inf") if end is None else float(end)
        return [clip_from_row(r) for r in self.db.execute(
            f"SELECT {CLIP_COLS} FROM clips WHERE t_end > ? AND t_end <= ? "
            "ORDER BY t_start, id", (lo, hi))]

    def days(self) -> list[str]:
        """Day labels that hold clips, in timeline order (by each day's first clip)."""
        return [r[0] for r in self.db.execute(
            "SELECT day FROM clips GROUP BY day ORDER BY min(t_start)")]

    def activity_by_hour(self) -> list[tuple[str, float, int, int]]:
        """Clips per hour of each day, for browsing: ``(day, day_start, hour, clips)`` rows in
        timeline order, only hours that hold a clip. ``hour`` is the hour of day (0–23, or more
        for a clip past midnight on the EgoLife day clock) of each clip's start."""
        return [(day, day_start, int(hour), n) for day, day_start, hour, n in self.db.execute(
            "SELECT day, min(day_start), CAST((t_start - day_start) / 3600 AS INTEGER) AS h,"
            " count(*) FROM clips GROUP BY day, h ORDER BY min(t_start)")]


def _continues(clip: Clip, nxt: Clip, step: int) -> bool:
    """Whether ``nxt``, the clip next to ``clip`` in direction ``step`` (±1), is the same
    footage: same day, and within one source the very next index less than
    :data:`FOOTAGE_GAP_SECONDS` away (a seam into another source is checked by its query)."""
    if nxt.day != clip.day:
        return False
    if nxt.source_id != clip.source_id:
        return True
    gap = nxt.t_start - clip.t_end if step > 0 else clip.t_start - nxt.t_end
    return nxt.idx == clip.idx + step and gap < FOOTAGE_GAP_SECONDS
