"""The segmenter: cut one opened PyAV container into 30 s clip files in the spool.

Clips are cut at the first video keyframe at least ``clip_seconds`` after the clip started,
and packets are stream-copied (no decoding, no quality loss, little CPU) into Matroska. A
source whose video cannot be copied usefully (a webcam's raw frames) or ``reencode=True`` is
decoded and encoded (H.264 when the PyAV build has libx264, MPEG-4 Part 2 otherwise); each
clip then starts with a keyframe of its own. Audio is copied when Matroska can hold it.

A clip's start time is the source's origin (Unix seconds when it started delivering, or a
file's own start time) plus the offset of the clip's first keyframe, so consecutive clips
sit back to back on the timeline. Opening the source is :mod:`edge.record.capture`'s job.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from edge.errors import CaptureError
from edge.record.disk import is_disk_full
from edge.record.spool import PART_SUFFIX, clip_name, fsync_path, iso_utc, publish

log = logging.getLogger("edge.record")

RAW_VIDEO_CODECS = {"rawvideo"}  # copying these would write uncompressed video


def _ptime(pkt) -> float | None:
    """A packet's decode time (its presentation time when it has none), in seconds."""
    t = pkt.dts if pkt.dts is not None else pkt.pts
    return None if t is None else float(t * pkt.time_base)


def part_path(spool: Path, start: float) -> Path:
    """The ``.part`` file for a new clip starting at Unix time ``start``: its name, with
    ``-1``, ``-2``… added when a clip of that name is already in the spool."""
    name = clip_name(start)
    n = 1
    while (spool / name).exists() or (spool / (name + PART_SUFFIX)).exists():
        name = clip_name(start).replace(".mkv", f"-{n}.mkv")
        n += 1
    return spool / (name + PART_SUFFIX)


class _ClipWriter:
    """One clip being written as ``<name>.mkv.part``; :meth:`close` ends it (still a
    ``.part``), :func:`~edge.record.spool.publish` then gives it its final name."""

    def __init__(self, part: Path, start: float, offset: float, video, audio,
                 encoder: str | None, base: float = 0.0) -> None:
        import av

        self.part = part            # the file being written (:func:`part_path`)
        self.start = start          # Unix seconds of the clip's first frame
        self.offset = offset        # seconds after the source's first packet that map to 0
        self.base = base            # the source's first packet time (its timestamps' zero)
        self.last = offset
        self.out = av.open(str(self.part), "w", format="matroska")
        self.out.metadata["creation_time"] = iso_utc(start)
        self.map: dict[int, object] = {}
        self.encoder = None
        if video is not None:
            if encoder is None:
                self.map[video.index] = self.out.add_stream_from_template(video)
            else:
                rate = video.average_rate or video.guessed_rate or 30
                s = self.out.add_stream(encoder, rate=rate)
                s.width, s.height = video.codec_context.width, video.codec_context.height
                s.pix_fmt = "yuv420p"
                s.time_base = Fraction(1, 1000)
                s.codec_context.time_base = Fraction(1, 1000)
                if encoder == "libx264":
                    s.options = {"preset": "veryfast", "crf": "26"}
                self.encoder = s
                self.last_pts = -1
        if audio is not None:
            self.map[audio.index] = self.out.add_stream_from_template(audio)

    def copy(self, pkt) -> None:
        """Stream-copy one packet, its timestamps shifted so the clip starts at 0; a
        packet from before the cut (negative time) belongs to the previous clip and is dropped."""
        shift = round((self.base + self.offset) / pkt.time_base)
        if pkt.pts is not None:
            pkt.pts -= shift
        if pkt.dts is not None:
            pkt.dts -= shift
        t = pkt.pts if pkt.pts is not None else pkt.dts
        if t < 0:  # audio (or open-GOP leading frames) from before the cut: previous clip's
            return
        pkt.stream = self.map[pkt.stream.index]
        self.out.mux(pkt)

    def encode(self, frame, t: float) -> None:
        """Re-encode one decoded frame at ``t`` (seconds from the source's first packet) with
        millisecond timestamps from the clip start; a frame not after the last one is dropped."""
        pts = round((t - self.offset) * 1000)
        if pts <= self.last_pts:
            return
        self.last_pts = pts
        frame = frame.reformat(format="yuv420p")
        frame.pts, frame.time_base = pts, Fraction(1, 1000)
        for p in self.encoder.encode(frame):
            self.out.mux(p)

    def close(self) -> None:
        """Flush the encoder, close (the Matroska trailer: duration, cues) and fsync the
        ``.part`` file. Raises ``av`` errors and :class:`OSError` (a full disk)."""
        if self.encoder is not None:
            for p in self.encoder.encode(None):
                self.out.mux(p)
        self.out.close()
        fsync_path(self.part)

    def abandon(self) -> None:
        """Close the file after a write failed, ignoring further errors; the ``.part`` stays
        for the next start to repair or discard (:meth:`edge.record.Recorder.recover`)."""
        try:
            self.out.close()
        except Exception:  # noqa: BLE001 (the write already failed; that error is raised)
            pass


def fits_matroska(stream) -> bool:
    """Whether a stream can be copied into a Matroska clip as it is (tried in memory)."""
    import io

    import av

    try:
        with av.open(io.BytesIO(), "w", format="matroska") as out:
            out.add_stream_from_template(stream)
            out.start_encoding()
        return True
    except (av.error.FFmpegError, ValueError):
        return False


def pick_encoder() -> str:
    """H.264 (libx264) when this PyAV build has it, MPEG-4 Part 2 otherwise."""
    import av

    return "libx264" if "libx264" in av.codecs_available else "mpeg4"


class Segmenter:
    """Cuts one opened source into clip files in ``spool``.

    ``on_clip(path, start, duration)`` is called for each finished clip. ``stop`` ends the
    run after closing the current clip. ``can_write()`` false (disk below the floor): a
    source that can wait is paused by ``wait_for_disk()``, which blocks until there is room
    again or ``stop`` (the clip stays open, nothing is dropped); without it (a live source)
    the current clip is closed and footage dropped until ``can_write()`` is true again.
    ``wait_for_room()`` is called before each new clip of a non-live source and may block
    (back-pressure).
    """

    def __init__(self, spool: Path, *, clip_seconds: float = 30.0, reencode: bool = False,
                 on_clip: Callable[[Path, float, float], None], stop: threading.Event,
                 can_write: Callable[[], bool] = lambda: True,
                 wait_for_room: Callable[[], None] | None = None,
                 wait_for_disk: Callable[[], None] | None = None) -> None:
        self.spool = spool
        self.clip_seconds = clip_seconds
        self.reencode = reencode
        self.on_clip = on_clip
        self.stop = stop
        self.can_write = can_write
        self.wait_for_room = wait_for_room
        self.wait_for_disk = wait_for_disk
        self.on_open: Callable[[Path], None] | None = None  # a .part is about to be created
        self._on_progress: Callable[[float], None] | None = None  # run()'s on_progress
        self.writer: _ClipWriter | None = None
        self.head: float | None = None  # Unix time of the newest footage written
        self.clips = 0
        self._paused = False  # footage is being dropped (disk below the floor)

    @property
    def current(self) -> Path | None:
        """The ``.part`` file of the clip being written, or ``None`` between clips."""
        w = self.writer
        return w.part if w is not None else None

    def _close(self, upto: float | None = None) -> None:
        """Close the clip being written and publish it. ``upto`` (the source seconds its
        footage reaches) goes to ``on_progress`` after the file is closed and fsynced and
        before it is published: a clip appears only once the ledger says its footage is
        done, so a restart never cuts it again (:mod:`edge.record.ledger`). Raises what
        closing or ``on_progress`` raises (a full disk); the ``.part`` then stays."""
        w, self.writer = self.writer, None
        if w is None:
            return
        try:
            w.close()
        except Exception:
            w.abandon()
            raise
        if self._on_progress is not None and upto is not None:
            self._on_progress(upto)
        path = publish(w.part)
        self.clips += 1
        self.on_clip(path, w.start, max(0.0, w.last - w.offset))

    def _abandon(self) -> None:
        """Drop the clip being written after a write failed: its ``.part`` stays, named in
        the ledger, for the next start (discarded and cut again, or repaired)."""
        w, self.writer = self.writer, None
        if w is not None:
            w.abandon()

    def run(self, container, origin: float, *, pace: float | None = None,
            skip_until: float = 0.0, on_progress: Callable[[float], None] | None = None,
            resumable: bool = False) -> float:
        """Read ``container`` to its end (or ``stop``); returns the source seconds read.

        ``origin``: Unix time of the source's first packet. ``pace``: replay at this multiple
        of real time (a file as a live source); skipped footage is not paced.
        ``skip_until``: source seconds already cut into clips by an earlier run (a file
        resumed after a restart). ``on_progress(seconds)`` after each clip with the source
        seconds cut so far, before the clip is published. ``resumable`` (a file another run
        resumes from ``on_progress``'s seconds): on ``stop`` a stream-copied clip is closed at
        the next video keyframe, not at once, so the next run's first clip starts exactly
        where it ends. Raises :class:`CaptureError` when the source has no video or audio, or
        when reading it fails (the clip being written is closed and published first); a write
        that fails for a full disk is raised as it is (``av`` errors, :class:`OSError`), the
        clip being written left as a ``.part``.
        """
        import av

        src = self._open_streams(container, origin)
        wall0 = None
        rel = 0.0
        self._paused = False
        self._on_progress = on_progress
        stopping = False
        try:
            for pkt in container.demux(src.streams):
                t = _ptime(pkt)
                if t is None:
                    continue
                if src.t0 is None:
                    src.t0 = t
                rel = t - src.t0
                if rel < skip_until:
                    continue
                if pace and not stopping:
                    if wall0 is None:
                        wall0 = time.monotonic()
                    delay = wall0 + (rel - skip_until) / pace - time.monotonic()
                    if delay > 0:
                        self.stop.wait(delay)
                if self.stop.is_set() and not stopping:
                    if not (resumable and self._can_finish_at_keyframe(src)):
                        break
                    stopping = True  # read on, unpaced, up to the next cut point
                if stopping and pkt.stream is src.video and pkt.is_keyframe:
                    break  # the next run's first clip starts at this keyframe
                if not self._room_on_disk():
                    continue
                if not self._write(src, pkt, rel):
                    break
        except av.error.FFmpegError as e:
            raise self._failed(e, rel) from None
        if self.writer is not None:
            self._close(rel)
        elif on_progress:
            on_progress(rel)
        return rel

    def _failed(self, error: Exception, rel: float) -> Exception:
        """The error to raise for an FFmpeg error after ``rel`` source seconds: our own
        write on a full disk as it is (the clip being written stays a ``.part``, nothing is
        published), else a :class:`CaptureError` for the source (the clip being written is
        closed and published first)."""
        if is_disk_full(error):
            self._abandon()
            return error
        self._close(rel)
        return CaptureError(f"reading the source failed after {rel:.1f} s: "
                            f"{getattr(error, 'strerror', None) or error}")

    def _can_finish_at_keyframe(self, src: _Source) -> bool:
        """Whether a stopped run can close its clip at the next video keyframe: a clip is
        open and its video is stream-copied."""
        return self.writer is not None and src.video is not None and src.encoder is None

    def _open_streams(self, container, origin: float) -> _Source:
        """Pick the streams to record and whether the video must be encoded."""
        video = container.streams.video[0] if container.streams.video else None
        audio = container.streams.audio[0] if container.streams.audio else None
        if audio is not None and not fits_matroska(audio):
            log.warning("audio (%s) cannot be stream-copied into the clips; recording video "
                        "only", audio.codec_context.name)
            audio = None
        if video is None and audio is None:
            raise CaptureError("the source has neither video nor audio")
        encoder = None
        if video is not None and (self.reencode
                                  or video.codec_context.name in RAW_VIDEO_CODECS
                                  or not fits_matroska(video)):
            encoder = pick_encoder()
            video.thread_type = "AUTO"
        return _Source(video, audio, encoder, origin)

    def _room_on_disk(self) -> bool:
        """Whether the packet in hand may be written. Below the disk floor a source that can
        wait pauses here (``wait_for_disk``) and then writes it; a live source's current clip
        is closed and its footage dropped (False; logged once per shortage)."""
        if not self.can_write():
            if self.wait_for_disk is not None:
                self.wait_for_disk()
                return True
            if not self._paused:
                log.error("free disk is below the floor: closing the current clip and "
                          "dropping footage until space is freed")
                self._paused = True
            self._close()
            return False
        self._paused = False
        return True

    def _write(self, src: _Source, pkt, rel: float) -> bool:
        """Write one packet at ``rel`` source seconds, starting a new clip at a keyframe
        once the current one is long enough. False when ``stop`` was set while waiting for
        room in the queue."""
        is_video = pkt.stream is src.video
        encode = src.encoder is not None and is_video
        frames = []
        if encode:
            frames = [(f, float(f.time) - src.t0) for f in pkt.decode() if f.time is not None]
            cut_ok = bool(frames)
            at = frames[0][1] if frames else rel
        else:
            cut_ok = pkt.is_keyframe if is_video else src.video is None
            at = rel
            if is_video and pkt.pts is not None:
                at = float(pkt.pts * pkt.time_base) - src.t0  # presentation time
        w = self.writer
        if cut_ok and (w is None or at - w.offset >= self.clip_seconds):
            if not self._next_clip(src, at, rel):
                return False
        w = self.writer
        if w is None:
            return True  # before the first keyframe
        if frames:
            for f, ft in frames:
                w.encode(f, ft)
        elif not encode:
            w.copy(pkt)
        w.last = max(w.last, at if is_video else rel)
        self.head = src.origin + rel
        return True

    def _next_clip(self, src: _Source, at: float, rel: float) -> bool:
        """Publish the current clip and open the next one, whose first frame is at ``at``
        source seconds. False when ``stop`` was set while waiting for room."""
        self._close(rel)
        if self.wait_for_room is not None:
            self.wait_for_room()
            if self.stop.is_set():
                return False
        start = round(src.origin + at, 3)
        part = part_path(self.spool, start)
        if self.on_open is not None:
            self.on_open(part)  # the ledger names the file before it exists
        # the clip's first frame is presented at 0 (its dts may be negative)
        self.writer = _ClipWriter(part, start, at, src.video, src.audio, src.encoder,
                                  base=src.t0)
        return True


@dataclass
class _Source:
    """The streams of one :meth:`Segmenter.run`: the video and audio recorded (``None``
    when absent or dropped), the encoder (``None``: stream copy), ``origin`` (Unix seconds
    of the first packet) and ``t0`` (the first packet's own timestamp, seconds)."""

    video: object
    audio: object
    encoder: str | None
    origin: float
    t0: float | None = None

    @property
    def streams(self) -> list:
        """The streams being recorded: the video and audio that are not ``None``."""
        return [s for s in (self.video, self.audio) if s is not None]
