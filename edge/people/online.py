"""Identities, online: the appearances of one clip, decided and written inside the clip's
own transaction (:meth:`edge.store.Memory.store_clip`'s ``with_clip``), so a clip and its
people are stored together or not at all, and a clip cut short is redone with them.

Per clip (PyraVid's character memory; M3-Agent's face and voice entities):

- each face group (one person across the clip's frames, :mod:`edge.people.observe`) is
  compared by its centroid with the identities of the nearest stored face vectors
  (sqlite-vec KNN, enrolled ones included), each by its average distance to them (dlib's
  rule is pairwise), and joins the closest under ``FACE_MATCH``; a group that joins
  none starts a new identity when seen in at least :data:`MIN_NEW_SIGHTINGS` frames (one
  odd frame never makes a person). One appearance per (identity, clip): its first and last
  sighting, the best sighting's vector, quality and crop;
- the clip's voice turns are grouped by speaker, each group joins the voice identity whose
  centroid it is nearest (GE2E scores a voice against a speaker's centroid) above
  ``VOICE_MATCH`` similarity or starts one when it spoke at least :data:`MIN_NEW_SPEECH`
  seconds; each turn is an appearance with its words (a shorter voice that matches no one
  stays in the transcript, said by nobody known). Turns that clearly lean to different
  known people are never one group, and a group never joins an unnamed identity that leans
  to another named person (a cannot-link: under noise, voices grow alike to one another
  before they are alike to anyone known).

Crops are written after the commit (:func:`save_crops`): a crash in between loses a
thumbnail, never leaves an unreferenced crop of a person's face on disk.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from edge.errors import StoreError
from edge.people.match import centroid, choose, distances, group, split_by_preference
from edge.people.observe import ClipPeople, FaceGroup

MIN_NEW_SIGHTINGS = 2
"""Frames a face must be seen in, within one clip, to start a new identity."""
MIN_NEW_SPEECH = 5.0
"""Seconds a voice must speak, within one clip, to start a new identity. A short turn is a
poor sample of a voice: on the LibriSpeech speakers 7–10 % of 2–3 s pieces fall under
``VOICE_MATCH`` to their own speaker's centroid, none of 6–8 s; in the shared interview's
noisy room the one-turn voices over laughter (3.3 and 4.5 s) are 0.73 and 0.77 to the
nearest man's reference span. Replayed on real turns, nobody enrolled
(``.venv/bin/python benchmarks/voice_identities.py``): the interview gives 4, 4, 3, 2
identities at 3, 4, 5, 6 s (at 6 s Sean's first 5.6 s turn starts none and his later turns
join Jack); three sets of stitched LibriSpeech clips (56 clips, 10 speakers) give 11/10,
11/9, 12/10 identities at 3 s, 10, 9, 11 at 4 s and one per speaker at 5 s, none holding
two speakers. The cost: speech that matches no one and is too short to start anyone is said
by nobody known — 19 % of the interview (15 % at 3 s), 2–3 % of the LibriSpeech clips."""
KNN = 16
"""Stored vectors compared with each new group."""


@dataclass(frozen=True)
class Thresholds:
    """``face``: Euclidean distance under which two face vectors are one person
    (``models.faces.FACE_MATCH``); ``voice``: cosine similarity above which two voice vectors
    are one speaker (``models.voices.VOICE_MATCH``)."""

    face: float
    voice: float

    @classmethod
    def measured(cls) -> Thresholds:
        """The thresholds the face and voice modules measured and ship (NaN for a module
        that cannot be imported: that half of the tier cannot run anyway)."""
        found = []
        for module, name in (("models.faces", "FACE_MATCH"), ("models.voices", "VOICE_MATCH")):
            try:
                found.append(float(getattr(importlib.import_module(module), name)))
            except ImportError:
                found.append(float("nan"))
        return cls(*found)

    def distance(self, kind: str) -> float:
        """The distance under which ``kind`` vectors match (voices: ``1 − similarity``)."""
        return self.face if kind == "face" else 1.0 - self.voice


def record_people(memory, clip_id: int, *, source_id: int, start: float, people: ClipPeople,
                  crop_stem: str, thresholds: Thresholds) -> list[int]:
    """Store the appearances of clip ``clip_id`` (inside the caller's transaction):
    ``start`` is the clip's start in seconds into the source ``source_id``; face crops are
    named ``{crop_stem}_p{identity}.jpg`` (relative to the frames folder) and queued in
    ``people.crops`` for :func:`save_crops`. Returns the ids of the identities that
    appeared (new ones included)."""
    seen = _record_faces(memory, clip_id, source_id, start, people, crop_stem, thresholds)
    return sorted(seen | _record_voices(memory, clip_id, source_id, people, thresholds))


def _join(memory, kind: str, vectors, thresholds: Thresholds, may_start: bool,
          named: frozenset[int] = frozenset()) -> int | None:
    """The identity a group of ``kind`` ``vectors`` joins, a new one when none does and
    ``may_start``, else None: the identities among the stored vectors nearest to the
    group's centroid (sqlite-vec KNN) are compared by :func:`linkage`, and the closest
    under the threshold is joined. Voices: an unnamed identity that leans to another of
    the ``named`` identities than the group does (:func:`_preferred`) is not a candidate —
    under noise two voices are nearer each other than anyone known, and an unnamed identity
    would gather them all."""
    c = centroid(vectors, kind)
    near = {ident for _, ident, _ in memory.nearest(kind, c, KNN)}
    if kind == "voice" and named:
        lean = _preferred(memory, c, named)
        near = {i for i in near if i in named or lean is None or _preferred(
            memory, centroid(memory.identity_vectors(i, kind)[0], kind), named) in (None, lean)}
    ident, _ = choose([(0, i, linkage(c, *memory.identity_vectors(i, kind), kind))
                       for i in sorted(near)], thresholds.distance(kind))
    if ident is None and may_start:
        ident = memory.new_identity()
    return ident


def linkage(vector, members, enrolled, kind: str) -> float:
    """How far ``vector`` is from an identity whose vectors are ``members`` (``enrolled``:
    which the user gave), or the distance to the nearest enrolled vector when that is less
    (what the user enrolled is a trusted reference). Faces: the *average* distance to the
    members (average linkage, as ``edge build`` re-clusters; dlib's descriptor is trained
    and thresholded pairwise). Voices: the cosine distance to the members' centroid — GE2E
    is trained to score an utterance against a speaker's centroid (Wan et al. 2018, Eq. 5),
    and one man's turns in a noisy room are as alike pairwise (0.67–0.85 in the shared
    interview) as different men's (0.64–0.77), so their average pairwise distance splits
    one speaker into several identities (``benchmarks/voice_identities.py``, a new voice
    after 3 s: the interview 5 identities for 3 men with 6.1 % of the speech in the wrong
    one, against 4 and 2.0 %; stitched LibriSpeech clips of 10 speakers 16, 20, 19
    identities against 11, 11, 12, none mixed). Neither chains two people through one
    ambiguous vector, as the single nearest would."""
    d = distances(vector, members, kind)
    if not len(d):
        return float("inf")
    near = d[enrolled].min() if enrolled.any() else np.inf
    if kind == "voice":
        return float(min(distances(vector, centroid(members, kind)[None], kind)[0], near))
    return float(min(d.mean(), near))


def _record_faces(memory, clip_id: int, source_id: int, start: float, people: ClipPeople,
                  crop_stem: str, thresholds: Thresholds) -> set[int]:
    """One face appearance per identity the clip's groups join (see the module)."""
    by_identity: dict[int, list[FaceGroup]] = {}
    for g in people.groups:
        ident = _join(memory, "face", g.vectors, thresholds,
                      len(g.sightings) >= MIN_NEW_SIGHTINGS)
        if ident is not None:
            by_identity.setdefault(ident, []).append(g)
    for ident, groups in by_identity.items():
        best = max((g.best for g in groups), key=lambda s: s.face.quality)
        t0 = min(g.span[0] for g in groups)
        t1 = max(g.span[1] for g in groups)
        crop = f"{crop_stem}_p{ident}.jpg"
        memory.add_appearance(ident, "face", best.face.vector, quality=best.face.quality,
                              source_id=source_id, clip_id=clip_id, t=start + t0,
                              t_end=start + t1, crop=crop)
        people.crops[crop] = best.face.crop
    return set(by_identity)


def _record_voices(memory, clip_id: int, source_id: int, people: ClipPeople,
                   thresholds: Thresholds) -> set[int]:
    """A voice appearance per turn, each group of turns (one speaker) joined to an
    identity (see the module)."""
    turns = people.turns
    if not turns:
        return set()
    vectors = np.stack([t.vector for t in turns])
    named = frozenset(p.id for p in memory.persons() if p.name)
    labels = split_by_preference(group(vectors, thresholds.distance("voice"), "voice"),
                                 [_preferred(memory, v) for v in vectors],
                                 [t.end - t.start for t in turns])
    seen: set[int] = set()
    for k in sorted(set(labels.tolist())):
        members = [t for t, lab in zip(turns, labels) if lab == k]
        speech = sum(t.end - t.start for t in members)
        ident = _join(memory, "voice", vectors[labels == k], thresholds,
                      speech >= MIN_NEW_SPEECH, named)
        if ident is None:
            continue
        seen.add(ident)
        for t in members:
            memory.add_appearance(ident, "voice", t.vector, quality=min(1.0, (t.end - t.start)
                                                                        / 3.0),
                                  source_id=source_id, clip_id=clip_id, t=t.start,
                                  t_end=t.end, text=t.text)
    return seen


PREFER_FLOOR = 0.6
"""Cosine to a known voice's centroid above which a turn may lean to it — only to keep apart
turns (and unnamed people) that lean to different people, never to name anyone (that takes
``VOICE_MATCH``). Under white noise at ~15 dB, enrolled LibriSpeech readers' turns are
0.59–0.78 to their own voice and 0.8+ to one another."""
PREFER_MARGIN = 0.05
"""How much nearer the leaned-to identity must be than the next one."""


def _preferred(memory, vector, among: frozenset[int] | None = None) -> int | None:
    """The voice identity ``vector`` is clearly nearest (:data:`PREFER_FLOOR`,
    :data:`PREFER_MARGIN`; compared as :func:`linkage` does) — of those ``among`` (default:
    the identities of its nearest stored vectors) — or ``None``: the cannot-link of
    :func:`edge.people.match.split_by_preference` and :func:`_join`."""
    near = among if among is not None else {
        ident for _, ident, _ in memory.nearest("voice", vector, KNN)}
    scored = sorted((1.0 - linkage(vector, *memory.identity_vectors(i, "voice"), "voice"), i)
                    for i in near)[::-1]
    if not scored or scored[0][0] < PREFER_FLOOR:
        return None
    if len(scored) > 1 and scored[0][0] - scored[1][0] < PREFER_MARGIN:
        return None
    return scored[0][1]


def save_crops(frames_folder: Path, people: ClipPeople, quality: int = 90) -> None:
    """Write the committed clip's face crops (``people.crops``: path relative to
    ``frames_folder`` → BGR image) as JPEG. Raises :class:`StoreError` when one cannot be
    written (the clip and its appearances stay stored; only the thumbnail is missing)."""
    for rel, image in people.crops.items():
        path = Path(frames_folder) / rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            ok = image is not None and image.size and cv2.imwrite(
                str(path), image, [cv2.IMWRITE_JPEG_QUALITY, quality])
        except OSError as e:
            raise StoreError(f"could not write the face crop {path}: {e}") from None
        if not ok:
            raise StoreError(f"could not write the face crop {path}: check free disk space "
                             "and that the folder is writable")
