"""Faces: detect, align and describe the faces in an image with dlib (character memory:
PyraVid's character memory, M3-Agent; dlib, King, JMLR 2009, and its 2017 face descriptor).

Per image (BGR ``uint8``):

1. **Detect** with dlib's HOG frontal face detector (Dalal–Triggs HOG + linear SVM, five
   sub-detectors: front, turned left, turned right, front tilted left/right), on the image
   resized to ``detect_side`` pixels on its long side (small images enlarged up to 2×).
   Its window is 80×80 px: at ``detect_side`` 640 a 640-px frame's faces of 80 px and more
   are found, at 960 those of 53 px for about 2× the time, ``upsample=1`` 40 px for 4×.
2. **Align**: the 5-point shape predictor (eye corners and nose base) on the image as given,
   then the aligned 150×150 chip (``dlib.get_face_chip``, padding 0.25) that the descriptor
   network expects.
3. **Check it is a face**: the detector must find the aligned chip again (best score
   ≥ :data:`REDETECT_MIN`), else the detection is dropped. On the shared footage this drops
   every false detection seen (jeans in the dark, a window, a bag, the letters "eo" and
   "32": chip scores -0.81 to -0.12), while every photo face and every real face of 73 px or
   more scores 0.43 or more; the few real faces it drops were 53–63 px and dim.
4. **Gate quality**: a face narrower than :data:`MIN_FACE` px is ``"small"``, one whose
   chip is less sharp than :data:`MIN_SHARPNESS` is ``"blurred"``, one whose pose asymmetry
   exceeds :data:`MAX_ASYMMETRY` is ``"side-on"``. Such a face keeps its box and crop but
   gets ``vector=None``: an untrusted crop never enrols or grows an identity (Frigate's users
   poisoned their face libraries with small blurry crops, after which every blurry face
   matched one person).
5. **Describe** the usable ones: dlib's ResNet (29 conv layers, metric-learned so that one
   person's faces fall in a ball of radius 0.6) gives a 128-d descriptor; two faces are one
   person when their Euclidean distance is under :data:`FACE_MATCH`.

EgoLife's faces (``ego_fisheye_*``) are mosaic-blurred: the detector never fires on them
(every second of both 71 s clips at 640 px with one upsampling; every 5 s at twice the size
with its threshold lowered to -0.5), and what it fires on there fails the chip check.

Models and licences (what was found, and where):

- ``dlib`` (the ``dlib-bin`` 20.0.1.post1 wheel, dlib 20 prebuilt, AVX, no BLAS): Boost
  Software License 1.0 (its ``LICENSE.txt``). The HOG detector is built into dlib.
- ``face-recognition-models`` 0.3.0 (Adam Geitgey's package of Davis King's files): its
  ``LICENSE`` file is CC0 1.0 (its metadata says MIT), and its description says the models
  "are licensed in the public domain or under CC0 1.0 Universal". The dlib-models README
  (github.com/davisking/dlib-models) says Davis King released the model files into the
  public domain ("anyone can do whatever they want with these model files"), and per file:
  ``shape_predictor_5_face_landmarks.dat`` (9.2 MB) was trained on his dlib 5-point
  landmark dataset (7,198 faces from the internet he annotated himself);
  ``dlib_face_recognition_resnet_model_v1.dat`` (22.5 MB) was trained on about 3 million
  faces of 7,485 identities from FaceScrub, VGG-Face and images he scraped (99.38 % on LFW).
  FaceScrub and VGG-Face are distributed for research; the README asserts no restriction on
  the trained model, as it does for the 68-point model (iBUG 300-W, non-commercial), which
  is deliberately not used here. Both files are checked against :data:`WEIGHTS` (size and
  SHA-256, 0.06 s) every time they load.

Measured thresholds (the ``../shared/data/faces`` photos, also downscaled and blurred with a
Gaussian of σ 0–3 px per 100 px of face; ``short_hamilton_clip.mp4``; the shared footage):

- :data:`MIN_FACE` 60 px: a face's descriptor drifts from its full-size value by up to 0.11
  at 105 px wide, 0.18 at 73, 0.23 at 53, 0.30 at 44 (the budget to a stranger is ~0.55).
- :data:`MIN_SHARPNESS` 0.015 (:func:`chip_sharpness`): as sharpness falls, different
  people crowd together (closest pair 0.66–0.68 at 0.012 and above, 0.61 at 0.008–0.010,
  0.51 under 0.006) and drift from their sharp selves (median 0.10 above 0.03, 0.27 at
  0.008–0.010). The out-of-focus children of ``ego_classroom`` measure 0.008–0.010; sharp
  faces in the footage 0.022 and more, the photos 0.036–0.76.
- :data:`MAX_ASYMMETRY` 0.5 (:func:`pose_asymmetry`): the photos measure 0.04–0.33. The
  Hamilton performer's frames under 0.5 are at most 0.47 from his photo, at 0.51–0.54 at
  most 0.52, at 0.56–0.62 0.57–0.59 (beyond :data:`FACE_MATCH`); 0.5 is about 40° of yaw
  if the nose base sits 0.3 eye distances in front of the eyes.
- :data:`FACE_MATCH` 0.55: see its docstring.

Cost (``.venv/bin/python benchmarks/face_cost.py --files <the footage> <the Hamilton
clip>``: 466 frames at 640 px; 2 cores shared with another benchmark, load 6, so CPU seconds
are given, wall-clock was 2–3× more): detection 0.035 s a frame at ``detect_side`` 480,
0.055 at 640, 0.11 at 960, 0.21 at 640 with ``upsample=1``; a usable face 0.13 s
(alignment and checks 0.01, descriptor 0.12; about 0.075 on quieter cores, MODELS.md). A
30 s clip with N frames at 640 and F usable faces a frame costs about N × (0.055 + 0.13 F)
s: N = 5, F = 1 is 0.93 s, 0.031× real time.
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from models.resolve import WeightsCorruptError, WeightsMissingError, sha256_file

FACE_DIM = 128
"""Length of a face descriptor (dlib ResNet), float32."""

FACE_MATCH = 0.55
"""Euclidean distance under which two descriptors are one person: stricter than dlib's 0.6.

Measured with this module's gates: the 15 faces of the ``faces/`` photos give 16
same-person pairs at 0.06–0.52 and 89 different-person pairs at 0.70 and more (precision
and recall 1.0 at 0.55, and at 0.6); adding the Hamilton clip's usable faces at 2 fps, the
52 same-person pairs reach 0.605 and the 224 different ones start at 0.627: precision 1.0,
recall 0.96 at 0.55. In video, dim and soft faces of different people come closer: the
Hamilton audience member is 0.573 from a child in ``ego_classroom`` and 0.582 from the
performer (dlib's model is reported to crowd East Asian faces, ageitgey/face_recognition
#431). A stranger shows in many frames, each a chance of a false match, while one matching
frame finds a known person: hence 0.55."""

MIN_FACE = 60
"""Detector box width in pixels of the image given under which a face is ``"small"``."""

MIN_SHARPNESS = 0.015
"""Normalised Laplacian variance of the aligned chip under which a face is ``"blurred"``."""

MAX_ASYMMETRY = 0.5
"""Pose asymmetry (0 frontal) over which a face is ``"side-on"``."""

REDETECT_MIN = 0.0
"""Best detector score on the aligned chip under which a detection is not a face."""

MAX_ENLARGE = 2.0
"""At most this enlargement of a small image for the detector (a 320×240 frame is seen at
640×480: its faces of 40 px and more are found, all that :data:`MIN_FACE` lets through)."""

CHIP_SIZE, CHIP_PADDING = 150, 0.25
"""The aligned chip the ResNet descriptor expects: 150×150 px, 0.25 face widths around."""

MODELS_PACKAGE = "face_recognition_models"
LANDMARKS_FILE = "shape_predictor_5_face_landmarks.dat"
DESCRIPTOR_FILE = "dlib_face_recognition_resnet_model_v1.dat"
WEIGHTS: dict[str, tuple[int, str]] = {
    LANDMARKS_FILE: (9150489,
                     "c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888"),
    DESCRIPTOR_FILE: (22466066,
                      "55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30"),
}
"""File name → (bytes, SHA-256) of the two model files of face-recognition-models 0.3.0."""

INSTALL_HINT = "pip install dlib-bin==20.0.1.post1 face-recognition-models==0.3.0"


class ImageError(ValueError):
    """A file that cannot be read as an image, or an array that is not one; says why."""


@dataclass(frozen=True)
class Face:
    """One face found in an image.

    ``box``: ``(x, y, w, h)`` in pixels of the image given, clipped to it. ``vector``:
    ``(128,)`` float32 dlib ResNet descriptor, ``None`` when the face is not usable.
    ``quality``: 0–1, the weakest of size, sharpness and pose, each scaled so that its
    threshold is 0.5 (``quality ≥ 0.5`` exactly when usable; 1 for a frontal face twice
    :data:`MIN_FACE` wide and twice :data:`MIN_SHARPNESS` sharp).
    ``reason``: ``""`` when usable, else ``"small"``, ``"blurred"`` or ``"side-on"`` (the
    first that fails, in that order). ``crop``: the aligned 150×150 BGR ``uint8`` chip (eyes
    level, the face in the middle; black where the face left the image), for thumbnails.
    ``measures``: the raw values the gates saw (``width`` px, ``sharpness``, ``asymmetry``,
    ``score`` of the detector on the chip).
    """

    box: tuple[int, int, int, int]
    vector: np.ndarray | None
    quality: float
    reason: str
    crop: np.ndarray
    measures: dict[str, float] = field(default_factory=dict, compare=False)

    @property
    def usable(self) -> bool:
        """Whether the face may be matched, enrolled or grow an identity."""
        return self.vector is not None and not self.reason


def face_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Euclidean distance between two ``(128,)`` descriptors (0 same face; under
    :data:`FACE_MATCH` one person). Raises ``ValueError`` when the shapes differ."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if a.shape != b.shape:
        raise ValueError(f"descriptors of shapes {a.shape} and {b.shape} cannot be compared")
    return float(np.linalg.norm(a - b))


def model_files(model_dir: Path | None = None) -> dict[str, Path]:
    """The two model files, checked: ``model_dir`` or the installed face-recognition-models
    package's ``models`` folder (found without importing it). Raises
    :class:`WeightsMissingError` (naming the install command) when a file is absent and
    :class:`WeightsCorruptError` when its size or SHA-256 differs from :data:`WEIGHTS`."""
    if model_dir is None:
        found = importlib.util.find_spec(MODELS_PACKAGE)
        if found is None or not found.submodule_search_locations:
            raise WeightsMissingError(f"face models: package {MODELS_PACKAGE!r} is not "
                                      f"installed. Install it with `{INSTALL_HINT}`.")
        model_dir = Path(next(iter(found.submodule_search_locations))) / "models"
    files = {}
    for name, (size, digest) in WEIGHTS.items():
        path = Path(model_dir) / name
        if not path.is_file():
            raise WeightsMissingError(f"face models: {path} is missing. Install the face "
                                      f"models with `{INSTALL_HINT}`.")
        actual = path.stat().st_size
        if actual != size or sha256_file(path) != digest:
            raise WeightsCorruptError(f"face models: {path} is not the shipped file "
                                      f"({actual} bytes, expected {size} and sha256 "
                                      f"{digest[:12]}…); reinstall with `{INSTALL_HINT}`.")
        files[name] = path
    return files


def pose_asymmetry(points: np.ndarray) -> float:
    """How far from frontal 5 dlib landmarks (``(5, 2)`` px: one eye's outer and inner
    corner, the other eye's, the nose base) are: the larger of the nose base's offset from
    the eyes' midpoint along the eye line, in half eye distances, and ``1 - narrower eye /
    wider eye``. 0 for a frontal face; side-on faces approach 1."""
    p = np.asarray(points, np.float64)
    a, b = (p[0] + p[1]) / 2, (p[2] + p[3]) / 2
    span = float(np.linalg.norm(a - b))
    if span < 1e-6:
        return 1.0
    along = float((p[4] - (a + b) / 2) @ (a - b)) / span
    widths = sorted([float(np.linalg.norm(p[0] - p[1])), float(np.linalg.norm(p[2] - p[3]))])
    eyes = 1.0 - widths[0] / widths[1] if widths[1] > 0 else 1.0
    return max(2.0 * abs(along) / span, eyes)


def chip_sharpness(chip: np.ndarray) -> float:
    """Variance of the Laplacian over the face of an aligned chip (its central 100×100 px,
    without the pixels outside the image, which the chip fills with black) divided by the
    variance of its grey levels: a contrast-free measure of detail (0 flat; sharp faces
    0.022–0.76 on the shared data). ``chip``: ``(150, 150, 3)`` ``uint8``, RGB or BGR."""
    import cv2

    grey = cv2.cvtColor(chip, cv2.COLOR_RGB2GRAY)
    outside = cv2.dilate((chip.max(axis=2) == 0).astype(np.uint8), np.ones((7, 7), np.uint8))
    lo, hi = CHIP_SIZE // 6, CHIP_SIZE - CHIP_SIZE // 6
    inside = outside[lo:hi, lo:hi] == 0
    if inside.sum() < 100:
        return 0.0
    lap = cv2.Laplacian(grey, cv2.CV_32F)[lo:hi, lo:hi][inside]
    levels = grey[lo:hi, lo:hi][inside].astype(np.float32)
    return float(lap.var() / max(float(levels.var()), 1.0))


def _scores(width: float, sharpness: float, asymmetry: float) -> tuple[float, str]:
    """``(quality, reason)`` from the three measures (see :class:`Face`)."""
    parts = {"small": 0.5 * width / MIN_FACE,
             "blurred": 0.5 * sharpness / MIN_SHARPNESS,
             "side-on": 1.0 - 0.5 * asymmetry / MAX_ASYMMETRY}
    reason = next((k for k, v in parts.items() if v < 0.5), "")
    return float(np.clip(min(parts.values()), 0.0, 1.0)), reason


class FaceEmbedder:
    """dlib's HOG detector, 5-point aligner and ResNet descriptor, loaded once (about 0.8 s;
    the two model files are size- and SHA-256-checked first, 0.06 s).

    Args:
        model_dir: folder with :data:`LANDMARKS_FILE` and :data:`DESCRIPTOR_FILE` (default:
            the installed face-recognition-models package).
        detect_side: the detector sees the image resized to this long side (px; smaller
            images are enlarged, at most :data:`MAX_ENLARGE` times), so its cost is the
            same for any image, and it finds faces of about 80 px × long side /
            ``detect_side`` and larger (80 px: the HOG window). Landmarks, chips and the
            :data:`MIN_FACE` gate use the image as given.
        upsample: further doublings by dlib's pyramid (each about 4× the time).

    ``seconds`` accumulates wall-clock time per step (``detect``, ``align``, ``describe``)
    and ``counts`` the images, faces, descriptors and ``dropped`` false detections, so
    callers can report the cost.
    Raises what :func:`model_files` raises.
    """

    def __init__(self, model_dir: Path | None = None, *, detect_side: int = 640,
                 upsample: int = 0) -> None:
        import dlib

        files = model_files(model_dir)
        self._detector = dlib.get_frontal_face_detector()
        self._landmarks = dlib.shape_predictor(str(files[LANDMARKS_FILE]))
        self._descriptor = dlib.face_recognition_model_v1(str(files[DESCRIPTOR_FILE]))
        self.detect_side = int(detect_side)
        self.upsample = int(upsample)
        self.seconds = {"detect": 0.0, "align": 0.0, "describe": 0.0}
        self.counts = {"images": 0, "faces": 0, "descriptors": 0, "dropped": 0}

    def faces(self, image: np.ndarray) -> list[Face]:
        """The faces in a BGR ``uint8`` ``(h, w, 3)`` image (grey ``(h, w)`` and BGRA are
        accepted), largest first; false detections are left out, faces that fail a quality
        gate come with ``vector=None`` and their ``reason``. Raises :class:`ImageError` for
        an array that is not an 8-bit image."""
        rgb = _as_rgb(image)
        t0 = time.perf_counter()
        found = self._detect(rgb)
        self.seconds["detect"] += time.perf_counter() - t0
        self.counts["images"] += 1
        faces = [f for f in (self._face(rgb, rect) for rect in found) if f is not None]
        return sorted(faces, key=lambda f: -f.box[2] * f.box[3])

    def faces_in_file(self, path: Path) -> list[Face]:
        """:meth:`faces` of an image file (JPEG, PNG, WebP, BMP…, EXIF orientation applied).
        Raises :class:`ImageError` naming the file when it is missing or cannot be decoded."""
        import cv2

        path = Path(path)
        if not path.is_file():
            raise ImageError(f"{path}: no such image file")
        data = np.fromfile(path, dtype=np.uint8)
        image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
        if image is None:
            raise ImageError(f"{path}: not a readable image ({data.size} bytes that OpenCV "
                             "cannot decode as JPEG, PNG, WebP, BMP or TIFF)")
        return self.faces(image)

    def _detect(self, rgb: np.ndarray) -> list:
        """Detector boxes (``dlib.rectangle``) in full-resolution pixels."""
        import cv2
        import dlib

        h, w = rgb.shape[:2]
        scale = min(self.detect_side / max(h, w), MAX_ENLARGE)
        seen = rgb if abs(scale - 1.0) < 1e-3 else cv2.resize(
            rgb, (max(1, round(w * scale)), max(1, round(h * scale))),
            interpolation=cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR)
        rects, _scores, _kinds = self._detector.run(seen, self.upsample, 0.0)
        return [dlib.rectangle(round(r.left() / scale), round(r.top() / scale),
                               round(r.right() / scale), round(r.bottom() / scale))
                for r in rects]

    def _face(self, rgb: np.ndarray, rect) -> Face | None:
        """Align, check and (when usable) describe the face in ``rect``; ``None`` when the
        aligned chip is not a face to the detector."""
        import dlib

        t0 = time.perf_counter()
        shape = self._landmarks(rgb, rect)
        chip = dlib.get_face_chip(rgb, shape, size=CHIP_SIZE, padding=CHIP_PADDING)
        _rects, chip_scores, _kinds = self._detector.run(chip, 0, -1.0)
        score = max(chip_scores, default=-9.0)
        points = np.array([(p.x, p.y) for p in shape.parts()], dtype=np.float32)
        measures = {"width": float(rect.width()), "sharpness": chip_sharpness(chip),
                    "asymmetry": pose_asymmetry(points), "score": float(score)}
        self.seconds["align"] += time.perf_counter() - t0
        if score < REDETECT_MIN:
            self.counts["dropped"] += 1
            return None
        self.counts["faces"] += 1
        quality, reason = _scores(measures["width"], measures["sharpness"],
                                  measures["asymmetry"])
        crop = np.ascontiguousarray(chip[:, :, ::-1])
        return Face(_clip_box(rect, rgb.shape), None if reason else self.describe(crop),
                    quality, reason, crop, measures)

    def describe(self, crop: np.ndarray) -> np.ndarray:
        """The ``(128,)`` float32 descriptor of an aligned ``(150, 150, 3)`` BGR ``uint8``
        chip (a :attr:`Face.crop`; no quality gate here). Raises :class:`ImageError` for
        another shape or type."""
        a = np.asarray(crop)
        if a.dtype != np.uint8 or a.shape != (CHIP_SIZE, CHIP_SIZE, 3):
            raise ImageError(f"expected an aligned {CHIP_SIZE}x{CHIP_SIZE} BGR chip, "
                             f"got {a.dtype} {a.shape}")
        t0 = time.perf_counter()
        rgb = np.ascontiguousarray(a[:, :, ::-1])
        vector = np.asarray(self._descriptor.compute_face_descriptor(rgb), np.float32)
        self.seconds["describe"] += time.perf_counter() - t0
        self.counts["descriptors"] += 1
        return vector


def _clip_box(rect, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """``(x, y, w, h)`` of a ``dlib.rectangle`` clipped to an image of ``shape``."""
    h, w = shape[:2]
    x0, y0 = max(0, rect.left()), max(0, rect.top())
    x1, y1 = min(w, rect.right() + 1), min(h, rect.bottom() + 1)
    return x0, y0, max(1, x1 - x0), max(1, y1 - y0)


def _as_rgb(image: np.ndarray) -> np.ndarray:
    """A contiguous RGB ``uint8`` copy of a BGR, BGRA or grey image; :class:`ImageError`
    for anything else."""
    import cv2

    a = np.asarray(image)
    if a.dtype != np.uint8 or a.ndim not in (2, 3) or min(a.shape[:2]) < 1:
        raise ImageError(f"expected an 8-bit image (h, w[, 3]), got {a.dtype} {a.shape}")
    if a.ndim == 2:
        return cv2.cvtColor(a, cv2.COLOR_GRAY2RGB)
    if a.shape[2] == 4:
        return cv2.cvtColor(a, cv2.COLOR_BGRA2RGB)
    if a.shape[2] != 3:
        raise ImageError(f"expected 1, 3 or 4 channels, got {a.shape[2]}")
    return np.ascontiguousarray(cv2.cvtColor(a, cv2.COLOR_BGR2RGB))
