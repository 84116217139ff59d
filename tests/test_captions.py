"""A memory from the shared EgoLife caption day (no video), asked the public EgoLifeQA item."""

import json

import pytest

from edge.answer import ask
from edge.ingest.captions import CaptionFileError, ingest_caption_file, read_caption_file
from edge.ingest.memory_writer import NewSource, register_or_resume
from edge.timeline import parse_moment
from tests.conftest import EGOLIFE_DAY1, shared
from tests.factories import add_clips


def test_caption_file_is_read_onto_the_day_clock():
    recs = read_caption_file(shared(EGOLIFE_DAY1))
    assert len(recs) == 974
    assert recs[0].day == 1 and recs[0].t_start == parse_moment("DAY1 11:09:43")
    assert recs[-1].day == 2
    assert all(r.keys for r in recs)


def test_malformed_caption_file_names_the_record(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps([{"date": "DAY1", "start_time": "11000000", "end_time": "11003000",
                              "text": "ok"}, {"date": "Monday", "text": "x"}]))
    with pytest.raises(CaptionFileError, match="record 1"):
        read_caption_file(p)


@pytest.mark.slow
def test_screwdriver_question_cites_the_clip_around_1115(memory, hub):
    path = shared(EGOLIFE_DAY1)
    res = ingest_caption_file(memory, hub, path, limit=80)
    assert res.clips_added == 80
    again = ingest_caption_file(memory, hub, path, limit=80)
    assert again.status == "skipped" and memory.stats()["clips"] == 80

    at = parse_moment("DAY1 11:21")
    result = ask(memory, hub, "Who used the screwdriver first?", at=at, max_rounds=1)
    assert all(m.t_end <= at for m in result.moments)
    target = parse_moment("DAY1 11:15:24")  # the evidence (Alice screws in the first bolt)
    anchors = [m for m in result.moments if m.role == "anchor"]
    # MERIT's hit: the target lies inside an anchor's ±Δ window (Δ = 2 clips of 30 s)
    assert any(m.t_start - 60 <= target <= m.t_end + 60 for m in anchors), [
        m.when for m in anchors]


@pytest.mark.slow
def test_overlapping_caption_files_never_store_a_clip_twice(memory, hub, tmp_path):
    day1 = shared(EGOLIFE_DAY1)
    first = ingest_caption_file(memory, hub, day1, limit=10)
    assert first.clips_added == 10 and "without --limit" in first.message
    again = ingest_caption_file(memory, hub, day1, limit=12)
    assert again.status == "resumed" and again.clips_added == 2
    # another file (a "multi-day" file) that starts with the same records
    records = json.loads(day1.read_text())[:15]
    other = tmp_path / "days.json"
    other.write_text(json.dumps(records))
    res = ingest_caption_file(memory, hub, other)
    assert res.clips_added == 3 and "12 record(s) already in memory" in res.message
    assert memory.stats()["clips"] == 15


@pytest.mark.slow
def test_asking_before_the_first_clip_ends_is_a_clear_error(memory, hub):
    from edge.answer import AskError

    ingest_caption_file(memory, hub, shared(EGOLIFE_DAY1), limit=3)
    # the first clip runs 11:09:43-11:09:58: it has started but not ended at 11:09:50
    with pytest.raises(AskError, match="memory covers DAY1 11:09:43"):
        ask(memory, hub, "what happened?", at=parse_moment("DAY1 11:09:50"))


def test_an_empty_caption_list_is_an_error_and_creates_no_memory(tmp_path):
    from click.testing import CliRunner

    from edge.cli import main

    p = tmp_path / "empty.json"
    p.write_text("[]")
    with pytest.raises(CaptionFileError, match="no clip records"):
        read_caption_file(p)
    res = CliRunner().invoke(main, ["--memory", str(tmp_path / "m.db"), "ingest-captions",
                                    str(p)])
    assert res.exit_code == 1 and "no clip records" in res.output
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize("record, why", [
    ({"date": "DAY1", "start_time": "99999999", "end_time": "11003000", "text": "x"},
     "out of range"),
    ({"date": "DAY0", "start_time": "11000000", "end_time": "11003000", "text": "x"}, "n ≥ 1"),
    ({"date": "DAY1", "start_time": "11000000", "end_time": "11003000", "text": 42},
     "non-empty string"),
    ({"date": "DAY1", "start_time": "11000000"}, "missing field"),
    ({"date": "DAY1", "start_time": None, "end_time": "11003000", "text": "x"},
     "not HHMMSSFF"),
])
def test_bad_records_are_rejected_with_the_reason(tmp_path, record, why):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps([record]))
    with pytest.raises(CaptionFileError, match=why):
        read_caption_file(p)


def test_a_source_is_added_once_then_resumed_then_skipped(memory):
    """register_or_resume, the one "hash → known source → resume or add" of every ingest:
    ``describe`` runs only for new content (a start clock advances only for new files)."""
    described = []

    def describe() -> NewSource:
        described.append(1)
        return NewSource(path="day.json", kind="captions", clock="dayclock",
                         start_from="file", t_start=36000.0, duration=60.0, n_clips=2, info={})

    new = register_or_resume(memory, "sha-a", describe)
    assert (new.status, new.done, new.t_start, new.clock) == ("ingested", set(), 36000.0,
                                                               "dayclock")
    add_clips(memory, 1, source=new.source_id)  # an interrupted run stored the first clip
    again = register_or_resume(memory, "sha-a", describe)
    assert (again.status, again.source_id, again.done) == ("resumed", new.source_id, {0})
    memory.finish_source(new.source_id)
    known = register_or_resume(memory, "sha-a", describe)
    assert known.status == "skipped" and known.known_as == "day.json"
    assert known.skipped_message == "already in memory: same content as day.json"
    assert described == [1] and memory.stats()["sources"] == 1
