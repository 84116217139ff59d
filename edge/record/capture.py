"""Capture: what to record (:class:`SourceSpec`), opening it with PyAV, and the recorder's
capture thread (:class:`Capture`) that keeps a source going and feeds it to the
:class:`~edge.record.segmenter.Segmenter`, which cuts it into 30 s clips in the spool.

A camera or stream that drops is reopened with backoff (1 s, doubling up to 60 s); a file is
cut into clips once, known by its content hash, so a restart resumes it where the last run
stopped; a watched folder is polled and each file that stopped changing is cut into clips
once. The progress per file is kept in ``watched.json`` in the spool
(:class:`~edge.record.ledger.WatchLedger`). Each finished clip's audio level is measured
(:mod:`edge.record.audio`) so a silent microphone is noticed.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

from edge.errors import CaptureError
from edge.record.disk import disk_full_message, is_disk_full
from edge.record.ledger import WatchLedger, file_key
from edge.record.segmenter import Segmenter
from edge.record.session import Session, SourceSpec

log = logging.getLogger("edge.record")

MAX_BACKOFF_SECONDS = 60.0
"""The longest wait before reopening a camera or stream that dropped."""


def open_source(spec: SourceSpec):
    """Open a camera, stream or file as a PyAV input container.

    Raises :class:`CaptureError` with the device or URL and the FFmpeg reason.
    """
    import av

    kwargs: dict = {}
    target = spec.target
    if spec.kind == "camera":
        if sys.platform.startswith("linux"):
            target = f"/dev/video{target}" if target.isdigit() else target
            kwargs = {"format": "v4l2"}
        elif sys.platform == "darwin":
            kwargs = {"format": "avfoundation", "options": {"framerate": "30"}}
        else:  # Windows: DirectShow wants the device's name
            target = target if target.startswith("video=") else f"video={target}"
            kwargs = {"format": "dshow"}
    elif spec.kind == "stream":
        opts = {"timeout": "10000000"}  # µs without data before a read fails (then reconnect)
        if target.startswith(("rtsp://", "rtsps://")):
            opts["rtsp_transport"] = "tcp"
        kwargs = {"options": opts}
    try:
        return av.open(target, **kwargs)
    except (av.error.FFmpegError, OSError) as e:
        what = {"camera": "camera", "stream": "stream", "file": "file"}.get(spec.kind, "source")
        hint = {"camera": "check the index (ls /dev/video*) and that no other program uses it",
                "stream": "check the URL, the network and the camera's credentials",
                }.get(spec.kind, "check the path")
        raise CaptureError(f"cannot open {what} {target}: {getattr(e, 'strerror', None) or e}; "
                           f"{hint}") from None


class Capture:
    """The capture thread of a :class:`~edge.record.Recorder`: opens its source and cuts it
    into clips until the source ends or the recorder stops.

    Shared with the recorder: ``rec.stop`` (close the current clip and return),
    ``rec.state`` (set to ``recording``), ``rec.last_error`` and ``rec.capture_done`` (set
    when the thread ends); each published clip wakes the ingestion worker.
    """

    def __init__(self, rec: Session) -> None:
        self.rec = rec
        self.segmenter: Segmenter | None = None  # the newest one (the status's current clip)
        self.source_clock: tuple[float, float] | None = None  # (source time, monotonic)
        self.recorded = 0                        # clips written by this run
        self._key: str | None = None             # a file source's ledger key (its hash)

    def run(self) -> None:
        """The thread's body. Errors are logged and kept as the recorder's ``last_error``,
        never raised; a full disk stops the recording (:meth:`Session.halt`, one line);
        ``capture_done`` is set however it ends."""
        rec = self.rec
        try:
            if rec.source.kind == "watch":
                self._from_folder()
            elif rec.source.kind == "file":
                self._from_file()
            else:
                self._from_source()
        except CaptureError as e:
            rec.last_error = str(e)
            log.error("%s", e)
        except Exception as e:
            if not is_disk_full(e):
                rec.last_error = f"capture stopped: {e.__class__.__name__}: {e}"
                log.exception("capture failed")
            else:  # the recording stops with one line (no traceback), the ledger intact
                log.error("capture stopped: %s", e)
                rec.halt(disk_full_message(rec.memory_path))
        finally:
            rec.capture_done.set()
            rec.worker.wake.set()

    def source_now(self) -> float:
        """The source's current time on the timeline, Unix seconds (a replay at ×speed runs
        ahead of the clock)."""
        if self.source_clock is None:
            return time.time()
        origin, mono = self.source_clock
        source = self.rec.source
        speed = source.speed if source.realtime else 1.0
        return origin + (time.monotonic() - mono) * speed

    def resume_key(self) -> str | None:
        """A file source's key in the ledger (``sha256:<hex>`` of its bytes, like ``edge
        ingest`` knows a source; computed once), ``None`` for other sources. Raises
        :class:`CaptureError` when the file cannot be read."""
        if self.rec.source.kind != "file":
            return None
        if self._key is None:
            try:
                self._key = file_key(Path(self.rec.source.target))
            except OSError as e:
                raise CaptureError(f"cannot read file {self.rec.source.target}: "
                                   f"{e.strerror or e}") from None
        return self._key

    def _on_clip(self, path: Path, start: float, duration: float) -> None:
        self.recorded += 1
        log.info("clip %s (%.1f s) finished", path.name, duration)
        self.rec.worker.wake.set()
        self.rec.silence.check_clip(path, start, duration)

    def _segmenter(self) -> Segmenter:
        """A new segmenter into the spool. Below the disk floor a file or watched folder
        pauses until space is freed (:attr:`SourceSpec.can_pause`), a camera or stream stops
        writing clips (drops footage) meanwhile; a source that is not live also waits for
        room in the ingestion queue."""
        rec = self.rec
        self.segmenter = Segmenter(
            rec.spool, clip_seconds=rec.options.clip_seconds, reencode=rec.options.reencode,
            on_clip=self._on_clip, stop=rec.stop, can_write=self._above_floor,
            wait_for_room=rec.worker.wait_for_room,
            wait_for_disk=self._wait_for_disk if rec.source.can_pause else None)
        return self.segmenter

    def _above_floor(self) -> bool:
        """Whether free disk is at least ``--min-free``."""
        return self.rec.free_bytes() >= self.rec.options.min_free

    def _wait_for_disk(self) -> None:
        """Free disk is below the floor: pause the source (state ``paused``, its clip kept
        open) until space is freed — the storage policy deletes raw clips already in memory
        meanwhile — or the recorder stops. Logged when it pauses and when it goes on."""
        rec = self.rec
        log.warning("free disk is below the floor --min-free: pausing %s until space is "
                    "freed (nothing is dropped)", rec.source.describe())
        rec.state = "paused"
        while not rec.stop.is_set() and not self._above_floor():
            rec.stop.wait(rec.options.poll)
        if not rec.stop.is_set():
            rec.state = "recording"
            log.info("free disk is above the floor again: recording goes on")

    def _back_off(self, error: CaptureError, retry: str, backoff: float) -> float:
        """Log a dropped source, wait ``backoff`` seconds (or until stopped); returns the
        next backoff."""
        self.rec.last_error = str(error)
        log.error("%s; %s in %.0f s", error, retry, backoff)
        self.rec.stop.wait(backoff)
        return min(backoff * 2, MAX_BACKOFF_SECONDS)

    def _from_source(self) -> None:
        """Camera or stream; one that drops is reopened with backoff."""
        rec, source = self.rec, self.rec.source
        backoff = 1.0
        opened_once = False
        while not rec.stop.is_set():
            try:
                container = open_source(source)
            except CaptureError as e:
                if not opened_once:
                    raise  # a wrong device or URL fails at once; a dropped one is retried
                backoff = self._back_off(e, "retrying", backoff)
                continue
            opened_once = True
            finite = bool(container.duration)
            rec.state = "recording"
            origin = time.time()
            self.source_clock = (origin, time.monotonic())
            seg = self._segmenter()
            try:
                with container:
                    seg.run(container, origin)
                backoff = 1.0
            except CaptureError as e:
                backoff = self._back_off(e, "reconnecting", backoff)
                continue
            if finite:  # a file served over http: recorded once
                if rec.stop.is_set():  # a signal cut it short: not its end
                    log.info("stopped recording %s before its end", source.target)
                else:
                    log.info("end of %s", source.target)
                return
            if not rec.stop.is_set():
                log.warning("%s ended; reconnecting in %.0f s", source.describe(), backoff)
                rec.stop.wait(backoff)

    def _from_folder(self) -> None:
        """Poll a folder; cut each file that stopped changing into clips, once. Progress per
        file is kept in ``watched.json`` in the spool, so a restart resumes a file where its
        last finished clip ended."""
        from edge.ingest.run import find_media

        rec = self.rec
        folder = Path(rec.source.target)
        ledger = WatchLedger(rec.spool)
        seen: dict[str, tuple[int, int, float]] = {}
        rec.state = "recording"
        while not rec.stop.is_set():
            if not folder.is_dir():
                raise CaptureError(f"watched folder {folder} does not exist (any more)")
            for f in find_media([folder]):
                ready = self._settled(f, ledger, seen)
                if ready is not None and not self._cut_watched(f, *ready, ledger):
                    return  # stopped: the file is not complete, the next start resumes it
            rec.stop.wait(rec.options.poll)

    def _settled(self, f: Path, ledger: WatchLedger, seen: dict
                 ) -> tuple[str, dict, os.stat_result] | None:
        """``(key, ledger entry, stat)`` when watched file ``f`` is to be cut now: not yet
        complete and unchanged for ``settle`` seconds (``seen``: size, mtime and since when,
        per file); ``None`` otherwise."""
        key = str(f.resolve())
        if self.rec.spool.resolve() in f.resolve().parents:
            return None  # our own clips, when the spool is inside the watched folder
        try:
            st = f.stat()
        except FileNotFoundError:
            return None
        sig = (st.st_size, st.st_mtime_ns)
        entry = ledger.entries.get(key)
        if entry and entry.get("complete") and tuple(entry["sig"]) == sig:
            return None
        prev = seen.get(key)
        if prev is None or prev[:2] != sig:
            seen[key] = (*sig, time.monotonic())
            return None
        if time.monotonic() - prev[2] < self.rec.options.settle:
            return None  # still being written
        if entry is None or tuple(entry["sig"]) != sig:
            entry = {"sig": list(sig), "done_until": 0.0, "complete": False}
        return key, entry, st

    def _from_file(self) -> None:
        """A local file, cut into clips once. It is known by its content hash: a restart
        resumes it at the keyframe where the last run's clips end (same origin on the
        timeline), and a file already recorded to its end is not recorded again."""
        rec, source = self.rec, self.rec.source
        key = self.resume_key()
        ledger = WatchLedger(rec.spool)
        entry = ledger.entries.get(key)
        if entry is not None and entry.get("complete"):
            log.info("%s was recorded to its end before (same content as %s); nothing left "
                     "to record", source.target, entry.get("path"))
            return
        if entry is None:
            entry = {"path": str(Path(source.target).resolve()), "origin": time.time(),
                     "done_until": 0.0, "complete": False}
        else:
            log.info("resuming %s at %.1f s, where the last run's clips end (same content "
                     "as %s)", source.target, entry["done_until"], entry.get("path"))
        container = open_source(source)
        rec.state = "recording"
        self.source_clock = (entry["origin"] + entry["done_until"], time.monotonic())
        if self._cut_resumable(container, key, entry, ledger,
                               pace=source.speed if source.realtime else None):
            log.info("end of %s", source.target)
        else:  # a signal cut it short: not its end
            log.info("stopped recording %s before its end (at %.1f s; a restart resumes "
                     "there)", source.target, entry["done_until"])

    def _cut_resumable(self, container, key: str, entry: dict, ledger: WatchLedger, *,
                       pace: float | None = None) -> bool:
        """Cut an opened file (closed here) into clips from where its ledger ``entry`` says
        an earlier run stopped (``done_until``, source seconds; ``origin``, Unix seconds of
        its start), saving the progress after each clip. False when the recorder was stopped
        before the file's end. Raises :class:`CaptureError` and ``av`` errors."""
        seg = self._segmenter()

        def progress(seconds: float) -> None:  # a clip is done, before it is published
            entry["done_until"] = seconds
            entry["part"] = None
            ledger.save(key, entry)

        def opened(part: Path) -> None:
            entry["part"] = part.name
            ledger.save(key, entry)

        seg.on_open = opened
        with container:
            seg.run(container, entry["origin"], pace=pace, skip_until=entry["done_until"],
                    on_progress=progress, resumable=True)
        if self.rec.stop.is_set():
            return False
        entry["complete"] = True
        ledger.save(key, entry)
        return True

    def _cut_watched(self, f: Path, key: str, entry: dict, st: os.stat_result,
                     ledger: WatchLedger) -> bool:
        """Cut watched file ``f`` into clips from where its ledger ``entry`` says an earlier
        run stopped. False when the recorder was stopped before the file's end."""
        import av

        from edge.ingest.media import MediaError, probe

        rec = self.rec
        try:
            info = probe(f)
        except MediaError as e:
            rec.last_error = str(e)
            log.error("watched file skipped: %s", e)
            ledger.save(key, {**entry, "complete": True, "error": str(e)})
            return True
        origin = info.creation_time
        if origin is None:  # a camera closes the file when it stops: mtime ≈ end
            origin = st.st_mtime - info.duration
        log.info("cutting %s into clips (from %.1f s)", f.name, entry["done_until"])
        try:
            if self._cut_resumable(av.open(str(f)), key, {**entry, "origin": origin}, ledger):
                return True
        except (CaptureError, av.error.FFmpegError) as e:
            if is_disk_full(e):
                raise  # our disk, not the file: it is not complete; the recording stops
            rec.last_error = f"{f.name}: {e}"
            log.error("watched file %s stopped: %s", f.name, e)
        if rec.stop.is_set():
            return False
        ledger.save(key, {**ledger.entries.get(key, entry), "complete": True})
        return True
