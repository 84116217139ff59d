"""The recorder: one ``edge record`` session, tying capture, the spool and the ingestion
worker together (lock, disk preflight, recovery after a crash, the run loop, signals and the
storage policy).

Three threads share one process: the capture thread (:class:`~edge.record.capture.Capture`)
cuts the source into 30 s clips, the ingestion worker
(:class:`~edge.record.worker.IngestWorker`) turns each finished clip into memory, and the
main thread (:meth:`Recorder.run`) applies the storage policy, writes the status file and
waits for SIGTERM/SIGINT.
"""

from __future__ import annotations

import fcntl
import logging
import shutil
import signal
import threading
import time
from pathlib import Path

from edge.errors import CaptureError, RecordError
from edge.record.audio import SilenceWatch
from edge.record.capture import Capture
from edge.record.disk import disk_full_message, is_disk_full
from edge.record.ledger import FILE_KEY_PREFIX, WatchLedger
from edge.record.session import RecordOptions, SourceSpec
from edge.record.spool import finished_clips, partial_clips, plan_retention, repair, spool_dir
from edge.record.status import snapshot, status_path, write_status
from edge.record.worker import IngestWorker

log = logging.getLogger("edge.record")


class Recorder:
    """One recording session into the memory at ``memory_path``.

    ``hub_factory()`` returns the model hub (called in the worker thread, so capture starts
    before the models have loaded). :meth:`run` returns the exit code (0 clean, 1 failed).
    ``state`` is one of starting, recording, backpressure, paused (free disk below the
    floor), ingesting, stopping, stopped, failed (see :meth:`status`).
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
        self.started_at = time.time()
        self.state = "starting"
        self.last_error: str | None = None
        self.fatal: str | None = None       # why the recording stopped early (halt)
        self._status_error: str | None = None  # the last error writing the status file
        self.last_deletion: str | None = None
        self.deleted = 0                     # raw clips deleted by the storage policy
        self.silence = SilenceWatch(options.silent_after)  # the source's audio level
        self.worker = IngestWorker(self)     # the queue: clips in memory, being ingested
        self.capture = Capture(self)         # the clips recorded, the current clip
        self._lockfile = None
        self._signalled = False

    def halt(self, reason: str) -> None:
        """Stop the recording for an error the user must fix (a full disk): capture closes
        or leaves its clip, the worker stops, and :meth:`run` raises :class:`RecordError`
        with ``reason`` (the first one given), one line."""
        if self.fatal is None:
            self.fatal = reason
            self.last_error = reason
        self.state = "stopping"
        self.stop.set()
        self.worker.wake.set()

    def free_bytes(self) -> int:
        """Free disk space, in bytes, on the spool's file system. Raises :class:`OSError`
        (e.g. before the spool exists)."""
        return shutil.disk_usage(self.spool).free

    # ---- setup --------------------------------------------------------------------------

    def preflight(self) -> None:
        """Create the spool, take the single-recorder lock and check the disk floor.

        Raises :class:`RecordError` when the spool cannot be created, when another recorder
        holds this memory or when free disk is below ``min_free``.
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
        free = self.free_bytes()
        if free < self.options.min_free:
            from humanfriendly import format_size

            raise RecordError(
                f"only {format_size(free)} free on the disk of {self.spool}, below the floor "
                f"--min-free {format_size(self.options.min_free)}; free some space, lower "
                "--raw-budget/--keep-raw, or lower --min-free")

    def recover(self) -> list[Path]:
        """Repair or discard half-written clips; learn which finished clips are already in
        memory. Returns the pending clips, oldest first.

        Clips are published by an atomic rename after fsync, so after a crash or power loss
        every finished clip not yet in memory is pending; ingest hashes each file, so a clip
        is never stored twice, and a clip whose ingest was cut short is resumed. The
        ``.part`` clip that was being written is remuxed up to where it still decodes, or
        discarded (both logged); one cut from a file that this run cuts again (a watched
        file, the file source) is discarded instead.
        """
        from edge.store import Memory

        ledger = WatchLedger(self.spool)
        unfinished = ledger.unfinished_parts()
        for part in partial_clips(self.spool):
            key = unfinished.get(part.name)
            if key is not None and self._cut_again(key):
                part.unlink()
                log.warning("discarded half-written clip %s: it is cut again from %s",
                            part.name, ledger.name_of(key))
            else:
                fixed = repair(part)
                if key is not None:  # a file not recorded now: resume it after the repair
                    ledger.repaired(key, fixed)
        done: set[str] = set()
        if self.memory_path.exists():  # else created by the first ingest (an empty file
            with Memory(self.memory_path, create=True) as memory:  # left by a kill is fine)
                done = memory.done_source_paths()
        worker = self.worker
        clips = finished_clips(self.spool)
        for c in clips:
            if _stored_path(c.path) in done:
                worker.ingested.add(c.path.name)
                worker.ingested_until = max(worker.ingested_until or 0.0, c.start)
        pending = [c.path for c in clips if c.path.name not in worker.ingested]
        if pending:
            log.info("resuming: %d finished clip(s) not yet in memory", len(pending))
        return pending

    def _cut_again(self, key: str) -> bool:
        """Whether the file of ledger ``key`` is cut again by this run (a watched file, or
        the file source being recorded), so its half-written clip is discarded, not
        repaired."""
        if not key.startswith(FILE_KEY_PREFIX):
            return True
        try:
            return key == self.capture.resume_key()
        except CaptureError:
            return False  # the source cannot be read: capture says so

    # ---- storage policy and status ------------------------------------------------------

    def enforce_policy(self) -> None:
        """Delete the raw clips the storage policy says to (each logged with the reason);
        see :func:`~edge.record.spool.plan_retention`."""
        o = self.options
        if o.raw_budget is None and o.keep_raw is None and self.free_bytes() >= o.min_free:
            return
        ingested = self.worker.ingested_names()
        plan = plan_retention(finished_clips(self.spool), ingested, now=time.time(),
                              budget=o.raw_budget, keep_raw=o.keep_raw, free=self.free_bytes(),
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

    def status(self) -> dict:
        """The recorder's state as written to the status file: ``state`` (starting,
        recording, backpressure, paused, ingesting, stopping, stopped, failed), ``queue``
        (clips waiting for ingestion) and its bound, ``lag_seconds`` (source time not yet in
        memory), ``disk`` (raw clip bytes, budget, free bytes, floor), ``audio`` (the source's level
        and the silence warning, :meth:`edge.record.audio.SilenceWatch.status`),
        ``last_error``."""
        return snapshot(self)

    def write_status(self) -> None:
        """Write :meth:`status` atomically to ``<memory>.record.json`` (errors are logged
        once, not raised)."""
        try:
            write_status(self.status_file, self.status())
        except OSError as e:
            if str(e) != self._status_error:  # once, not every second (a full disk)
                log.error("cannot write the status file %s: %s", self.status_file, e)
            self._status_error = str(e)
        else:
            self._status_error = None

    def mark_stopped(self) -> None:
        """Set the state to ``stopped`` and write the status file now.

        For a caller whose :meth:`run` was cut short (a second Ctrl-C raises
        :class:`KeyboardInterrupt` out of it): the status file then says stopped instead of
        the state it was interrupted in. Errors writing the file are logged, not raised.
        """
        self.state = "stopped"
        self.write_status()

    # ---- the session --------------------------------------------------------------------

    def run(self) -> int:
        """Record until the source ends (a file) or SIGTERM/SIGINT; returns the exit code
        (0 clean, 1 when capture never produced a clip or ingestion broke down).

        Raises :class:`RecordError` from :meth:`preflight`, and with the reason of
        :meth:`halt` (a full disk: what is stored stays, the same command resumes) once both
        threads have stopped; a second SIGINT while stopping raises
        :class:`KeyboardInterrupt`.
        """
        self.preflight()
        self.write_status()
        try:
            self.recover()
        except Exception as e:
            if not is_disk_full(e):
                raise
            self._lockfile.close()
            raise RecordError(disk_full_message(self.memory_path)) from None
        handlers = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                handlers[sig] = signal.signal(sig, self._on_signal)
        worker = threading.Thread(target=self.worker.run, name="edge-ingest", daemon=True)
        capture = threading.Thread(target=self.capture.run, name="edge-capture", daemon=True)
        log.info("recording %s into %s (spool %s)", self.source.describe(), self.memory_path,
                 self.spool)
        worker.start()
        capture.start()
        try:
            self._supervise(worker)
            self.stop.set()
            capture.join()
            self.enforce_policy()
        finally:
            for sig, h in handlers.items():
                signal.signal(sig, h)
            self._lockfile.close()  # releases the lock: the memory may be recorded into again
        failed = self.fatal is not None or self.worker.crashed or (
            self.last_error is not None and self.capture.recorded == 0
            and self.capture_done.is_set())
        self.state = "failed" if failed else "stopped"
        self.write_status()
        log.info("stopped: %d clip(s) recorded, %d in memory, %d pending",
                 self.capture.recorded, len(self.worker.ingested),
                 len(self.worker.pending()))
        if self.fatal is not None:
            raise RecordError(self.fatal)
        return 1 if failed else 0

    def _supervise(self, worker: threading.Thread) -> None:
        """The main thread while the worker runs: every ``poll`` seconds apply the storage
        policy, note the end of capture, warn when the queue reaches its bound, write the
        status file."""
        bound = self.options.max_pending
        over = False
        while worker.is_alive():
            self.enforce_policy()
            if self.capture_done.is_set() and not self.stop.is_set():
                self.state = "ingesting"  # the source ended: drain the queue
            n = len(self.worker.pending())
            if n >= bound and not over:
                log.warning("ingestion queue at %d clips (bound %d): %s", n, bound,
                            "recording continues to disk" if self.source.live else
                            "capture paused until it drains")
            over = n >= bound
            self.write_status()
            worker.join(self.options.poll)

    def _on_signal(self, signum, _frame) -> None:
        if self.stop.is_set() and self._signalled:  # a second Ctrl-C: do not wait
            raise KeyboardInterrupt
        self._signalled = True
        log.info("%s: closing the current clip and stopping after the clip being ingested",
                 signal.Signals(signum).name)
        self.state = "stopping"
        self.stop.set()
        self.worker.wake.set()


def _stored_path(path: Path) -> str:
    """A clip's path as the memory stores it for its source (to match finished clips)."""
    from edge.ingest.media import shown

    return shown(path.resolve())
