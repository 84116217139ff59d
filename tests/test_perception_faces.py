"""The perception captioner counts faces on a sample of a clip's frames, not all of them.

The Haar cascade on all 30 frames of a 30 s clip was over half of the caption stage's time
(issue 13's real-time tier must run at ≤ 0.15× real time on 2 cores). Real frames from the
shared footage, the real cascade (counted through a spy that calls it) and the real OCR.
"""

from edge.ingest.media import iter_clips, probe
from models.captioner import PerceptionCaptioner
from models.vision import FaceCounter
from tests.conftest import FOOTAGE, shared


class CountingFaces(FaceCounter):
    """The real face counter, remembering which frames it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[int] = []

    def count(self, frame) -> int:
        self.frames.append(id(frame))
        return super().count(frame)


def test_faces_are_counted_on_ten_evenly_spaced_frames_of_a_thirty_second_clip():
    info = probe(shared(FOOTAGE / "exo_grid_hevc_aac.mp4"))
    span = next(iter_clips(info, clip_seconds=30.0))
    assert len(span.frames) >= 29
    faces = CountingFaces()
    cap = PerceptionCaptioner(faces=faces, ocr_frames=0).caption(span.frames, "", span.duration)
    by_id = {id(f.image): i for i, f in enumerate(span.frames)}
    seen = [by_id[i] for i in faces.frames]
    assert len(seen) == 10 == cap.signals["face_frames"]
    assert seen[0] == 0 and seen[-1] == len(span.frames) - 1  # spread over the whole clip
    assert max(b - a for a, b in zip(seen, seen[1:])) <= 4
    assert 0 <= cap.signals["frames_with_faces"] <= 10


def test_a_short_clip_counts_faces_on_every_frame():
    info = probe(shared(FOOTAGE / "everyday_livingroom.mp4"))  # 6.1 s: 6-7 frames
    span = next(iter_clips(info, clip_seconds=30.0))
    faces = CountingFaces()
    cap = PerceptionCaptioner(faces=faces, ocr_frames=0).caption(span.frames, "", span.duration)
    assert len(faces.frames) == len(span.frames) == cap.signals["face_frames"]
