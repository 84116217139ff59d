"""Ingest → ask on real footage, re-ingest idempotence, bad files inside a folder."""

import os
import shutil

import numpy as np
import pytest

from edge.answer import ask
from edge.config import frames_dir
from edge.ingest.run import IngestOptions, ingest_paths
from edge.store import INDEX_TYPES
from edge.timeline import parse_moment
from tests.conftest import FOOTAGE, shared
from tests.test_pyramid import json_calls

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def small_folder(tmp_path_factory):
    """A folder with a real video, a speech-only mp3, a zero-byte and a truncated file."""
    d = tmp_path_factory.mktemp("footage with spaces é")
    # a file name that is not UTF-8 (as copied from another system) must not crash anything
    shutil.copy(shared(FOOTAGE / "everyday_cooking.avi"), d / os.fsdecode(b"cooking \xff.avi"))
    shutil.copy(shared(FOOTAGE / "tiny_drawing_speech.mp3"), d / "drawing speech.mp3")
    (d / "empty.mp4").write_bytes(b"")
    src = (FOOTAGE / "everyday_reading.mp4").read_bytes()
    (d / "truncated.mp4").write_bytes(src[:4000])
    (d / "README.txt").write_text("not media, not picked up from a folder")
    return d


@pytest.fixture(scope="module")
def ingested(small_folder, hub, tmp_path_factory):
    from edge.store import Memory

    path = tmp_path_factory.mktemp("mem") / "memory.db"
    memory = Memory(path)
    with json_calls(hub.llm("memory_llm")) as made:
        report = ingest_paths(memory, hub, [small_folder],
                              IngestOptions(start=parse_moment("2025-03-01 09:00")))
    yield memory, report, made
    memory.close()


def test_folder_ingest_stores_real_clips_and_skips_bad_files(ingested):
    memory, report, made = ingested
    by_name = {r.path.rsplit("/", 1)[-1]: r for r in report.results}
    cooking = "cooking \\xff.avi"
    assert set(by_name) == {cooking, "drawing speech.mp3", "empty.mp4", "truncated.mp4"}
    assert by_name[cooking].status == "ingested"
    assert by_name["drawing speech.mp3"].status == "ingested"
    assert by_name["empty.mp4"].status == "failed" and "empty" in by_name["empty.mp4"].message
    assert by_name["truncated.mp4"].status == "failed"
    clips = memory.all_clips()
    assert len(clips) == 2
    speech = [c for c in clips if "drawing" in c.transcript.lower()]
    assert speech and speech[0].caption.startswith("Audio only")
    video = [c for c in clips if c.keyframes][0]
    for rel in video.keyframes:
        assert (frames_dir(memory.path) / rel).stat().st_size > 1000
    # --start applies to files without metadata, chained in order
    assert min(c.t_start for c in clips) == parse_moment("2025-03-01 09:00")
    # every clip has the four keys + caption, each with a 384-d vector
    n_keys = memory.db.execute("SELECT count(*) FROM keys").fetchone()[0]
    n_vecs = memory.db.execute("SELECT count(*) FROM key_vec").fetchone()[0]
    assert n_keys == n_vecs == 2 * len(INDEX_TYPES)
    # per clip: one caption, one MERIT key call (a repair is a second metered call), one
    # embedder call for its four keys + caption; one transcription for the file with sound
    by_role = report.usage["by_role"]
    assert [role for role, _ in made] == ["memory_llm", "memory_llm"]
    assert 2 <= by_role["memory_llm"]["calls"] <= 4
    assert by_role["embedder"]["calls"] == 2 and by_role["transcriber"]["calls"] == 1


def test_reingest_adds_nothing(ingested, small_folder, hub):
    memory, _, _ = ingested
    before = memory.stats()["clips"]
    again = ingest_paths(memory, hub, [small_folder])
    statuses = {r.path.rsplit("/", 1)[-1]: r.status for r in again.results}
    assert statuses["cooking \\xff.avi"] == "skipped"
    assert statuses["drawing speech.mp3"] == "skipped"
    assert memory.stats()["clips"] == before
    assert again.usage["calls"] == 0  # no model work for known content


def test_ask_cites_the_clip_where_the_words_were_heard(ingested, hub):
    memory, _, _ = ingested
    with json_calls(hub.llm("solver")) as made:
        result = ask(memory, hub, "What did someone say about drawing?", max_rounds=1,
                     top_n=2, loop="merit")
    assert result.moments, "the evidence list is never empty when clips exist"
    assert any("drawing" in m.caption.lower() for m in result.moments[:2])
    assert len(result.rounds) == 1
    # MERIT loop with R = 1: neighbor filtering + the final answer (each may repair once)
    assert [role for role, _ in made] == ["solver", "solver"]
    assert 2 <= result.usage["by_role"]["solver"]["calls"] <= 4
    assert result.usage["llm"]["tokens_in"] > 0


def test_question_time_excludes_later_clips(ingested, hub):
    memory, _, _ = ingested
    from edge.answer import AskError

    with pytest.raises(AskError, match="before the question time"):
        ask(memory, hub, "anything?", at=parse_moment("2025-03-01 08:00"))
    only_first = ask(memory, hub, "what happened?", at=parse_moment("2025-03-01 09:00:10"),
                     max_rounds=1, top_n=3)
    assert all(m.t_end <= parse_moment("2025-03-01 09:00:10") for m in only_first.moments)


def test_retrieval_vectors_are_the_embeddings_of_the_keys(ingested, hub):
    memory, _, _ = ingested
    clip = memory.all_clips()[0]
    text = memory.db.execute("SELECT text FROM keys WHERE clip_id = ? AND type = 'summary'",
                             (clip.id,)).fetchone()[0]
    hits = memory.knn_keys(hub.embedder.embed_one(text), "summary", 1)
    assert hits[0][0] == clip.id and hits[0][1] == pytest.approx(1.0, abs=1e-4)
    assert np.isfinite(hits[0][1])


def test_start_on_the_egolife_day_clock(hub, tmp_path):
    from edge.store import Memory

    with Memory(tmp_path / "m.db") as memory:
        ingest_paths(memory, hub, [shared(FOOTAGE / "tiny_drawing_speech.mp3")],
                     IngestOptions(start=parse_moment("DAY1 09:00")))
        (clip,) = memory.all_clips()
        assert clip.day == "DAY1" and clip.t_start == parse_moment("DAY1 09:00")


def test_files_sharing_an_mtime_are_placed_one_after_the_other(hub, tmp_path):
    """Copied files without a container start share their modification time: the second is
    moved after the first (their clips never share seconds), and each file's line says which
    start it got and why."""
    from edge.cli.render.ingest import ingest_lines
    from edge.store import Memory

    d = tmp_path / "copied"
    d.mkdir()
    shutil.copy(shared(FOOTAGE / "tiny_drawing_noaudio.mp4"), d / "a drawing.mp4")
    shutil.copy(shared(FOOTAGE / "everyday_cooking.avi"), d / "b cooking.avi")
    shutil.copy(shared(FOOTAGE / "everyday_reading.mp4"), d / "c reading.mp4")  # has a start
    mtime = parse_moment("2026-11-30 10:15:09")
    for f in d.iterdir():
        os.utime(f, (mtime, mtime))
    with Memory(tmp_path / "m.db") as memory:
        report = ingest_paths(memory, hub, [d])
        a, b, c = report.results
        assert (a.start, a.start_from, a.placed_after) == (mtime - a.duration, "mtime", "")
        assert (b.start, b.start_from) == (mtime, "mtime")  # right after a (it ends at mtime)
        assert b.placed_after.endswith("a drawing.mp4")
        assert c.start_from == "metadata" and c.placed_after == ""
        spans = sorted((s.t_start, s.t_start + s.duration) for s in memory.sources_overlapping(
            mtime - 3600, mtime + 3600))
        assert spans == [(a.start, mtime), (mtime, mtime + b.duration)]
        by_source = {}
        for clip in memory.all_clips():
            by_source.setdefault(clip.source_id, []).append(clip)
        assert len(by_source) == 3 and all(len(v) == 1 for v in by_source.values())
        lines = ingest_lines(report, memory.path, memory.stats())
        sources = report.as_dict()["sources"]
    assert "     a drawing.mp4: start 2026-11-30 10:15:04 (file modification time)" in lines
    assert ("     b cooking.avi: start 2026-11-30 10:15:09 (file modification time; moved "
            "after a drawing.mp4 to avoid overlap)") in lines
    assert any(line.startswith("     c reading.mp4: start 2024-09-04 ")
               and line.endswith("(container creation_time)") for line in lines), lines
    assert [s["start_from"] for s in sources] == ["mtime", "mtime", "metadata"]
    assert sources[1]["start_note"] == lines[lines.index(
        "     b cooking.avi: start 2026-11-30 10:15:09 (file modification time; moved "
        "after a drawing.mp4 to avoid overlap)")].split(": ", 1)[1]


def test_two_ingests_of_one_file_at_once_count_only_the_clips_each_stored(hub, tmp_path):
    """A second ingest of the same file starts while the first is at its first clip (as two
    `edge ingest` processes would): together they report the clips stored, each once."""
    from edge.store import Memory

    video = shared(FOOTAGE / "everyday_cooking.avi")  # 9 s: three clips of 3 s
    options = IngestOptions(clip_seconds=3.0)
    path = tmp_path / "m.db"
    with Memory(path) as first, Memory(path) as second:
        reports = []

        def second_ingest_starts(name, seconds):
            if not reports:  # once the first clip is stored, the other process runs
                reports.append(ingest_paths(second, hub, [video], options))

        reports.insert(0, ingest_paths(first, hub, [video], options,
                                       on_progress=second_ingest_starts))
        stored = first.db.execute("SELECT count(*), count(DISTINCT idx) FROM clips").fetchone()
        statuses = [r.results[0].status for r in reports]
        sources = first.db.execute("SELECT count(*), min(status) FROM sources").fetchone()
    assert stored == (3, 3) and sources == (1, "done")
    assert statuses == ["ingested", "resumed"]
    assert [r.clips_added for r in reports] == [1, 2]
    assert sum(r.media_seconds for r in reports) == pytest.approx(9.0, abs=0.1)
