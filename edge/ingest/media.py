"""Video and audio I/O through PyAV: probe a file, cut it into clips, sample frames, load audio.

A file is decoded once, front to back; frames are sampled at ``fps`` (1 by default) by
presentation time, which also handles variable frame rate. Files without a video stream
(an MP3) become audio-only sources; files without an audio stream are normal.
"""

from __future__ import annotations

import math
import os
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from edge.errors import MediaError  # noqa: F401 (re-exported)
from models.captioner import Frame
from models.vision import downscale

CLIP_SECONDS = 30.0
MIN_TAIL_SECONDS = 2.0  # a last clip shorter than this is merged into the one before it


def shown(path: Path | str) -> str:
    """A path as text that can always be printed and stored: bytes that are not UTF-8 (a
    file name from another system) become ``\\xff`` escapes instead of raising."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")



@dataclass(frozen=True)
class MediaInfo:
    """What a probe found. Times in seconds; ``creation_time`` is Unix seconds or ``None``."""

    path: Path
    duration: float
    has_video: bool
    has_audio: bool
    width: int = 0
    height: int = 0
    video_codec: str = ""
    avg_fps: float = 0.0
    creation_time: float | None = None


@dataclass
class ClipSpan:
    """One clip of a source: ``index``, ``start``/``end`` seconds from the source start, and
    the frames sampled inside it (``Frame.t`` relative to the clip start)."""

    index: int
    start: float
    end: float
    frames: list[Frame] = field(default_factory=list)

    @property
    def duration(self) -> float:
        """The clip's length in seconds (``end - start``)."""
        return self.end - self.start


def _open(path: Path):
    import av

    if not path.exists():
        raise MediaError(f"{shown(path)}: no such file")
    if path.stat().st_size == 0:
        raise MediaError(f"{shown(path)}: the file is empty (0 bytes)")
    try:
        return av.open(str(path))
    except av.error.FFmpegError as e:
        if _mp4_index_missing(path):
            raise MediaError(
                f"{shown(path)}: the file ends before its index (the MP4/MOV 'moov' box, "
                "which cameras and phones write last) — it was cut off, e.g. by an "
                "interrupted copy or recording, and cannot be decoded without it; copy it "
                "again from the device (the other files go on)") from None
        raise MediaError(
            f"{shown(path)}: not a readable video or audio file ({e.__class__.__name__}: "
            f"{getattr(e, 'strerror', None) or e}); check the file or re-export it"
        ) from None


def _mp4_index_missing(path: Path) -> bool:
    """True when ``path`` is an ISO-BMFF file (MP4/MOV: starts with an ``ftyp`` box) whose
    top-level boxes end without a ``moov`` box (the index), i.e. a file cut off before its
    end. Reads only the 8- or 16-byte box headers (ISO/IEC 14496-12 §4.2)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            pos, first = 0, True
            while pos + 8 <= size:
                f.seek(pos)
                head = f.read(16)
                box_size, kind = int.from_bytes(head[:4], "big"), head[4:8]
                if first and kind != b"ftyp":
                    return False
                first = False
                if kind == b"moov":
                    return False
                if box_size == 1 and len(head) == 16:
                    box_size = int.from_bytes(head[8:16], "big")
                elif box_size == 0:  # the box runs to the end of the file
                    box_size = size - pos
                if box_size < 8:
                    return False  # not a box structure we can walk
                pos += box_size
            return not first
    except OSError:
        return False


def _parse_creation_time(tags: dict) -> float | None:
    raw = tags.get("creation_time") or tags.get("date")
    if not raw:
        return None
    try:
        dt = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.astimezone()
    if dt.year < 1980:  # cameras without a clock write 1970/1904 epochs
        return None
    return dt.timestamp()


def probe(path: Path) -> MediaInfo:
    """Read container and stream facts (duration in seconds, first video and audio stream)
    without decoding. Raises :class:`MediaError` for a missing, empty, cut-off or unreadable
    file, or one with neither a video nor an audio stream."""
    path = Path(path)
    with _open(path) as c:
        v = c.streams.video[0] if c.streams.video else None
        a = c.streams.audio[0] if c.streams.audio else None
        if v is None and a is None:
            raise MediaError(f"{shown(path)}: contains neither a video nor an audio stream")
        duration = float(c.duration) / 1_000_000 if c.duration else 0.0
        if duration <= 0:
            stream = v or a
            if stream.duration and stream.time_base:
                duration = float(stream.duration * stream.time_base)
        tags = {**dict(c.metadata), **(dict(v.metadata) if v is not None else {})}
        return MediaInfo(
            path=path,
            duration=duration,
            has_video=v is not None,
            has_audio=a is not None,
            width=v.codec_context.width if v is not None else 0,
            height=v.codec_context.height if v is not None else 0,
            video_codec=v.codec_context.name if v is not None else "",
            avg_fps=float(v.average_rate) if v is not None and v.average_rate else 0.0,
            creation_time=_parse_creation_time(tags),
        )


def clip_bounds(duration: float, clip_seconds: float = CLIP_SECONDS) -> list[tuple[float, float]]:
    """Consecutive ``(start, end)`` clip spans of ``clip_seconds`` (seconds from the source
    start) covering ``duration`` seconds; a tail shorter than 2 s joins the previous clip. A
    duration of 0 gives no clips."""
    if duration <= 0:
        return []
    n = max(1, math.ceil(duration / clip_seconds - 1e-9))
    bounds = [(i * clip_seconds, min(duration, (i + 1) * clip_seconds)) for i in range(n)]
    if len(bounds) > 1 and bounds[-1][1] - bounds[-1][0] < MIN_TAIL_SECONDS:
        tail = bounds.pop()
        bounds[-1] = (bounds[-1][0], tail[1])
    return bounds


def iter_clips(
    info: MediaInfo,
    *,
    clip_seconds: float = CLIP_SECONDS,
    fps: float = 1.0,
    max_side: int = 1280,
    warnings: list[str] | None = None,
) -> Iterator[ClipSpan]:
    """Yield the clips of a source in order, each with frames sampled at ``fps``.

    Decodes the video stream once, packet by packet: a corrupt packet in the middle is skipped
    (decoding goes on after it) and a file that ends early (truncated) yields the clips
    decoded so far; both append a note to ``warnings``. Audio-only sources yield clips without
    frames. Frames are BGR ``uint8`` ``(h, w, 3)``, turned upright by the display matrix
    (phone rotation) and at most ``max_side`` pixels on their long side; ``Frame.t`` is
    seconds from the clip start. Raises :class:`MediaError` when the file cannot be opened.
    """
    bounds = clip_bounds(info.duration, clip_seconds)
    if not info.has_video:
        for i, (s, e) in enumerate(bounds):
            yield ClipSpan(i, s, e)
        return
    spans = [ClipSpan(i, s, e) for i, (s, e) in enumerate(bounds)]
    if not spans:
        return
    current, last_t = yield from _sample_video(info, spans, fps, max_side, warnings)
    for span in spans[current:]:
        if span is None:
            continue
        if span.frames or span.start <= last_t:
            yield span
        elif warnings is not None:
            warnings.append(f"{shown(info.path.name)}: no frames decoded after {last_t:.1f} s")
            break


def _sample_video(info: MediaInfo, spans: list[ClipSpan], fps: float, max_side: int,
                  warnings: list[str] | None) -> Generator[ClipSpan, None, tuple[int, float]]:
    """Decode the video stream once, filling ``spans`` with frames sampled at ``fps`` and
    yielding each span once decoding has passed its end (its slot in ``spans`` is then set
    to ``None`` to free the frames). Returns ``(index of the first span not yielded,
    seconds decoded)``; corrupt packets and an early end add notes to ``warnings``."""
    import av

    step = 1.0 / fps
    current = 0
    next_sample = 0.0
    origin: float | None = None
    last_t = 0.0
    bad_packets, bad_from = 0, None
    with _open(info.path) as c:
        stream = c.streams.video[0]
        stream.thread_type = "AUTO"
        try:
            for packet in c.demux(stream):
                try:
                    frames = packet.decode()
                except (av.error.FFmpegError, ValueError):
                    # corrupt bytes inside the file: skip this packet, keep decoding after it
                    bad_packets += 1
                    bad_from = last_t if bad_from is None else bad_from
                    continue
                for frame in frames:
                    if frame.time is None:
                        continue
                    if origin is None:
                        origin = float(frame.time)
                    t = float(frame.time) - origin
                    if t < last_t - 1e-6:
                        continue  # a damaged timestamp jumping back: keep time monotonic
                    last_t = t
                    while current < len(spans) and t >= spans[current].end:
                        yield spans[current]
                        spans[current] = None  # type: ignore[call-overload]  # free the frames
                        current += 1
                    if current >= len(spans):
                        break
                    if t + 1e-6 >= next_sample:
                        span = spans[current]
                        img = downscale(upright(frame.to_ndarray(format="bgr24"),
                                                frame_rotation(frame)), max_side)
                        span.frames.append(Frame(round(t - span.start, 3), img))
                        next_sample = math.floor(t / step + 1e-6) * step + step
                if current >= len(spans):
                    break
        except (av.error.FFmpegError, ValueError) as e:
            if warnings is not None:
                warnings.append(
                    f"{shown(info.path.name)}: decoding stopped at {last_t:.1f} s "
                    f"({e.__class__.__name__}); the file looks truncated or corrupt, "
                    "clips up to that point were kept")
    if bad_packets and warnings is not None:
        warnings.append(
            f"{shown(info.path.name)}: {bad_packets} corrupt video packet(s) skipped from "
            f"{bad_from:.1f} s on; frames around them may be missing or damaged")
    return current, last_t


def frame_rotation(frame) -> int:
    """Counter-clockwise degrees (0, 90, 180, 270) a decoded frame must turn to be shown
    upright, from its display-matrix side data (phones write it instead of rotating pixels;
    ``-metadata:s:v rotate=90`` in ffmpeg writes the same matrix)."""
    try:
        angle = float(getattr(frame, "rotation", 0) or 0)
    except (TypeError, ValueError):
        return 0
    return int(round(angle / 90.0)) % 4 * 90


def upright(image: np.ndarray, rotation: int) -> np.ndarray:
    """``image`` turned ``rotation`` degrees counter-clockwise (as ffmpeg's autorotate does);
    a ``(h, w, 3)`` frame becomes ``(w, h, 3)`` for 90 and 270."""
    k = (rotation // 90) % 4
    return np.ascontiguousarray(np.rot90(image, k)) if k else image


AUDIO_TOLERANCE_SECONDS = 2.0
AUDIO_TOLERANCE_FRACTION = 0.05


def check_audio_alignment(video: MediaInfo, audio: MediaInfo, offset: float = 0.0) -> str:
    """Check that a separate audio file fits a video's timeline.

    The audio is placed at ``offset`` seconds after the video's start. Its end may differ from
    the video's by at most ``max(2 s, 5 % of the video)``; more means it is probably not this
    video's audio. Returns a note ("" when the two match closely) and raises
    :class:`MediaError` when the audio has no audio stream or the durations mismatch badly.
    """
    if not audio.has_audio:
        raise MediaError(f"{shown(audio.path)}: has no audio stream to transcribe; give "
                         "--audio a file with sound (wav, mp3, m4a, or a video with audio)")
    if offset < 0 or offset >= max(video.duration, 1e-9):
        raise MediaError(f"--audio-offset {offset:g} s is outside the video "
                         f"{shown(video.path.name)} (0 to {video.duration:.1f} s)")
    gap = audio.duration + offset - video.duration
    allowed = max(AUDIO_TOLERANCE_SECONDS, AUDIO_TOLERANCE_FRACTION * video.duration)
    if abs(gap) > allowed:
        raise MediaError(
            f"{shown(audio.path.name)} is {audio.duration:.1f} s long (starting at "
            f"{offset:g} s) but the video {shown(video.path.name)} is {video.duration:.1f} s: "
            f"they differ by {abs(gap):.1f} s, more than the {allowed:.1f} s allowed. Check that "
            "it is this video's audio; trim it, or give --audio-offset SECONDS when it starts "
            "later than the video")
    if abs(gap) > 0.5:
        return (f"audio from {shown(audio.path.name)} ends {abs(gap):.1f} s "
                f"{'after' if gap > 0 else 'before'} the video; speech outside the video is "
                "dropped")
    return ""


def load_audio(path: Path) -> np.ndarray | None:
    """The source's audio as 16 kHz mono float32 samples ``(n,)`` (faster-whisper's
    decoder), or ``None`` when it has no audio stream.

    Raises :class:`MediaError` when the audio stream exists but cannot be decoded.
    """
    import av
    from faster_whisper.audio import decode_audio

    info_has_audio = False
    with _open(Path(path)) as c:
        info_has_audio = bool(c.streams.audio)
    if not info_has_audio:
        return None
    try:
        return decode_audio(str(path), sampling_rate=16_000)
    except (av.error.FFmpegError, IndexError, ValueError) as e:
        raise MediaError(f"{shown(path)}: the audio stream could not be decoded ({e})") from None
