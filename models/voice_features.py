"""What the voice encoder reads and writes: 16 kHz audio, its level, its 40-band power mel
frames as Resemblyzer computes them (``resemblyzer/audio.py`` with librosa), the 1.6 s
partials, and the vectors' types and measures. Pure numpy; the encoder is
:mod:`models.voices`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

VOICE_DIM = 256
SAMPLE_RATE = 16_000
PARTIAL_SECONDS = 1.6
PARTIAL_FRAMES = 160  # 10 ms frames
HOP = 160  # samples (10 ms)
N_FFT = 400  # samples (25 ms)
N_MELS = 40
TARGET_DBFS = -30.0  # Resemblyzer's audio_norm_target_dBFS (raised only, never lowered)
SILENCE_DBFS = -55.0
"""Audio (or a window of it) quieter than this RMS level holds no voice to embed: raising it
to -30 dBFS would only amplify noise. A quiet room's mp3 measures about -60 dBFS."""
MIN_SECONDS = 0.5
"""The shortest speech an utterance vector is made from; shorter audio is an error."""

VOICE_MATCH = 0.8
"""Cosine similarity above which two voice vectors are one speaker. Measured
(tests/test_voices.py): the three men of the shared interview, one room and one microphone,
are 0.73–0.80 apart as utterances (Resemblyzer itself: 0.74–0.78) and up to 0.75 as turns,
so it is set just above them. On the ten LibriSpeech speakers no two speakers' vectors pass
it (utterances, or 2.5–4.5 s turns against a speaker enrolled from three utterances), while
2.7 % of same-speaker utterance pairs (lowest 0.755) and 9 % of turns (lowest 0.61; 4 %
under 0.76) fall under it: a voice is rather split into two identities, which can be merged
later, than two voices joined into one."""

TURN_STEP = 0.4
"""Seconds between the starts of the 1.6 s windows that split a segment into turns."""


class VoiceError(ValueError):
    """Audio that gives no voice vector: silent, too short, or not mono float samples."""


class UndecodableAudio(VoiceError):
    """A file that holds no audio that can be decoded (not a recording at all, or damaged);
    ``reason``: the decoder's own words."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: not audio that could be decoded: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class VoiceWindow:
    """One 1.6 s window of audio: ``start``/``end`` seconds into the audio given and its
    ``vector``, (256,) float32, unit L2 norm."""

    start: float
    end: float
    vector: np.ndarray


@dataclass(frozen=True)
class SpeakerTurn:
    """One speaker's stretch of transcript segment number ``segment``: ``start``/``end``
    seconds into the audio and the stretch's ``vector`` ((256,) float32, unit norm; the mean
    of its windows, or the nearest window's when the turn is shorter than one)."""

    start: float
    end: float
    vector: np.ndarray
    segment: int


def load_audio_file(path: Path) -> np.ndarray:
    """Any audio or video file → 16 kHz mono float32 samples ``(n,)`` (faster-whisper's
    PyAV decoder, as ingest decodes). Raises :class:`VoiceError` for a file that does not
    exist, has no audio stream or cannot be decoded."""
    import av
    from faster_whisper.audio import decode_audio

    path = Path(path)
    if not path.is_file():
        raise VoiceError(f"{path}: no such file")
    try:
        wav = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    except (av.error.FFmpegError, IndexError, ValueError, StopIteration) as e:
        why = getattr(e, "strerror", None) or str(e) or type(e).__name__  # no errno
        raise UndecodableAudio(path, why) from None
    if wav.size == 0:
        raise VoiceError(f"{path}: no audio samples (no audio stream?)")
    return wav


@lru_cache(maxsize=1)
def mel_filters() -> np.ndarray:
    """The (40, 201) Slaney mel filterbank librosa's ``filters.mel(sr=16000, n_fft=400,
    n_mels=40)`` gives (faster-whisper's copy of it; equal within 1e-9)."""
    from faster_whisper.feature_extractor import FeatureExtractor

    return FeatureExtractor.get_mel_filters(SAMPLE_RATE, N_FFT, n_mels=N_MELS).astype(np.float32)


def dbfs(wav: np.ndarray) -> float:
    """The RMS level of ``wav`` (float samples in [-1, 1]) in dBFS as Resemblyzer measures it
    (on the int16 scale); ``-inf`` for digital silence or no samples."""
    if wav.size == 0:
        return float("-inf")
    rms = float(np.sqrt(np.mean(np.square(wav, dtype=np.float64)))) * 32767
    return 20 * np.log10(rms / 32767) if rms > 0 else float("-inf")


def normalize_volume(wav: np.ndarray) -> np.ndarray:
    """``wav`` raised to :data:`TARGET_DBFS` when quieter (never lowered), as Resemblyzer's
    ``normalize_volume(increase_only=True)``."""
    level = dbfs(wav)
    if not np.isfinite(level) or level >= TARGET_DBFS:
        return wav
    return (wav * 10 ** ((TARGET_DBFS - level) / 20)).astype(np.float32)


def mel_frames(wav: np.ndarray) -> np.ndarray:
    """Power mel frames ``(1 + n // 160, 40)`` float32 of 16 kHz samples ``wav`` (n of
    them): librosa's ``feature.melspectrogram(y, sr=16000, n_fft=400, hop_length=160,
    n_mels=40)`` (centred frames, zero padding, periodic Hann window, power 2), transposed —
    Resemblyzer's ``wav_to_mel_spectrogram``. No volume normalisation here."""
    y = np.pad(np.asarray(wav, np.float32), N_FFT // 2)
    n = 1 + (len(y) - N_FFT) // HOP
    frames = np.lib.stride_tricks.as_strided(y, (n, N_FFT), (HOP * 4, 4))
    window = np.hanning(N_FFT + 1)[:-1].astype(np.float32)  # periodic, as scipy's fftbins
    power = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2
    return (power.astype(np.float32) @ mel_filters().T).astype(np.float32)


def partial_starts(n_samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> list[int]:
    """Resemblyzer's ``compute_partial_slices``: the first frame of each 160-frame partial
    of an utterance of ``n_samples`` samples, ``rate`` partials a second; the last is kept
    when at least ``min_coverage`` of it is audio (always at least one)."""
    n_frames = int(np.ceil((n_samples + 1) / HOP))
    step = int(np.round((SAMPLE_RATE / rate) / HOP))
    starts = list(range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step))
    coverage = (n_samples - starts[-1] * HOP) / (PARTIAL_FRAMES * HOP)
    if coverage < min_coverage and len(starts) > 1:
        starts.pop()
    return starts


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two voice vectors (their dot product when both are unit)."""
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def mean_vector(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """The L2-normalised mean of unit vectors (GE2E's centroid), (256,) float32."""
    m = np.mean(np.asarray(vectors, np.float64), axis=0)
    return (m / np.linalg.norm(m)).astype(np.float32)


def window_starts(n: int, size: int, step: int) -> list[int]:
    """First samples of windows of ``size`` samples every ``step`` over ``n`` samples, the
    last ending at ``n`` (one window at 0 when ``n <= size``)."""
    if n <= size:
        return [0]
    starts = list(range(0, n - size + 1, max(1, step)))
    if starts[-1] != n - size:
        starts.append(n - size)
    return starts


def mono_samples(wav: np.ndarray) -> np.ndarray:
    """``wav`` as float32 ``(n,)``; raises :class:`VoiceError` for samples that are not mono
    floats (int16 PCM must be scaled to [-1, 1] first)."""
    wav = np.asarray(wav)
    if wav.ndim != 1 or not np.issubdtype(wav.dtype, np.floating):
        raise VoiceError(f"expected mono float samples (n,), got {wav.dtype} {wav.shape}")
    return wav.astype(np.float32, copy=False)


def checked_utterance(wav: np.ndarray) -> np.ndarray:
    """``wav`` as float32 when it can give an utterance vector; raises :class:`VoiceError`
    for samples that are not mono floats, shorter than :data:`MIN_SECONDS` or quieter than
    :data:`SILENCE_DBFS`."""
    wav = mono_samples(wav)
    if len(wav) < MIN_SECONDS * SAMPLE_RATE:
        raise VoiceError(f"{len(wav) / SAMPLE_RATE:.2f} s of audio: too short for a voice "
                         f"vector (at least {MIN_SECONDS} s)")
    level = dbfs(wav)
    if level < SILENCE_DBFS:
        raise VoiceError(f"silence ({level:.0f} dBFS, below {SILENCE_DBFS:.0f}): no voice "
                         "to embed")
    return wav
