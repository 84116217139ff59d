"""Question sets of other benchmarks for ``edge bench videos`` (edge.bench.loaders, .merit,
.videos): each format on a small sample written from its public description, the format told
from the content, clear errors, time spans, a MERIT caption/key file as a memory, and a run
over one memory per video that skips a video without one and goes on. Fast: the real
embedder on 10 clips; the answer loop is a keyword reader over ask's real round 1 (the tiny
profile's solver answers in the slow test)."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from click.testing import CliRunner

from edge.answer.options import AskOptions
from edge.answer.records import Answer, Round
from edge.answer.search import first_round
from edge.bench.items import parse_clock, parse_span, span_clips
from edge.bench.loaders import BenchItem, detect_format, load_items, select_items
from edge.bench.merit import ingest_merit_file, read_merit_file
from edge.bench.videos import run_videos
from edge.cli import main
from edge.errors import BenchError, CaptionFileError
from edge.store import Memory
from edge.store.embedding import memory_embedder

SCENES = [  # clip i covers seconds 30i..30i+30 of video "vidA"
    "I water the orange cactus on the balcony", "Lucia folds paper cranes at the desk",
    "Alice tunes the red guitar in the living room", "Shure fries dumplings in the kitchen",
    "Tasha assembles a wooden bookshelf with a screwdriver",
    "I charge the power bank by the window", "Katrina paints a blue flower on a canvas",
    "Jake counts the plastic cups on the table", "Lucia reads a map of the subway",
    "Katrina bakes chocolate cookies in the oven"]

VIDEO_MME = [{
    "video_id": "001", "videoID": "vidA", "duration": "long", "domain": "Life Record",
    "sub_category": "Daily Life", "url": "https://www.youtube.com/watch?v=vidA",
    "questions": [
        {"question_id": "001-1", "task_type": "Object Recognition",
         "question": "Who tuned the red guitar?",
         "options": ["A. Alice.", "B. Lucia.", "C. Shure.", "D. Tasha."], "answer": "A"},
        {"question_id": "001-2", "task_type": "Action Recognition",
         "question": "What did Shure fry in the kitchen?",
         "options": ["A. Eggs.", "B. Dumplings.", "C. Fish.", "D. Rice."], "answer": "B"}]},
    {"video_id": "002", "videoID": "vidB", "duration": "short", "domain": "Sports",
     "sub_category": "Football", "questions": [
         {"question_id": "002-1", "task_type": "Counting Problem",
          "question": "How many goals were scored?",
          "options": ["A. 1.", "B. 2.", "C. 3.", "D. 4."], "answer": "C"}]}]

VIDEO_MME_FLAT = [  # the Hugging Face parquet's rows, as JSON
    {"video_id": "001", "duration": "medium", "domain": "Knowledge", "sub_category": "Law",
     "url": "u", "videoID": "vidC", "question_id": "001-1", "task_type": "Temporal Reasoning",
     "question": "What comes first?", "options": ["A. a", "B. b", "C. c", "D. d"],
     "answer": "D"}]

LVBENCH = [  # video_info.meta.jsonl: one video a line
    {"key": "vidA", "type": "documentary", "qa": [
        {"uid": 11, "question": "Who tunes an instrument?\n(A) Shure\n(B) Alice\n(C) Jake\n"
                                "(D) Tasha", "answer": "B",
         "question_type": ["entity recognition"], "time_reference": "01:05-01:20"},
        {"uid": 12, "question": "What does Katrina paint?\n(A) a blue flower\n(B) a cat\n"
                                "(C) a house\n(D) a boat", "answer": "A",
         "question_type": ["key information retrieval", "entity recognition"],
         "time_reference": "00:03:02-00:03:25"}]},
    {"key": "vidB", "type": "sport", "qa": [
        {"uid": 21, "question": "Who won?\n(A) red\n(B) blue\n(C) green\n(D) none",
         "answer": "A", "question_type": ["reasoning"], "time_reference": "10:00-10:30"}]}]

M3BENCH = {  # data/annotations/robot.json: videos keyed by id
    "vidA": {"video_path": "data/videos/robot/vidA.mp4", "qa_list": [
        {"question_id": "vidA_Q01", "question": "What did I water on the balcony?",
         "answer": "The orange cactus.", "type": ["Multi-Detail Reasoning"],
         "timestamp": "00:45"},
        {"question_id": "vidA_Q02", "question": "What is Lucia folding?",
         "answer": "Paper cranes.", "type": ["Person Understanding"], "timestamp": "00:10"}]}}


def _merit(scenes: list[str]) -> dict:
    """A MERIT caption/key file keyed by clip index, every key derived from the scene."""
    return {str(i): {"caption": s + ".", "event_key": s, "dialogue_key": f"talk while {s}",
                     "object_key": s.split(" ", 2)[-1], "sum_key": s.lower()}
            for i, s in enumerate(scenes)}


def _write(path, data, jsonl: bool = False):
    path.write_text("\n".join(json.dumps(r) for r in data) if jsonl else json.dumps(data))
    return path


@pytest.fixture(scope="module")
def memories(tmp_path_factory, hub):
    """A folder with the memory of vidA (built from its MERIT file) and none for vidB."""
    d = tmp_path_factory.mktemp("memories")
    src = _write(d / "vidA.json", _merit(SCENES))
    with Memory(d / "vidA.db") as m:
        assert ingest_merit_file(m, hub, src).clips_added == len(SCENES)
    return d


def keyword_asker(memory, hub, question, options):
    """An answer loop without a solver: ask's real round 1 (one anchor), the option whose
    words the anchor's caption holds (else the first letter, or the caption itself when
    open-ended) — deterministic, so scoring is checked exactly."""
    r = first_round(memory, memory_embedder(memory, hub), question, options, top_n=1)
    caption = memory.clips([r.anchors[0].clip_id])[r.anchors[0].clip_id].caption.lower()
    if options.choices:
        text = next((letter for letter, c in zip(options.letters, options.choices)
                     if c.lower().rstrip(".") in caption), "A")
    else:
        text = caption
    anchors = [{"clip_id": a.clip_id, "score": a.score, "key": a.key_type} for a in r.anchors]
    return Answer(question, "now", text, True, [], [Round(1, question, anchors, [], None)],
                  {"llm": {"calls": 0, "tokens_in": 0, "tokens_out": 0}}, 0.01)


ONE_ANCHOR = replace(AskOptions(), top_n=1, auto_window=False)


# ---- loaders ----------------------------------------------------------------------------

def test_video_mme_records_load_with_their_duration_split(tmp_path):
    items = load_items(_write(tmp_path / "vmme.json", VIDEO_MME))
    assert [(i.video, i.id, i.duration) for i in items] == [
        ("vidA", "001-1", "long"), ("vidA", "001-2", "long"), ("vidB", "002-1", "short")]
    first = items[0]
    assert first.choices == ("Alice.", "Lucia.", "Shure.", "Tasha.") and first.answer == "A"
    assert first.types == ("Object Recognition",) and first.benchmark == "videomme"
    assert not first.open_ended and first.span is None and first.at is None
    (flat,) = load_items(_write(tmp_path / "flat.json", VIDEO_MME_FLAT))
    assert (flat.video, flat.id, flat.duration, flat.answer) == ("vidC", "001-1", "medium", "D")
    assert flat.choices == ("a", "b", "c", "d") and flat.types == ("Temporal Reasoning",)


def test_lvbench_lines_split_their_options_and_time_references(tmp_path):
    items = load_items(_write(tmp_path / "video_info.meta.jsonl", LVBENCH, jsonl=True))
    a, b, c = items
    assert (a.video, a.id, a.question) == ("vidA", "11", "Who tunes an instrument?")
    assert a.choices == ("Shure", "Alice", "Jake", "Tasha") and a.answer == "B"
    assert a.span == (65.0, 80.0) and a.target_clips == (2,)
    assert b.span == (182.0, 205.0) and b.target_clips == (6,)  # HH:MM:SS
    assert b.types == ("key information retrieval", "entity recognition")
    assert (c.video, c.span, c.target_clips) == ("vidB", (600.0, 630.0), (20,))


def test_m3bench_questions_are_open_ended_and_asked_at_their_timestamp(tmp_path):
    items = load_items(_write(tmp_path / "robot.json", M3BENCH))
    assert [(i.video, i.id, i.at) for i in items] == [("vidA", "vidA_Q01", 45.0),
                                                    ("vidA", "vidA_Q02", 10.0)]
    assert all(i.open_ended and i.choices == () for i in items)
    assert items[0].answer == "The orange cactus." and items[0].types == ("Multi-Detail Reasoning",)
    listed = [{"video_path": "videos/web/clip9.mp4", "qa_list": [
        {"question": "Why?", "answer": "Because.", "question_type": "General Knowledge"}]}]
    (q,) = load_items(_write(tmp_path / "web.json", listed), "m3bench")
    assert (q.video, q.id, q.types, q.at) == ("clip9", "clip9-1", ("General Knowledge",), None)


def test_egolife_records_load_on_the_day_clock(tmp_path):
    rec = {"ID": "E1", "query_time": {"date": "DAY2", "time": "11000000"}, "type": "EventRecall",
           "question": "Who tuned the guitar?", "choice_a": "Alice", "choice_b": "Lucia",
           "choice_c": "Shure", "choice_d": "Tasha", "answer": "A",
           "target_time": {"date": "DAY1", "time": "10010000"}, "keywords": "guitar"}
    (item,) = load_items(_write(tmp_path / "A1_JAKE.json", [rec]))
    assert (item.benchmark, item.video, item.clock) == ("egolife", "A1_JAKE", "dayclock")
    assert item.at == 86400 + 11 * 3600 and item.span == (36060.0, 36060.0)
    assert item.target_clips == (36060 // 30,)


@pytest.mark.parametrize("record, fmt", [
    (VIDEO_MME[0], "videomme"), (VIDEO_MME_FLAT[0], "videomme"), (LVBENCH[0], "lvbench"),
    (M3BENCH["vidA"], "m3bench"), ({"ID": 1, "query_time": {}, "choice_a": "x"}, "egolife")])
def test_the_format_is_told_from_the_first_record(tmp_path, record, fmt):
    assert detect_format(record, tmp_path / "q.json") == fmt


def test_one_video_alone_as_a_json_object_loads(tmp_path):
    items = load_items(_write(tmp_path / "one.json", LVBENCH[0]))
    assert [i.id for i in items] == ["11", "12"] and items[0].benchmark == "lvbench"


def test_an_unknown_layout_a_caption_file_and_a_wrong_format_are_refused(tmp_path):
    with pytest.raises(BenchError, match=r"cannot tell the question format from record 0 "
                                         r"\(fields: a, b\); give --format videomme\|"):
        load_items(_write(tmp_path / "x.json", [{"a": 1, "b": 2}]))
    with pytest.raises(BenchError, match="looks like a caption file"):
        load_items(_write(tmp_path / "c.json", [{"date": "DAY1", "text": "I walk"}]))
    with pytest.raises(BenchError, match=r"record 0 \(vidA\): id, video_id or video_path: "):
        load_items(_write(tmp_path / "l.jsonl", LVBENCH, jsonl=True), "m3bench")
    with pytest.raises(BenchError, match="unknown question format 'mvbench'"):
        load_items(tmp_path / "l.jsonl", "mvbench")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": 1}\n{oops\n')
    with pytest.raises(BenchError, match="line 2 is not JSON"):
        load_items(bad)


def _broken(data, path_in, value):
    """A deep copy of ``data`` with ``value`` set (or removed, ``None``) at ``path_in``."""
    data = json.loads(json.dumps(data))
    *parents, last = path_in
    node = data
    for p in parents:
        node = node[p]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return data


@pytest.mark.parametrize("fmt, data, where, value, message", [
    ("videomme", VIDEO_MME, (1, "questions", 0, "answer"), None,
     r"record 1 \(vidB\): question 0 \(002-1\): answer: missing"),
    ("videomme", VIDEO_MME, (0, "questions", 1, "answer"), "E",
     r"record 0 \(vidA\): question 1 \(001-2\): answer: 'E' is not one of A, B, C, D"),
    ("videomme", VIDEO_MME, (0, "questions", 0, "options", 1), "C. Lucia.",
     "options: option 2 is lettered C, expected B"),
    ("videomme", VIDEO_MME, (0, "duration"), "huge", "duration: 'huge' is not one of short"),
    ("videomme", VIDEO_MME, (1, "videoID"), None, None),  # video_id stands in
    ("videomme", VIDEO_MME_FLAT, (0, "question_id"), None, "question_id: missing"),
    ("lvbench", LVBENCH, (0, "qa", 1, "time_reference"), "3:02 to 3:25",
     r"record 0 \(vidA\): question 1 \(12\): time_reference: '3:02 to 3:25' is not MM:SS"),
    ("lvbench", LVBENCH, (1, "qa", 0, "question"), "Who won? red or blue",
     "question 0 (21): question: expected options on lines of their own"),
    ("lvbench", LVBENCH, (1, "key"), None, "record 1: key or video_id: missing"),
    ("lvbench", LVBENCH, (0, "qa"), [], "qa: must be a non-empty list"),
    ("m3bench", M3BENCH, ("vidA", "qa_list", 1, "question"), None,
     r"record 0 \(vidA\): question 1 \(vidA_Q02\): question: missing"),
    ("m3bench", M3BENCH, ("vidA", "qa_list", 0, "timestamp"), "7 min",
     "timestamp: '7 min' is not MM:SS or HH:MM:SS"),
])
def test_a_broken_record_names_the_file_record_question_and_field(tmp_path, fmt, data, where,
                                                                    value, message):
    path = _write(tmp_path / "q.jsonl", _broken(data, where, value), jsonl=fmt == "lvbench")
    if message is None:
        assert load_items(path, fmt)[2].video == "002"
        return
    with pytest.raises(BenchError) as e:
        load_items(path, fmt)
    assert str(e.value).startswith(f"{path}: record ")
    assert message in str(e.value) or re.search(message, str(e.value)), e.value


def test_a_question_id_used_twice_in_one_video_is_refused(tmp_path):
    data = _broken(VIDEO_MME, (0, "questions", 1, "question_id"), "001-1")
    with pytest.raises(BenchError, match="question id '001-1' of video 'vidA' is used twice"):
        load_items(_write(tmp_path / "q.json", data))


@pytest.mark.parametrize("text, span", [
    ("03:34-03:41", (214.0, 221.0)), ("00:15:52-00:16:06", (952.0, 966.0)),
    ("1:02:03-1:02:33", (3723.0, 3753.0)), (" 12:00 - 12:30 ", (720.0, 750.0)),
    ("75:10-75:40", (4510.0, 4540.0)),  # minutes past the hour without hours
    ("02:05.5–02:07", (125.5, 127.0)), ("00:42", (42.0, 42.0))])
def test_time_references_become_seconds(text, span):
    assert parse_span(text) == span


@pytest.mark.parametrize("text", ["12:61-13:00", "3:00-2:00", "abc", "1:60:00-2:00:00",
                                  "01:00-02:00-03:00"])
def test_a_bad_time_reference_is_an_error(text):
    with pytest.raises(ValueError):
        parse_span(text)


def test_clock_readings_and_the_clips_a_span_covers():
    assert parse_clock(90) == 90.0 and parse_clock("1:30") == 90.0
    assert parse_clock("01:00:00") == 3600.0
    assert span_clips((214, 221)) == (7,) and span_clips((30, 60)) == (1,)
    assert span_clips((29, 61)) == (0, 1, 2) and span_clips((0, 0)) == (0,)
    assert span_clips((4552, 4566)) == (151, 152)


def test_select_items_by_duration_split_and_sample(tmp_path):
    items = load_items(_write(tmp_path / "vmme.json", VIDEO_MME))
    assert [i.id for i in select_items(items, "long")] == ["001-1", "001-2"]
    assert [i.id for i in select_items(items, sample=2)] == ["001-1", "001-2"]
    assert select_items(items, "medium") == []


# ---- MERIT caption/key files ------------------------------------------------------------

def test_a_merit_file_becomes_a_memory_with_its_keys(memories):
    records = read_merit_file(memories / "vidA.json")
    assert [(r.t_start, r.t_end) for r in records[:3]] == [(0, 30), (30, 60), (60, 90)]
    assert records[2].keys == {"event": SCENES[2], "dialogue": f"talk while {SCENES[2]}",
                               "object": "the red guitar in the living room",
                               "summary": SCENES[2].lower()}
    with Memory(memories / "vidA.db", create=False, readonly=True) as m:
        clips = m.all_clips()
        assert [c.caption for c in clips] == [s + "." for s in SCENES]
        stored = m.clips([clips[2].id], with_keys=True)[clips[2].id].keys
        assert stored["event"] == SCENES[2] and stored["summary"] == SCENES[2].lower()


def test_merit_layouts_a_list_with_indices_nested_keys_and_bare_captions(tmp_path):
    rows = [{"clip_idx": 1, "dense_caption": "B walks.", "keys": {
        "event": "B walks", "dialogue": "none", "object": "shoes", "summary": "walking"}},
            {"clip_idx": 0, "text": "A sits."}]
    a, b = read_merit_file(_write(tmp_path / "m.json", rows))
    assert (a.text, a.t_start, a.keys) == ("A sits.", 0.0, None)  # keys extracted at ingest
    assert (b.t_start, b.keys["object"]) == (30.0, "shoes")
    (c,) = read_merit_file(_write(tmp_path / "s.json", {"4": "Someone waves."}), start=100.0)
    assert (c.text, c.t_start, c.t_end) == ("Someone waves.", 220.0, 250.0)


@pytest.mark.parametrize("data, message", [
    ({"0": {"event_key": "x"}}, r"record 0 \(clip 0\) is malformed: caption or dense_caption"),
    ([{"caption": "a", "idx": 0}, {"caption": "b", "idx": 0}], "clip index 0 is used twice"),
    ({"first": {"caption": "a"}}, "clip index 'first' is not a whole number"),
    ([{"caption": "a", "start": "00:40", "end": "00:20"}], "end '00:20' is not after start"),
    ([], "holds no clip records"),
])
def test_a_broken_merit_record_is_named(tmp_path, data, message):
    with pytest.raises(CaptionFileError, match=message):
        read_merit_file(_write(tmp_path / "m.json", data))


# ---- the run over one memory per video --------------------------------------------------

def test_a_video_without_memory_is_skipped_and_the_run_goes_on(memories, hub, tmp_path):
    items = load_items(_write(tmp_path / "lv.jsonl", LVBENCH, jsonl=True))
    said: list[str] = []
    out = tmp_path / "r.json"
    res = run_videos(items, memories, hub, ONE_ANCHOR, out, answer=True,
                     asker=keyword_asker, say=said.append)
    db = memories / "vidB.db"
    assert res["skipped"] == [{"video": "vidB", "items": 1, "reason": (
        f"no memory at {db} — ingest it with `edge ingest VIDEO --memory {db}`")}]
    assert f"skipped 1 items of video vidB: no memory at {db}" in said[-1]
    assert res["videos"] == 1 and res["skipped_items"] == 1 and res["items"] == 3
    rows = {r["id"]: r for r in res["per_item"]}
    assert set(rows) == {"11", "12"}
    assert rows["11"]["round1"]["anchors"] == [2] and rows["11"]["round1"]["hit@Δ0"]
    assert rows["12"]["round1"]["anchors"] == [6] and rows["12"]["target_clips"] == [6]
    assert rows["11"]["answering"]["answer"] == "B" and rows["11"]["answering"]["correct"]
    assert rows["12"]["answering"]["correct"] and rows["12"]["answering"]["hit@Δ2"]
    total = res["summary"]["total"]
    assert (total["n"], total["scored"], total["hit@Δ0"], total["accuracy"]) == (2, 2, 1.0, 1.0)
    assert res["summary"]["by_type"]["entity recognition"]["n"] == 2
    assert res["summary"]["by_type"]["key information retrieval"]["n"] == 1
    assert json.loads(out.read_text()) == json.loads(json.dumps(res, ensure_ascii=False))


def test_multiple_choice_is_scored_by_letter_per_duration_split(memories, hub, tmp_path):
    wrong = _broken(VIDEO_MME, (0, "questions", 1, "answer"), "C")  # truth C, reads B
    items = load_items(_write(tmp_path / "w.json", wrong))
    res = run_videos(items, memories, hub, ONE_ANCHOR, tmp_path / "r.json", answer=True,
                     asker=keyword_asker)
    rows = {r["id"]: r["answering"] for r in res["per_item"]}
    assert rows["001-1"]["correct"] and rows["001-2"]["answer"] == "B"
    assert not rows["001-2"]["correct"]
    by = res["summary"]["by_duration"]
    assert by["long"]["accuracy"] == 0.5 and "short" not in by  # vidB skipped
    assert res["summary"]["total"]["scored"] == 0  # Video-MME gives no spans


def test_open_ended_answers_wait_for_a_judge_and_a_refused_question_is_kept(memories, hub,
                                                                             tmp_path):
    items = load_items(_write(tmp_path / "m3.json", M3BENCH))
    res = run_videos(items, memories, hub, ONE_ANCHOR, tmp_path / "a.json", answer=True,
                     asker=keyword_asker)
    q1, q2 = res["per_item"]
    assert q1["answering"]["answer"] == SCENES[0].lower() + "."  # only clip 0 ends by 0:45
    assert q1["answering"]["correct"] is None and q1["truth"] == "The orange cactus."
    assert "nothing in memory ends before the question time" in q2["error"]
    assert res["summary"]["total"]["to_judge"] == 2 and res["summary"]["total"]["accuracy"] is None
    judged = run_videos(items, memories, hub, ONE_ANCHOR, tmp_path / "b.json", answer=True,
                        asker=keyword_asker,
                        judge=lambda item, text: "cactus" in text and "cactus" in item.answer)
    assert judged["per_item"][0]["answering"]["correct"] is True
    assert judged["summary"]["total"]["accuracy"] == 1.0
    assert judged["summary"]["total"]["to_judge"] == 1  # the refused one has no verdict


def test_egolife_items_are_scored_on_the_day_clock(hub, tmp_path):
    """A memory from DAY1 10:00 (a MERIT file placed there): EgoLife's times are the
    memory's own timeline, not seconds from its first clip."""
    with Memory(tmp_path / "A1_JAKE.db") as m:
        ingest_merit_file(m, hub, _write(tmp_path / "caps.json", _merit(SCENES)), start=36000)
    rec = {"ID": "E1", "query_time": {"date": "DAY1", "time": "12000000"}, "type": "EventRecall",
           "question": "Who tuned the red guitar?", "choice_a": "Lucia", "choice_b": "Alice",
           "choice_c": "Shure", "choice_d": "Tasha", "answer": "B",
           "target_time": {"date": "DAY1", "time": "10010500"}, "keywords": "guitar"}
    items = load_items(_write(tmp_path / "A1_JAKE_q.json", [{**rec, "identity": "A1_JAKE"}]))
    res = run_videos(items, tmp_path, hub, ONE_ANCHOR, tmp_path / "r.json", answer=True,
                     asker=keyword_asker)
    (row,) = res["per_item"]
    assert row["target_clips"] == [36065 // 30] == row["round1"]["anchors"]
    assert row["round1"]["hit@Δ0"] and row["answering"]["answer"] == "B"


def test_an_interrupted_run_keeps_the_items_it_did(memories, hub, tmp_path):
    items = load_items(_write(tmp_path / "lv.jsonl", LVBENCH, jsonl=True))
    calls = []

    def stop_on_second(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return keyword_asker(*args)

    out = tmp_path / "r.json"
    with pytest.raises(KeyboardInterrupt):
        run_videos(items, memories, hub, ONE_ANCHOR, out, answer=True, asker=stop_on_second)
    kept = json.loads(out.read_text())
    assert [r["id"] for r in kept["per_item"]] == ["11"] and kept["summary"]["total"]["n"] == 1


def test_the_videos_command_builds_from_merit_files_and_skips_the_rest(tmp_path, cli_home):
    caps = tmp_path / "caps"
    caps.mkdir()
    _write(caps / "vidA.json", _merit(SCENES))
    _write(caps / "vidC.json", _merit(SCENES[:4]))
    flat = _broken(VIDEO_MME_FLAT, (0, "question"), "Who tuned the red guitar?")
    q = _write(tmp_path / "vmme.json", VIDEO_MME + flat)
    mems = tmp_path / "mems"
    out = tmp_path / "out.json"
    r = CliRunner().invoke(main, [
        "bench", "videos", "--questions", str(q), "--memories", str(mems), "--merit-captions",
        str(caps), "--set", "top_n=1", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res == json.loads(out.read_text()) and res["format"] == "videomme"
    assert (mems / "vidC.db").is_file() and f"built {mems / 'vidC.db'}" in r.stderr
    assert "skipped 1 items of video vidB: no memory at" in r.stderr
    assert [x["id"] for x in res["per_item"]] == ["001-1", "001-2", "001-1"]
    assert res["options"]["auto_window"] is False and res["options"]["top_n"] == 1
    assert set(res["summary"]["by_duration"]) == {"long", "medium"}
    table = CliRunner().invoke(main, [
        "bench", "videos", "--questions", str(q), "--memories", str(mems), "--duration",
        "medium", "--out", str(tmp_path / "t.json")])
    assert table.exit_code == 0, table.output
    assert "| **all** | 1 | 0 |" in table.stdout and "| duration: medium | 1 |" in table.stdout


def test_the_videos_command_refuses_a_broken_file_in_one_line(tmp_path, cli_home):
    q = _write(tmp_path / "q.json", _broken(VIDEO_MME, (0, "questions", 0, "options"), "x"))
    r = CliRunner().invoke(main, ["bench", "videos", "--questions", str(q), "--memories",
                                  str(tmp_path)])
    assert r.exit_code == 1 and "record 0 (vidA): question 0 (001-1): options:" in r.output


@pytest.mark.slow
def test_videos_answered_by_the_tiny_profile(memories, hub, tmp_path):
    """The real answer loop (the tiny profile's solver) on one LVBench question: a letter
    among the options comes back, is scored against the truth, with its cost."""
    items = load_items(_write(tmp_path / "lv.jsonl", LVBENCH[:1], jsonl=True))[:1]
    res = run_videos(items, memories, hub, replace(AskOptions(), auto_window=False,
                                                   max_rounds=1), tmp_path / "r.json",
                     answer=True)
    a = res["per_item"][0]["answering"]
    assert a["answer"] in "ABCD" and a["correct"] == (a["answer"] == "B")
    assert a["calls"] >= 1 and a["rounds"] == 1 and "hit@Δ2" in a
    assert res["summary"]["total"]["answered"] == 1


def test_bench_item_is_frozen():
    item = BenchItem("lvbench", "1", "v", "q?", ("a", "b"), "A")
    with pytest.raises(AttributeError):
        item.answer = "B"  # type: ignore[misc]


@pytest.mark.slow
def test_open_ended_answers_are_judged_by_the_solver(memories, cli_home, tmp_path):
    """`edge bench videos --answer` on M3-Bench's open-ended question: the tiny profile's
    solver answers it freely and then judges that answer against the reference (a verdict,
    not left waiting); `--no-judge` leaves it to judge."""
    q = _write(tmp_path / "m3.json", {"vidA": {**M3BENCH["vidA"],
                                               "qa_list": M3BENCH["vidA"]["qa_list"][:1]}})
    runs = {}
    for flag in ([], ["--no-judge"]):
        out = tmp_path / f"o{len(flag)}.json"
        r = CliRunner().invoke(main, [
            "--profile", "tiny", "bench", "videos", "--questions", str(q), "--memories",
            str(memories), "--answer", "--set", "max_rounds=1", *flag, "--out", str(out)])
        assert r.exit_code == 0, r.output
        runs[len(flag)] = json.loads(out.read_text())
    judged, waiting = runs[0]["summary"]["total"], runs[1]["summary"]["total"]
    assert judged["answered"] == 1 and judged["to_judge"] == 0
    assert runs[0]["per_item"][0]["answering"]["correct"] in (True, False)
    assert waiting["to_judge"] == 1 and runs[1]["per_item"][0]["answering"]["correct"] is None
