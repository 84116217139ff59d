"""``edge people add NAME FILE...``: teach the memory a person from photos (faces) and
recordings (voices), as Frigate's face library is taught. Every file is checked before
anything is stored, and a file that cannot teach anything is refused with a clear message
(:class:`~edge.errors.InputError`: a photo with no usable face or with several faces, an
unreadable image, audio that is silent or too short): nothing of the call is stored then.

An enrolled vector is an appearance with ``enrolled`` set and no clip; its face crop is kept
under ``<memory>.frames/people/``. Enrolling also claims the unnamed identities the online
tier already made of this person (their vectors match an enrolled one): they are merged
into the named one, so footage ingested before the name was given is found by it too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge.errors import InputError
from edge.people.match import choose
from edge.people.online import KNN, Thresholds

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".jfif"}
"""Files enrolled as photos (faces); any other file is read as a recording (a voice)."""


@dataclass
class Sample:
    """One checked file: its ``kind`` (``face``/``voice``), ``vector``, ``quality`` (0–1)
    and, for a photo, the face ``crop`` (BGR)."""

    file: Path
    kind: str
    vector: np.ndarray
    quality: float
    crop: np.ndarray | None = None


@dataclass
class EnrolReport:
    """What ``edge people add`` did: the ``identity`` (``created`` now or found by name),
    the enrolled ``faces`` and ``voices``, and the unnamed identities ``claimed`` (merged
    into it because their vectors matched)."""

    identity: int
    name: str
    created: bool
    faces: int = 0
    voices: int = 0
    claimed: list[int] = field(default_factory=list)


def read_samples(files: Sequence[Path], face_model, voice_model) -> list[Sample]:
    """Check and embed every file (``face_model``/``voice_model``: callables returning the
    loaded ``FaceEmbedder``/``VoiceEncoder``, called only when a file needs one). Raises
    :class:`InputError` naming the first file that cannot be used and why."""
    samples = []
    for f in files:
        path = Path(f)
        if not path.is_file():
            raise InputError(f"{path}: no such file")
        if path.suffix.lower() in IMAGE_SUFFIXES:
            samples.append(_photo(path, face_model()))
        else:
            samples.append(_recording(path, voice_model()))
    return samples


def _photo(path: Path, embedder) -> Sample:
    """The one usable face of a photo, or :class:`InputError`."""
    try:
        faces = embedder.faces_in_file(path)
    except ValueError as e:
        raise InputError(f"{path}: not a readable image ({e})") from None
    usable = [f for f in faces if f.usable and f.vector is not None]
    if len(usable) > 1:
        raise InputError(f"{path}: {len(usable)} faces in the photo; enrol from a photo of "
                         "the person alone (or a crop of them)")
    if not usable:
        why = ", ".join(sorted({f.reason for f in faces if f.reason})) if faces else ""
        found = f"{len(faces)} face(s), none usable: {why}" if faces else "no face found"
        raise InputError(f"{path}: no usable face ({found}); use a sharp, frontal photo "
                         "where the face is at least about 80 pixels wide")
    face = usable[0]
    return Sample(path, "face", np.asarray(face.vector, np.float32), float(face.quality),
                  face.crop)


def _recording(path: Path, encoder) -> Sample:
    """A recording's voice vector (its whole speech), or :class:`InputError`."""
    from models.voices import SAMPLE_RATE, VoiceError, load_audio_file

    try:
        wav = load_audio_file(path)
        vector = encoder.embed_utterance(wav)
    except VoiceError as e:
        raise InputError(f"{path}: no voice to enrol ({e}); give a recording of the "
                         "person speaking alone, a few seconds or more") from None
    return Sample(path, "voice", vector, min(1.0, len(wav) / SAMPLE_RATE / 10.0))


def enrol(memory, name: str, samples: Sequence[Sample], thresholds: Thresholds
          ) -> tuple[EnrolReport, dict[str, np.ndarray]]:
    """Store ``samples`` as enrolled appearances of the identity named ``name`` (made when
    no identity has that name), claiming matching unnamed identities, in one transaction.
    Returns the report and the face crops to write (path under the frames folder → BGR)."""
    crops: dict[str, np.ndarray] = {}
    with memory.writing():
        found = memory.identity_by_name(name)
        ident = found.id if found else memory.new_identity(name)
        report = EnrolReport(ident, found.name if found else name.strip(), found is None)
        stamp = time.time_ns()  # crop names never met before, whatever was moved or merged
        for j, s in enumerate(samples):
            crop = f"people/e{ident}_{stamp}_{j}.jpg" if s.crop is not None else None
            memory.add_appearance(ident, s.kind, s.vector, quality=s.quality, crop=crop,
                                  enrolled=True, file=str(s.file.resolve()))
            if crop:
                crops[crop] = s.crop
            setattr(report, f"{s.kind}s", getattr(report, f"{s.kind}s") + 1)
        report.claimed = _claim(memory, ident, samples, thresholds)
    return report, crops


def _claim(memory, ident: int, samples: Sequence[Sample], thresholds: Thresholds
           ) -> list[int]:
    """Merge into ``ident`` every unnamed identity whose nearest vector to an enrolled one
    is under the threshold; their ids."""
    claimed: list[int] = []
    for s in samples:
        while True:
            unnamed = {p.id for p in memory.persons() if not p.name}
            near = [c for c in memory.nearest(s.kind, s.vector, KNN) if c[1] in unnamed]
            other, _ = choose(near, thresholds.distance(s.kind))
            if other is None:
                break
            memory.merge_identities(ident, other)
            claimed.append(other)
    return claimed
