"""Captioner role: frames + transcript → a caption.

No vision-language model ships offline, so the default backend is *perception*: it reports
only what cheap, reliable signals observed (visible text, faces, motion and scene changes,
brightness, speech) and never guesses at objects or actions. A VLM backend implements the
same :class:`Captioner` protocol.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from models.vision import FaceCounter, TextReader, frame_difference, histogram_distance


@dataclass(frozen=True)
class Frame:
    """A sampled video frame: ``t`` seconds from the start of the span captioned, BGR uint8."""

    t: float
    image: np.ndarray


@dataclass
class Caption:
    """A caption plus the raw signals behind it (kept for display and debugging)."""

    text: str
    signals: dict = field(default_factory=dict)


class Captioner(Protocol):
    """Anything that turns sampled frames and a transcript into a caption."""

    def caption(self, frames: list[Frame], transcript: str, duration: float) -> Caption:
        """A caption of one span: ``frames`` sampled from it (``Frame.t`` in seconds, BGR
        ``uint8`` ``(h, w, 3)``), its ``transcript`` (may be empty), ``duration`` in seconds."""
        ...


def _norm(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKC", text).lower() if ch.isalnum())


def evenly_spaced(n: int, k: int) -> list[int]:
    """Up to ``k`` indices of ``n`` frames, evenly spaced, ascending, first and last kept."""
    k = min(n, k)
    if k <= 1:
        return list(range(k))
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


class PerceptionCaptioner:
    """Honest perception captioner (tiny profile).

    Signals: OCR on up to ``ocr_frames`` frames (evenly spaced, scene changes first), the
    largest face count over up to ``face_frames`` evenly spaced frames (``frames_with_faces``
    counts among those), motion as the median 1 fps frame difference, scene changes as
    hue/saturation histogram jumps, mean brightness, and the transcript.

    ``face_frames`` is 10 of a 30 s clip's 30 frames: the Haar cascade on every frame was
    over half of the real-time tier's caption time (issue 13: the tier must run at ≤ 0.15×
    real time on 2 cores), and the caption says only the largest count.
    """

    def __init__(self, *, ocr_frames: int = 3, face_frames: int = 10, max_text_lines: int = 12,
                 reader: TextReader | None = None, faces: FaceCounter | None = None) -> None:
        self.reader = reader or TextReader()
        self.faces = faces or FaceCounter()
        self.ocr_frames = ocr_frames
        self.face_frames = face_frames
        self.max_text_lines = max_text_lines

    def _ocr_indices(self, n: int, changes: list[int]) -> list[int]:
        if n == 0:
            return []
        even = evenly_spaced(n, self.ocr_frames)
        picked: list[int] = []
        for i in [*changes, *even]:
            if i not in picked:
                picked.append(i)
        return sorted(picked[: self.ocr_frames])

    def caption(self, frames: list[Frame], transcript: str, duration: float) -> Caption:
        """Compose a caption from what was observed; ``duration`` in seconds."""
        signals: dict = {"duration": round(duration, 2), "frames": len(frames)}
        parts: list[str] = []
        if frames:
            diffs = [frame_difference(a.image, b.image) for a, b in zip(frames, frames[1:])]
            changes = [
                i + 1 for i, (a, b) in enumerate(zip(frames, frames[1:]))
                if histogram_distance(a.image, b.image) > 0.45
            ]
            motion = float(np.median(diffs)) if diffs else 0.0
            brightness = float(np.mean([f.image.mean() for f in frames]) / 255.0)
            face_counts = [self.faces.count(frames[i].image)
                           for i in evenly_spaced(len(frames), self.face_frames)]
            texts: list[str] = []
            seen: set[str] = set()
            for i in self._ocr_indices(len(frames), changes):
                for line in self.reader.read(frames[i].image):
                    key = _norm(line.text)
                    if key and key not in seen:
                        seen.add(key)
                        texts.append(line.text)
            texts = texts[: self.max_text_lines]
            signals.update(motion=round(motion, 4), scene_changes=len(changes),
                           brightness=round(brightness, 3), max_faces=max(face_counts),
                           frames_with_faces=sum(1 for c in face_counts if c),
                           face_frames=len(face_counts), text=texts)
            view = ("the view is mostly still" if motion < 0.03
                    else "the view moves somewhat" if motion < 0.08
                    else "the view moves a lot")
            sc = len(changes)
            scene = f", with {sc} scene change{'s' if sc != 1 else ''}" if sc else ""
            light = " It is dark." if brightness < 0.18 else ""
            parts.append(f"Video, {duration:.0f} s: {view}{scene}.{light}")
            if texts:
                parts.append("Visible text: " + "; ".join(f'"{t}"' for t in texts) + ".")
            if signals["max_faces"]:
                n = signals["max_faces"]
                parts.append(f"Up to {n} face{'s' if n != 1 else ''} visible.")
        else:
            parts.append(f"Audio only, {duration:.0f} s.")
        transcript = transcript.strip()
        signals["speech"] = bool(transcript)
        parts.append(f'Speech: "{transcript}"' if transcript else "No speech heard.")
        return Caption(" ".join(parts), signals)
