"""What the store hands out: the key types, the vector size, and one dataclass per stored
thing (source, clip, fact node, clip node, global node, link), plus the row → record
conversions the query modules share. Times are timeline seconds (:mod:`edge.timeline`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

KEY_TYPES: tuple[str, ...] = ("event", "dialogue", "object", "summary")
"""The four MERIT keys (MERIT Eq. 5)."""
INDEX_TYPES: tuple[str, ...] = (*KEY_TYPES, "caption")
"""Everything with a vector: the four keys plus the whole caption (for ablations)."""
EMBED_DIM = 384
"""Length of the vectors of a memory built before m009 (MiniLM-L6: keys, captions, facts;
float32, unit length, cosine). Since m009 each memory records its own embedder and width
(:class:`VectorSpace`)."""


@dataclass(frozen=True)
class VectorSpace:
    """One embedder's vectors in a memory: the model that wrote them (a manifest name), their
    width (float32, unit length, cosine), the vec0 tables holding the key and fact vectors,
    and its state: ``active`` (what search reads) or ``building`` (a re-embedding with
    another embedder under way: keys with ``id <= key_upto`` and facts with
    ``id <= fact_upto`` are in its tables)."""

    id: int
    embedder: str
    dim: int
    key_table: str
    fact_table: str
    state: str
    key_upto: int = 0
    fact_upto: int = 0


@dataclass
class Clip:
    """A stored clip. Times are timeline seconds (see :mod:`edge.timeline`)."""

    id: int
    source_id: int
    idx: int
    t_start: float
    t_end: float
    day: str
    day_start: float
    caption: str
    transcript: str
    keyframes: list[str] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Source:
    """An ingested file: its content hash makes re-ingesting it a no-op. ``t_start``:
    timeline seconds; ``duration``: seconds; ``start_from``: where ``t_start`` came from
    (``metadata``, ``--start``, ``mtime``, ``file``)."""

    id: int
    path: str
    sha256: str
    kind: str
    clock: str
    t_start: float
    duration: float
    n_clips: int
    status: str
    start_from: str = ""


@dataclass
class Fact:
    """A fact node (PyraVid §3.2): one fine-grained, timestamped event inside a clip.

    ``t_start``/``t_end`` are timeline seconds inside the clip; ``kind`` is action, speech,
    object, person or scene; ``origin`` is ``llm`` or ``extractive`` (cut from the caption when
    the memory LLM failed); ``keyframe`` is a path under ``<memory>.frames/`` or ``None``.
    ``id``/``clip_id`` are 0 until stored.
    """

    text: str
    kind: str
    t_start: float
    t_end: float
    origin: str
    names: list[str] = field(default_factory=list)
    keyframe: str | None = None
    id: int = 0
    clip_id: int = 0


@dataclass(frozen=True)
class ClipNode:
    """A clip node (PyraVid §3.2): the clip's summary and scene; ``origin`` llm|extractive."""

    clip_id: int
    summary: str
    scene: str
    origin: str


@dataclass(frozen=True)
class GlobalNode:
    """One version of a global node (PyraVid §3.2, App. B.3): the evolving summary of a day
    (``scope='day'``) or of everything (``scope='all'``, ``day=''``) after ``clip_count``
    clips, the last of them ending at ``t_upto`` (timeline seconds). ``origin``: ``llm``
    (the memory LLM's summary), ``verbatim`` (the previous text and the new items as they
    are: they fit the summary's word budget, so no call was made) or ``extractive`` (the
    marked fallback when the reply was unusable)."""

    id: int
    scope: str
    day: str
    version: int
    text: str
    clip_count: int
    t_upto: float
    origin: str
    updated: float


@dataclass(frozen=True)
class Link:
    """An edge of the memory graph (PyraVid §3.2 "Link Construction"): ``kind`` is
    ``hierarchical`` (fact→clip, clip→global) or ``relational`` (fact→earlier fact, and the
    clip→earlier clip links they induce, ``weight`` = number of fact links)."""

    src_kind: str
    src_id: int
    dst_kind: str
    dst_id: int
    kind: str
    weight: float
    relation: str


# ---- rows → records (package-internal) ---------------------------------------------------

_CLIP_NAMES = ("id", "source_id", "idx", "t_start", "t_end", "day", "day_start", "caption",
               "transcript", "keyframes")
CLIP_COLS = ", ".join(_CLIP_NAMES)
"""The ``clips`` columns :func:`clip_from_row` reads, in its order."""
CLIP_COLS_C = ", ".join("c." + name for name in _CLIP_NAMES)
""":data:`CLIP_COLS` for a query where ``clips`` is aliased ``c``."""
FACT_COLS = "id, clip_id, t_start, t_end, text, kind, names, keyframe, origin"
"""The ``facts`` columns :func:`fact_from_row` reads, in its order."""


def clip_from_row(row) -> Clip:
    """A :class:`Clip` (without keys) from a row of :data:`CLIP_COLS`."""
    return Clip(*row[:9], keyframes=json.loads(row[9]))


def fact_from_row(row) -> Fact:
    """A :class:`Fact` from a row of :data:`FACT_COLS`."""
    fid, cid, t0, t1, text, kind, names, kf, origin = row
    return Fact(text, kind, t0, t1, origin, json.loads(names), kf, fid, cid)


def id_marks(ids) -> tuple[list, str]:
    """Distinct ``ids`` in first-seen order and as many ``?`` marks, for ``IN (...)``."""
    ids = list(dict.fromkeys(ids))
    return ids, ",".join("?" * len(ids))
