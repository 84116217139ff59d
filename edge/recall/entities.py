"""Structural questions over the entity-time index: who, with whom, first, last, how often.

The index (:mod:`edge.store.entities`, migration m006) holds the people, proper names,
objects and places of every clip with its times, extracted by rules at ingest
(:mod:`edge.store.entity_extract`). EGAgent (Meta 2026) answers EgoLifeQA from such an entity
scene graph in SQL; here it gives the solver dated lists and counts, and one retrieval lever
(:func:`entity_retrieve`) to fuse with round 1. Entities are lowercased strings (``alice``,
``power bank``); every query takes the clip scope ``(after, before]`` of the rest of
retrieval (clips ending there, timeline seconds).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from edge.recall.retrieval import STOPWORDS, ScoredClip
from edge.store import EntityRow, Memory
from edge.store.entity_extract import COMMON_WORDS, KINDS, extract_entities, norm_entity, singular
from models.repeats import norm_words

__all__ = [
    "KINDS", "Episode", "clips_with", "entity_retrieve", "episodes", "extract_entities",
    "first_seen", "last_seen", "people", "people_around", "question_entities",
]

BM25_K1 = 1.2
"""Term-frequency saturation of :func:`entity_retrieve` (BM25's k1): a clip naming Tasha
five times scores above one naming her once, but not five times as high."""


@dataclass(frozen=True)
class Episode:
    """A run of clips holding ``entity``: consecutive clips of one day on the timeline (at
    most ``bridge`` clips without it between two with it; :func:`episodes`). ``t_start``/
    ``t_end``: timeline seconds of its first clip's start and last clip's end; ``day``:
    the day label; ``clip_ids`` in timeline order."""

    entity: str
    day: str
    t_start: float
    t_end: float
    clip_ids: tuple[int, ...]


def clips_with(memory: Memory, entity: str, *, before: float | None = None,
               after: float | None = None, kinds: Sequence[str] | None = None
               ) -> list[EntityRow]:
    """The index rows of ``entity`` (any case; ``'s`` dropped) in clips ending in
    ``(after, before]``, of ``kinds`` (default all), in timeline order — one per clip and
    kind (a name can be a ``person`` in one clip and a ``name`` in another)."""
    return memory.entity_rows([norm_entity(entity)], kinds=kinds, before=before,
                              after=after)


def first_seen(memory: Memory, entity: str, *, before: float | None = None,
               after: float | None = None) -> EntityRow | None:
    """The earliest row of ``entity`` in scope (its clip and times), or ``None``."""
    rows = clips_with(memory, entity, before=before, after=after)
    return rows[0] if rows else None


def last_seen(memory: Memory, entity: str, *, before: float | None = None,
              after: float | None = None) -> EntityRow | None:
    """The latest row of ``entity`` in scope (by its clip's start), or ``None``."""
    rows = clips_with(memory, entity, before=before, after=after)
    return rows[-1] if rows else None


def episodes(memory: Memory, entity: str, *, before: float | None = None,
             after: float | None = None, bridge: int = 1) -> list[Episode]:
    """The episodes of ``entity`` in scope, in timeline order: its clips grouped into runs
    of consecutive clips of one day, allowing ``bridge`` clips (≥ 0) without a mention inside
    a run (a person silent for one clip is still there). ``len(episodes(...))`` is how often.
    Raises ``ValueError`` for a negative ``bridge``."""
    if bridge < 0:
        raise ValueError("bridge must be 0 or more clips")
    rows = clips_with(memory, entity, before=before, after=after)
    ids = list(dict.fromkeys(r.clip_id for r in rows))
    if not ids:
        return []
    order = {cid: (pos, day) for pos, (cid, day) in enumerate(memory.db.execute(
        "SELECT id, day FROM clips ORDER BY t_start, id"))}
    times = {r.clip_id: (r.t_start, r.t_end) for r in rows}
    ids.sort(key=lambda c: order[c][0])
    runs: list[list[int]] = [[ids[0]]]
    for cid in ids[1:]:
        prev = runs[-1][-1]
        if order[cid][1] == order[prev][1] and order[cid][0] - order[prev][0] <= bridge + 1:
            runs[-1].append(cid)
        else:
            runs.append([cid])
    name = norm_entity(entity)
    return [Episode(name, order[run[0]][1], times[run[0]][0],
                    max(times[c][1] for c in run), tuple(run)) for run in runs]


def people(memory: Memory, *, min_clips: int = 2) -> list[tuple[str, int]]:
    """The people of the memory, most often seen first: ``(name, clips)`` for every name
    held as a ``person`` (speaking or acting) in at least ``min_clips`` clips, and in more
    clips than it is indexed as an object or place ("Kitchen" opening a sentence once is
    not a person); ``clips`` counts every clip naming them (as person or name)."""
    out = []
    for entity, kinds in memory.entity_vocabulary().items():
        things = kinds.get("object", 0) + kinds.get("place", 0)
        if kinds.get("person", 0) >= max(min_clips, things + 1):
            out.append((entity, kinds["person"] + kinds.get("name", 0)))
    return sorted(out, key=lambda p: (-p[1], p[0]))


def people_around(memory: Memory, clip_ids: Iterable[int], *, delta: int = 2,
                  before: float | None = None) -> list[tuple[str, int]]:
    """Who was there: the people (:func:`people`, ``min_clips=1``) named in the given clips and the
    ``delta`` clips either side of each in their footage (:meth:`Memory.neighbors`),
    ``(name, clips naming them)`` most first — "who was with me when X" for the clips of X.
    Clips ending after ``before`` (the query time, timeline seconds) are left out."""
    known = dict(people(memory, min_clips=1))
    window: set[int] = set()
    for clip in memory.clips(clip_ids).values():
        prev, nxt = memory.neighbors(clip, delta)
        window |= {c.id for c in (*prev, clip, *nxt) if before is None or c.t_end <= before}
    seen = Counter()
    for names in _by_clip(memory.entities_of(window)).values():
        seen.update(n for n in names if n in known)
    return sorted(seen.items(), key=lambda p: (-p[1], p[0]))


def _by_clip(rows: Iterable[EntityRow]) -> dict[int, set[str]]:
    """Entities per clip id."""
    out: dict[int, set[str]] = {}
    for r in rows:
        out.setdefault(r.clip_id, set()).add(r.entity)
    return out


def question_entities(memory: Memory, question: str) -> list[str]:
    """The indexed entities a question names, in the question's order: its runs of one to
    three words (last word made singular, as objects are stored) that are entities of the
    memory, longest first ("power bank" hides "bank"), less common and stop words. The
    wearer ("I", "me") is never one."""
    words = norm_words(question.replace("’", "'"))
    runs = []  # (start, size, candidates), longest runs first
    for size in (3, 2, 1):
        for i in range(len(words) - size + 1):
            run = words[i:i + size]
            if size == 1 and (run[0] in COMMON_WORDS or run[0] in STOPWORDS):
                continue
            runs.append((i, size, (" ".join(run), " ".join([*run[:-1], singular(run[-1])]))))
    known = memory.known_entities(c for _, _, cands in runs for c in cands)
    taken = [False] * len(words)
    found: list[tuple[int, str]] = []
    for i, size, cands in runs:
        hit = next((c for c in cands if c in known), None)
        if hit is not None and not any(taken[i:i + size]):
            found.append((i, hit))
            taken[i:i + size] = [True] * size
    return list(dict.fromkeys(e for _, e in sorted(found)))


def entity_retrieve(memory: Memory, question: str, *, top_n: int = 5,
                    before: float | None = None, after: float | None = None
                    ) -> list[ScoredClip]:
    """Clips holding the entities ``question`` names (:func:`question_entities`), best
    first, among clips ending in ``(after, before]`` (timeline seconds): a clip scores
    Σ over the question's entities it holds of BM25 idf (rarer entities count more) × a
    saturated mention count (:data:`BM25_K1`), so clips with more of them, and rarer ones,
    come first; ties go to the lower clip id. ``key_type`` is ``"entity"``. Empty when the
    question names no indexed entity."""
    names = question_entities(memory, question)
    rows = memory.entity_rows(names, before=before, after=after)
    if not rows:
        return []
    n_clips = max(1, memory.count_clips(before=before, after=after))
    mentions: dict[str, Counter] = {}
    for r in rows:
        mentions.setdefault(r.entity, Counter())[r.clip_id] += r.count
    scores: Counter = Counter()
    for per_clip in mentions.values():
        df = len(per_clip)
        idf = math.log(1 + (n_clips - df + 0.5) / (df + 0.5))
        for cid, tf in per_clip.items():
            scores[cid] += idf * tf * (BM25_K1 + 1) / (tf + BM25_K1)
    ranked = sorted(scores.items(), key=lambda s: (-s[1], s[0]))[:top_n]
    return [ScoredClip(cid, float(score), "entity") for cid, score in ranked]
