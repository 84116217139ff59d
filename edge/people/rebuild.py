"""``edge build``'s pass over the character memory, in one write transaction:

1. re-cluster each kind's vectors with scikit-learn (agglomerative, average linkage, cut at
   the match threshold: :func:`edge.people.match.group`) and move the vectors of unnamed
   identities to the identity their cluster belongs to (:func:`edge.people.match.plan_moves`:
   identities the online tier split are merged, stray vectors pulled back; two persons the
   user named are never merged, what was enrolled never moves);
2. delete the unnamed identities left without appearances;
3. join a face-only and a voice-only identity that keep meeting — the voice speaking while
   the face is on screen, in clip after clip (:func:`edge.people.evidence.face_voice_pairs`)
   — never two named differently;
4. suggest names said again and again while one face was alone on screen
   (:func:`edge.people.evidence.suggested_names` over :func:`names_said`), shown by
   ``edge people``, never applied.

Cost: clustering is quadratic in a kind's vectors (n² / 2 distances): 0.5 s for 3,000 face
vectors, 2.7 s for 6,000 (2 cores); above :data:`MAX_VECTORS` a kind is not re-clustered
(the online tier's identities stay as they are; steps 2–4 still run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from edge.people.evidence import face_voice_pairs, suggested_names
from edge.people.match import group, plan_moves
from edge.people.online import Thresholds

MAX_VECTORS = 6000
"""The most vectors of one kind re-clustered (the distance matrix: 6,000² × 8 bytes / 2 =
144 MB)."""


@dataclass
class RebuildReport:
    """What one pass changed: ``moved`` appearances, ``removed`` identities (emptied or
    joined into another), ``joined`` ``(face identity, voice identity)`` pairs made one
    person, ``suggested`` names ``{identity: name}``, ``skipped`` kinds too large to
    re-cluster, ``seconds`` of wall time."""

    moved: int = 0
    removed: list[int] = field(default_factory=list)
    joined: list[tuple[int, int]] = field(default_factory=list)
    suggested: dict[int, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        """The report for ``edge build --json``."""
        return {"moved": self.moved, "removed": self.removed,
                "joined": [list(p) for p in self.joined],
                "suggested": {str(k): v for k, v in self.suggested.items()},
                "skipped": self.skipped, "seconds": round(self.seconds, 3)}


def rebuild_people(memory, thresholds: Thresholds | None = None) -> RebuildReport:
    """Run the pass (see the module) on ``memory`` in one transaction; its report. Nothing
    happens on a memory without people. ``thresholds``: the shipped ones by default."""
    t0 = time.perf_counter()
    report = RebuildReport()
    if not memory.people_ready() or not memory.persons():
        return report
    thresholds = thresholds or Thresholds.measured()
    with memory.writing():
        for kind in ("face", "voice"):
            report.moved += _recluster(memory, kind, thresholds.distance(kind), report)
        report.removed += memory.drop_empty_identities()
        _join_faces_and_voices(memory, report)
        _suggest(memory, report)
    report.seconds = time.perf_counter() - t0
    return report


def _recluster(memory, kind: str, threshold: float, report: RebuildReport) -> int:
    """Re-cluster ``kind``'s vectors and move what :func:`plan_moves` says; how many moved."""
    ids, identities, enrolled, vectors = memory.kind_vectors(kind)
    if len(ids) < 2 or threshold != threshold:  # NaN: that model is not installed
        return 0
    if len(ids) > MAX_VECTORS:
        report.skipped.append(kind)
        return 0
    labels = group(vectors, threshold, kind)
    named = {p.id: bool(p.name) for p in memory.persons()}
    moved = 0
    for owner, rows in plan_moves(identities, enrolled, labels, named).items():
        moved += memory.move_appearances(ids[rows].tolist(), owner)
    return moved


def _join_faces_and_voices(memory, report: RebuildReport) -> None:
    """Merge face-only and voice-only identities that co-occur (never two named ones)."""
    kinds = memory.kinds_by_identity()
    faces = {i: c for i, c in memory.spans_by_identity("face").items() if kinds[i] == {"face"}}
    voices = {i: c for i, c in memory.spans_by_identity("voice").items()
              if kinds[i] == {"voice"}}
    names = {p.id: p.name for p in memory.persons()}
    for f, v in face_voice_pairs(faces, voices):
        if names.get(f) and names.get(v):
            continue
        keep, drop = (v, f) if names.get(v) else (f, v)
        memory.merge_identities(keep, drop)
        report.joined.append((f, v))
        report.removed.append(drop)


def names_said(caption: str, transcript: str) -> set[str]:
    """The proper names a clip's words hold (lowercased; the entity index's rules,
    :func:`edge.store.entity_extract.extract_entities`): names and people speaking or acting
    in the transcript, names in the caption (whose ``person`` rows include the perception
    captioner's field labels)."""
    from edge.store.entity_extract import extract_entities

    said = {m.entity for m in extract_entities("", transcript, {}, ())
            if m.kind in ("name", "person")}
    return said | {m.entity for m in extract_entities(caption, "", {}, ()) if m.kind == "name"}


def _suggest(memory, report: RebuildReport) -> None:
    """Suggest names for unnamed face identities; clear suggestions no longer supported."""
    people = memory.persons()
    clip_faces: dict[int, set[int]] = {}
    for ident, clips in memory.clips_by_identity("face").items():
        for clip in clips:
            clip_faces.setdefault(clip, set()).add(ident)
    alone = [c for c, faces in clip_faces.items() if len(faces) == 1]
    clip_names = {c.id: names_said(c.caption, c.transcript)
                  for c in memory.clips(alone).values()}
    taken = {p.name.lower() for p in people if p.name}
    found = suggested_names(clip_faces, clip_names, taken=taken)
    for p in people:
        if p.name:
            continue
        name, clips = found.get(p.id, (None, 0))
        name = name.title() if name else None
        if (name, clips) != (p.suggested_name, p.suggested_clips):
            memory.suggest_name(p.id, name, clips)
        if name:
            report.suggested[p.id] = name
