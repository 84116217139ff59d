"""The character memory's store and its online identities on real faces (issue 43): dlib's
descriptors of the shared photos (``../shared/data/faces``) go through the real store —
enrolment, a clip's appearances written in its own transaction, naming, merging, the
re-clustering of ``edge build`` — and ``forget`` leaves no row, vector or file of a person.
The face model loads in about a second; no footage is decoded here (tests/test_people.py
ingests real video)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge.people.enrol import Sample, enrol
from edge.people.observe import ClipPeople, FaceGroup, FaceSighting
from edge.people.online import Thresholds, record_people, save_crops
from edge.people.rebuild import rebuild_people
from edge.store import Memory
from tests.conftest import SHARED, shared
from tests.factories import add_clips, add_source

FACES = SHARED / "faces"
PHOTOS = ["obama_1.jpg", "obama_2.jpg", "obama_3.jpg", "biden_1.jpg", "biden_2.jpg",
          "kit_harington_1.jpeg", "kit_harington_2.jpeg", "rose_leslie_1.jpg", "rose_leslie_2.jpg",
          "alex_lacamoire_1.png"]
T = Thresholds(face=0.6, voice=0.75)


@pytest.fixture(scope="module")
def faces():
    """The one face of each photo (dlib's real descriptor, quality and crop)."""
    from models.faces import FaceEmbedder

    embedder = FaceEmbedder()
    out = {}
    for name in PHOTOS:
        (face,) = embedder.faces_in_file(shared(FACES / name))
        assert face.usable
        out[name.split(".")[0]] = face
    return out


def sample(faces, name: str) -> Sample:
    """A checked photo, as ``edge people add`` reads it."""
    f = faces[name]
    (path,) = FACES.glob(f"{name}.*")
    return Sample(path, "face", f.vector, f.quality, f.crop)


def seen(faces, *names: str, every: float = 5.0) -> ClipPeople:
    """A clip's observations: one group per name, each seen in two frames."""
    return ClipPeople(groups=[FaceGroup([FaceSighting(0.0, faces[n]),
                                         FaceSighting(every, faces[n])]) for n in names])


def store(memory: Memory, source: int, idx: int, people: ClipPeople | None,
          caption: str = "a room") -> int:
    """Store clip ``idx`` of ``source`` with its people in ONE transaction, as ingest does."""
    from tests.factories import unit_vectors

    vec = unit_vectors(1, idx)[0]
    return memory.store_clip(
        source_id=source, idx=idx, t_start=36000.0 + 30 * idx, t_end=36030.0 + 30 * idx,
        day="DAY1", day_start=0.0, caption=caption, transcript="", keyframes=[], signals={},
        keys={"caption": (caption, "caption")}, vectors={"caption": vec},
        with_clip=None if people is None else lambda cid: record_people(
            memory, cid, source_id=source, start=30.0 * idx, people=people,
            crop_stem=f"src/c{idx:05d}", thresholds=T))[0]


@pytest.fixture
def known(tmp_path, faces):
    """A memory where Obama and Biden are enrolled, then a clip shows Obama, Biden, Kit
    Harington (a stranger, seen twice) and Rose Leslie (once: too little for a person)."""
    m = Memory(tmp_path / "m.db")
    enrol(m, "Barack Obama", [sample(faces, "obama_1"), sample(faces, "obama_2")], T)
    enrol(m, "Joe Biden", [sample(faces, "biden_1")], T)
    src = add_source(m, "video.mp4", kind="video", t_start=36000.0, duration=300.0)
    people = seen(faces, "obama_3", "biden_2", "kit_harington_1")
    people.groups.append(FaceGroup([FaceSighting(9.0, faces["rose_leslie_1"])]))
    store(m, src, 0, people)
    save_crops(tmp_path / "m.db.frames", people)
    yield m, src
    m.close()


def test_faces_join_their_enrolled_person_and_a_stranger_starts_one(known, faces):
    m, src = known
    obama, biden = m.identity_by_name("barack obama"), m.identity_by_name("JOE BIDEN")
    assert (obama.faces, obama.enrolled, obama.clips) == (3, 2, 1)
    assert (biden.faces, biden.enrolled, biden.clips) == (2, 1, 1)
    (stranger,) = [p for p in m.persons() if p.name is None]
    assert (stranger.faces, stranger.clips, stranger.enrolled) == (1, 1, 0)
    assert len(m.persons()) == 3  # Rose, seen in one frame only, made no one
    (a,) = m.appearances(obama.id, "face")[2:]
    assert (a.source, a.clip_id, a.t, a.t_end) == ("video.mp4", 1, 0.0, 5.0)
    assert a.at == pytest.approx(36000.0) and obama.first_seen == pytest.approx(36000.0)
    # the next clip: Kit again (another photo) joins the stranger; Obama again
    store(m, src, 1, seen(faces, "kit_harington_2", "obama_1"))
    assert m.person(stranger.id).clips == 2 and m.identity_by_name("Barack Obama").clips == 2
    assert {p.identity_id for p in m.people_in_clips([2])[2]} == {stranger.id, obama.id}
    assert m.person_clips(obama.id) == [1, 2]


def test_a_clip_and_its_people_are_stored_together_or_not_at_all(known, faces):
    m, src = known
    before = {t: m.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("clips", "identities", "appearances", "face_vec", "links")}
    people = seen(faces, "rose_leslie_1", "obama_3")

    def crash(clip_id):
        record_people(m, clip_id, source_id=src, start=60.0, people=people,
                      crop_stem="src/c00002", thresholds=T)
        raise OSError("power lost")
    with pytest.raises(OSError):
        m.store_clip(source_id=src, idx=2, t_start=1.0, t_end=2.0, day="DAY1", day_start=0.0,
                     caption="x", transcript="", keyframes=[], signals={}, keys={},
                     vectors={}, with_clip=crash)
    after = {t: m.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in before}
    assert after == before


def test_forget_leaves_no_row_vector_or_file_of_the_person(known, faces, tmp_path):
    m, src = known
    frames = tmp_path / "m.db.frames"
    obama = m.identity_by_name("Barack Obama")
    crops = [a.crop for a in m.appearances(obama.id)]
    save_crops(frames, ClipPeople(crops={c: faces["obama_1"].crop for c in crops if c}))
    assert all((frames / c).is_file() for c in crops)
    ids = [a.id for a in m.appearances(obama.id)]
    removed = m.forget_identity(obama.id)
    for c in removed:
        (frames / c).unlink()
    assert sorted(removed) == sorted(crops)
    q = m.db.execute
    marks = ",".join("?" * len(ids))
    assert q("SELECT count(*) FROM identities WHERE id = ?", (obama.id,)).fetchone()[0] == 0
    assert q(f"SELECT count(*) FROM appearances WHERE id IN ({marks}) OR identity_id = ?",
             (*ids, obama.id)).fetchone()[0] == 0
    assert q(f"SELECT count(*) FROM face_vec WHERE appearance_id IN ({marks})",
             ids).fetchone()[0] == 0
    assert q("SELECT count(*) FROM links WHERE (src_kind = 'person' AND src_id = ?) OR "
             "(dst_kind = 'person' AND dst_id = ?)", (obama.id, obama.id)).fetchone()[0] == 0
    for table in ("entities", "clip_text", "fact_text", "nodes_clip", "facts"):
        rows = q(f"SELECT * FROM {table}").fetchall()
        assert not any("obama" in str(r).lower() for r in rows), table
    # nor in the file's bytes: freed pages are zeroed and the write-ahead log truncated
    vector = faces["obama_1"].vector.astype("<f4").tobytes()
    for f in (m.path, Path(f"{m.path}-wal")):
        raw = f.read_bytes() if f.exists() else b""
        assert b"Barack Obama" not in raw and vector not in raw, f
        assert not any(c.encode() in raw for c in crops if c), f
    left = {p.relative_to(frames).as_posix() for p in frames.rglob("*.jpg")}
    assert left and not left & set(crops)  # Biden's and the stranger's crops stay
    # nothing of him is matched any more: his photo now meets no stored vector under 0.6
    assert all(d >= 0.6 for _, _, d in m.nearest("face", faces["obama_3"].vector))
    assert m.identity_by_name("Joe Biden").faces == 2  # the others are untouched


def test_naming_and_merging(known, faces):
    m, src = known
    (stranger,) = [p for p in m.persons() if p.name is None]
    with pytest.raises(ValueError, match="already identity"):
        m.name_identity(stranger.id, "barack OBAMA")
    m.name_identity(stranger.id, "Kit Harington")
    assert m.identity_by_name("kit harington").id == stranger.id
    other = m.new_identity()
    m.add_appearance(other, "face", faces["kit_harington_2"].vector, quality=0.6)
    assert m.merge_identities(stranger.id, other) == 1
    assert m.person(other) is None and m.person(stranger.id).faces == 2
    with pytest.raises(ValueError):
        m.merge_identities(stranger.id, stranger.id)
    with pytest.raises(ValueError, match="no identity"):
        m.name_identity(9999, "Nobody")


def test_rebuild_merges_what_the_online_tier_split_but_never_two_named_people(tmp_path,
                                                                               faces):
    m = Memory(tmp_path / "m.db")
    src = add_source(m, "v.mp4", kind="video", t_start=36000.0, duration=300.0)
    add_clips(m, 3, source=src)
    split = []
    for clip, name in ((1, "kit_harington_1"), (2, "kit_harington_2"), (3, "rose_leslie_1")):
        ident = m.new_identity()
        m.add_appearance(ident, "face", faces[name].vector, quality=0.8, source_id=src,
                         clip_id=clip, t=1.0)
        split.append(ident)
    a, b = m.new_identity("Obama A"), m.new_identity("Obama B")  # the user's two names
    m.add_appearance(a, "face", faces["obama_1"].vector, quality=0.9, enrolled=True)
    m.add_appearance(b, "face", faces["obama_2"].vector, quality=0.9, enrolled=True)
    report = rebuild_people(m, T)
    kit = m.person(split[0]) or m.person(split[1])
    assert kit.faces == 2 and kit.clips == 2 and report.moved == 1
    assert set(report.removed) & set(split[:2]) and m.person(split[2]).faces == 1
    assert m.person(a).faces == 1 and m.person(b).faces == 1  # named: never merged
    assert rebuild_people(m, T).moved == 0  # a second pass finds nothing to change
    m.close()


def test_enrolling_claims_the_unnamed_identity_already_seen(tmp_path, faces):
    m = Memory(tmp_path / "m.db")
    src = add_source(m, "v.mp4", kind="video", t_start=36000.0, duration=300.0)
    add_clips(m, 1, source=src)
    seen_before = m.new_identity()
    m.add_appearance(seen_before, "face", faces["rose_leslie_1"].vector, quality=0.8,
                     source_id=src, clip_id=1, t=3.0)
    report, crops = enrol(m, "Rose Leslie", [sample(faces, "rose_leslie_2")], T)
    assert report.created and report.claimed == [seen_before] and len(crops) == 1
    rose = m.identity_by_name("rose leslie")
    assert (rose.faces, rose.clips, rose.enrolled) == (2, 1, 1)
    m.close()


def test_a_face_and_a_voice_that_keep_meeting_become_one_person_and_a_name_is_suggested(
        tmp_path, faces, hub):
    """Kit's face and one reader's voice meet in clips 1–3 (his voice while his face is on
    screen); a second voice (the wearer's, say) is heard in those and in clip 4 beside Rose:
    only Kit's face and his voice join. Lucia's face and a third voice share clips 5–7 but
    never meet (the voice speaks 20 s after her face left the screen): not joined, though
    clip by clip they co-occur as often. "Kit" is said in three clips where his face is
    alone on screen: suggested, not applied."""
    from models.voices import load_audio_file

    librispeech = shared(SHARED / "voices" / "librispeech")
    voice = {s: hub.voices.embed_utterance(load_audio_file(next((librispeech / s).glob(
        "*-0000.flac")))) for s in ("1688", "2609", "3005")}
    m = Memory(tmp_path / "m.db")
    src = add_source(m, "v.mp4", kind="video", t_start=36000.0, duration=240.0)
    add_clips(m, ["Hello Kit, good to see you.", "I walk with Kit to the car.",
                  "Thanks Kit, see you tomorrow.", "Rose waves from the door.",
                  "A woman at the counter.", "The counter again.", "Back at the counter."],
              source=src)
    kit, rose, his, mine, lucia, later = (m.new_identity() for _ in range(6))
    for clip in (1, 2, 3, 4):
        face = (kit, "kit_harington_1") if clip < 4 else (rose, "rose_leslie_1")
        m.add_appearance(face[0], "face", faces[face[1]].vector, quality=0.9, source_id=src,
                         clip_id=clip, t=30.0 * clip, t_end=30.0 * clip + 12)
        m.add_appearance(mine, "voice", voice["2609"], quality=1.0, source_id=src,
                         clip_id=clip, t=30.0 * clip + 5, t_end=30.0 * clip + 7, text="so")
        if clip < 4:
            m.add_appearance(his, "voice", voice["1688"], quality=1.0, source_id=src,
                             clip_id=clip, t=30.0 * clip + 9, t_end=30.0 * clip + 14,
                             text="hello")
    for clip in (5, 6, 7):
        m.add_appearance(lucia, "face", faces["alex_lacamoire_1"].vector, quality=0.9,
                         source_id=src, clip_id=clip, t=30.0 * clip, t_end=30.0 * clip + 4)
        m.add_appearance(later, "voice", voice["3005"], quality=1.0, source_id=src,
                         clip_id=clip, t=30.0 * clip + 24, t_end=30.0 * clip + 28, text="next")
    report = rebuild_people(m, T)
    assert report.joined == [(kit, his)] and m.person(his) is None
    joined = m.person(kit)
    assert (joined.faces, joined.voices, joined.clips) == (3, 3, 3)
    assert (joined.name, joined.suggested_name, joined.suggested_clips) == (None, "Kit", 3)
    assert m.person(mine).voices == 4 and m.person(rose).suggested_name is None
    assert (m.person(lucia).faces, m.person(later).voices) == (3, 3)  # never met: apart
    assert [a.name for a in m.speakers_of(1)] == [None, None]  # nobody named yet
    m.name_identity(kit, "Kit Harington")
    from edge.people.transcript import speaker_lines

    assert speaker_lines(m.speakers_of(1)) == [f"person {mine}: so", "Kit Harington: hello"]
    assert m.person(kit).suggested_name is None  # naming clears the suggestion
    m.close()


def test_a_segments_words_are_shared_out_over_its_turns():
    from edge.people.observe import split_words

    text = "are you coming tonight yes at six"
    assert split_words(text, (10.0, 17.0), [(10.0, 14.0), (14.0, 17.0)]) == [
        "are you coming tonight", "yes at six"]
    assert split_words(text, (10.0, 17.0), [(10.0, 17.0)]) == [text]
    assert split_words("", (0.0, 1.0), [(0.0, 0.5), (0.5, 1.0)]) == ["", ""]


def test_the_end_of_a_recording_re_clusters_its_people(tmp_path, faces, hub):
    """`edge record` matches people online, clip by clip; when the recording ends, its worker
    re-clusters them as `edge build` does: one face the online tier split into two
    identities becomes one person."""
    from types import SimpleNamespace

    from edge.record.worker import IngestWorker

    m = Memory(tmp_path / "m.db")
    src = add_source(m, "rec.mp4", kind="video", t_start=36000.0, duration=60.0)
    add_clips(m, 2, source=src)
    for clip, name in ((1, "kit_harington_1"), (2, "kit_harington_2")):
        m.add_appearance(m.new_identity(), "face", faces[name].vector, quality=0.8,
                         source_id=src, clip_id=clip, t=30.0 * clip)
    assert len(m.persons()) == 2
    IngestWorker._finalize(SimpleNamespace(builder=None), m, hub)  # no LLM tier was built
    (kit,) = m.persons()
    assert (kit.faces, kit.clips) == (2, 2)
    m.close()


def test_a_segment_is_cut_to_the_speech_it_holds():
    """Whisper's segment times can run over a pause (a 3 s sentence stored as 14.0–23.2 s
    when the next voice starts at 22.4 s): the turn splitter reads only the speech in it."""
    from models.voice_turns import spoken_parts

    regions = [(0.3, 14.6), (22.2, 31.9)]
    assert spoken_parts(14.02, 23.15, regions) == [(14.02, 14.6), (22.2, 23.15)]
    assert spoken_parts(1.0, 5.0, regions) == [(1.0, 5.0)]
    assert spoken_parts(15.0, 20.0, regions) == [(15.0, 20.0)]  # the VAD heard none: kept
    assert spoken_parts(14.0, 22.23, regions) == [(14.0, 14.6)]  # 0.03 s of speech: dropped
