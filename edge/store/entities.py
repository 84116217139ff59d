"""The entity-time index (migration m006): one row per ``(entity, kind, clip)`` with the
clip's times — people, proper names, objects and places per clip (EGAgent's entity scene
graph, in SQL). Rows are written with their clip (:meth:`~edge.store.Memory.store_clip`, one
transaction) and filled for the clips of an older memory when m006 is applied. Extraction
is :func:`edge.store.entity_extract.extract_entities` (rules, no model); the questions asked of it
are in :mod:`edge.recall.entities`. A mixin of :class:`edge.store.Memory` (uses ``self.db``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from edge.store.entity_extract import extract_entities
from edge.store.scope import time_scope


@dataclass(frozen=True)
class EntityRow:
    """One row of the index: ``entity`` (lowercased), ``kind`` (person, name, object,
    place), the ``clip_id`` and its ``t_start``/``t_end`` (timeline seconds), ``count``
    (mentions in the clip)."""

    entity: str
    kind: str
    clip_id: int
    t_start: float
    t_end: float
    count: int


_INSERT = ("INSERT OR REPLACE INTO entities(entity, kind, clip_id, t_start, t_end, count) "
           "VALUES(?,?,?,?,?,?)")


def index_clip_entities(db, clip_id: int, t_start: float, t_end: float, caption: str,
                        transcript: str, keys: Mapping[str, str],
                        names: Iterable[str] = ()) -> int:
    """Extract the entities of one clip
    (:func:`edge.store.entity_extract.extract_entities`) and insert
    their rows through the apsw connection ``db`` (inside the caller's transaction); the
    number of rows written. ``keys``: key type → text; ``names``: people named by the memory
    LLM's fact nodes."""
    mentions = extract_entities(caption, transcript, keys, names)
    db.executemany(_INSERT, [(m.entity, m.kind, clip_id, t_start, t_end, m.count)
                             for m in mentions])
    return len(mentions)


def fill_entities(db) -> int:
    """(Re)build the whole index from the stored clips, their keys and their fact nodes'
    names, through the apsw connection ``db`` inside the caller's transaction: clears the
    table first. Returns the rows written. Used by migration m006 on an older memory and by
    :meth:`EntityIndex.reindex_entities`."""
    db.execute("DELETE FROM entities")
    keys: dict[int, dict[str, str]] = {}
    for clip_id, ktype, text in db.execute(
            "SELECT clip_id, type, text FROM keys WHERE type != 'caption'"):
        keys.setdefault(clip_id, {})[ktype] = text
    names: dict[int, list[str]] = {}
    for clip_id, listed in db.execute("SELECT clip_id, names FROM facts WHERE names != '[]'"):
        names.setdefault(clip_id, []).extend(json.loads(listed))
    rows = 0
    for clip_id, t0, t1, caption, transcript in db.execute(
            "SELECT id, t_start, t_end, caption, transcript FROM clips").fetchall():
        rows += index_clip_entities(db, clip_id, t0, t1, caption, transcript,
                                    keys.get(clip_id, {}), names.get(clip_id, ()))
    return rows


class EntityIndex:
    """Reading (and rebuilding) the ``entities`` table."""

    def entity_rows(self, entities: Sequence[str], *, kinds: Sequence[str] | None = None,
                    before: float | None = None, after: float | None = None
                    ) -> list[EntityRow]:
        """Rows of the (lowercased) ``entities`` for clips ending in ``(after, before]``
        (timeline seconds), of ``kinds`` (all when ``None``), in timeline order."""
        if not entities:
            return []
        scope, args = time_scope("t_end", before=before, after=after)
        sql = (f"SELECT entity, kind, clip_id, t_start, t_end, count FROM entities "
               f"WHERE entity IN ({','.join('?' * len(entities))}){scope}")
        params: list = [*entities, *args]
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params += list(kinds)
        sql += " ORDER BY t_start, clip_id, entity"
        return [EntityRow(*r) for r in self.db.execute(sql, params)]

    def entity_vocabulary(self) -> dict[str, dict[str, int]]:
        """Every indexed entity → ``{kind: clips holding it as that kind}``."""
        out: dict[str, dict[str, int]] = {}
        for entity, kind, n in self.db.execute(
                "SELECT entity, kind, count(*) FROM entities GROUP BY entity, kind"):
            out.setdefault(entity, {})[kind] = n
        return out

    def known_entities(self, candidates: Iterable[str]) -> set[str]:
        """Those of the (lowercased) ``candidates`` that are indexed, of any kind (one
        indexed lookup each, not a scan of the vocabulary)."""
        cands = list(dict.fromkeys(candidates))
        if not cands:
            return set()
        return {r[0] for r in self.db.execute(
            f"SELECT DISTINCT entity FROM entities WHERE entity IN "
            f"({','.join('?' * len(cands))})", cands)}

    def entities_of(self, clip_ids: Iterable[int]) -> list[EntityRow]:
        """The rows of the given clips, in timeline order."""
        ids = list(dict.fromkeys(int(i) for i in clip_ids))
        if not ids:
            return []
        return [EntityRow(*r) for r in self.db.execute(
            "SELECT entity, kind, clip_id, t_start, t_end, count FROM entities "
            f"WHERE clip_id IN ({','.join('?' * len(ids))}) ORDER BY t_start, clip_id, entity",
            ids)]

    def reindex_entities(self) -> int:
        """Rebuild the index from every stored clip in one write transaction (e.g. after
        the extraction rules changed); returns the rows written."""
        with self._write():
            return fill_entities(self.db)
