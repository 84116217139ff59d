"""``edge people`` on what the user types (issue 43): enrolling refuses a photo with no usable
face or with several faces, an unreadable file and silence, with a clear line, exit code 2
and nothing stored; unknown people and taken names are refused the same way; naming,
merging, forgetting (crops deleted) and listing work through the command line; a memory
that cannot be written is listed read-only and never written. Real photos, the real face
model; no footage is ingested here (tests/test_people.py does)."""

from __future__ import annotations

import json
import wave

import numpy as np

from tests.conftest import SHARED, shared

FACES = SHARED / "faces"


def _files(tmp_path):
    """A photo of nobody (a real keyframe-sized image with no face), silence, junk."""
    import cv2

    blank = tmp_path / "wall.png"
    cv2.imwrite(str(blank), np.full((480, 640, 3), 200, np.uint8))
    silence = tmp_path / "silence.wav"
    with wave.open(str(silence), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(16000)
        f.writeframes(np.zeros(16000 * 3, "<i2").tobytes())
    junk = tmp_path / "broken.jpg"
    junk.write_bytes(b"not a jpeg at all")
    return blank, silence, junk


def test_bad_enrolments_are_refused_and_store_nothing(run, tmp_path):
    blank, silence, junk = _files(tmp_path)
    mem = tmp_path / "m.db"
    two = shared(FACES / "two_people.jpg")
    text = tmp_path / "notes.txt"  # neither a photo nor a recording
    text.write_text("Alice: met at the cafe\n")
    noise = tmp_path / "hiss.wav"  # 5 s of white noise: loud, but nobody speaks
    with wave.open(str(noise), "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(16000)
        f.writeframes((np.random.default_rng(0).normal(0, 3000, 16000 * 5)).astype("<i2")
                      .tobytes())
    cases = [((two,), "2 faces"), ((blank,), "no usable face"), ((junk,), "not a readable"),
             ((silence,), "no voice to enrol"), ((FACES / "obama_1.jpg", two), "2 faces"),
             ((tmp_path / "missing.jpg",), "no such file"),
             ((text,), "neither a photo nor a recording that can be read (Invalid data"),
             ((noise,), "no voice to enrol (0.0 s of speech found"),
             ((tmp_path,), "a folder; give the photos or recordings in it")]
    for files, said in cases:
        r = run("--memory", mem, "people", "add", "Barack Obama", *files)
        assert r.exit_code == 2, r.output
        assert said in r.output and len(r.output.strip().splitlines()) == 1, r.output
        assert "Errno" not in r.output and r.output.count(str(files[-1])) == 1, r.output
        assert not mem.exists()  # nothing stored: not even an empty memory
    r = run("--memory", mem, "people", "add", "42", shared(FACES / "obama_1.jpg"))
    assert r.exit_code == 2 and "number" in r.output
    misnamed = tmp_path / "obama photo.mp3"  # a JPEG under an audio name: read as a photo
    misnamed.write_bytes((FACES / "obama_1.jpg").read_bytes())
    r = run("--memory", mem, "people", "add", "Barack Obama", misnamed)
    assert r.exit_code == 0 and "1 face(s)" in r.output, r.output


def test_a_video_or_a_recording_of_several_voices_is_refused(run, tmp_path):
    """A video is not a voice sample (the Hamilton clip used to be enrolled as one voice),
    the three-man interview is several voices, an undecodable photo's line says so once;
    one narrator's clean recording (two turns split by a pause) still enrols."""
    mem = tmp_path / "m.db"
    junk = tmp_path / "note.jpg"
    junk.write_text("hello\n")
    cases = [(shared(FACES / "short_hamilton_clip.mp4"), "a video"),
             (shared(SHARED / "voices" / "interview_three_speakers.mp3"),
              "more than one voice"),
             (junk, "not a readable image")]
    for file, said in cases:
        r = run("--memory", mem, "people", "add", "Kit", file)
        assert r.exit_code == 2, r.output
        assert said in r.output and len(r.output.strip().splitlines()) == 1, r.output
        assert r.output.count(str(file)) == 1 and r.output.count(said) == 1, r.output
        assert not mem.exists()
    r = run("--memory", mem, "people", "add", "Narrator",
            shared(SHARED / "audio" / "narrated_speech_17s.mp3"))
    assert r.exit_code == 0 and "1 voice(s)" in r.output, r.output


def test_name_merge_forget_and_list_through_the_command_line(run, tmp_path):
    mem = tmp_path / "m.db"
    frames = tmp_path / "m.db.frames"
    r = run("--memory", mem, "people", "add", "Barack Obama", shared(FACES / "obama_1.jpg"),
            FACES / "obama_2.jpg")
    assert r.exit_code == 0 and "Enrolled new person Barack Obama (id 1): 2 face(s)" in r.output
    r = run("--memory", mem, "people", "add", "barack obama", FACES / "obama_3.jpg")
    assert r.exit_code == 0 and "Added to Barack Obama (id 1)" in r.output
    # the same photo again (and twice in one call) is skipped, not stored twice
    r = run("--memory", mem, "people", "add", "Barack Obama", FACES / "obama_3.jpg",
            FACES / "obama_3.jpg")
    assert r.exit_code == 0 and "nothing new" in r.output and "2 file(s) skipped" in r.output
    r = run("--memory", mem, "people", "add", "Biden", FACES / "biden_1.jpg")
    assert r.exit_code == 0 and "Warning" not in r.output  # another face: no warning
    # the same face under a second name: stored as asked, with a warning naming the match
    r = run("--memory", mem, "people", "add", "Joe B", FACES / "biden_2.jpg")
    assert r.exit_code == 0 and "Warning: these look like Biden (id 2)" in r.output
    assert "edge people merge 2 3" in r.output and "Barack" not in r.output
    assert run("--memory", mem, "people", "forget", "Joe B").exit_code == 0
    listed = json.loads(run("--memory", mem, "people", "--json").stdout)
    assert [(p["id"], p["name"], p["faces"], p["enrolled"], p["clips"]) for p in listed] == [
        (1, "Barack Obama", 3, 3, 0), (2, "Biden", 1, 1, 0)]
    # a part of one name shows that person; a command that changes memory never guesses
    r = run("--memory", mem, "people", "show", "obama")
    assert r.exit_code == 0 and r.output.startswith("Barack Obama (id 1)"), r.output
    r = run("--memory", mem, "people", "forget", "Obama")
    assert r.exit_code == 2 and "did you mean 'Barack Obama' (id 1)?" in r.output, r.output
    # people enrolled, no footage yet: asking says so, not that the memory is empty
    r = run("--memory", mem, "ask", "when did I last see Biden?")
    assert r.exit_code == 1 and "no footage yet, only the people you enrolled (Barack " \
        "Obama, Biden): nobody has been seen or heard" in r.output, r.output
    assert all(p["first_seen"] is None and p["thumbnail"].startswith(str(frames))
               for p in listed)
    r = run("--memory", mem, "people", "name", "2", "BARACK obama")
    assert r.exit_code == 2 and "already identity 1" in r.output
    assert run("--memory", mem, "people", "name", "2", "Joe Biden").exit_code == 0
    assert run("--memory", mem, "people", "show", "joe biden", "--json").exit_code == 0
    for bad in (("show", "Nobody"), ("merge", "1", "1"), ("merge", "1", "7"),
                ("forget", "Nobody"), ("name", "9", "X")):
        r = run("--memory", mem, "people", *bad)
        assert r.exit_code == 2, (bad, r.output)
    r = run("--memory", mem, "people", "merge", "Barack Obama", "Joe Biden")
    assert r.exit_code == 0 and "1 appearance(s) moved" in r.output
    assert "the name Joe Biden was dropped" in r.output
    shown = json.loads(run("--memory", mem, "people", "show", "1", "--json").stdout)
    crops = [frames / a["crop"] for a in shown["appearances"]]
    assert len(crops) == 4 and all(c.is_file() for c in crops)
    assert {a["source"] for a in shown["appearances"]} >= {str(FACES / "biden_1.jpg")}
    r = run("--memory", mem, "people", "forget", "barack obama")
    assert r.exit_code == 0 and "4 crop file(s)" in r.output, r.output
    assert not any(c.exists() for c in crops)
    assert json.loads(run("--memory", mem, "people", "--json").stdout) == []


def test_a_read_only_memory_is_listed_but_never_written(run, tmp_path):
    mem = tmp_path / "ro" / "m.db"
    mem.parent.mkdir()
    assert run("--memory", mem, "people", "add", "Rose Leslie",
               shared(FACES / "rose_leslie_1.jpg")).exit_code == 0
    from edge.store import Memory

    with Memory(mem) as m:
        m.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    mem.chmod(0o444)
    before = mem.read_bytes()
    try:
        r = run("--memory", mem, "people", "--json")
        assert r.exit_code == 0 and json.loads(r.stdout)[0]["name"] == "Rose Leslie"
        assert run("--memory", mem, "people", "show", "rose leslie").exit_code == 0
        r = run("--memory", mem, "people", "forget", "Rose Leslie")
        assert r.exit_code == 1 and "cannot write" in r.output
        r = run("--memory", mem, "people", "name", "1", "Rose")
        assert r.exit_code == 1
        assert mem.read_bytes() == before
    finally:
        mem.chmod(0o644)


def test_edge_build_joins_what_the_online_tier_split(run, tmp_path):
    from edge.store import Memory
    from models.faces import FaceEmbedder
    from tests.factories import add_clips, add_source

    embedder = FaceEmbedder()
    mem = tmp_path / "m.db"
    with Memory(mem) as m:
        src = add_source(m, "v.mp4", kind="video", t_start=36000.0, duration=60.0)
        add_clips(m, 2, source=src)
        for clip, photo in ((1, "kit_harington_1.jpeg"), (2, "kit_harington_2.jpeg")):
            (face,) = embedder.faces_in_file(shared(FACES / photo))
            m.add_appearance(m.new_identity(), "face", face.vector, quality=face.quality,
                             source_id=src, clip_id=clip, t=2.0)
    r = run("--memory", mem, "build", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["people"]["moved"] == 1
    (kit,) = json.loads(run("--memory", mem, "people", "--json").stdout)
    assert (kit["name"], kit["faces"], kit["clips"]) == (None, 2, 2)
