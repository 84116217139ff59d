"""Ingestion: media files → clips → caption, transcript, keyframes, MERIT keys, vectors.

Per source: hash the file (re-ingesting the same bytes adds nothing), probe it, transcribe
its audio once (or a separate ``--audio`` file placed on the video's timeline), decode its
video once, and write each clip — caption, transcript, keyframe paths, the four keys and
their vectors — in one transaction. A source whose ingest was cut short is resumed clip by
clip. A broken file is reported and skipped; it never stops a folder. Wall time is measured
per stage (:mod:`edge.stages`) and stored as a ``runs`` row for cost accounting.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import apsw
import numpy as np

from edge.config import frames_dir
from edge.errors import MODEL_ERRORS
from edge.keys import ClipKeys, extract_keys
from edge.media import (
    ClipSpan,
    MediaError,
    MediaInfo,
    check_audio_alignment,
    clip_bounds,
    iter_clips,
    load_audio,
    probe,
    shown,
)
from edge.stages import StageClock, stage_report
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
    (later ones follow it back to back). ``keyframes``: JPEGs kept per clip. ``audio``: a
    separate audio file for the (single) video being ingested, starting ``audio_offset``
    seconds after the video; its transcript replaces the video's own audio."""

    start: float | None = None
    audio: Path | None = None
    audio_offset: float = 0.0
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
    """What one ingest run did. ``media_seconds``: footage in the clips added;
    ``stages``: per stage seconds, real-time factor, calls and tokens
    (:func:`edge.stages.stage_report`); ``run_id``: its row in the ``runs`` table."""

    results: list[SourceResult]
    seconds: float
    usage: dict
    media_seconds: float = 0.0
    stages: dict = field(default_factory=dict)
    run_id: int | None = None

    @property
    def clips_added(self) -> int:
        return sum(r.clips_added for r in self.results)

    def as_dict(self) -> dict:
        return {
            "clips_added": self.clips_added,
            "seconds": round(self.seconds, 2),
            "media_seconds": round(self.media_seconds, 3),
            "hours": round(self.media_seconds / 3600.0, 4),
            "rtf": round(self.seconds / self.media_seconds, 4) if self.media_seconds else None,
            "stages": self.stages,
            "sources": [r.__dict__ for r in self.results],
            "skipped": [{"path": r.path, "status": r.status, "reason": r.message}
                        for r in self.results if r.status in ("skipped", "failed")],
            "usage": self.usage,
            "run_id": self.run_id,
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
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(
            f"cannot create the keyframe folder {shown(folder)}: {e.strerror or e}. Keyframes "
            "live beside the memory file: make that folder writable (and free disk space), or "
            "use --memory PATH somewhere writable; everything stored so far is intact") from None
    names = []
    for j, i in enumerate(picks):
        img = downscale(span.frames[i].image, side)
        name = f"{stem}_{j}.jpg"
        if not cv2.imwrite(str(folder / name), img, [cv2.IMWRITE_JPEG_QUALITY, 85]):
            raise StoreError(
                f"could not write keyframe {shown(folder / name)}: check free disk space and "
                "that the folder is writable; everything stored so far is intact")
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
    bad input file: its :class:`SourceResult` says ``failed`` and why. Raises
    :class:`StoreError` when the memory cannot be written (disk full, read-only file or
    folder): what was stored before stays readable. With ``options.audio`` exactly one video
    must be given (:class:`MediaError` otherwise). Raises the model-setup errors of
    :data:`MODEL_ERRORS` (e.g. a captioner whose weights are not downloaded): clips stored
    before stay, and the same call resumes once the setup is fixed.

    Each stage's wall time is measured and the run is stored in the ``runs`` table
    (also when the run stops early), its id in :attr:`IngestReport.run_id`. With ``pyramid``
    (an :class:`edge.pyramid.Pyramid`) each clip also gets its PyraVid facts, clip node and
    links, and the global nodes are finalized at the end (charged to ``memory_llm``).
    """
    options = options or IngestOptions()
    t0 = time.perf_counter()
    started_at = time.time()
    mark = hub.usage.mark()
    clock_s = StageClock()
    results: list[SourceResult] = []
    media = [0.0]  # footage seconds in the clips added, updated by _ingest_one
    status = "failed"
    run_id = None
    try:
        plan: list[tuple[Path, MediaInfo | None, str]] = []
        with clock_s.stage("decode"):
            for path in find_media(paths):
                try:
                    plan.append((path, probe(path), ""))
                except MediaError as e:
                    plan.append((path, None, str(e)))
                except OSError as e:
                    plan.append((path, None, f"{shown(path)}: {e.strerror or e}"))
            audio_info = _probe_separate_audio(options, plan)
        if on_total:
            on_total(sum(i.duration for _, i, _ in plan if i is not None))
        clock = _StartClock(options.start)
        for path, info, error in plan:
            if info is None:
                results.append(SourceResult(shown(path), "failed", message=error))
                continue
            try:
                results.append(_ingest_one(memory, hub, info, clock, options, on_progress,
                                           stages=clock_s, media=media,
                                           audio_info=audio_info, pyramid=pyramid))
            except MediaError as e:
                results.append(SourceResult(shown(path), "failed", message=str(e)))
            except StoreError:
                raise  # the memory itself is unusable: stop, nothing more can be stored
            except apsw.Error as e:
                raise write_error(memory.path, e) from e
            except MODEL_ERRORS:
                raise  # the models, not this file: every later file would fail the same way
            except Exception as e:  # one bad file never stops a folder; its stored clips stay
                results.append(SourceResult(
                    shown(path), "failed",
                    message=f"stopped by {e.__class__.__name__}: {e}; clips stored so far are "
                            "kept and a re-run resumes this file"))
        if pyramid is not None:
            with clock_s.stage("memory_llm"):
                pyramid.finalize()
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        try:
            run_id = memory.add_run(
                command="ingest", started_at=started_at, seconds=time.perf_counter() - t0,
                media_seconds=media[0], clips_added=sum(r.clips_added for r in results),
                sources=len(results), status=status, stages=clock_s.seconds)
        except (apsw.Error, StoreError):
            if status == "done":  # nothing else went wrong: this failure is the news
                raise
            # otherwise the first error (disk full, ...) is the one to report
    usage = hub.usage.summary(mark)
    return IngestReport(results, time.perf_counter() - t0, usage, media_seconds=media[0],
                        stages=stage_report(clock_s.seconds, media[0], usage["by_role"]),
                        run_id=run_id)


def _probe_separate_audio(options: IngestOptions,
                          plan: list[tuple[Path, MediaInfo | None, str]]) -> MediaInfo | None:
    """Probe ``options.audio`` and check it fits the one video it belongs to."""
    if options.audio is None:
        return None
    if len(plan) != 1:
        raise MediaError(f"--audio {shown(options.audio)} belongs to one video, but "
                         f"{len(plan)} media files were given; ingest that video on its own")
    video = plan[0][1]
    if video is None:
        return None  # the video itself failed to probe; its result says why
    if not video.has_video:
        raise MediaError(f"--audio is for a video, but {shown(video.path)} has no video "
                         "stream; ingest the audio file directly instead")
    audio = probe(Path(options.audio))
    check_audio_alignment(video, audio, options.audio_offset)
    return audio


def _ingest_one(memory: Memory, hub, info: MediaInfo, clock: _StartClock,
                options: IngestOptions, on_progress, *, stages: StageClock,
                media: list[float], audio_info: MediaInfo | None = None,
                pyramid=None) -> SourceResult:
    path = info.path
    with stages.stage("decode"):
        digest = file_sha256(path)
        if audio_info is not None:  # the same video with other audio is other content
            digest = hashlib.sha256(
                f"{digest}+audio:{file_sha256(audio_info.path)}@{options.audio_offset:g}"
                .encode()).hexdigest()
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
        extra = {}
        if audio_info is not None:
            extra = {"audio_file": shown(audio_info.path.resolve()),
                     "audio_offset": options.audio_offset}
        source_id = memory.add_source(
            path=shown(path.resolve()), sha256=digest, kind="video" if info.has_video else "audio",
            clock=source_clock, start_from=start_from, t_start=t_origin,
            duration=info.duration,
            n_clips=n, info={"codec": info.video_codec, "width": info.width,
                             "height": info.height, "fps": round(info.avg_fps, 3),
                             "has_audio": info.has_audio or audio_info is not None, **extra})
        done = set()
        status = "ingested"
    result = SourceResult(shown(path), status, duration=info.duration)
    segments = _transcribe(hub, info, audio_info, options, stages, result)
    kf_dir = frames_dir(memory.path) / digest[:16]
    with stages.stage("load"):
        captioner, memory_llm, embedder = hub.captioner, hub.llm("memory_llm"), hub.embedder
    for span in stages.timed("decode", iter_clips(info, clip_seconds=options.clip_seconds,
                                                  fps=options.fps, warnings=result.warnings)):
        if span.index in done:
            if on_progress:
                on_progress(shown(path.name), span.duration)
            continue
        transcript = transcript_for(segments, span.start, span.end)
        with stages.stage("caption"):
            cap = captioner.caption(span.frames, transcript, span.duration)
        if pyramid is not None:  # PyraVid: keys + facts + clip node in one call, links, global
            with stages.stage("store"):
                keyframes = _save_keyframes(span, kf_dir, f"c{span.index:05d}",
                                            options.keyframes, options.keyframe_side)
            before = dict(pyramid.counts.seconds)
            pyramid.add_clip(source_id=source_id, idx=span.index, t_start=t_origin + span.start,
                             t_end=t_origin + span.end, clock=source_clock, caption=cap.text,
                             transcript=transcript, keyframes=keyframes, signals=cap.signals)
            for name, secs in pyramid.counts.seconds.items():
                stage = name if name in ("embed", "store") else "memory_llm"
                stages.seconds[stage] = (stages.seconds.get(stage, 0.0) + secs
                                         - before.get(name, 0.0))
        else:
            with stages.stage("memory_llm"):
                keys = extract_keys(memory_llm, cap.text)
            with stages.stage("embed"):
                vectors = embedder.embed(index_texts(keys, cap.text))
            with stages.stage("store"):
                keyframes = _save_keyframes(span, kf_dir, f"c{span.index:05d}",
                                            options.keyframes, options.keyframe_side)
                store_clip(memory, vectors, source_id=source_id, idx=span.index,
                           t_start=t_origin + span.start, t_end=t_origin + span.end,
                           clock=source_clock, caption=cap.text, transcript=transcript,
                           keyframes=keyframes, signals=cap.signals, keys=keys)
        result.clips_added += 1
        media[0] += span.duration
        if on_progress:
            on_progress(shown(path.name), span.duration)
    with stages.stage("store"):
        memory.finish_source(source_id)
    if audio_info is None and not info.has_audio:
        result.message = "no audio stream: captions come from the frames only"
    return result


def _transcribe(hub, info: MediaInfo, audio_info: MediaInfo | None, options: IngestOptions,
                stages: StageClock, result: SourceResult) -> list[TranscriptSegment]:
    """Speech segments on the source's timeline: from the separate audio file (shifted by
    ``options.audio_offset``, speech past the video's end dropped) or the source's own
    audio stream; none without audio."""
    if audio_info is not None:
        with stages.stage("decode"):
            audio = load_audio(audio_info.path)
        note = check_audio_alignment(info, audio_info, options.audio_offset)
        if note:
            result.warnings.append(note)
    else:
        with stages.stage("decode"):
            audio = load_audio(info.path) if info.has_audio else None
    if audio is None:
        return []
    with stages.stage("load"):
        transcriber = hub.transcriber
    with stages.stage("asr"):
        segments = transcriber.transcribe(audio)
    if audio_info is not None:
        off = options.audio_offset
        segments = [replace(s, start=s.start + off, end=s.end + off) for s in segments
                    if (s.start + s.end) / 2 + off < info.duration]
    return segments

