"""The deferred LLM tier (issue 13): consume a memory's ``build_queue`` in clip order.

The real-time tier (:func:`edge.ingest.memory_writer.write_realtime`) stores each clip as it
arrives — caption, transcript, caption vector, FTS, entities by rules, keys a caption file
gives — and queues what needs the memory LLM. Here, per queued clip, in timeline order:

- keys only: the four MERIT keys from one memory-LLM call (MERIT Eq. 5,
  :func:`edge.build.keys.extract_keys`);
- with the pyramid: ONE call for keys (unless already stored), fact nodes and the clip
  node (PyraVid App. B.1, :func:`edge.build.pyramid.extract_clip_memory`), one call judging the
  relational-link candidates (PyraVid App. B.3), then — after the clip is stored — the
  day's global node every K clips (:class:`edge.build.pyramid.Pyramid`).

One embedder call embeds the new keys and facts. The clip's results, its accepted links and
the removal of its queue row are ONE transaction (:meth:`edge.store.Memory.complete_build`),
so a killed build loses and duplicates nothing and the next run resumes with the next clip.
A global update is derived from the clips not yet integrated, so a kill between a clip and
its global update only delays that update. The build's wall seconds per clip are stored
(``builds``) for the backlog's ETA (:meth:`edge.store.Memory.backlog`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from edge.build.keys import ClipKeys, extract_keys
from edge.build.pyramid import Pyramid, PyramidOptions, extract_clip_memory
from edge.store import KEY_TYPES, BuildResult, Memory, QueueItem
from edge.store.embedding import memory_embedder
from models.cancel import GenerationCancelled


@dataclass
class BuildReport:
    """What one build run did: ``built`` clips, ``remaining`` in the queue afterwards,
    ``seconds`` of wall time, ``clip_seconds`` per clip built (wall seconds each),
    ``interrupted`` when it stopped on request before the queue or ``limit`` ran out,
    ``backfilled``: clips given pyramid work by ``pyramid=True``, ``reembed``: what the
    re-embedding before it did (``edge build``; ``None`` when nothing needed it)."""

    built: int = 0
    remaining: int = 0
    seconds: float = 0.0
    clip_seconds: list[float] = field(default_factory=list)
    interrupted: bool = False
    backfilled: int = 0
    reembed: ReembedReport | None = None

    def as_dict(self) -> dict:
        """The report for ``--json`` (seconds rounded to 10 ms)."""
        per = self.clip_seconds
        return {"built": self.built, "remaining": self.remaining,
                "seconds": round(self.seconds, 2), "interrupted": self.interrupted,
                "backfilled": self.backfilled,
                "seconds_per_clip": round(sum(per) / len(per), 2) if per else None,
                "reembed": self.reembed.as_dict() if self.reembed is not None else None}


class Builder:
    """Builds queued clips of ``memory`` with ``hub``'s memory LLM and embedder;
    ``options`` are the pyramid's (links, candidates, K). Its :attr:`pyramid` counts what
    the pyramid work did. ``on_step(text)`` names a step that is not a clip while it runs
    (a global node update) and ``on_step(None)`` says it ended, for a progress display."""

    def __init__(self, memory: Memory, hub, options: PyramidOptions | None = None, *,
                 on_step: Callable[[str | None], None] | None = None) -> None:
        self.memory = memory
        self.hub = hub
        self.pyramid = Pyramid(memory, hub, options or PyramidOptions())
        self.on_step = on_step or (lambda _step: None)

    def build_clip(self, item: QueueItem) -> float | None:
        """Build one queued clip and store it with the removal of its queue row; its wall
        seconds, or ``None`` when another process built it meanwhile (nothing written).
        Raises the models' setup errors and the store's write errors (nothing written)."""
        t0 = time.perf_counter()
        clip = self.memory.clips([item.clip_id])[item.clip_id]  # keys: _stored_keys
        given = None if item.keys else self._stored_keys(item.clip_id)
        need_keys = given is None
        llm = self.hub.llm("memory_llm")
        cm = None
        if item.pyramid:
            with self.pyramid.timed("extract"):
                cm = extract_clip_memory(llm, clip.caption, t_start=clip.t_start,
                                         t_end=clip.t_end, keyframes=clip.keyframes,
                                         file_keys=given, options=self.pyramid.options)
            keys = cm.keys
        else:
            keys = given or extract_keys(llm, clip.caption)
        facts = cm.facts if cm is not None else []
        new_keys = list(KEY_TYPES) if need_keys else []
        vectors = memory_embedder(self.memory, self.hub).embed(
            [*(getattr(keys, k) for k in new_keys), *(f.text for f in facts)])
        fact_vectors = vectors[len(new_keys):]
        links = []
        if cm is not None and self.pyramid.options.links:
            for i, f in enumerate(facts, start=1):
                f.id = -i  # distinct until stored (the candidates are keyed by id)
            with self.pyramid.timed("links"):
                links = self.pyramid.judge_links(facts, fact_vectors, before=clip.t_start)
        result = BuildResult(
            keys={k: (getattr(keys, k), keys.origin) for k in new_keys},
            key_vectors={k: vectors[i] for i, k in enumerate(new_keys)}, facts=facts,
            fact_vectors=fact_vectors if facts else None,
            clip_node=(cm.summary, cm.scene, cm.origin) if cm is not None else None,
            links=links, seconds=time.perf_counter() - t0)
        if not self.memory.complete_build(item, result):
            return None
        if cm is not None:
            self._after_clip(item, cm)
        return time.perf_counter() - t0

    def _stored_keys(self, clip_id: int) -> ClipKeys | None:
        """The four keys already stored for the clip (a caption file's), or ``None``."""
        rows = {t: (text, o) for t, text, o in self.memory.db.execute(
            "SELECT type, text, origin FROM keys WHERE clip_id = ? AND type != 'caption'",
            (clip_id,))}
        if set(rows) != set(KEY_TYPES):
            return None
        return ClipKeys(**{k: rows[k][0] for k in KEY_TYPES}, origin=rows["event"][1])

    def _after_clip(self, item: QueueItem, cm) -> None:
        """The pyramid's count and, when K clips wait, the day's global node update."""
        p = self.pyramid
        p.counts.clips += 1
        p.counts.facts += len(cm.facts)
        p.counts.fallbacks += cm.origin == "extractive"
        pending = self.memory.clips_without_global(item.day)
        if len(pending) >= p.options.global_every:
            self.on_step(f"global node of {item.day}")
            with p.timed("global"):
                p.update_global(item.day, pending)
            self.on_step(None)

    def finish(self) -> None:
        """End of the work: when no pyramid work is left in the queue, integrate the waiting
        clips into their days' global nodes and refresh the overall node
        (:meth:`edge.build.pyramid.Pyramid.finalize`; calls no model when nothing waits)."""
        if not self.memory.backlog()["pyramid"]:
            self.on_step("global nodes")
            self.pyramid.finalize()
            self.on_step(None)


def build(memory: Memory, hub, *, options: PyramidOptions | None = None,
          pyramid: bool = False, limit: int | None = None,
          on_total: Callable[[int], None] | None = None,
          on_clip: Callable[[float], None] | None = None,
          stop: Callable[[], bool] | None = None,
          on_step: Callable[[str | None], None] | None = None) -> BuildReport:
    """Build up to ``limit`` queued clips (all when ``None``) in clip order.

    ``pyramid=True`` first queues the pyramid of every clip without a clip node (backfills a
    memory made with ``--no-pyramid``). ``on_total(n)``: clips this run will build, once;
    ``on_clip(seconds)`` after each clip; ``on_step``: see :class:`Builder`; ``stop()`` is
    asked before each clip — True ends the run there (``interrupted``), and so does a model
    call cancelled by the caller's :func:`~models.cancel.cancel_scope` (that clip stays
    queued; a global-node update cancelled after its clip was stored waits for the next
    run). The global nodes are finalized when the queue holds no pyramid work any more.
    Raises what :meth:`Builder.build_clip` raises; clips built before stay built.
    """
    t0 = time.perf_counter()
    report = BuildReport()
    if pyramid:
        report.backfilled = memory.enqueue_pyramid_backfill()
    todo = memory.queued(limit)
    if on_total:
        on_total(len(todo))
    builder = Builder(memory, hub, options, on_step=on_step)
    for item in todo:
        if stop is not None and stop():
            report.interrupted = True
            break
        try:
            seconds = builder.build_clip(item)
        except GenerationCancelled:  # mid-clip: nothing written (or only its global update
            # was cut: the clip is stored, the update is derived again next time)
            report.interrupted = True
            break
        if seconds is not None:
            report.built += 1
            report.clip_seconds.append(seconds)
        if on_clip:
            on_clip(seconds or 0.0)
    if not report.interrupted:
        try:
            builder.finish()
        except GenerationCancelled:  # the global update waits for the next build
            report.interrupted = True
    report.remaining = memory.backlog()["clips"]
    report.seconds = time.perf_counter() - t0
    return report


@dataclass
class ReembedReport:
    """What one re-embedding run did: the embedder it embeds with, ``embedded`` vectors
    this run, ``done``/``total`` vectors of the memory afterwards, wall ``seconds``,
    ``switched`` when the memory's vectors are now the new embedder's, ``interrupted``
    when it stopped on request first."""

    embedder: str = ""
    embedded: int = 0
    done: int = 0
    total: int = 0
    seconds: float = 0.0
    switched: bool = False
    interrupted: bool = False

    def as_dict(self) -> dict:
        """The report for ``--json``."""
        return {"embedder": self.embedder, "embedded": self.embedded, "done": self.done,
                "total": self.total, "seconds": round(self.seconds, 2),
                "switched": self.switched, "interrupted": self.interrupted}


def needs_reembed(memory: Memory, hub) -> bool:
    """Whether ``memory`` holds vectors of another embedder (or width) than ``hub``'s
    profile embeds with (:func:`edge.store.embedding.profile_space`)."""
    from edge.store.embedding import profile_space

    space = memory.vector_space()
    return (space.embedder, space.dim) != profile_space(hub) and memory.holds_vectors()


def reembed(memory: Memory, hub, *, batch: int = 64,
            on_total: Callable[[int, int], None] | None = None,
            on_batch: Callable[[int], None] | None = None,
            stop: Callable[[], bool] | None = None) -> ReembedReport:
    """Re-embed every key and fact of ``memory`` with the profile's embedder into a building
    vector space (:mod:`edge.store.spaces`), ``batch`` keys and ``batch`` facts per
    embedder call and transaction, in id order, then make it the active space.

    Resumable: a run killed at any point (SIGKILL included) loses at most its batch in
    progress, and the next run goes on from the last stored batch. Clips stored meanwhile
    (by the old embedder, in the active space) are caught up before the switch.
    ``on_total(done, total)`` once at the start (vectors); ``on_batch(n)`` after each
    stored batch; ``stop()`` asked before each batch (True: ``interrupted``, the progress
    kept). Nothing to do (``switched`` False, ``total`` 0) when the memory's vectors are
    already the profile's. Raises the embedder's setup errors and the store's write
    errors (the batches stored before stay)."""
    from edge.store.embedding import profile_space

    t0 = time.perf_counter()
    name, dim = profile_space(hub)
    report = ReembedReport(embedder=name)
    if not needs_reembed(memory, hub):
        return report
    space = memory.start_reembed(name, dim)
    report.done, report.total = memory.reembed_progress(space)
    if on_total:
        on_total(report.done, report.total)
    embedder = hub.embedder
    while True:
        if stop is not None and stop():
            report.interrupted = True
            break
        keys, facts = memory.reembed_todo(space, batch)
        if not keys and not facts:
            # the switch checks again, in its transaction: a clip stored since goes round
            report.switched = memory.finish_reembed() is not None
            if report.switched:
                break
            space = memory.vector_space("building")
            if space is None:  # dropped meanwhile (another profile's re-embedding)
                break
            continue
        key_vecs = embedder.embed([k.text for k in keys])
        fact_vecs = embedder.embed([f.text for f in facts])
        space = memory.add_reembedded(space, keys, key_vecs, facts, fact_vecs)
        report.embedded += len(keys) + len(facts)
        if on_batch:
            on_batch(len(keys) + len(facts))
    if report.switched or space is None:  # the count of vectors; all done if switched
        report.total = memory.reembed_progress(memory.vector_space())[1]
        report.done = report.total if report.switched else 0
    else:
        report.done, report.total = memory.reembed_progress(space)
    report.seconds = time.perf_counter() - t0
    return report


__all__ = ["BuildReport", "Builder", "ReembedReport", "build", "needs_reembed", "reembed"]
