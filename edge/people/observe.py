"""What the character tier sees before anything is stored: the faces of a clip (a few of
its sampled frames, each face that can be trusted, deduplicated into one group per person
in the clip) and the voice turns of a source (its speech segments split where the speaker
changes, GE2E partials, with the words each turn said).

Only usable faces (``Face.usable``: not too small, blurred or side-on) are kept: an
untrusted crop never enrols or grows an identity (Frigate's users poisoned their face
libraries that way); they are only counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edge.people.match import group


@dataclass(frozen=True)
class FaceSighting:
    """A usable face in one frame: ``t`` seconds from the clip start, the ``face``
    (``models.faces.Face``: 128-d vector, quality 0–1, BGR crop)."""

    t: float
    face: Any


@dataclass
class FaceGroup:
    """The sightings of one person in one clip (deduplicated across its frames)."""

    sightings: list[FaceSighting]

    @property
    def best(self) -> FaceSighting:
        """The sighting of highest quality (its crop and vector represent the group)."""
        return max(self.sightings, key=lambda s: s.face.quality)

    @property
    def vectors(self) -> np.ndarray:
        """``(n, 128)`` float32: the descriptors of every sighting."""
        return np.stack([s.face.vector for s in self.sightings]).astype(np.float32)

    @property
    def span(self) -> tuple[float, float]:
        """First and last sighting, seconds from the clip start."""
        ts = [s.t for s in self.sightings]
        return min(ts), max(ts)


@dataclass(frozen=True)
class VoiceTurn:
    """One speaker's stretch of speech: ``start``/``end`` seconds into the source, the
    ``(256,)`` unit ``vector``, and the ``text`` of the transcript that falls in it."""

    start: float
    end: float
    vector: np.ndarray
    text: str


@dataclass
class ClipPeople:
    """A clip's observations: face ``groups``, voice ``turns`` (those whose midpoint lies in
    the clip), ``untrusted`` faces seen but not usable; ``crops`` are filled by
    :func:`edge.people.online.record_people` with the crop files to write once the clip
    is committed (path under the frames folder → BGR image)."""

    groups: list[FaceGroup] = field(default_factory=list)
    turns: list[VoiceTurn] = field(default_factory=list)
    untrusted: int = 0
    crops: dict[str, np.ndarray] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.groups or self.turns)


def pick_frames(frames: Sequence, count: int) -> list:
    """Up to ``count`` of ``frames``, evenly spread from the first to the last."""
    n = len(frames)
    if n == 0 or count <= 0:
        return []
    picks = sorted({round(i * (n - 1) / max(1, count - 1)) for i in range(min(count, n))})
    return [frames[i] for i in picks]


def clip_faces(embedder, frames: Sequence, *, count: int, threshold: float
               ) -> tuple[list[FaceGroup], int]:
    """The face groups of a clip and how many faces were not usable: ``count`` of its
    sampled ``frames`` (``Frame.t`` from the clip start, BGR; the embedder detects on a
    downscaled copy and aligns at full size), every usable face embedded (``embedder``:
    ``models.faces.FaceEmbedder``), and the faces grouped across frames
    (:func:`edge.people.match.group` at ``threshold``, Euclidean), one group per person in
    the clip."""
    sightings: list[FaceSighting] = []
    untrusted = 0
    for frame in pick_frames(frames, count):
        for face in embedder.faces(frame.image):
            if face.usable and face.vector is not None:
                sightings.append(FaceSighting(float(frame.t), face))
            else:
                untrusted += 1
    if not sightings:
        return [], untrusted
    labels = group(np.stack([s.face.vector for s in sightings]), threshold, "face")
    groups = [FaceGroup([s for s, lab in zip(sightings, labels) if lab == k])
              for k in sorted(set(labels.tolist()))]
    return groups, untrusted


def source_turns(encoder, audio: np.ndarray, segments: Sequence, offset: float = 0.0
                 ) -> list[VoiceTurn]:
    """The voice turns of a source: its transcript ``segments`` (``start``/``end`` seconds
    on the source, ``text``) over its 16 kHz ``audio``, which starts ``offset`` seconds
    after the source; each segment split where the speaker changes
    (``VoiceEncoder.speaker_turns``, GE2E 1.6 s partials). A turn gets the words of its
    segment that fall in it: the segment has no word times, so each word is placed at its
    share of the segment's length (approximate at a change of speaker)."""
    if audio is None or not len(segments):
        return []
    spans = [(float(s.start) - offset, float(s.end) - offset) for s in segments]
    turns = encoder.speaker_turns(audio, spans)
    by_segment: dict[int, list] = {}
    for turn in turns:
        by_segment.setdefault(turn.segment, []).append(turn)
    out = []
    for k, found in sorted(by_segment.items()):
        texts = split_words(segments[k].text, spans[k], [(t.start, t.end) for t in found])
        out.extend(VoiceTurn(t.start + offset, t.end + offset,
                             np.asarray(t.vector, np.float32), text)
                   for t, text in zip(found, texts))
    return sorted(out, key=lambda v: v.start)


def split_words(text: str, span: tuple[float, float], turns: Sequence[tuple[float, float]]
                ) -> list[str]:
    """The words of ``text`` (spoken over ``span`` seconds) shared out over the ``turns``
    (``(start, end)`` seconds, in order): word ``i`` of ``n`` is placed at
    ``start + (i + ½)/n`` of the span and goes to the turn it falls in (else the nearest)."""
    words = text.split()
    if len(turns) <= 1:
        return [" ".join(words)] * len(turns)
    s0, s1 = span
    out: list[list[str]] = [[] for _ in turns]
    for i, w in enumerate(words):
        at = s0 + (i + 0.5) / len(words) * (s1 - s0)
        k = min(range(len(turns)), key=lambda j: 0.0 if turns[j][0] <= at < turns[j][1]
                else min(abs(at - turns[j][0]), abs(at - turns[j][1])))
        out[k].append(w)
    return [" ".join(ws) for ws in out]


def turns_in(turns: Sequence[VoiceTurn], start: float, end: float) -> list[VoiceTurn]:
    """The turns whose midpoint lies in ``[start, end)`` seconds of the source (a clip),
    as a clip's transcript takes its segments."""
    return [t for t in turns if start <= (t.start + t.end) / 2 < end]
