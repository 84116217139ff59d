"""Media the character-memory tests build from the real shared data: a video that shows
photos of real people in turn (no such footage ships besides the Hamilton clip) and a
recording that stitches real LibriSpeech utterances of several speakers into turns."""

from __future__ import annotations

import wave
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16_000


def photo_video(path: Path, photos: Sequence[Path], *, seconds: float = 4.0, fps: int = 5,
                size: tuple[int, int] = (640, 480)) -> list[tuple[float, float]]:
    """Write an MPEG-4 video showing each photo (letterboxed into ``size``) for ``seconds``;
    returns each photo's ``(start, end)`` seconds in the video."""
    import cv2

    w, h = size
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, size)
    assert writer.isOpened(), path
    spans = []
    for k, photo in enumerate(photos):
        img = cv2.imread(str(photo), cv2.IMREAD_COLOR)
        assert img is not None, photo
        scale = min(w / img.shape[1], h / img.shape[0])
        small = cv2.resize(img, (int(img.shape[1] * scale), int(img.shape[0] * scale)),
                           interpolation=cv2.INTER_AREA)
        frame = np.zeros((h, w, 3), np.uint8)
        y, x = (h - small.shape[0]) // 2, (w - small.shape[1]) // 2
        frame[y:y + small.shape[0], x:x + small.shape[1]] = small
        for _ in range(int(seconds * fps)):
            writer.write(frame)
        spans.append((k * seconds, (k + 1) * seconds))
    writer.release()
    return spans


def load_speech(path: Path) -> np.ndarray:
    """A recording as 16 kHz mono float32 (faster-whisper's PyAV decoder, as ingest)."""
    from faster_whisper.audio import decode_audio

    return decode_audio(str(path), sampling_rate=SAMPLE_RATE)


def stitched_speech(path: Path, utterances: Sequence[Path], *, gap: float = 0.4
                    ) -> list[tuple[float, float]]:
    """Write a 16-bit mono WAV of the ``utterances`` one after another, ``gap`` seconds of
    silence between them (people answer each other within half a second); returns each
    utterance's ``(start, end)`` seconds in it."""
    pieces, spans, t = [], [], 0.0
    silence = np.zeros(int(gap * SAMPLE_RATE), np.float32)
    for u in utterances:
        wav = load_speech(u)
        spans.append((t, t + len(wav) / SAMPLE_RATE))
        pieces += [wav, silence]
        t += (len(wav) + len(silence)) / SAMPLE_RATE
    write_wav(path, np.concatenate(pieces))
    return spans


def write_wav(path: Path, samples: np.ndarray) -> None:
    """Write 16 kHz mono float32 ``samples`` as a 16-bit mono WAV."""
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SAMPLE_RATE)
        f.writeframes(pcm.tobytes())
