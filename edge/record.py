"""Headless recording (``edge record``): capture → spool → ingestion worker → memory.

Three threads share one process: the capture thread cuts the source into 30 s clip files
(:mod:`edge.capture`), the ingestion worker turns each finished clip into memory through the
normal ingest path (:func:`edge.ingest.ingest_paths`), and the main thread applies the
storage policy, writes the status file and waits for SIGTERM/SIGINT. Capture never waits
for a model: the finished clips in the spool *are* the queue, so a slow model delays memory
but never drops footage. The queue is bounded by ``max_pending``: a file or folder source
pauses at the bound (back-pressure); a live source cannot pause, keeps recording to disk and
the status says it is over the bound.

Restarts and power loss: clips are published by an atomic rename after fsync, so on start
every finished clip not yet in memory is pending and ingested (oldest first); ingest hashes
each file, so a clip is never stored twice, and a clip whose ingest was cut short is resumed.
The ``.part`` file that was being written is remuxed up to where it still decodes, or
discarded when too little of it does (both logged). Nothing here imports Textual.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from edge.capture import CaptureError, Segmenter, SourceSpec, open_source
from edge.errors import RecordError  # noqa: F401 (re-exported)
from edge.spool import (
    finished_clips,
    partial_clips,
    plan_retention,
    read_status,
    repair,
    spool_dir,
    status_path,
    write_status,
)

log = logging.getLogger("edge.record")
MODEL_RETRY_SECONDS = 30.0
"""Wait before trying a clip again when the models cannot run (weights missing, remote role
unreachable); the clip stays in the spool meanwhile."""



@dataclass
class RecordOptions:
    """How to record. Sizes in bytes, durations in seconds; ``None`` means no limit.

    ``raw_budget``/``keep_raw``: the storage policy for raw clips (memory is always kept).
    ``min_free``: refuse to start, and stop writing clips, below this much free disk.
    ``max_pending``: the bound of the ingestion queue (finished clips not yet in memory).
    ``settle``: seconds a watched file must stay unchanged before it is read.
    """

    clip_seconds: float = 30.0
    raw_budget: int | None = None
    keep_raw: float | None = None
    min_free: int = 1_000_000_000
    max_pending: int = 120
    reencode: bool = False
    settle: float = 5.0
    poll: float = 1.0


class Recorder:
    """One recording session into the memory at ``memory_path``.

    ``hub_factory()`` returns the model hub (called in the worker thread, so capture starts
    before the models have loaded). :meth:`run` returns the exit code (0 clean, 1 failed).
    """

    def __init__(self, memory_path: Path, source: SourceSpec, options: RecordOptions,
                 hub_factory) -> None:
        self.memory_path = Path(memory_path)
        self.source = source
        self.options = options
        self.hub_factory = hub_factory
        self.spool = spool_dir(self.memory_path)
        self.status_file = status_path(self.memory_path)
        self.stop = threading.Event()        # SIGTERM/SIGINT: finish the clip, then stop
        self.capture_done = threading.Event()
        self.wake = threading.Event()        # a clip was published
        self.lock = threading.Lock()
        self.ingested: set[str] = set()      # clip names in memory
        self.failed = 0
        self.ingested_until: float | None = None
        self.started_at = time.time()
        self.last_error: str | None = None
        self.last_deletion: str | None = None
        self.deleted = 0
        self.ingesting: str | None = None
        self.state = "starting"
        self.segmenter: Segmenter | None = None
        self.source_clock: tuple[float, float] | None = None  # (source time, monotonic)
        self._lockfile = None
        self._signalled = False
        self.recorded = 0                    # clips written by this run
        self.worker_failed = False

    # ---- setup --------------------------------------------------------------------------

    def _free(self) -> int:
        return shutil.disk_usage(self.spool).free

    def preflight(self) -> None:
        """Create the spool, take the single-recorder lock and check the disk floor.

        Raises :class:`RecordError` when another recorder holds this memory or when free
        disk is below ``min_free``.
        """
        try:
            self.spool.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RecordError(f"cannot create the spool folder {self.spool}: {e}") from None
        self._lockfile = open(self.spool / "record.lock", "w")  # noqa: SIM115 (held open)
        try:
            fcntl.flock(self._lockfile, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RecordError(f"another `edge record` is already recording into "
                              f"{self.memory_path} (lock {self.spool / 'record.lock'}); stop "
                              "it first or use another --memory") from None
        free = self._free()
        if free < self.options.min_free:
            from humanfriendly import format_size

            raise RecordError(
                f"only {format_size(free)} free on the disk of {self.spool}, below the floor "
                f"--min-free {format_size(self.options.min_free)}; free some space, lower "
                "--raw-budget/--keep-raw, or lower --min-free")

    def recover(self) -> list[Path]:
        """Repair or discard half-written clips; learn which finished clips are already in
        memory. Returns the pending clips, oldest first."""
        from edge.store import Memory

        recut = self._watched_parts()
        for part in partial_clips(self.spool):
            if part.name in recut:
                part.unlink()
                log.warning("discarded half-written clip %s: it is cut again from %s",
                            part.name, recut[part.name])
            else:
                repair(part)
        done: set[str] = set()
        if self.memory_path.exists():  # else created by the first ingest (an empty file
            with Memory(self.memory_path, create=True) as memory:  # left by a kill is fine)
                done = memory.done_source_paths()
        clips = finished_clips(self.spool)
        for c in clips:
            if _stored_path(c.path) in done:
                self.ingested.add(c.path.name)
                self.ingested_until = max(self.ingested_until or 0.0, c.start)
        pending = [c.path for c in clips if c.path.name not in self.ingested]
        if pending:
            log.info("resuming: %d finished clip(s) not yet in memory", len(pending))
        return pending

    def _watched_parts(self) -> dict[str, str]:
        """``.part`` names that a watched file was being cut into when the recorder stopped
        (the file is still there, so its unfinished clip is cut again, not repaired)."""
        ledger_path = self.spool / "watched.json"
        if not ledger_path.exists():
            return {}
        ledger = json.loads(ledger_path.read_text())
        return {e["part"]: Path(k).name for k, e in ledger.items()
                if e.get("part") and not e.get("complete")}

    # ---- the queue ----------------------------------------------------------------------

    def pending(self) -> list[Path]:
        with self.lock:
            return [c.path for c in finished_clips(self.spool)
                    if c.path.name not in self.ingested]

    def _wait_for_room(self) -> None:
        """Back-pressure for sources that can wait (a file or a watched folder)."""
        if self.source.live:
            return
        while not self.stop.is_set() and len(self.pending()) >= self.options.max_pending:
            self.state = "backpressure"
            self.stop.wait(self.options.poll)
        if not self.stop.is_set():
            self.state = "recording"

    def _on_clip(self, path: Path, start: float, duration: float) -> None:
        self.recorded += 1
        log.info("clip %s (%.1f s) finished", path.name, duration)
        self.wake.set()

    # ---- the ingestion worker -----------------------------------------------------------

    def _worker(self) -> None:
        from edge.errors import MODEL_ERRORS
        from edge.ingest import IngestOptions, ingest_paths
        from edge.media import MediaError, probe
        from edge.spool import clip_start
        from edge.store import Memory

        hub = memory = None
        try:
            while True:
                queue = self.pending()
                if self.stop.is_set() or (not queue and self.capture_done.is_set()):
                    return
                if not queue:
                    self.wake.wait(self.options.poll)
                    self.wake.clear()
                    continue
                clip = queue[0]
                if hub is None:
                    memory = Memory(self.memory_path, create=True)
                    hub = self.hub_factory()
                self.ingesting = clip.name
                mark = len(hub.usage.records)
                try:
                    info = probe(clip)
                    opts = IngestOptions(start=clip_start(clip),
                                         clip_seconds=max(self.options.clip_seconds,
                                                          info.duration + 1.0))
                    report = ingest_paths(memory, hub, [clip], opts)
                    result = report.results[0]
                    ok = result.status != "failed"
                    message = result.message
                except MediaError as e:
                    ok, message = False, str(e)
                except MODEL_ERRORS as e:  # the models, not the clip: it stays in the spool
                    self.last_error = f"{clip.name} waits for the models: {e}"
                    log.error("cannot ingest %s now: %s; it stays in the spool and is "
                              "ingested once that is fixed (retrying in %.0f s, and on the "
                              "next start)", clip.name, e, MODEL_RETRY_SECONDS)
                    if self.capture_done.is_set() or self.stop.wait(MODEL_RETRY_SECONDS):
                        return
                    continue
                finally:
                    memory.record_calls("record", hub.usage.records[mark:])
                    self.ingesting = None
                if ok:
                    with self.lock:
                        self.ingested.add(clip.name)
                    start = clip_start(clip) or 0.0
                    end = start + (info.duration if ok else 0.0)
                    self.ingested_until = max(self.ingested_until or 0.0, end)
                    log.info("ingested %s into memory (%s, %d clip(s) added, %.1f s)",
                             clip.name, result.status, result.clips_added, report.seconds)
                else:
                    self.failed += 1
                    self.last_error = f"{clip.name}: {message}"
                    failed = self.spool / "failed"
                    failed.mkdir(exist_ok=True)
                    os.replace(clip, failed / clip.name)
                    log.error("could not ingest %s (%s); moved it to %s", clip.name, message,
                              failed)
        except Exception as e:  # the memory is unusable: stop recording rather than pile up
            self.last_error = f"ingestion stopped: {e.__class__.__name__}: {e}"
            self.worker_failed = True
            log.exception("ingestion worker failed; stopping the recording (finished clips "
                          "stay in the spool and are ingested on the next start)")
            self.stop.set()
        finally:
            if memory is not None:
                memory.close()

    # ---- capture ------------------------------------------------------------------------

    def _capture(self) -> None:
        try:
            if self.source.kind == "watch":
                self._capture_watch()
            else:
                self._capture_source()
        except CaptureError as e:
            self.last_error = str(e)
            log.error("%s", e)
        except Exception as e:
            self.last_error = f"capture stopped: {e.__class__.__name__}: {e}"
            log.exception("capture failed")
        finally:
            self.capture_done.set()
            self.wake.set()

    def _segmenter(self) -> Segmenter:
        self.segmenter = Segmenter(
            self.spool, clip_seconds=self.options.clip_seconds, reencode=self.options.reencode,
            on_clip=self._on_clip, stop=self.stop,
            can_write=lambda: self._free() >= self.options.min_free,
            wait_for_room=self._wait_for_room)
        return self.segmenter

    def _capture_source(self) -> None:
        """Camera, stream or file; a camera or stream that drops is reopened with backoff."""
        backoff = 1.0
        opened_once = False
        while not self.stop.is_set():
            try:
                container = open_source(self.source)
            except CaptureError as e:
                if self.source.kind == "file" or not opened_once:
                    raise  # a wrong device or URL fails at once; a dropped one is retried
                self.last_error = str(e)
                log.error("%s; retrying in %.0f s", e, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 60.0)
                continue
            opened_once = True
            finite = self.source.kind == "file" or bool(container.duration)
            self.state = "recording"
            origin = time.time()
            self.source_clock = (origin, time.monotonic())
            seg = self._segmenter()
            try:
                with container:
                    seg.run(container, origin,
                            pace=self.source.speed if self.source.realtime else None)
                backoff = 1.0
            except CaptureError as e:
                if self.source.kind == "file":
                    raise
                self.last_error = str(e)
                log.error("%s; reconnecting in %.0f s", e, backoff)
                finite = False
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 60.0)
                continue
            if finite:  # a file, or a file served over http: recorded once
                if self.stop.is_set():  # a signal cut it short: not its end
                    log.info("stopped recording %s before its end", self.source.target)
                else:
                    log.info("end of %s", self.source.target)
                return
            if not self.stop.is_set():
                log.warning("%s ended; reconnecting in %.0f s", self.source.describe(), backoff)
                self.stop.wait(backoff)

    def _capture_watch(self) -> None:
        """Poll a folder; cut each file that stopped changing into clips, once. Progress per
        file is kept in ``watched.json`` in the spool, so a restart resumes a file where its
        last finished clip ended."""
        from edge.ingest import find_media
        from edge.media import MediaError, probe

        folder = Path(self.source.target)
        ledger_path = self.spool / "watched.json"
        ledger = json.loads(ledger_path.read_text()) if ledger_path.exists() else {}
        seen: dict[str, tuple[int, int, float]] = {}
        self.state = "recording"
        while not self.stop.is_set():
            if not folder.is_dir():
                raise CaptureError(f"watched folder {folder} does not exist (any more)")
            for f in find_media([folder]):
                key = str(f.resolve())
                if self.spool.resolve() in f.resolve().parents:
                    continue  # our own clips, when the spool is inside the watched folder
                try:
                    st = f.stat()
                except FileNotFoundError:
                    continue
                sig = (st.st_size, st.st_mtime_ns)
                entry = ledger.get(key)
                if entry and entry.get("complete") and tuple(entry["sig"]) == sig:
                    continue
                prev = seen.get(key)
                if prev is None or prev[:2] != sig:
                    seen[key] = (*sig, time.monotonic())
                    continue
                if time.monotonic() - prev[2] < self.options.settle:
                    continue  # still being written
                if entry is None or tuple(entry["sig"]) != sig:
                    entry = {"sig": list(sig), "done_until": 0.0, "complete": False}
                try:
                    info = probe(f)
                except MediaError as e:
                    self.last_error = str(e)
                    log.error("watched file skipped: %s", e)
                    ledger[key] = {**entry, "complete": True, "error": str(e)}
                    _write_json(ledger_path, ledger)
                    continue
                origin = info.creation_time
                if origin is None:  # a camera closes the file when it stops: mtime ≈ end
                    origin = st.st_mtime - info.duration
                log.info("cutting %s into clips (from %.1f s)", f.name, entry["done_until"])
                seg = self._segmenter()

                def progress(seconds: float, entry=entry, key=key) -> None:
                    entry["done_until"] = seconds
                    ledger[key] = entry
                    _write_json(ledger_path, ledger)

                def opened(part: Path, entry=entry, key=key) -> None:
                    entry["part"] = part.name
                    ledger[key] = entry
                    _write_json(ledger_path, ledger)

                seg.on_open = opened

                import av

                try:
                    with av.open(str(f)) as container:
                        seg.run(container, origin, skip_until=entry["done_until"],
                                on_progress=progress)
                except (CaptureError, av.error.FFmpegError) as e:
                    self.last_error = f"{f.name}: {e}"
                    log.error("watched file %s stopped: %s", f.name, e)
                if self.stop.is_set():
                    return  # not complete: the next start resumes it
                entry["complete"] = True
                ledger[key] = entry
                _write_json(ledger_path, ledger)
            self.stop.wait(self.options.poll)

    # ---- storage policy and status ------------------------------------------------------

    def enforce_policy(self) -> None:
        """Delete raw clips the policy says to (logged with the reason)."""
        o = self.options
        if o.raw_budget is None and o.keep_raw is None and self._free() >= o.min_free:
            return
        with self.lock:
            ingested = set(self.ingested)
        plan = plan_retention(finished_clips(self.spool), ingested, now=time.time(),
                              budget=o.raw_budget, keep_raw=o.keep_raw, free=self._free(),
                              min_free=o.min_free)
        for d in plan:
            try:
                d.clip.path.unlink()
            except FileNotFoundError:
                continue
            self.deleted += 1
            self.last_deletion = f"{d.clip.path.name}: {d.reason}"
            log.info("deleted raw clip %s (%d bytes, already in memory): %s",
                     d.clip.path.name, d.clip.size, d.reason)

    def source_now(self) -> float:
        """The source's current time on the timeline (a replay at ×speed runs ahead)."""
        if self.source_clock is None:
            return time.time()
        origin, mono = self.source_clock
        speed = self.source.speed if self.source.realtime else 1.0
        return origin + (time.monotonic() - mono) * speed

    def status(self) -> dict:
        """The recorder's state as written to the status file: ``state`` (starting,
        recording, backpressure, ingesting, stopping, stopped, failed), ``queue`` (clips
        waiting for ingestion) and its bound, ``lag_seconds`` (source time not yet in memory),
        ``disk`` (raw clip bytes, budget, free bytes, floor), ``last_error``."""
        clips = finished_clips(self.spool)
        with self.lock:
            pending = [c for c in clips if c.path.name not in self.ingested]
        seg = self.segmenter
        head = seg.head if seg is not None else None
        live = self.source.live and self.state in ("recording", "backpressure")
        lag = None
        if live:
            lag = self.source_now() - (self.ingested_until or self.started_at)
        elif head is not None:
            lag = head - (self.ingested_until or head)
        try:
            free = self._free()
        except OSError:
            free = None
        over = len(pending) >= self.options.max_pending
        return {
            "state": self.state,
            "pid": os.getpid(),
            "memory": str(self.memory_path),
            "spool": str(self.spool),
            "source": self.source.describe(),
            "started_at": self.started_at,
            "current_clip": seg.current.name if seg is not None and seg.current else None,
            "clips_recorded": self.recorded,
            "clips_ingested": len(self.ingested),
            "ingesting": self.ingesting,
            "queue": len(pending),
            "queue_capacity": self.options.max_pending,
            "backpressure": over,
            "failed_clips": self.failed,
            "lag_seconds": None if lag is None else round(max(0.0, lag), 1),
            "ingested_until": self.ingested_until,
            "disk": {"raw_bytes": sum(c.size for c in clips), "raw_clips": len(clips),
                     "raw_budget": self.options.raw_budget, "keep_raw": self.options.keep_raw,
                     "free_bytes": free, "min_free": self.options.min_free,
                     "deleted_clips": self.deleted},
            "last_deletion": self.last_deletion,
            "last_error": self.last_error,
        }

    def write_status(self) -> None:
        """Write :meth:`status` atomically to ``<memory>.record.json`` (errors are logged)."""
        try:
            write_status(self.status_file, self.status())
        except OSError as e:
            log.error("cannot write the status file %s: %s", self.status_file, e)

    # ---- the session --------------------------------------------------------------------

    def run(self) -> int:
        """Record until the source ends (a file) or SIGTERM/SIGINT; returns the exit code."""
        self.preflight()
        self.write_status()
        self.recover()
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                handlers[sig] = signal.signal(sig, self._on_signal)
        worker = threading.Thread(target=self._worker, name="edge-ingest", daemon=True)
        capture = threading.Thread(target=self._capture, name="edge-capture", daemon=True)
        log.info("recording %s into %s (spool %s)", self.source.describe(), self.memory_path,
                 self.spool)
        worker.start()
        capture.start()
        over = False
        try:
            while worker.is_alive():
                self.enforce_policy()
                if self.capture_done.is_set() and not self.stop.is_set():
                    self.state = "ingesting"  # the source ended: drain the queue
                n = len(self.pending())
                if n >= self.options.max_pending and not over:
                    log.warning("ingestion queue at %d clips (bound %d): %s", n,
                                self.options.max_pending,
                                "recording continues to disk" if self.source.live else
                                "capture paused until it drains")
                over = n >= self.options.max_pending
                self.write_status()
                worker.join(self.options.poll)
            self.stop.set()
            capture.join()
            self.enforce_policy()
        finally:
            for sig, h in handlers.items():
                signal.signal(sig, h)
        failed = self.worker_failed or (self.last_error is not None and self.recorded == 0
                                        and self.capture_done.is_set())
        self.state = "failed" if failed else "stopped"
        self.write_status()
        log.info("stopped: %d clip(s) recorded, %d in memory, %d pending",
                 self.recorded, len(self.ingested),
                 len(self.pending()))
        return 1 if failed else 0

    def _on_signal(self, signum, _frame) -> None:
        if self.stop.is_set() and self._signalled:  # a second Ctrl-C: do not wait
            raise KeyboardInterrupt
        self._signalled = True
        log.info("%s: closing the current clip and stopping after the clip being ingested",
                 signal.Signals(signum).name)
        self.state = "stopping"
        self.stop.set()
        self.wake.set()


def _stored_path(path: Path) -> str:
    from edge.media import shown

    return shown(path.resolve())


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def recorder_status(memory_path: Path) -> dict | None:
    """The last status of the recorder of ``memory_path``, with ``running`` (its process is
    alive and wrote the status within the last minute) added; ``None`` when it never ran."""
    s = read_status(status_path(memory_path))
    if s is None:
        return None
    alive = False
    try:
        os.kill(int(s.get("pid", 0)), 0)
        alive = s.get("pid", 0) > 0
    except (ProcessLookupError, PermissionError, ValueError):
        alive = False
    s["running"] = bool(alive and s.get("state") not in ("stopped", "failed")
                        and time.time() - s.get("updated_at", 0) < 60)
    return s
