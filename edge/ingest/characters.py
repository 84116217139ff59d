"""The character tier inside ingest (and so inside ``edge record``, which ingests through the
same path): a source's voice turns right after its transcript, each clip's faces before it
is written, its appearances in the clip's own transaction, its face crops after the commit
(:mod:`edge.people`). Charged to the stages ``voices`` (speaker turns), ``faces``
(detection, alignment, descriptors, grouping a clip's faces) and ``people`` (matching the
groups to identities and writing the appearances, inside the clip's transaction but not
counted in ``store``; the crops)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from edge.people import PeopleTier
from edge.people.observe import ClipPeople, VoiceTurn, clip_faces, source_turns, turns_in
from edge.people.online import record_people, save_crops
from edge.stages import StageClock


def voice_turns(tier: PeopleTier | None, audio: np.ndarray | None, segments: list,
                offset: float, stages: StageClock, warnings: list[str]) -> list[VoiceTurn]:
    """The source's voice turns (:func:`edge.people.observe.source_turns`), charged to
    ``voices`` (loading the encoder to ``load``); ``[]`` without the tier, audio, speech or
    a voice encoder, or when the encoder cannot read the audio (said in ``warnings``:
    footage is never refused because nobody could be recognised in it)."""
    if tier is None or audio is None or not segments:
        return []
    with stages.stage("load"):
        encoder = tier.model("voice", warnings)
    if encoder is None:
        return []
    with stages.stage("voices"):
        try:
            return source_turns(encoder, audio, segments, offset)
        except ValueError as e:  # audio the encoder cannot read: the clips still go in
            warnings.append(f"character tier: no voices in this source ({e})")
            return []


def observe_clip(tier: PeopleTier | None, span, turns: list[VoiceTurn], stages: StageClock,
                 warnings: list[str]) -> ClipPeople | None:
    """What the tier sees in one clip (``span``: its frames and its times in the source):
    its face groups (charged to ``faces`` and ``people``) and its voice turns; ``None``
    when the tier is off or saw nobody."""
    if tier is None:
        return None
    people = ClipPeople(turns=turns_in(turns, span.start, span.end))
    if span.frames:
        with stages.stage("load"):
            embedder = tier.model("face", warnings)
        if embedder is not None:
            with stages.stage("faces"):
                try:
                    people.groups, people.untrusted = clip_faces(
                        embedder, span.frames, count=tier.frames,
                        threshold=tier.thresholds.face)
                except ValueError as e:  # a frame the detector cannot read: the clip goes in
                    warnings.append(f"character tier: no faces in clip {span.index} ({e})")
    return people or None


def people_writer(memory, tier: PeopleTier, people: ClipPeople | None, stages: StageClock,
                  *, source_id: int, start: float, crop_stem: str):
    """The ``with_clip`` hook that writes the clip's appearances inside its transaction
    (:func:`edge.people.online.record_people`), or ``None`` when there is nothing to write.
    ``crop_stem``: the crops' path stem under the frames folder. Its time is charged to
    ``people`` and taken out of ``store``, inside which it runs."""
    if people is None:
        return None

    def write(clip_id: int) -> None:
        t0 = time.perf_counter()
        try:
            record_people(memory, clip_id, source_id=source_id, start=start, people=people,
                          crop_stem=crop_stem, thresholds=tier.thresholds)
        finally:
            spent = time.perf_counter() - t0
            stages.seconds["people"] = stages.seconds.get("people", 0.0) + spent
            stages.seconds["store"] = stages.seconds.get("store", 0.0) - spent
    return write


def crops_after(frames_folder: Path, people: ClipPeople | None, stages: StageClock) -> None:
    """Write a stored clip's face crops (charged to ``people``)."""
    if people is not None and people.crops:
        with stages.stage("people"):
            save_crops(frames_folder, people)
