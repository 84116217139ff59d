"""Offline perception signals for the captioner: OCR (RapidOCR, PP-OCRv4 ONNX) and faces
(OpenCV Haar cascade). Inputs are BGR ``uint8`` arrays of shape ``(h, w, 3)``."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from models.usage import CallRecord, UsageMeter


@dataclass(frozen=True)
class TextLine:
    """One line of visible text with the recogniser's 0–1 confidence."""

    text: str
    score: float


def downscale(frame: np.ndarray, max_side: int) -> np.ndarray:
    """``frame`` resized (area interpolation) so its long side is at most ``max_side`` pixels;
    returned as is when it is already small enough."""
    import cv2

    h, w = frame.shape[:2]
    scale = max_side / max(h, w)
    if scale >= 1.0:
        return frame
    return cv2.resize(frame, (int(w * scale), int(h * scale)), interpolation=cv2.INTER_AREA)


class TextReader:
    """OCR of visible text (Chinese + English models shipped in ``rapidocr-onnxruntime``).

    ``read(frame)`` → lines with confidence ≥ ``min_score``; frames are downscaled to
    ``max_side`` pixels first (OCR cost grows with area).
    """

    def __init__(self, *, min_score: float = 0.6, max_side: int = 960,
                 usage: UsageMeter | None = None) -> None:
        from rapidocr_onnxruntime import RapidOCR

        self._ocr = RapidOCR()
        self.min_score = min_score
        self.max_side = max_side
        self.usage = usage

    def read(self, frame: np.ndarray) -> list[TextLine]:
        """Lines of at least 2 characters read in a BGR ``uint8`` ``(h, w, 3)`` frame with
        confidence ≥ ``min_score``, in the recogniser's order; counted as an ``ocr`` call."""
        t0 = time.perf_counter()
        result, _ = self._ocr(downscale(frame, self.max_side))
        lines = [
            TextLine(str(text).strip(), float(score))
            for _box, text, score in (result or [])
            if float(score) >= self.min_score and len(str(text).strip()) >= 2
        ]
        if self.usage is not None:
            self.usage.record(CallRecord("ocr", "rapidocr-ppocrv4", 0, 0,
                                         time.perf_counter() - t0))
        return lines


class FaceCounter:
    """Counts frontal faces with OpenCV's Haar cascade (fast, crude: blurred or fisheye faces
    are often missed, so a count is a lower bound)."""

    def __init__(self, *, max_side: int = 640) -> None:
        import cv2

        path = cv2.data.haarcascades + "haarcascade_frontalface_default.xml"
        self._cascade = cv2.CascadeClassifier(path)
        if self._cascade.empty():
            raise RuntimeError(f"could not load the OpenCV face cascade at {path}")
        self.max_side = max_side

    def count(self, frame: np.ndarray) -> int:
        """Frontal faces (at least 32 px after downscaling to ``max_side``) in a BGR
        ``uint8`` ``(h, w, 3)`` frame."""
        import cv2

        gray = cv2.cvtColor(downscale(frame, self.max_side), cv2.COLOR_BGR2GRAY)
        faces = self._cascade.detectMultiScale(gray, scaleFactor=1.1, minNeighbors=6,
                                               minSize=(32, 32))
        return len(faces)


def frame_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute difference of two frames at 64×64 grey, 0 (same) to 1."""
    import cv2

    ga = cv2.resize(cv2.cvtColor(a, cv2.COLOR_BGR2GRAY), (64, 64), interpolation=cv2.INTER_AREA)
    gb = cv2.resize(cv2.cvtColor(b, cv2.COLOR_BGR2GRAY), (64, 64), interpolation=cv2.INTER_AREA)
    return float(np.abs(ga.astype(np.int16) - gb.astype(np.int16)).mean() / 255.0)


def histogram_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Bhattacharyya distance of HSV hue/saturation histograms, 0 (same) to 1 (disjoint);
    large jumps between 1 fps samples mark a scene change."""
    import cv2

    def hist(img: np.ndarray) -> np.ndarray:
        hsv = cv2.cvtColor(downscale(img, 160), cv2.COLOR_BGR2HSV)
        h = cv2.calcHist([hsv], [0, 1], None, [16, 16], [0, 180, 0, 256])
        return cv2.normalize(h, h).flatten()

    return float(cv2.compareHist(hist(a), hist(b), cv2.HISTCMP_BHATTACHARYYA))
