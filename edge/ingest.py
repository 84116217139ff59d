"""Ingestion: media files → clips → caption, transcript, keyframes, MERIT keys, vectors.

Per source: hash the file (re-ingesting the same bytes adds nothing), probe it, transcribe
its audio once, decode its video once, and write each clip — caption, transcript, keyframe
paths, the four keys and their vectors — in one transaction. A source whose ingest was cut
short is resumed clip by clip. A broken file is reported and skipped; it never stops a
folder.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import apsw
import numpy as np

from edge.config import frames_dir
from edge.keys import ClipKeys, extract_keys
from edge.media import (
    ClipSpan,
    MediaError,
    MediaInfo,
    clip_bounds,
    iter_clips,
    load_audio,
    probe,
    shown,
)
from edge.store import INDEX_TYPES, KEY_TYPES, Memory, StoreError, write_error
from edge.timeline import day_of, guess_clock
from models.transcriber import TranscriptSegment
from models.vision import downscale

MEDIA_SUFFIXES = {
    ".mp4", ".mov", ".m4v", ".mkv", ".avi", ".webm", ".mts", ".m2ts", ".ts", ".3gp", ".flv",
    ".wmv", ".mpg", ".mpeg", ".mp3", ".wav", ".m4a", ".aac", ".flac", ".ogg", ".opus",
}


@dataclass
class IngestOptions:
    """``start``: timeline seconds for the first file without a start time in its metadata
    (later ones follow it back to back). ``keyframes``: JPEGs kept per clip."""

    start: float | None = None
    clip_seconds: float = 30.0
    fps: float = 1.0
    keyframes: int = 3
    keyframe_side: int = 480


@dataclass
class SourceResult:
    """What happened to one input: ``status`` is ingested, resumed, skipped or failed."""

    path: str
    status: str
    clips_added: int = 0
    duration: float = 0.0
    message: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass
class IngestReport:
    results: list[SourceResult]
    seconds: float
    usage: dict

    @property
    def clips_added(self) -> int:
        return sum(r.clips_added for r in self.results)

    def as_dict(self) -> dict:
        return {
            "clips_added": self.clips_added,
            "seconds": round(self.seconds, 2),
            "sources": [r.__dict__ for r in self.results],
            "usage": self.usage,
        }


def find_media(paths: Iterable[Path]) -> list[Path]:
    """Files to ingest: explicit files as given, folders searched recursively for media
    suffixes (hidden files skipped), in sorted order, each once."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(
                f for f in sorted(p.rglob("*"))
                if f.is_file() and f.suffix.lower() in MEDIA_SUFFIXES
                and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
        else:
            out.append(p)
    return list(dict.fromkeys(out))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def transcript_for(segments: list[TranscriptSegment], start: float, end: float) -> str:
    """Text of the speech segments whose midpoint falls in ``[start, end)`` seconds."""
    return " ".join(s.text for s in segments if start <= (s.start + s.end) / 2 < end).strip()


def _save_keyframes(span: ClipSpan, folder: Path, stem: str, count: int, side: int) -> list[str]:
    import cv2

    if not span.frames or count <= 0:
        return []
    n = len(span.frames)
    picks = sorted({round(i * (n - 1) / max(1, count - 1)) for i in range(min(count, n))})
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for j, i in enumerate(picks):
        img = downscale(span.frames[i].image, side)
        name = f"{stem}_{j}.jpg"
        if not cv2.imwrite(str(folder / name), img, [cv2.IMWRITE_JPEG_QUALITY, 85]):
            raise OSError(f"could not write keyframe {folder / name}")
        names.append(f"{folder.name}/{name}")
    return names


def index_texts(keys: ClipKeys, caption: str) -> list[str]:
    """The texts a clip is indexed by, in :data:`INDEX_TYPES` order (four keys, caption)."""
    return [*(getattr(keys, k) for k in KEY_TYPES), caption]


def store_clip(memory: Memory, vectors: np.ndarray, *, source_id: int, idx: int,
               t_start: float, t_end: float, clock: str, caption: str, transcript: str,
               keyframes: list[str], signals: dict, keys: ClipKeys) -> int:
    """Write a clip, its keys and their ``(5, 384)`` vectors (rows in :data:`INDEX_TYPES`
    order, from :func:`index_texts`) in one transaction; returns the clip id."""
    day, day_start = day_of(t_start, clock)
    rows = {k: (getattr(keys, k), keys.origin) for k in KEY_TYPES}
    rows["caption"] = (caption, "caption")
    return memory.add_clip(
        source_id=source_id, idx=idx, t_start=t_start, t_end=t_end, day=day,
        day_start=day_start, caption=caption, transcript=transcript, keyframes=keyframes,
        signals=signals, keys=rows, vectors={k: vectors[i] for i, k in enumerate(INDEX_TYPES)})


class _StartClock:
    """Start times for files: container metadata, else ``--start`` (chained), else mtime."""

    def __init__(self, start: float | None) -> None:
        self.next_start = start

    def start_of(self, info: MediaInfo) -> tuple[float, str]:
        if info.creation_time is not None:
            return info.creation_time, "metadata"
        if self.next_start is not None:
            t = self.next_start
            self.next_start = t + info.duration
            return t, "--start"
        # A camera closes the file when it stops recording: mtime ≈ end of the footage.
        return os.path.getmtime(info.path) - info.duration, "mtime"


def ingest_paths(
    memory: Memory,
    hub,
    paths: Iterable[Path],
    options: IngestOptions | None = None,
    *,
    on_progress: Callable[[str, float], None] | None = None,
    on_total: Callable[[float], None] | None = None,
    pyramid=None,
) -> IngestReport:
    """Ingest files and folders into ``memory`` using ``hub``'s roles.

    ``on_total(seconds)`` is called once with the footage length to process;
    ``on_progress(name, seconds)`` after each clip with the clip's length. Never raises for a
    bad input file: its :class:`SourceResult` says ``failed`` and why. With ``pyramid`` (an
    :class:`edge.pyramid.Pyramid`) each clip also gets its PyraVid facts, clip node and links,
    and the global nodes are finalized at the end.
    """
    options = options or IngestOptions()
    t0 = time.perf_counter()
    mark = hub.usage.mark()
    results: list[SourceResult] = []
    plan: list[tuple[Path, MediaInfo | None, str]] = []
    for path in find_media(paths):
        try:
            plan.append((path, probe(path), ""))
        except MediaError as e:
            plan.append((path, None, str(e)))
        except OSError as e:
            plan.append((path, None, f"{shown(path)}: {e.strerror or e}"))
    if on_total:
        on_total(sum(i.duration for _, i, _ in plan if i is not None))
    clock = _StartClock(options.start)
    for path, info, error in plan:
        if info is None:
            results.append(SourceResult(shown(path), "failed", message=error))
            continue
        try:
            results.append(_ingest_one(memory, hub, info, clock, options, on_progress,
                                       pyramid=pyramid))
        except MediaError as e:
            results.append(SourceResult(shown(path), "failed", message=str(e)))
        except StoreError:
            raise  # the memory itself is unusable: stop, nothing more can be stored
        except apsw.Error as e:
            raise write_error(memory.path, e) from e
        except Exception as e:  # one bad file never stops a folder; its stored clips stay
            results.append(SourceResult(
                shown(path), "failed",
                message=f"stopped by {e.__class__.__name__}: {e}; clips stored so far are "
                        "kept and a re-run resumes this file"))
    if pyramid is not None:
        pyramid.finalize()
    return IngestReport(results, time.perf_counter() - t0, hub.usage.summary(mark))


def _ingest_one(memory: Memory, hub, info: MediaInfo, clock: _StartClock,
                options: IngestOptions, on_progress, pyramid=None) -> SourceResult:
    path = info.path
    digest = file_sha256(path)
    existing = memory.source_by_hash(digest)
    if existing is not None and existing.status == "done":
        if on_progress:
            on_progress(shown(path.name), info.duration)
        return SourceResult(shown(path), "skipped", duration=info.duration,
                            message=f"already in memory: same content as {existing.path}")
    if existing is not None:
        source_id, t_origin, source_clock = existing.id, existing.t_start, existing.clock
        done = memory.clip_indices(source_id)
        status = "resumed"
    else:
        t_origin, start_from = clock.start_of(info)
        source_clock = guess_clock(t_origin)  # --start "DAY1 11:00" puts footage on DAY1
        n = len(clip_bounds(info.duration, options.clip_seconds))
        source_id = memory.add_source(
            path=shown(path.resolve()), sha256=digest, kind="video" if info.has_video else "audio",
            clock=source_clock, start_from=start_from, t_start=t_origin,
            duration=info.duration,
            n_clips=n, info={"codec": info.video_codec, "width": info.width,
                             "height": info.height, "fps": round(info.avg_fps, 3),
                             "has_audio": info.has_audio})
        done = set()
        status = "ingested"
    result = SourceResult(shown(path), status, duration=info.duration)
    audio = load_audio(path) if info.has_audio else None
    segments = hub.transcriber.transcribe(audio) if audio is not None else []
    kf_dir = frames_dir(memory.path) / digest[:16]
    for span in iter_clips(info, clip_seconds=options.clip_seconds, fps=options.fps,
                           warnings=result.warnings):
        if span.index in done:
            if on_progress:
                on_progress(shown(path.name), span.duration)
            continue
        transcript = transcript_for(segments, span.start, span.end)
        cap = hub.captioner.caption(span.frames, transcript, span.duration)
        keyframes = _save_keyframes(span, kf_dir, f"c{span.index:05d}", options.keyframes,
                                    options.keyframe_side)
        if pyramid is not None:  # PyraVid pyramid: keys + facts + clip node in one call
            pyramid.add_clip(source_id=source_id, idx=span.index, t_start=t_origin + span.start,
                             t_end=t_origin + span.end, clock=source_clock, caption=cap.text,
                             transcript=transcript, keyframes=keyframes, signals=cap.signals)
        else:
            keys = extract_keys(hub.llm("memory_llm"), cap.text)
            vectors = hub.embedder.embed(index_texts(keys, cap.text))
            store_clip(memory, vectors, source_id=source_id, idx=span.index,
                       t_start=t_origin + span.start, t_end=t_origin + span.end,
                       clock=source_clock, caption=cap.text, transcript=transcript,
                       keyframes=keyframes, signals=cap.signals, keys=keys)
        result.clips_added += 1
        if on_progress:
            on_progress(shown(path.name), span.duration)
    memory.finish_source(source_id)
    if not info.has_audio:
        result.message = "no audio stream: captions come from the frames only"
    return result

