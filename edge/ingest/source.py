"""One media source of an ingest run: register (or resume) it, transcribe it once, decode its
video once, and caption and write each clip through the memory writer."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from edge.build.pyramid import Pyramid
from edge.config import frames_dir
from edge.ingest.characters import crops_after, observe_clip, people_writer, voice_turns
from edge.ingest.media import MediaInfo, clip_bounds, iter_clips, shown
from edge.ingest.memory_writer import (
    Deferred,
    NewClip,
    NewSource,
    SourceResult,
    SourceState,
    file_sha256,
    register_or_resume,
    write_clip,
    write_realtime,
)
from edge.ingest.perception import save_keyframes, transcribe_source, transcript_for
from edge.people import PeopleTier
from edge.people.observe import VoiceTurn
from edge.stages import StageClock
from edge.store import Memory
from edge.timeline import clear_of, guess_clock
from models.transcriber import TranscriptSegment


@dataclass
class IngestOptions:
    """``start``: timeline seconds for the first file without a start time in its metadata
    (later ones follow it back to back). ``audio``: a separate audio file for the (single)
    video being ingested, starting ``audio_offset`` seconds after the video; its transcript
    replaces the video's own audio. ``clip_seconds``: clip length; ``fps``: frames sampled
    per second; ``keyframes``: JPEGs kept per clip, at most ``keyframe_side`` pixels on their
    long side."""

    start: float | None = None
    audio: Path | None = None
    audio_offset: float = 0.0
    clip_seconds: float = 30.0
    fps: float = 1.0
    keyframes: int = 3
    keyframe_side: int = 480


class StartClock:
    """Start times for files: container metadata, else ``--start`` (chained), else mtime —
    moved clear of the sources already in memory (copies share an mtime)."""

    def __init__(self, start: float | None) -> None:
        self.next_start = start

    def start_of(self, info: MediaInfo, memory: Memory) -> tuple[float, str, str]:
        """``(timeline seconds, where it came from, path of the source it was moved after)``
        for a new source. A container's ``creation_time`` and ``--start`` are kept as they
        are (two cameras may well record at once); with ``--start`` the next file without
        metadata starts where this one ends. The mtime guess (end of the footage, as a
        camera closes the file when it stops) is moved past every source in ``memory`` its
        span overlaps (:func:`edge.timeline.clear_of`), so its clips never interleave with
        another file's; the third item names the source it now follows (``""``: not moved)."""
        if info.creation_time is not None:
            return info.creation_time, "metadata", ""
        if self.next_start is not None:
            t = self.next_start
            self.next_start = t + info.duration
            return t, "--start", ""
        guess = os.path.getmtime(info.path) - info.duration
        t, after = clear_of(guess, info.duration, lambda a, b: [
            (s.path, s.t_start, s.t_start + s.duration) for s in memory.sources_overlapping(a, b)])
        return t, "mtime", after


@dataclass
class IngestRun:
    """What the sources of one ingest run share. ``audio_info``: the probed ``--audio``
    file; ``media_seconds``: footage seconds in the clips added so far. ``deferred``: the
    real-time tier only (the LLM work queued, :func:`edge.ingest.memory_writer.write_realtime`).
    ``people``: the character tier (``None``: the profile turns it off)."""

    memory: Memory
    hub: Any  # models.ModelHub
    options: IngestOptions
    stages: StageClock
    start_clock: StartClock
    on_progress: Callable[[str, float], None] | None = None
    pyramid: Pyramid | None = None
    deferred: Deferred | None = None
    audio_info: MediaInfo | None = None
    media_seconds: float = 0.0
    people: PeopleTier | None = None

    def progress(self, name: str, seconds: float) -> None:
        """Report a finished stage ``name`` and its wall ``seconds`` to ``on_progress``, if set."""
        if self.on_progress:
            self.on_progress(name, seconds)


def ingest_source(run: IngestRun, info: MediaInfo) -> SourceResult:
    """Ingest one probed source; its :class:`SourceResult` says ``ingested``, ``resumed``
    or ``skipped`` (same content already stored). Raises :class:`~edge.errors.MediaError`
    for a file that cannot be decoded, ``StoreError`` when the memory cannot be written and
    the model setup errors; clips stored before stay and a re-run resumes."""
    path, audio_info = info.path, run.audio_info
    with run.stages.stage("decode"):
        digest = _content_hash(info, audio_info, run.options.audio_offset)
    state = register_or_resume(run.memory, digest,
                               partial(_new_source, run, info, audio_info))
    result = SourceResult(shown(path), state.status, duration=info.duration,
                          start=state.t_start, start_from=state.start_from,
                          placed_after=state.placed_after)
    if state.status == "skipped":
        run.progress(shown(path.name), info.duration)
        result.message = state.skipped_message
        return result
    speech = transcribe_source(run.hub, info, run.stages, audio_info=audio_info,
                               audio_offset=run.options.audio_offset, warnings=result.warnings)
    turns = voice_turns(run.people, speech.audio, speech.segments, speech.offset, run.stages,
                        result.warnings)
    segments = speech.segments
    del speech  # the audio is not kept while the video is decoded
    _ingest_clips(run, info, state, segments, turns, result,
                  frames_dir(run.memory.path) / digest[:16])
    with run.stages.stage("store"):
        run.memory.finish_source(state.source_id)
    if audio_info is None and not info.has_audio:
        result.message = "no audio stream: captions come from the frames only"
    return result


def _content_hash(info: MediaInfo, audio_info: MediaInfo | None, audio_offset: float) -> str:
    """The source's identity: the file's SHA-256, combined with the separate audio file's
    and its offset (the same video with other audio is other content)."""
    digest = file_sha256(info.path)
    if audio_info is not None:
        digest = hashlib.sha256(
            f"{digest}+audio:{file_sha256(audio_info.path)}@{audio_offset:g}"
            .encode()).hexdigest()
    return digest


def _new_source(run: IngestRun, info: MediaInfo, audio_info: MediaInfo | None) -> NewSource:
    """The source row of a new file: its start on the timeline (advancing the run's start
    clock), the clock that start implies, and what the probe found."""
    t_origin, start_from, placed_after = run.start_clock.start_of(info, run.memory)
    extra: dict[str, Any] = {"placed_after": placed_after} if placed_after else {}
    if audio_info is not None:
        extra |= {"audio_file": shown(audio_info.path.resolve()),
                  "audio_offset": run.options.audio_offset}
    return NewSource(
        path=shown(info.path.resolve()), kind="video" if info.has_video else "audio",
        clock=guess_clock(t_origin),  # --start "DAY1 11:00" puts footage on DAY1
        start_from=start_from, t_start=t_origin, duration=info.duration,
        n_clips=len(clip_bounds(info.duration, run.options.clip_seconds)),
        info={"codec": info.video_codec, "width": info.width, "height": info.height,
              "fps": round(info.avg_fps, 3),
              "has_audio": info.has_audio or audio_info is not None, **extra},
        placed_after=placed_after)


def _ingest_clips(run: IngestRun, info: MediaInfo, state: SourceState,
                  segments: list[TranscriptSegment], turns: list[VoiceTurn],
                  result: SourceResult, kf_dir: Path) -> None:
    """Decode the source once; caption each clip not yet stored — also not by another
    process ingesting the same file now — and write it (with its keyframes in ``kf_dir``)
    through :func:`edge.ingest.memory_writer.write_clip`, its people (faces in its frames,
    its share of the voice ``turns``) in the same transaction and their face crops beside
    its keyframes. Only clips this call stored count."""
    o, stages, name = run.options, run.stages, shown(info.path.name)
    with stages.stage("load"):  # load the models now, not inside the first clip's stages
        captioner, _ = run.hub.captioner, run.hub.embedder
        if run.deferred is None:  # the real-time tier needs no memory LLM
            run.hub.llm("memory_llm")
    for span in stages.timed("decode", iter_clips(info, clip_seconds=o.clip_seconds,
                                                  fps=o.fps, warnings=result.warnings)):
        if span.index in state.done or run.memory.has_clip(state.source_id, span.index):
            run.progress(name, span.duration)
            continue
        transcript = transcript_for(segments, span.start, span.end)
        with stages.stage("caption"):
            cap = captioner.caption(span.frames, transcript, span.duration)
        people = observe_clip(run.people, span, turns, stages, result.warnings)
        clip = NewClip(source_id=state.source_id, idx=span.index,
                       t_start=state.t_start + span.start, t_end=state.t_start + span.end,
                       clock=state.clock, caption=cap.text, transcript=transcript,
                       signals=cap.signals, with_stored=people_writer(
                           run.memory, run.people, people, stages, source_id=state.source_id,
                           start=span.start, crop_stem=f"{kf_dir.name}/c{span.index:05d}"))
        keyframes = partial(save_keyframes, span, kf_dir, f"c{span.index:05d}", o.keyframes,
                            o.keyframe_side)
        if run.deferred is not None:
            stored = write_realtime(run.memory, run.hub, clip, run.deferred, stages=stages,
                                    save_keyframes=keyframes)
        else:
            stored = write_clip(run.memory, run.hub, clip, pyramid=run.pyramid, stages=stages,
                                save_keyframes=keyframes)
        if stored.added:  # not when a concurrent ingest stored this clip first
            crops_after(kf_dir.parent, people, stages)
            result.clips_added += 1
            run.media_seconds += span.duration
        run.progress(name, span.duration)
