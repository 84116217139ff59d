"""The memory writer: the one path by which sources and clips enter a memory.

Video ingest (:mod:`edge.ingest.run`), caption ingest (:mod:`edge.ingest.captions`) and the recorder
(through :func:`edge.ingest.run.ingest_paths`) all register their source with
:func:`register_or_resume` — a source is known by the SHA-256 of its bytes, so the same
content is never stored twice and a source cut short resumes clip by clip — and write each
clip with :func:`write_clip` (or :func:`write_clips` for a batch):

- without a pyramid: the four MERIT keys (from a caption file, or one memory-LLM call,
  MERIT Eq. 5), one embedder call for the keys and the caption, then the clip, its keys and
  their 384-d vectors in one transaction;
- with a :class:`~edge.build.pyramid.Pyramid`: ONE memory-LLM call for keys, fact nodes and the
  clip node (PyraVid App. B.1), one embedder call for keys, caption and facts, the clip with
  all of them and the hierarchical fact→clip links in one transaction, then the pyramid's
  relational links and global node (PyraVid App. B.3);
- the *real-time tier* (:func:`write_realtime`, :func:`write_clips_realtime`; issue 13): no
  memory-LLM call — the clip, its caption (and transcript) with the caption's 384-d vector,
  FTS text, entities by rules, and the keys a caption file gives with their vectors — and in
  the same transaction a ``build_queue`` row for what the deferred LLM tier
  (:mod:`edge.build`) must still build: the keys when not given, the pyramid when asked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge.build.keys import ClipKeys, extract_keys
from edge.build.pyramid import ClipMemory, Pyramid, extract_clip_memory
from edge.stages import StageClock
from edge.store import INDEX_TYPES, KEY_TYPES, Memory
from edge.store.embedding import memory_embedder
from edge.timeline import day_of


@dataclass
class SourceResult:
    """What happened to one input: ``status`` is ingested, resumed, skipped or failed;
    ``clips_added``: clips this run stored (not those another run stored meanwhile);
    ``duration``: its length in seconds; ``message``/``warnings``: what the user is told.
    ``start``: its start on the timeline (seconds; ``None`` when it failed first),
    ``start_from``: where that came from (``metadata``, ``--start``, ``mtime``, ``file``),
    ``placed_after``: the source it was moved after so as not to overlap it (or ``""``)."""

    path: str
    status: str
    clips_added: int = 0
    duration: float = 0.0
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    start: float | None = None
    start_from: str = ""
    placed_after: str = ""


@dataclass
class NewSource:
    """A source row to add (the columns of ``sources`` besides its hash): ``kind`` is
    ``video``, ``audio`` or ``captions``; ``clock`` the timeline it lives on
    (:mod:`edge.timeline`); ``start_from`` where ``t_start`` (timeline seconds) came from;
    ``duration`` in seconds; ``n_clips`` the clips expected; ``info`` free-form JSON;
    ``placed_after``: the path of the source a start without metadata was moved after
    (:class:`edge.ingest.source.StartClock`), kept in ``info`` too."""

    path: str
    kind: str
    clock: str
    start_from: str
    t_start: float
    duration: float
    n_clips: int
    info: dict
    placed_after: str = ""


@dataclass
class SourceState:
    """Where a source stands after :func:`register_or_resume`.

    ``status``: ``skipped`` (the same content is fully stored: nothing to do; ``known_as``
    is the path it was stored from), ``resumed`` (an earlier run stopped: ``done`` holds the
    clip indices already stored) or ``ingested`` (new). ``t_start`` (timeline seconds) and
    ``clock``: the source's origin on the timeline, as first registered; ``start_from``
    where that came from; ``placed_after`` the source it was moved after (new sources only).
    """

    source_id: int
    status: str
    t_start: float
    clock: str
    done: set[int] = field(default_factory=set)
    known_as: str = ""
    start_from: str = ""
    placed_after: str = ""

    @property
    def skipped_message(self) -> str:
        """The message for a skipped source: which stored source has the same content."""
        return f"already in memory: same content as {self.known_as}"


@dataclass(frozen=True)
class Stored:
    """A clip after the memory writer: its ``id`` and whether this call ``added`` it
    (``False``: its source already had a clip at that index, e.g. stored by a second ingest
    of the same file running at the same time)."""

    id: int
    added: bool


@dataclass
class NewClip:
    """A clip as it reaches the memory writer, before anything of it is stored.

    ``idx``: its index in the source; ``t_start``/``t_end``: timeline seconds; ``clock``: the
    source's timeline (gives the clip's day). ``keyframes``: JPEG paths relative to the
    frames folder. ``keys``: keys given with the clip (a caption file's, ``origin="file"``);
    ``None`` lets the memory LLM extract them. ``with_stored(clip_id)``: more to write in the
    clip's own transaction (its people: :func:`edge.ingest.characters.people_writer`).
    """

    source_id: int
    idx: int
    t_start: float
    t_end: float
    clock: str
    caption: str
    transcript: str = ""
    keyframes: list[str] = field(default_factory=list)
    signals: dict = field(default_factory=dict)
    keys: ClipKeys | None = None
    with_stored: Callable[[int], None] | None = None


@dataclass(frozen=True)
class Deferred:
    """The real-time tier's order: store each clip without a memory-LLM call and queue its
    LLM work (keys when not given; the pyramid when ``pyramid``) for :mod:`edge.build`."""

    pyramid: bool = True

    def work(self, clip: NewClip) -> tuple[bool, bool]:
        """What the LLM tier must build for ``clip``: ``(keys, pyramid)`` — the keys when
        no caption file gave them."""
        return clip.keys is None, self.pyramid


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes (read in 4 MiB blocks): a source's identity."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def register_or_resume(memory: Memory, sha256: str,
                       describe: Callable[[], NewSource]) -> SourceState:
    """Find the source with content hash ``sha256``, or add it.

    A finished source → ``skipped``; one an earlier run (or another process, now) left
    unfinished → ``resumed`` with the clip indices it already has; otherwise ``describe()``
    is called — only then, so a start clock that advances per new file is not advanced for
    known ones — and its row is added (``ingested``). Lookup, ``describe()`` (which may read
    the memory to place the source) and the insert are one write transaction, so two
    processes registering the same file at once get one row. Raises what
    :meth:`Memory.add_source` raises (``StoreError``, ``apsw`` errors) when the memory
    cannot be written.
    """
    with memory.registering():
        existing = memory.source_by_hash(sha256)
        if existing is not None:
            status = "skipped" if existing.status == "done" else "resumed"
            return SourceState(
                existing.id, status, existing.t_start, existing.clock,
                done=memory.clip_indices(existing.id) if status == "resumed" else set(),
                known_as=existing.path, start_from=existing.start_from)
        new = describe()
        source_id = memory.add_source(
            path=new.path, sha256=sha256, kind=new.kind, clock=new.clock,
            start_from=new.start_from, t_start=new.t_start, duration=new.duration,
            n_clips=new.n_clips, info=new.info)
    return SourceState(source_id, "ingested", new.t_start, new.clock,
                       start_from=new.start_from, placed_after=new.placed_after)


def index_texts(keys: ClipKeys | None, caption: str) -> list[str]:
    """The texts a clip is indexed by, in :data:`edge.store.INDEX_TYPES` order (the four
    keys, then the caption); only the caption while the clip has no keys yet (the
    real-time tier of a clip whose keys the LLM tier will build)."""
    return [*((getattr(keys, k) for k in KEY_TYPES) if keys is not None else ()), caption]


def write_clip(memory: Memory, hub, clip: NewClip, *, pyramid: Pyramid | None = None,
               stages: StageClock | None = None,
               save_keyframes: Callable[[], list[str]] | None = None) -> Stored:
    """Extract, embed and store one clip; returns its id and whether this call added it
    (the existing id and ``added=False`` when the source already has a clip at
    ``clip.idx``: count ``added``, not calls, for what a run stored).

    ``pyramid`` (built on the same ``memory`` and ``hub``) adds fact nodes, the clip node,
    relational links and global-node updates. ``stages`` is charged per stage
    (``memory_llm``, ``embed``, ``store``; the pyramid's steps by their own clock).
    ``save_keyframes`` writes the clip's keyframe JPEGs and returns their paths (into
    ``clip.keyframes``), charged to ``store``: first with a pyramid (fact nodes point at
    keyframes), else just before the transaction. Raises the memory LLM's and embedder's
    setup errors, and ``StoreError``/``apsw`` errors when the memory cannot be written.
    """
    stages = stages if stages is not None else StageClock()
    if pyramid is not None:
        if save_keyframes is not None:
            with stages.stage("store"):
                clip.keyframes = save_keyframes()
        return _write_with_pyramid(memory, hub, clip, pyramid, stages)
    with stages.stage("memory_llm"):
        keys = _keys_of(hub, clip)
    with stages.stage("embed"):
        vectors = memory_embedder(memory, hub, adopt=True).embed(
            index_texts(keys, clip.caption))
    with stages.stage("store"):
        if save_keyframes is not None:
            clip.keyframes = save_keyframes()
        return _store(memory, clip, keys, vectors)


def write_clips(memory: Memory, hub, clips: Sequence[NewClip]) -> list[Stored]:
    """Store a batch of clips without a pyramid: keys for each (in order), ONE embedder call
    for all their index texts (``5 × len(clips)`` texts), then each clip in its own
    transaction. Returns a :class:`Stored` per clip. Raises as :func:`write_clip`."""
    keys = [_keys_of(hub, c) for c in clips]
    texts = [t for c, k in zip(clips, keys) for t in index_texts(k, c.caption)]
    vectors = memory_embedder(memory, hub, adopt=True).embed(texts)
    width = len(INDEX_TYPES)
    return [_store(memory, c, k, vectors[j * width:(j + 1) * width])
            for j, (c, k) in enumerate(zip(clips, keys))]


def write_realtime(memory: Memory, hub, clip: NewClip, deferred: Deferred, *,
                   stages: StageClock | None = None,
                   save_keyframes: Callable[[], list[str]] | None = None) -> Stored:
    """The real-time tier for one clip (no memory-LLM call): the caption (and given keys)
    embedded in one embedder call, then the clip with its caption vector, FTS text,
    entities and its ``build_queue`` row in ONE transaction. ``stages`` is charged
    ``embed`` and ``store``; ``save_keyframes`` as for :func:`write_clip`. Returns as
    :func:`write_clip`; raises the embedder's setup errors and the store's write errors."""
    stages = stages if stages is not None else StageClock()
    with stages.stage("embed"):
        vectors = memory_embedder(memory, hub, adopt=True).embed(
            index_texts(clip.keys, clip.caption))
    with stages.stage("store"):
        if save_keyframes is not None:
            clip.keyframes = save_keyframes()
        return _store(memory, clip, clip.keys, vectors, build=deferred.work(clip))


def write_clips_realtime(memory: Memory, hub, clips: Sequence[NewClip],
                         deferred: Deferred) -> list[Stored]:
    """:func:`write_realtime` for a batch (caption files): ONE embedder call for every
    clip's captions and given keys, then each clip in its own transaction."""
    texts = [index_texts(c.keys, c.caption) for c in clips]
    vectors = (memory_embedder(memory, hub, adopt=True).embed([t for ts in texts for t in ts])
               if clips else [])
    out, lo = [], 0
    for c, ts in zip(clips, texts):
        out.append(_store(memory, c, c.keys, vectors[lo:lo + len(ts)],
                          build=deferred.work(c)))
        lo += len(ts)
    return out


def _keys_of(hub, clip: NewClip) -> ClipKeys:
    """The clip's own keys, else the memory LLM's (MERIT Eq. 5, one call)."""
    return clip.keys if clip.keys is not None else extract_keys(hub.llm("memory_llm"),
                                                                clip.caption)


def _write_with_pyramid(memory: Memory, hub, clip: NewClip, pyramid: Pyramid,
                        stages: StageClock) -> int:
    """The pyramid write (see :func:`write_clip`): the pyramid's step seconds are added to
    ``stages`` afterwards, ``embed``/``store`` as such and the rest to ``memory_llm``."""
    before = dict(pyramid.counts.seconds)
    with pyramid.timed("extract"):
        cm = extract_clip_memory(hub.llm("memory_llm"), clip.caption, t_start=clip.t_start,
                                 t_end=clip.t_end, keyframes=clip.keyframes,
                                 file_keys=clip.keys, options=pyramid.options)
    with pyramid.timed("embed"):
        vectors = memory_embedder(memory, hub, adopt=True).embed(
            [*index_texts(cm.keys, clip.caption), *(f.text for f in cm.facts)])
    width = len(INDEX_TYPES)
    with pyramid.timed("store"):
        stored = _store(memory, clip, cm.keys, vectors[:width], cm, vectors[width:])
    if stored.added:  # a clip another process stored has its links already
        pyramid.after_store(cm, vectors[width:], t_start=clip.t_start,
                            day=day_of(clip.t_start, clip.clock)[0])
    for name, secs in pyramid.counts.seconds.items():
        stage = name if name in ("embed", "store") else "memory_llm"
        stages.seconds[stage] = stages.seconds.get(stage, 0.0) + secs - before.get(name, 0.0)
    return stored


def _store(memory: Memory, clip: NewClip, keys: ClipKeys | None, vectors: np.ndarray,
           cm: ClipMemory | None = None, fact_vectors: np.ndarray | None = None, *,
           build: tuple[bool, bool] = (False, False)) -> Stored:
    """One transaction (:meth:`Memory.add_clip`): the clip, its keys (none yet: ``None``)
    and caption with their vectors (rows as :func:`index_texts` orders them: ``(5, 384)``,
    or ``(1, 384)`` for the caption alone), with ``cm`` its fact nodes (``fact_vectors``:
    ``(len(cm.facts), 384)``) and clip node, and the ``build`` ``(keys, pyramid)`` work
    queued for the LLM tier."""
    day, day_start = day_of(clip.t_start, clip.clock)
    types = INDEX_TYPES if keys is not None else ("caption",)
    rows = {k: (getattr(keys, k), keys.origin) for k in KEY_TYPES} if keys is not None else {}
    rows["caption"] = (clip.caption, "caption")
    pyramid_rows = {} if cm is None else {
        "facts": cm.facts, "fact_vectors": fact_vectors,
        "clip_node": (cm.summary, cm.scene, cm.origin)}
    return Stored(*memory.store_clip(
        source_id=clip.source_id, idx=clip.idx, t_start=clip.t_start, t_end=clip.t_end,
        day=day, day_start=day_start, caption=clip.caption, transcript=clip.transcript,
        keyframes=list(clip.keyframes), signals=clip.signals, keys=rows,
        vectors={k: vectors[i] for i, k in enumerate(types)}, build=build,
        with_clip=clip.with_stored, **pyramid_rows))
