"""The ingestion worker: a thread that turns each finished clip in the spool into memory
through the normal ingest path (:func:`edge.ingest.run.ingest_paths`), oldest first.

The finished clips in the spool that are not yet in memory *are* the queue: nothing is held
in RAM, so a restart finds the same queue on disk. The queue is bounded by ``max_pending``:
a source that can wait (a file, a watched folder) pauses at the bound (back-pressure,
:meth:`IngestWorker.wait_for_room`); a live source cannot pause and keeps recording.

Two tiers (issue 13): each clip gets the real-time tier at once (caption, transcript, caption
vector, FTS; :func:`edge.ingest.memory_writer.write_realtime`) and its LLM work — the keys, and with
``RecordOptions.pyramid`` the PyraVid facts, clip node, links and global updates — is queued
in the memory and built one clip at a time (:class:`edge.build.run.Builder`) whenever no clip is
waiting in the spool, so a slow memory LLM never holds back the real-time tier. The global
nodes are updated every ``global_every`` clips as they are built and finalized when the
recording ends with nothing left to build; the backlog drains after the stream ends. At the
end the people are re-clustered as ``edge build`` does (the character tier's identities
are matched online, clip by clip, while recording).

A clip that cannot be read is moved to ``<spool>/failed/``. When the models cannot run
(weights missing, a remote role unreachable) the clip stays in the spool and is tried again
every :data:`MODEL_RETRY_SECONDS`, and on the next start.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from edge.record.session import Session
from edge.record.spool import clip_start, finished_clips

log = logging.getLogger("edge.record")

MODEL_RETRY_SECONDS = 30.0
"""Wait before trying a clip again when the models cannot run (weights missing, remote role
unreachable); the clip stays in the spool meanwhile."""


@dataclass
class _Ingested:
    """What ingesting one clip gave: ``ok`` (in memory) or the ``message`` why not."""

    ok: bool
    message: str | None = None
    status: str | None = None     # the ingest result's status ("ok", "resumed", ...)
    clips_added: int = 0
    seconds: float = 0.0          # wall-clock seconds the ingest took
    duration: float = 0.0         # the clip's footage, seconds


class IngestWorker:
    """The ingestion worker of a :class:`~edge.record.Recorder` and its queue.

    Owns the queue's bookkeeping: ``ingested`` (names of the clips in memory, guarded by
    ``lock``), ``ingested_until`` (Unix seconds: the end of the newest footage in memory),
    ``ingesting`` (the clip being ingested), ``failed`` (clips moved to ``failed/``) and
    ``crashed`` (the memory became unusable; the recording stops). ``wake`` is set when a
    clip was published or capture ended. Shared with the recorder: ``rec.stop``,
    ``rec.capture_done``, ``rec.state`` and ``rec.last_error``.
    """

    def __init__(self, rec: Session) -> None:
        self.rec = rec
        self.wake = threading.Event()        # a clip was published
        self.lock = threading.Lock()
        self.ingested: set[str] = set()      # clip names in memory
        self.ingested_until: float | None = None
        self.ingesting: str | None = None
        self.failed = 0
        self.crashed = False
        self.builder = None  # edge.build.run.Builder, made with the hub on the first build
        self.build_after = 0.0  # monotonic seconds: no LLM-tier build before (models down)

    def pending(self) -> list[Path]:
        """The queue: finished clips in the spool not yet in memory, oldest first."""
        with self.lock:
            return [c.path for c in finished_clips(self.rec.spool)
                    if c.path.name not in self.ingested]

    def ingested_names(self) -> set[str]:
        """A copy of the names of the clips in memory (safe to use from another thread)."""
        with self.lock:
            return set(self.ingested)

    def wait_for_room(self) -> None:
        """Back-pressure for sources that can wait (a file or a watched folder): block while
        the queue holds ``max_pending`` clips, with the state ``backpressure``. Returns at
        once for a live source, or when the recorder stops."""
        rec = self.rec
        if rec.source.live:
            return
        while not rec.stop.is_set() and len(self.pending()) >= rec.options.max_pending:
            rec.state = "backpressure"
            rec.stop.wait(rec.options.poll)
        if not rec.stop.is_set():
            rec.state = "recording"

    def run(self) -> None:
        """The thread's body: ingest the queue until the recorder stops, or capture ended
        and the queue is empty. The models are loaded (``hub_factory()``) and the memory
        opened on the first clip. An unexpected error stops the recording (``crashed``);
        it is logged, never raised."""
        from edge.store import Memory

        rec = self.rec
        hub = memory = None
        try:
            while True:
                queue = self.pending()
                if rec.stop.is_set():
                    return
                if not queue:
                    self.wake.clear()  # set again when a clip is published: ends a build
                    if hub is not None and not self.pending() and self._build_next(memory,
                                                                                    hub):
                        continue  # slack: one clip of the LLM tier, then look again
                    if rec.capture_done.is_set():
                        return
                    self.wake.wait(rec.options.poll)
                    self.wake.clear()
                    continue
                if hub is None:
                    memory = Memory(rec.memory_path, create=True)
                    hub = rec.hub_factory()
                if not self._ingest_next(memory, hub, queue[0]):
                    return
        except Exception as e:  # the memory is unusable: stop recording rather than pile up
            self._stop_for(e)
        finally:
            if memory is not None:
                if not self.crashed:
                    self._finalize(memory, hub)
                self._close(memory)

    def _stop_for(self, error: Exception) -> None:
        """Ingestion cannot go on: stop the recording (finished clips stay in the spool and
        are ingested on the next start). An error the user must fix (a full disk, a memory
        that cannot be written) is one line (:func:`edge.record.disk.stop_reason`); anything
        else is a bug, logged with its traceback."""
        from edge.record.disk import stop_reason

        rec = self.rec
        self.crashed = True
        reason = stop_reason(error, rec.memory_path)
        if reason is None:
            rec.last_error = f"ingestion stopped: {error.__class__.__name__}: {error}"
            log.exception("ingestion worker failed; stopping the recording (finished clips "
                          "stay in the spool and are ingested on the next start)")
            rec.stop.set()
            return
        log.error("ingestion stopped: %s", error)
        rec.halt(reason)

    @staticmethod
    def _close(memory) -> None:
        """Close the memory; a close that fails (its checkpoint on a full disk) is logged:
        SQLite keeps the WAL, and nothing committed is lost."""
        import apsw

        try:
            memory.close()
        except apsw.Error as e:
            log.warning("closing the memory: %s (its WAL is kept; nothing is lost)", e)

    def _build_next(self, memory, hub) -> bool:
        """Build the first clip of the memory's LLM queue (:class:`edge.build.run.Builder`);
        its model calls are recorded under ``record``. A clip published meanwhile (``wake``)
        cancels the build (that clip stays queued and is built in the next slack), so the
        real-time backlog stays at most one clip. False when nothing is queued, another
        process holds the memory's build lock (:mod:`edge.build.lock`) or the models cannot
        run now (logged; the clip stays queued)."""
        from edge.build.lock import build_lock
        from edge.build.pyramid import PyramidOptions
        from edge.build.run import Builder
        from edge.errors import MODEL_ERRORS, BuildBusyError
        from models.cancel import GenerationCancelled, cancel_scope

        items = memory.queued(1) if time.monotonic() >= self.build_after else []
        if not items:
            return False
        if self.builder is None:
            self.builder = Builder(memory, hub, self.rec.options.pyramid or PyramidOptions())
        mark = len(hub.usage.records)
        try:
            # an `edge build` may be building this memory; a clip published meanwhile (or a
            # stop) cancels the model call, so the real-time tier never waits for it
            with build_lock(memory.path), cancel_scope(self.wake):
                self.builder.build_clip(items[0])
        except GenerationCancelled:
            why = "the recorder is stopping" if self.rec.stop.is_set() else \
                "a new clip came in" if self.pending() else "capture ended"
            log.info("building clip %d paused: %s (it stays queued)", items[0].clip_id, why)
            return True
        except BuildBusyError as e:
            log.info("%s (retrying in %.0f s)", e, MODEL_RETRY_SECONDS)
            self.build_after = time.monotonic() + MODEL_RETRY_SECONDS
            return False
        except MODEL_ERRORS as e:
            self.rec.last_error = f"the LLM tier waits for the models: {e}"
            log.error("cannot build the LLM tier now: %s; the clips stay queued (retrying in "
                      "%.0f s)", e, MODEL_RETRY_SECONDS)
            self.build_after = time.monotonic() + MODEL_RETRY_SECONDS
            return False
        finally:
            memory.record_calls("record", hub.usage.records[mark:])
        return True

    def _finalize(self, memory, hub) -> None:
        """End of the recording: when nothing is left to build, integrate the built clips
        into the global nodes (:meth:`edge.build.run.Builder.finish`; its model calls are
        recorded under ``record``), then re-cluster the people seen and heard as
        ``edge build`` does (:func:`edge.people.rebuild.rebuild_people`: identities the
        online tier split are joined, a face and a voice that kept meeting become one
        person). Errors are logged, never raised (the clips are stored)."""
        from edge.build.lock import build_lock
        from edge.people import characters_enabled

        if self.builder is None and not characters_enabled(hub):
            return
        mark = len(hub.usage.records)
        try:
            with build_lock(memory.path, wait=60):  # after a running `edge build`
                if self.builder is not None:
                    self.builder.finish()
                if characters_enabled(hub):
                    from edge.people.rebuild import rebuild_people

                    r = rebuild_people(memory)
                    if r.moved or r.removed or r.joined:
                        log.info("people re-clustered: %d appearance(s) moved, %d identities "
                                 "merged away, %d face and voice joined", r.moved,
                                 len(r.removed), len(r.joined))
        except Exception as e:  # noqa: BLE001 (the next finalize or `edge build` redoes it)
            log.error("could not finish the recording's memory (global nodes, people): %s: %s",
                      e.__class__.__name__, e)
        finally:
            memory.record_calls("record", hub.usage.records[mark:])

    def _ingest_next(self, memory, hub, clip: Path) -> bool:
        """Ingest the oldest clip of the queue; its model calls are recorded under the
        command ``record``. False when the worker should stop (while waiting for the
        models)."""
        from edge.errors import MODEL_ERRORS

        self.ingesting = clip.name
        mark = len(hub.usage.records)
        try:
            done = self._ingest(memory, hub, clip)
        except MODEL_ERRORS as e:  # the models, not the clip: it stays in the spool
            return self._wait_for_models(clip, e)
        finally:
            memory.record_calls("record", hub.usage.records[mark:])
            self.ingesting = None
        if done.ok:
            self._stored(clip, done)
        else:
            self._move_to_failed(clip, done.message)
        return True

    def _ingest(self, memory, hub, clip: Path) -> _Ingested:
        """Ingest one clip; a clip that cannot be read is not ``ok``. Model errors are
        raised."""
        from edge.ingest.media import MediaError, probe
        from edge.ingest.memory_writer import Deferred
        from edge.ingest.run import IngestOptions, ingest_paths

        try:
            info = probe(clip)
            opts = IngestOptions(start=clip_start(clip),
                                 clip_seconds=max(self.rec.options.clip_seconds,
                                                  info.duration + 1.0))
            report = ingest_paths(memory, hub, [clip], opts, deferred=Deferred(
                pyramid=self.rec.options.pyramid is not None))
        except MediaError as e:
            return _Ingested(False, str(e))
        result = report.results[0]
        return _Ingested(result.status != "failed", result.message, result.status,
                         result.clips_added, report.seconds, info.duration)

    def _wait_for_models(self, clip: Path, error: Exception) -> bool:
        """The models cannot run: keep the clip, wait :data:`MODEL_RETRY_SECONDS`. False when
        capture ended or the recorder stopped meanwhile."""
        rec = self.rec
        rec.last_error = f"{clip.name} waits for the models: {error}"
        log.error("cannot ingest %s now: %s; it stays in the spool and is ingested once that "
                  "is fixed (retrying in %.0f s, and on the next start)", clip.name, error,
                  MODEL_RETRY_SECONDS)
        return not (rec.capture_done.is_set() or rec.stop.wait(MODEL_RETRY_SECONDS))

    def _stored(self, clip: Path, done: _Ingested) -> None:
        with self.lock:
            self.ingested.add(clip.name)
        start = clip_start(clip) or 0.0
        self.ingested_until = max(self.ingested_until or 0.0, start + done.duration)
        log.info("ingested %s into memory (%s, %d clip(s) added, %.1f s)",
                 clip.name, done.status, done.clips_added, done.seconds)

    def _move_to_failed(self, clip: Path, message: str | None) -> None:
        rec = self.rec
        self.failed += 1
        rec.last_error = f"{clip.name}: {message}"
        failed = rec.spool / "failed"
        failed.mkdir(exist_ok=True)
        os.replace(clip, failed / clip.name)
        log.error("could not ingest %s (%s); moved it to %s", clip.name, message, failed)
