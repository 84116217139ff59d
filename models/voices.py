"""Who is speaking: GE2E speaker vectors (Wan et al. 2018, "Generalized End-to-End Loss for
Speaker Verification") from Resemblyzer's pretrained encoder, run as ONNX on onnxruntime.

The encoder (``python -m quantize install ge2e-resemblyzer``, :mod:`quantize.convert_ge2e`)
reads 40-band *power* mel frames of 16 kHz audio — 25 ms windows every 10 ms, computed as
Resemblyzer computes them with librosa (centred frames, zero padding, periodic Hann window,
Slaney mel filters), after the audio is raised to -30 dBFS — and turns each 1.6 s partial
(160 frames) into a 256-d unit vector. An utterance's vector is the mean of its partials,
L2-normalised (Resemblyzer's ``embed_utterance``: partials every 1/1.3 s, the last kept when
it covers 75 %). Two vectors are one speaker when their cosine is above :data:`VOICE_MATCH`.

Within a transcript segment a change of speaker is found from 1.6 s windows every
:data:`TURN_STEP` seconds (:func:`models.voice_turns.split_turns`): people answer each other
within half a second, so a segment is never assumed to be one voice.

Vectors are biometric data: they never leave the device (see README, "Privacy").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from models.usage import CallRecord, UsageMeter
from models.voice_features import (
    HOP,
    MIN_SECONDS,
    PARTIAL_FRAMES,
    PARTIAL_SECONDS,
    SAMPLE_RATE,
    SILENCE_DBFS,
    TURN_STEP,
    VOICE_DIM,
    VOICE_MATCH,
    SpeakerTurn,
    VoiceError,
    VoiceWindow,
    checked_utterance,
    cosine,
    dbfs,
    load_audio_file,
    mean_vector,
    mel_frames,
    mono_samples,
    normalize_volume,
    partial_starts,
    window_starts,
)
from models.voice_turns import split_turns

__all__ = ["MIN_SECONDS", "PARTIAL_SECONDS", "SAMPLE_RATE", "SILENCE_DBFS", "TURN_STEP",
           "VOICE_DIM", "VOICE_MATCH", "SpeakerTurn", "VoiceEncoder", "VoiceError",
           "VoiceWindow", "cosine", "load_audio_file", "mean_vector"]


class VoiceEncoder:
    """The GE2E speaker encoder on onnxruntime, loaded once (``ModelHub.voices``).

    Args:
        onnx_path: the converted encoder (``ge2e-resemblyzer.onnx``). name: its model name.
        threads: onnxruntime intra-op threads (default 2, the edge budget).
        batch: partials per run (memory: 64 × 160 frames is ~10 MB of LSTM state).
        usage: each call is recorded here (role ``voices``).
    Raises what onnxruntime raises for a file that is not the encoder.
    """

    def __init__(self, onnx_path: Path, *, name: str = "ge2e-resemblyzer", threads: int = 2,
                 batch: int = 64, usage: UsageMeter | None = None) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(onnx_path), sess_options=opts,
                                             providers=["CPUExecutionProvider"])
        self.path = Path(onnx_path)
        self.name = name
        self.batch = batch
        self.usage = usage
        self._lock = threading.Lock()

    def embed_partials(self, mels: np.ndarray) -> np.ndarray:
        """Unit vectors ``(n, 256)`` float32 of ``n`` partials of mel frames ``(n, frames,
        40)`` (:func:`mel_frames`), ``batch`` at a time."""
        out = np.empty((len(mels), VOICE_DIM), np.float32)
        t0 = time.perf_counter()
        with self._lock:
            for i in range(0, len(mels), self.batch):
                chunk = np.ascontiguousarray(mels[i:i + self.batch], np.float32)
                out[i:i + len(chunk)] = self._session.run(None, {"mels": chunk})[0]
        if self.usage is not None:
            # tokens_in: the mel frames read (100 a second of audio)
            self.usage.record(CallRecord("voices", self.name, int(mels.shape[0] * mels.shape[1]),
                                         0, time.perf_counter() - t0))
        return out

    def embed_utterance(self, wav: np.ndarray) -> np.ndarray:
        """One speaker's utterance (16 kHz mono float32 samples) → its (256,) float32 unit
        vector: the normalised mean of its 1.6 s partials (Resemblyzer's
        ``embed_utterance``). Raises :class:`VoiceError` for audio shorter than
        :data:`MIN_SECONDS` or quieter than :data:`SILENCE_DBFS` (no voice to embed)."""
        wav = checked_utterance(wav)
        starts = partial_starts(len(wav))
        end = (starts[-1] + PARTIAL_FRAMES) * HOP
        padded = np.pad(normalize_volume(wav), (0, max(0, end - len(wav))))
        mel = mel_frames(padded)
        mels = np.stack([mel[s:s + PARTIAL_FRAMES] for s in starts])
        return mean_vector(self.embed_partials(mels))

    def embed_windows(self, wav: np.ndarray, *, step: float = 0.8) -> list[VoiceWindow]:
        """1.6 s windows every ``step`` seconds over ``wav`` (16 kHz mono float32), the last
        one ending at the audio's end, each raised to -30 dBFS and embedded. A window quieter
        than :data:`SILENCE_DBFS` gets none (silence has no speaker); audio shorter than a
        window gets one window over all of it (zero-padded) when it is at least
        :data:`MIN_SECONDS` long. Returns ``[]`` when nothing is left; raises
        :class:`VoiceError` for samples that are not mono floats."""
        wav = mono_samples(wav)
        size = int(PARTIAL_SECONDS * SAMPLE_RATE)
        if len(wav) < MIN_SECONDS * SAMPLE_RATE:
            return []
        starts = window_starts(len(wav), size, int(round(step * SAMPLE_RATE)))
        return self.embed_spans(wav, [(s, min(s + size, len(wav))) for s in starts])

    def embed_spans(self, wav: np.ndarray, spans: Sequence[tuple[int, int]]
                    ) -> list[VoiceWindow]:
        """One window per ``(first, end)`` sample span of ``wav`` (at most 1.6 s; shorter
        ones zero-padded), silent spans left out, in the order given. Raises ``ValueError``
        for an empty span or one longer than 1.6 s."""
        keep, mels = [], []
        for a, b in spans:
            if not 0 < b - a <= PARTIAL_FRAMES * HOP:
                raise ValueError(f"span {a}–{b}: a window is 1 to {PARTIAL_FRAMES * HOP} samples")
            piece = wav[a:b]
            if dbfs(piece) < SILENCE_DBFS:
                continue
            piece = np.pad(normalize_volume(piece), (0, PARTIAL_FRAMES * HOP - len(piece)))
            keep.append((a, b))
            mels.append(mel_frames(piece)[:PARTIAL_FRAMES])
        if not mels:
            return []
        vectors = self.embed_partials(np.stack(mels))
        return [VoiceWindow(a / SAMPLE_RATE, b / SAMPLE_RATE, v)
                for (a, b), v in zip(keep, vectors)]

    def speaker_turns(self, wav: np.ndarray, segments: Sequence[tuple[float, float]]
                      ) -> list[SpeakerTurn]:
        """Split each speech segment ``(start, end)`` (seconds into ``wav``: a transcript's
        segments) where the speaker changes, from 1.6 s windows every :data:`TURN_STEP`
        seconds (:func:`models.voice_turns.split_turns`). A segment shorter than a window is
        one turn embedded from the 1.6 s around it; a silent one gives no turn. Returns the
        turns in time order, each with its segment's index; raises :class:`VoiceError` for
        samples that are not mono floats."""
        return split_turns(self, mono_samples(wav), segments)

    def close(self) -> None:
        """Release the onnxruntime session."""
        self._session = None


