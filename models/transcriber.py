"""Transcriber role: faster-whisper (CTranslate2) with a local model folder, offline.

Hallucinations on silence are handled in three layers: Silero VAD is on (it ships inside
faster-whisper) so silence never reaches the decoder; ``hallucination_silence_threshold``
and ``no_speech_threshold`` drop segments whisper invents over the remaining pauses; and
:func:`suppress_repeats` removes the repeated-phrase loops that still get through (a phrase
said over and over inside a segment, the same segment text again and again).

With a multilingual model (whisper base) every 30 s window is decoded in its own language
(faster-whisper ``multilingual=True``) and each segment gets its own detected language; an
English-only model (tiny.en) labels every segment ``en`` without detection.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from models.repeats import collapse_loops, norm_words
from models.usage import CallRecord, UsageMeter

SAMPLE_RATE = 16_000
MIN_LANGUAGE_SECONDS = 1.0  # shorter segments borrow the window's language



@dataclass(frozen=True)
class TranscriptSegment:
    """A span of speech: ``start``/``end`` in seconds from the start of the audio given;
    ``language`` an ISO 639-1 code ("" when unknown), ``language_probability`` in [0, 1]."""

    start: float
    end: float
    text: str
    language: str = ""
    language_probability: float = 0.0


def suppress_repeats(segments: list[TranscriptSegment], *,
                     max_same: int = 2) -> list[TranscriptSegment]:
    """Drop whisper's repeated-phrase hallucinations from a transcript.

    Inside each segment a phrase looping three or more times is cut to one occurrence
    (:func:`collapse_loops`); across segments, a run of consecutive segments with the same
    words keeps only its first ``max_same`` (a real "yes … yes" survives, a ten-fold
    "Thank you." does not). Segments left without words are dropped. Times are unchanged.
    """
    out: list[TranscriptSegment] = []
    run_key, run_len = None, 0
    for s in segments:
        text = collapse_loops(s.text)
        key = " ".join(norm_words(text))
        if not key:
            continue
        run_len = run_len + 1 if key == run_key else 1
        run_key = key
        if run_len > max_same:
            continue
        out.append(s if text == s.text else replace(s, text=text))
    return out


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

    @property
    def multilingual(self) -> bool:
        """Whether the model knows more than English (then languages are detected)."""
        return bool(self._model.model.is_multilingual)

    def transcribe(
        self, audio: np.ndarray, *, language: str | None = None
    ) -> list[TranscriptSegment]:
        """Transcribe samples (16 kHz mono float32); returns segments with times in seconds.

        ``language`` forces one language; by default a multilingual model detects it per
        30 s window for decoding and per segment (≥ 1 s of audio) for the label. Silence and
        music give an empty list, not an error; repeated-phrase loops are removed
        (:func:`suppress_repeats`).
        """
        if audio.size < SAMPLE_RATE // 10:
            return []
        t0 = time.perf_counter()
        detect = self.multilingual and language is None
        segments, info = self._model.transcribe(
            audio,
            language=language,
            multilingual=detect,
            beam_size=1,
            vad_filter=True,
            condition_on_previous_text=False,
            hallucination_silence_threshold=2.0,
            no_speech_threshold=0.6,
            compression_ratio_threshold=2.4,
            word_timestamps=False,
        )
        default = language or ("en" if not self.multilingual else info.language)
        out = []
        for s in segments:
            text = s.text.strip()
            if not text:
                continue
            lang, prob = default, (1.0 if language or not detect else info.language_probability)
            if detect:
                lang, prob = self._segment_language(audio, s.start, s.end, lang, prob)
            out.append(TranscriptSegment(float(s.start), float(s.end), text, lang, float(prob)))
        out = suppress_repeats(out)
        if self.usage is not None:
            # Whisper's tokens are not LLM tokens; only the call and its seconds count here.
            self.usage.record(CallRecord("transcriber", self.name, 0, 0, time.perf_counter() - t0))
        return out

    def _segment_language(self, audio: np.ndarray, start: float, end: float,
                          fallback: str, fallback_p: float) -> tuple[str, float]:
        """The language of ``audio[start:end]`` by whisper's language head (one encoder
        pass over that span); spans shorter than 1 s keep ``fallback``."""
        if end - start < MIN_LANGUAGE_SECONDS:
            return fallback, fallback_p
        piece = audio[int(start * SAMPLE_RATE):int(end * SAMPLE_RATE)]
        lang, prob, _ = self._model.detect_language(audio=piece)
        return lang, float(prob)
