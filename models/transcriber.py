"""Transcriber role: faster-whisper (CTranslate2) with a local model folder, offline.

Silero VAD is on by default (it ships inside faster-whisper) and
``hallucination_silence_threshold`` drops the repeated phrases whisper invents on silence.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.usage import CallRecord, UsageMeter

SAMPLE_RATE = 16_000


@dataclass(frozen=True)
class TranscriptSegment:
    """A span of speech: ``start``/``end`` in seconds from the start of the audio given."""

    start: float
    end: float
    text: str


class WhisperTranscriber:
    """Speech to timestamped text. ``transcribe(audio)`` takes 16 kHz mono float32 samples.

    Args:
        model_dir: a CTranslate2 whisper folder (``model.bin``, ``tokenizer.json``, ...).
        threads: CPU threads (default 2). compute_type: ``int8`` on CPU.
    """

    def __init__(
        self,
        model_dir: Path,
        *,
        name: str = "transcriber",
        threads: int = 2,
        compute_type: str = "int8",
        usage: UsageMeter | None = None,
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from faster_whisper import WhisperModel

        self._model = WhisperModel(
            str(model_dir), device="cpu", compute_type=compute_type, cpu_threads=threads,
            local_files_only=True,
        )
        self.name = name
        self.usage = usage

    def transcribe(
        self, audio: np.ndarray, *, language: str | None = None
    ) -> list[TranscriptSegment]:
        """Transcribe samples (16 kHz mono float32); returns segments with times in seconds.

        Silence and music give an empty list, not an error.
        """
        if audio.size < SAMPLE_RATE // 10:
            return []
        t0 = time.perf_counter()
        segments, _info = self._model.transcribe(
            audio,
            language=language,
            beam_size=1,
            vad_filter=True,
            condition_on_previous_text=False,
            hallucination_silence_threshold=2.0,
            word_timestamps=False,
        )
        out = [
            TranscriptSegment(float(s.start), float(s.end), s.text.strip())
            for s in segments
            if s.text.strip()
        ]
        if self.usage is not None:
            # Whisper's tokens are not LLM tokens; only the call and its seconds count here.
            self.usage.record(CallRecord("transcriber", self.name, 0, 0, time.perf_counter() - t0))
        return out
