"""Perception of a source before its clips are written: the transcript (ASR once per source,
placed on the source's timeline) and the keyframe JPEGs kept per clip."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from edge.ingest.media import ClipSpan, MediaInfo, check_audio_alignment, load_audio, shown
from edge.stages import StageClock
from edge.store import StoreError
from models.transcriber import TranscriptSegment
from models.vision import downscale


class Speech(NamedTuple):
    """A source's speech: its transcript ``segments`` (seconds from the source's start),
    the decoded 16 kHz mono ``audio`` (``None`` without audio) and ``offset``, the seconds
    after the source's start at which that audio begins (a separate ``--audio`` file)."""

    segments: list[TranscriptSegment]
    audio: np.ndarray | None
    offset: float = 0.0


def transcribe_source(hub, info: MediaInfo, stages: StageClock, *,
                      audio_info: MediaInfo | None = None, audio_offset: float = 0.0,
                      warnings: list[str] | None = None) -> Speech:
    """Speech segments on the source's timeline (seconds from its start), with the audio
    they were heard in (:class:`Speech`: the character tier finds who spoke in it).

    From the separate audio file ``audio_info`` (shifted by ``audio_offset`` seconds, speech
    whose midpoint falls past the video's end dropped; an alignment note goes to
    ``warnings``) or the source's own audio stream; no segments without audio. One transcriber
    call (role ``transcriber``), charged to the ``asr`` stage; decoding to ``decode``,
    loading the model to ``load``. Raises :class:`~edge.errors.MediaError` for audio that
    cannot be decoded or does not fit the video.
    """
    if audio_info is not None:
        with stages.stage("decode"):
            audio = load_audio(audio_info.path)
        note = check_audio_alignment(info, audio_info, audio_offset)
        if note and warnings is not None:
            warnings.append(note)
    else:
        with stages.stage("decode"):
            audio = load_audio(info.path) if info.has_audio else None
    if audio is None:
        return Speech([], None)
    with stages.stage("load"):
        transcriber = hub.transcriber
    with stages.stage("asr"):
        segments = transcriber.transcribe(audio)
    if audio_info is None:
        return Speech(segments, audio)
    off = audio_offset
    segments = [replace(s, start=s.start + off, end=s.end + off) for s in segments
                if (s.start + s.end) / 2 + off < info.duration]
    return Speech(segments, audio, off)


def transcript_for(segments: list[TranscriptSegment], start: float, end: float) -> str:
    """A clip's transcript: the text of the speech segments whose midpoint falls in
    ``[start, end)`` seconds, joined by spaces.

    A segment heard in a language other than English carries its ISO 639-1 label in front
    (``"[de] Guten Tag."``), as the multilingual profile detected it per segment: the label
    is what the user sees in answers, the chat and ``edge ask --json``, and what the key
    writer reads. English and unknown (``""``) segments are unlabelled, so English-only
    profiles store the text as heard."""
    return " ".join(_labelled(s) for s in segments
                    if start <= (s.start + s.end) / 2 < end).strip()


def _labelled(segment: TranscriptSegment) -> str:
    lang = segment.language
    return segment.text if lang in ("", "en") else f"[{lang}] {segment.text}"


def save_keyframes(span: ClipSpan, folder: Path, stem: str, count: int, side: int) -> list[str]:
    """Write up to ``count`` of the clip's sampled frames, spread evenly over it, as JPEG
    (quality 85, long side at most ``side`` pixels) named ``{stem}_{j}.jpg`` in ``folder``.
    Returns their paths relative to the frames folder (``{folder.name}/{name}``); ``[]`` for
    a clip without frames. Raises :class:`StoreError` when the folder or a file cannot be
    written (what was stored before stays intact)."""
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
