"""Faces (models/faces.py, issue 43): dlib's HOG detector, 5-point alignment and ResNet
descriptor, with the real model files on the real shared photos and footage. The face
pairs of ``faces/`` meet the issue's precision and recall at :data:`FACE_MATCH`; the
Hamilton clip's performer is one person across its frames; EgoLife's blurred faces give no
identity; small, blurred and side-on faces are refused; bad input raises a clear error. One
embedder for the module (the models load once, as in the product)."""

from __future__ import annotations

import itertools
import shutil

import numpy as np
import pytest

import models.faces as models_faces
from models.faces import (
    DESCRIPTOR_FILE,
    FACE_DIM,
    FACE_MATCH,
    LANDMARKS_FILE,
    MIN_FACE,
    FaceEmbedder,
    ImageError,
    face_distance,
    model_files,
)
from models.resolve import WeightsCorruptError, WeightsMissingError
from tests.conftest import FOOTAGE, SHARED, shared

pytestmark = pytest.mark.slow

FACES = SHARED / "faces"
PHOTOS = {"obama": ["obama_1.jpg", "obama_2.jpg", "obama_3.jpg", "obama_partial_face.jpg"],
          "biden": ["biden_1.jpg", "biden_2.jpg"],
          "alex_lacamoire": ["alex_lacamoire_1.png", "alex_lacamoire_2.jpg"],
          "kit_harington": ["kit_harington_1.jpeg", "kit_harington_2.jpeg"],
          "rose_leslie": ["rose_leslie_1.jpg", "rose_leslie_2.jpg"],
          "lin_manuel_miranda": ["lin_manuel_miranda.png"]}
"""Who is in each photo of ``faces/`` (``two_people.jpg``: Obama left, Biden right)."""


@pytest.fixture(scope="module")
def embedder() -> FaceEmbedder:
    return FaceEmbedder()


@pytest.fixture(scope="module")
def photo_faces(embedder) -> list[tuple[str, str, object]]:
    """``(person, file, Face)`` for every face of every photo in ``faces/``."""
    out = []
    for person, files in PHOTOS.items():
        for name in files:
            out += [(person, name, f) for f in embedder.faces_in_file(shared(FACES / name))]
    left, right = sorted(embedder.faces_in_file(shared(FACES / "two_people.jpg")),
                         key=lambda f: f.box[0])
    return out + [("obama", "two_people.jpg", left), ("biden", "two_people.jpg", right)]


def frames_of(path, fps: float = 1.0):
    """``(seconds into the file, BGR frame)`` sampled by the project's decoder."""
    from edge.ingest.media import iter_clips, probe

    return [(span.start + f.t, f.image)
            for span in iter_clips(probe(shared(path)), fps=fps) for f in span.frames]


def test_every_photo_gives_one_usable_face_and_pairs_meet_precision_and_recall(photo_faces):
    assert len(photo_faces) == 15  # 13 single-face photos + two in two_people.jpg
    assert all(f.usable and f.vector.shape == (FACE_DIM,) and f.vector.dtype == np.float32
               for _, _, f in photo_faces), [(n, f.reason) for _, n, f in photo_faces]
    same, diff = [], []
    for (pa, _, a), (pb, _, b) in itertools.combinations(photo_faces, 2):
        (same if pa == pb else diff).append(face_distance(a.vector, b.vector))
    same, diff = np.array(same), np.array(diff)
    tp, fp = int((same < FACE_MATCH).sum()), int((diff < FACE_MATCH).sum())
    assert len(same) == 16 and len(diff) == 89
    assert tp / (tp + fp) >= 0.98 and tp / len(same) >= 0.9, (same.max(), diff.min())
    assert same.max() < FACE_MATCH - 0.02 and diff.min() > FACE_MATCH + 0.1  # the margins


def test_two_people_are_two_usable_faces_of_two_people(photo_faces):
    faces = {p: f for p, n, f in photo_faces if n == "two_people.jpg"}
    alone = {p: f for p, n, f in photo_faces if n in ("obama_1.jpg", "biden_1.jpg")}
    assert set(faces) == {"obama", "biden"}
    assert face_distance(faces["obama"].vector, faces["biden"].vector) > FACE_MATCH
    for person in faces:
        other = "biden" if person == "obama" else "obama"
        assert face_distance(faces[person].vector, alone[person].vector) < FACE_MATCH
        assert face_distance(faces[person].vector, alone[other].vector) > FACE_MATCH
        assert faces[person].crop.shape == (150, 150, 3) and faces[person].crop.dtype == np.uint8


def test_a_face_cut_by_the_frame_edge_is_obama_and_nobody_else(photo_faces):
    partial = next(f for _, n, f in photo_faces if n == "obama_partial_face.jpg")
    assert partial.usable and partial.box[0] == 0  # the box is clipped to the image
    for person, name, f in photo_faces:
        if name == "obama_partial_face.jpg":
            continue
        d = face_distance(partial.vector, f.vector)
        assert (d < FACE_MATCH) == (person == "obama"), (name, d)


def test_the_hamilton_performer_is_one_person_across_the_clip(embedder, photo_faces):
    """He is on screen (far on stage, then close) until the cut to the audience at 7.04 s
    of the decoder's timeline (the stream starts at 0.85 s; found by frame difference)."""
    lin = next(f for p, _, f in photo_faces if p == "lin_manuel_miranda").vector
    photos = [(p, f.vector) for p, _, f in photo_faces]
    his, audience = [], []
    for t, image in frames_of(FACES / "short_hamilton_clip.mp4", fps=2.0):
        usable = [f.vector for f in embedder.faces(image) if f.usable]
        (his if t < 7.04 else audience).extend(usable)
    assert len(his) >= 7 and len(audience) >= 1
    nodes = [lin, *his]
    reached, todo = {0}, [0]
    while todo:  # single linkage at FACE_MATCH, from his photo
        i = todo.pop()
        near = {j for j in range(len(nodes)) if face_distance(nodes[i], nodes[j]) < FACE_MATCH}
        todo += sorted(near - reached)
        reached |= near
    assert reached == set(range(len(nodes)))
    for v in audience:  # a stranger, never a wrong person
        assert all(face_distance(v, u) > FACE_MATCH for _, u in photos)


def test_egolife_blurred_faces_give_no_identity(embedder):
    """Mosaic-blurred faces are not detected, every 10 s of both clips. With one more
    upsampling (faces from 40 px) the detector fires on a few things (jeans in the dark at
    25-34 s, a window at 52 s, a bag at 61 s): the chip check drops them all."""
    dropped = embedder.counts["dropped"]
    for name in ("ego_fisheye_phone_noaudio.mp4", "ego_fisheye_b_noaudio.mp4"):
        for t, image in frames_of(FOOTAGE / name):
            if round(t) % 10 == 0:
                assert not [f for f in embedder.faces(image) if f.usable], (name, t)
            if round(t) in (25, 29, 34, 52, 61):
                embedder.upsample = 1
                try:
                    assert not [f for f in embedder.faces(image) if f.usable], (name, t)
                finally:
                    embedder.upsample = 0
    assert embedder.counts["dropped"] - dropped >= 3  # the check ran, the detector fired


def test_small_blurred_and_side_on_faces_get_no_vector(embedder):
    import cv2

    photo = cv2.imread(str(shared(FACES / "obama_1.jpg")))  # his face is 276 px wide
    small = cv2.resize(photo, None, fx=45 / 276, fy=45 / 276, interpolation=cv2.INTER_AREA)
    (face,) = embedder.faces(small)
    assert (face.reason, face.vector, face.usable) == ("small", None, False)
    assert face.box[2] < MIN_FACE and face.quality < 0.5
    mid = cv2.resize(photo, None, fx=0.4, fy=0.4, interpolation=cv2.INTER_AREA)
    (sharp,) = embedder.faces(mid)
    (blurred,) = embedder.faces(cv2.GaussianBlur(mid, (0, 0), 3.0))
    assert sharp.usable and blurred.reason == "blurred" and blurred.vector is None
    assert blurred.quality < 0.5 <= sharp.quality
    assert embedder.faces(cv2.resize(photo, (24, 30))) == []  # a thumbnail: nothing to find
    t, image = min(frames_of(FOOTAGE / "ego_classroom_vfr_audio.mp4"),
                   key=lambda fr: abs(fr[0] - 18.0))
    turned = [f for f in embedder.faces(image) if f.reason == "side-on"]
    assert turned and turned[0].vector is None and turned[0].measures["asymmetry"] > 0.5


def test_bad_input_raises_a_clear_error(embedder, tmp_path):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 not really a JPEG")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    for path in (broken, empty, tmp_path / "missing.jpg"):
        with pytest.raises(ImageError, match=path.name):
            embedder.faces_in_file(path)
    with pytest.raises(ImageError, match="8-bit image"):
        embedder.faces(np.zeros((10, 10, 3), np.float32))
    with pytest.raises(ValueError, match="shapes"):
        face_distance(np.zeros(128), np.zeros(256))


def test_model_files_are_checked_before_they_load(tmp_path):
    files = model_files()
    assert set(files) == {LANDMARKS_FILE, DESCRIPTOR_FILE}
    with pytest.raises(WeightsMissingError, match="face-recognition-models"):
        model_files(tmp_path)
    shutil.copyfile(files[LANDMARKS_FILE], tmp_path / LANDMARKS_FILE)
    (tmp_path / DESCRIPTOR_FILE).write_bytes(b"\0" * 1000)
    with pytest.raises(WeightsCorruptError, match=DESCRIPTOR_FILE):
        FaceEmbedder(tmp_path)


def test_doctor_checks_the_face_models(hub, monkeypatch):
    from edge.cli.doctor import face_check

    check = face_check(hub)
    assert check.ok and "sha256 as recorded" in check.detail, check.detail
    name = DESCRIPTOR_FILE
    size, _ = models_faces.WEIGHTS[name]
    monkeypatch.setitem(models_faces.WEIGHTS, name, (size, "0" * 64))  # a file that changed
    check = face_check(hub)
    assert not check.ok and name in check.detail and "reinstall" in check.detail
