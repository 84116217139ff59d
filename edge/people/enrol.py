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
    resembles: list[tuple[int, str]] = field(default_factory=list)
    repeated: int = 0


def read_samples(files: Sequence[Path], face_model, voice_model) -> list[Sample]:
    """Check and embed every file (``face_model``/``voice_model``: callables returning the
    loaded ``FaceEmbedder``/``VoiceEncoder``, called only when a file needs one). Raises
    :class:`InputError` naming the first file that cannot be used and why."""
    samples = []
    for f in files:
        path = Path(f)
        if path.is_dir():
            raise InputError(f"{path}: a folder; give the photos or recordings in it "
                             "(a shell pattern such as `FOLDER/*.jpg` lists them)")
        if not path.is_file():
            raise InputError(f"{path}: no such file")
        if path.suffix.lower() in IMAGE_SUFFIXES or _is_image(path):
            samples.append(_photo(path, face_model()))
        else:
            samples.append(_recording(path, voice_model()))
    return samples


def _is_image(path: Path) -> bool:
    """Whether OpenCV reads ``path`` as an image by its content (a photo saved under another
    name: ``.mp3``, ``.txt``, no extension)."""
    import cv2

    try:
        return bool(cv2.haveImageReader(str(path)))
    except cv2.error:
        return False


def _photo(path: Path, embedder) -> Sample:
    """The one usable face of a photo, or :class:`InputError`."""
    try:
        faces = embedder.faces_in_file(path)
    except ValueError as e:
        why = str(e)  # the model's message already names the file and says it is unreadable
        raise InputError(why if str(path) in why else f"{path}: not a readable image ({why})"
                         ) from None
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
    from models.voice_features import UndecodableAudio
    from models.voice_turns import speech_regions
    from models.voices import SAMPLE_RATE, VoiceError, load_audio_file

    if _has_video(path):
        raise InputError(f"{path}: a video; enrol from photos of the face or an audio "
                         "recording of the voice (`edge ingest` it to find the people in it)")
    try:
        wav = load_audio_file(path)
        vector = encoder.embed_utterance(wav)
        speech = sum(b - a for a, b in speech_regions(wav))
        if speech < MIN_ENROL_SPEECH:
            raise VoiceError(f"{speech:.1f} s of speech found: noise, music or too short")
        speakers = _speakers(encoder, wav, len(wav) / SAMPLE_RATE)
    except UndecodableAudio as e:
        raise InputError(f"{path}: neither a photo nor a recording that can be read "
                         f"({e.reason}); give photos of the face (JPEG, PNG) or a recording "
                         "of the voice") from None
    except VoiceError as e:
        why = str(e).removeprefix(f"{path}: ")
        raise InputError(f"{path}: no voice to enrol ({why}); give photos of the face "
                         "(JPEG, PNG) or a recording of the person speaking alone, a few "
                         "seconds or more") from None
    if speakers:
        raise InputError(f"{path}: more than one voice in the recording (its {speakers} "
                         f"turns of {LONG_TURN:g} s or more do not sound alike); enrol from "
                         "a recording of the person speaking alone")
    return Sample(path, "voice", vector, min(1.0, len(wav) / SAMPLE_RATE / 10.0))


MIN_ENROL_SPEECH = 1.5
"""Seconds of speech (Silero VAD, :func:`models.voice_turns.speech_regions`) a recording must
hold to enrol a voice: five seconds of white noise hold none, a 1 s word is too thin a
sample (the shortest LibriSpeech utterance shared here holds 2.0 s)."""

LONG_TURN = 3.0
"""Seconds a speaker turn must last to count as a voice in an enrolment recording (a shorter
one is a fragment, ``models.voice_turns.FRAGMENT_SECONDS``: a remark over someone else's
recording, not a second person to refuse it for)."""

OTHER_VOICE = 0.6
"""Cosine under which two long turns are two speakers (the turn splitter's own cut)."""

OTHER_VOICE_MANY = 0.7
"""The same with 3+ long turns. Measured on the shared data: one LibriSpeech reader's six
utterances joined with pauses give turns at 0.79–0.97 to each other, three readers joined
0.43–0.50 (lowest pair), the noisy three-man interview 0.66 over 9 turns, the one-narrator
``narrated_speech_17s.mp3`` 0.69 over 2 turns. A heuristic: GE2E separates noisy men
poorly (docs/people.md)."""


def _has_video(path: Path) -> bool:
    """Whether ``path`` holds a video stream (an audio file's cover art does not count);
    ``False`` when it cannot be opened (the audio reader then says why)."""
    import av

    try:
        with av.open(str(path)) as c:
            return any(not (s.disposition & av.stream.Disposition.attached_pic)
                       for s in c.streams.video)
    except (av.FFmpegError, OSError, ValueError):
        return False


def _speakers(encoder, wav: np.ndarray, seconds: float) -> int:
    """0 when the recording sounds like one speaker, else how many long turns
    (:data:`LONG_TURN`) it has: two of them under :data:`OTHER_VOICE` to each other, or 3+
    with a pair under :data:`OTHER_VOICE_MANY`."""
    from models.voices import cosine

    turns = [t for t in encoder.speaker_turns(wav, [(0.0, seconds)])
             if t.end - t.start >= LONG_TURN]
    if len(turns) < 2:
        return 0
    lowest = min(cosine(a.vector, b.vector) for i, a in enumerate(turns) for b in turns[i + 1:])
    cut = OTHER_VOICE if len(turns) == 2 else OTHER_VOICE_MANY
    return len(turns) if lowest < cut else 0


SAME_SAMPLE = 1e-3
"""Distance under which an enrolled vector is the same sample again (a photo given twice:
its descriptor is the same to ~1e-7; two photos of one face are ≥ 0.2 apart)."""


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
        kept: list[Sample] = []
        for s in samples:
            same = [c for c in memory.nearest(s.kind, s.vector, 1) if c[1] == ident
                    and c[2] < SAME_SAMPLE]
            if same or any(k.kind == s.kind and float(np.linalg.norm(k.vector - s.vector))
                           < SAME_SAMPLE for k in kept):
                report.repeated += 1
            else:
                kept.append(s)
        samples = kept
        for j, s in enumerate(samples):
            crop = f"people/e{ident}_{stamp}_{j}.jpg" if s.crop is not None else None
            memory.add_appearance(ident, s.kind, s.vector, quality=s.quality, crop=crop,
                                  enrolled=True, file=str(s.file.resolve()))
            if crop:
                crops[crop] = s.crop
            setattr(report, f"{s.kind}s", getattr(report, f"{s.kind}s") + 1)
        report.claimed = _claim(memory, ident, samples, thresholds)
        report.resembles = _resembles(memory, ident, samples, thresholds)
    return report, crops


def _resembles(memory, ident: int, samples: Sequence[Sample], thresholds: Thresholds
               ) -> list[tuple[int, str]]:
    """The other named identities whose nearest vector to an enrolled sample is under the
    threshold, ``(id, name)`` in the order met."""
    names = {p.id: p.name for p in memory.persons() if p.name and p.id != ident}
    found: dict[int, str] = {}
    for s in samples:
        near = [c for c in memory.nearest(s.kind, s.vector, KNN) if c[1] in names]
        other, _ = choose(near, thresholds.distance(s.kind))
        if other is not None:
            found.setdefault(other, names[other])
    return list(found.items())


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
