"""Names in retrieval (issue 43 item 5): a question or search that names a person the
character memory knows ranks the clips that person was seen or heard in first — from the
appearances, not from the captions' words (``edge search "Alice"`` finds Alice's clips
even where no caption says her name)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from edge.recall.retrieval import ScoredClip
from edge.store import Memory
from edge.store.people_read import Appearance, Person
from edge.timeline import TimeWindow

from .citations import content_stems


def named_people(memory: Memory, text: str) -> list[Person]:
    """The named identities ``text`` mentions: by whole name (any case), or by a first or
    last name no other identity shares, written capitalised as a name is ("Kit", not the
    "kit" of "first aid kit"; whole words, ``'s`` allowed)."""
    if not memory.people_ready():
        return []
    people = [p for p in memory.persons() if p.name]
    low = text.lower()
    words: dict[str, list[Person]] = {}
    for p in people:
        parts = p.name.lower().split()
        for w in {parts[0], parts[-1]}:
            words.setdefault(w, []).append(p)
    found: dict[int, Person] = {}
    for p in people:
        if _has(low, p.name.lower()):
            found[p.id] = p
    for w, ps in words.items():
        if len(ps) == 1 and len(w) >= 3 and _has(text, w[0].upper() + w[1:]):
            found.setdefault(ps[0].id, ps[0])
    return list(found.values())


def _has(text: str, phrase: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(phrase)}(?:['\u2019]s)?(?!\w)", text) is not None


def with_people(memory: Memory, text: str, scope: TimeWindow,
                anchors: Sequence[ScoredClip], top_n: int) -> list[ScoredClip]:
    """``anchors`` (a round's ranking, best first) with the clips of the people ``text``
    names (:func:`named_people`) in ``scope`` put first. When ``text`` is only the name(s),
    all their clips, latest first (``key_type`` ``face``/``voice``), then the rest;
    otherwise the ranked clips they appear in, then their other clips (score 0) and the
    rest alternating. Unchanged when nobody known is named; ``top_n`` at most."""
    people = named_people(memory, text)
    if not people:
        return list(anchors)
    kinds: dict[int, str] = {}
    for p in people:
        for a in memory.appearances(p.id):
            if in_scope(a, scope):
                kinds.setdefault(a.clip_id, a.kind)
    if not kinds:
        return list(anchors)
    rest = [a for a in anchors if a.clip_id not in kinds]
    name_words = {w for p in people for w in content_stems(p.name or "")}
    if set(content_stems(text)) <= name_words:  # just the name: all their clips, latest first
        score = {a.clip_id: a.score for a in anchors}
        clips = sorted(memory.clips(list(kinds)).values(), key=lambda c: -c.t_start)
        return ([ScoredClip(c.id, score.get(c.id, 0.0), kinds[c.id]) for c in clips]
                + rest)[:top_n]
    first = [a for a in anchors if a.clip_id in kinds]
    ranked = {a.clip_id for a in first}
    clips = memory.clips([c for c in kinds if c not in ranked])
    extra = [ScoredClip(c.id, 0.0, kinds[c.id])
             for c in sorted(clips.values(), key=lambda c: -c.t_start)]
    mixed = [x for pair in zip(extra, rest) for x in pair]
    tail = extra[len(rest):] + rest[len(extra):]
    return (first + mixed + tail)[:top_n]


def unseen_note(memory: Memory, text: str, scope: TimeWindow) -> str:
    """A note for a search that names known people (:func:`named_people`) not seen or heard
    in ``scope`` — "Kit Harington is known (enrolled) but not seen or heard in the clips
    searched; these moments only match the words" — so that unrelated clips are not read as
    theirs; ``""`` when every one named was, or nobody known is named."""
    unseen = [p for p in named_people(memory, text)
              if not any(in_scope(a, scope) for a in memory.appearances(p.id))]
    if not unseen:
        return ""
    names = " and ".join(p.name for p in unseen)
    verb = "is" if len(unseen) == 1 else "are"
    return (f"{names} {verb} known (enrolled) but not seen or heard in the clips searched; "
            "these moments only match the words")


def in_scope(a: Appearance, scope: TimeWindow) -> bool:
    """Whether the clip appearance ``a`` falls inside ``scope`` (timeline seconds; an open
    side counts); an enrolled appearance (no clip) never does."""
    if a.clip_id is None or a.at is None:
        return False
    return ((scope.start is None or a.at >= scope.start)
            and (scope.end is None or a.at <= scope.end))
