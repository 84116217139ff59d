"""A full database, an unwritable keyframe folder or memory folder: a clear error, and the
memory stays readable with everything stored before. Plus the ``runs`` migration (m004)
applied to a memory of the previous version, and per-stage timing."""

import time

import apsw
import pytest

from edge.config import frames_dir
from edge.ingest.run import ingest_paths
from edge.stages import StageClock, stage_report
from edge.store import MIGRATIONS, Memory, StoreError, apply_migrations, connect
from tests.conftest import FOOTAGE, shared
from tests.factories import add_clips


def _fill(memory: Memory, n: int) -> None:
    """n synthetic clips ``earlier clip i`` with random unit vectors (data, not a mock: the
    real store), their source finished."""
    add_clips(memory, [f"earlier clip {i}" for i in range(n)], source="earlier", finish=True)


def _readable(path, n_before: int) -> None:
    with Memory(path, create=False) as m:
        assert m.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        captions = [c.caption for c in m.all_clips()]
        assert [f"earlier clip {i}" for i in range(n_before)] == captions[:n_before]
        assert m.db.execute("SELECT count(*) FROM key_vec").fetchone()[0] >= n_before * 5


@pytest.mark.slow
def test_full_database_is_a_clear_error_and_keeps_what_was_stored(tmp_path, hub):
    path = tmp_path / "full.db"
    # small pages leave little free room inside each, so the next clip needs new pages
    db = apsw.Connection(str(path))
    db.execute("PRAGMA page_size = 512; CREATE TABLE ballast(x BLOB)")
    db.close()
    with Memory(path) as m:
        _fill(m, 3)
        # SQLITE_FULL for real: the file may not grow past the pages it has now, and the
        # free room inside them is taken by ballast rows, as a full disk would leave it
        pages = m.db.execute("PRAGMA page_count").fetchone()[0]
        m.db.execute(f"PRAGMA max_page_count = {pages}")
        for size in (4000, 400, 40, 1):
            with pytest.raises(apsw.FullError):
                while True:
                    m.db.execute("INSERT INTO ballast VALUES(zeroblob(?))", (size,))
        with pytest.raises(StoreError, match="database or disk is full.*free disk space.*"
                                             "intact"):
            ingest_paths(m, hub, [shared(FOOTAGE / "tiny_drawing_speech.mp3")])
    _readable(path, 3)
    # room again (a new connection has no page cap): the same command finishes the job
    with Memory(path) as m:
        report = ingest_paths(m, hub, [shared(FOOTAGE / "tiny_drawing_speech.mp3")])
        assert [r.status for r in report.results] in (["ingested"], ["resumed"])
        assert m.count_clips() == 4
        assert m.stats()["partial_sources"] == []


@pytest.mark.slow
def test_unwritable_keyframe_folder_is_a_clear_error(tmp_path, hub):
    path = tmp_path / "mem.db"
    with Memory(path) as m:
        _fill(m, 2)
        frames_dir(path).write_text("a file where the keyframe folder should be")
        with pytest.raises(StoreError, match="keyframe folder"):
            ingest_paths(m, hub, [shared(FOOTAGE / "tiny_drawing_noaudio.mp4")])
    _readable(path, 2)


def test_memory_under_a_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "not a folder"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot create the folder"):
        Memory(blocker / "memory.db")


def test_read_only_folder_is_a_clear_error_and_data_stays_readable(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "m.db"
    with Memory(path) as m:
        _fill(m, 2)
    for f in folder.iterdir():
        if f.name.endswith(("-wal", "-shm")):
            f.unlink()
    folder.chmod(0o555)
    try:
        with pytest.raises(StoreError, match="not writable"):
            Memory(folder / "new.db")
    finally:
        folder.chmod(0o755)
    _readable(path, 2)


def test_runs_migration_from_the_previous_version(tmp_path):
    path = tmp_path / "old.db"
    previous = MIGRATIONS[:[name for name, _ in MIGRATIONS].index("m004_runs")]
    db = connect(path)
    assert apply_migrations(db, previous) == [name for name, _ in previous]
    db.execute("INSERT INTO sources(path, sha256, kind, clock, start_from, t_start, duration, "
               "n_clips, status, added_at) VALUES('earlier', 'earlier', 'captions', "
               "'dayclock', 'file', 36000, 60, 2, 'done', 0)")
    for i in range(2):
        db.execute("INSERT INTO clips(source_id, idx, t_start, t_end, day, day_start, caption)"
                   " VALUES(1, ?, ?, ?, 'DAY1', 0, ?)",
                   (i, 36000 + 30 * i, 36030 + 30 * i, f"earlier clip {i}"))
    db.execute("INSERT INTO calls(at, command, role, model, tokens_in, tokens_out,"
               " seconds) VALUES(1, 'ingest', 'memory_llm', 'q', 10, 5, 0.5)")
    assert "runs" not in {r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.close()
    with Memory(path) as m:
        names = [r[0] for r in m.db.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == [name for name, _ in MIGRATIONS]
        assert m.db.execute("SELECT run_id FROM calls").fetchall() == [(None,)]
        assert m.stage_costs() == {"runs": 0, "clips_added": 0, "media_seconds": 0,
                                   "hours": 0.0, "stages": {}}
        assert m.count_clips() == 2
        run = m.add_run(command="ingest", started_at=time.time(), seconds=12.0,
                        media_seconds=60.0, clips_added=2, sources=1, status="done",
                        stages={"decode": 1.5, "memory_llm": 9.0})
        m.record_calls("ingest", [_Call("memory_llm", 100, 20)], run_id=run)
        cost = m.stage_costs()
        assert cost["runs"] == 1 and cost["hours"] == pytest.approx(60 / 3600, abs=1e-4)
        assert cost["stages"]["memory_llm"] == {"seconds": 9.0, "rtf": 0.15, "calls": 1,
                                                "tokens_in": 100, "tokens_out": 20}
        assert cost["stages"]["decode"]["rtf"] == 0.025


class _Call:
    """A call record as ``models.CallRecord`` has it (a plain value, not a model)."""

    def __init__(self, role: str, tin: int, tout: int) -> None:
        self.role, self.model, self.tokens_in, self.tokens_out, self.seconds = (
            role, "m", tin, tout, 0.1)


def test_stage_clock_charges_iterators_and_blocks():
    clock = StageClock()

    def slow_items():
        for i in range(3):
            time.sleep(0.02)
            yield i

    assert list(clock.timed("decode", slow_items())) == [0, 1, 2]
    with clock.stage("asr"):
        time.sleep(0.01)
    with pytest.raises(RuntimeError), clock.stage("embed"):
        raise RuntimeError("still timed")
    assert clock.seconds["decode"] >= 0.06 and clock.seconds["asr"] >= 0.01
    assert "embed" in clock.seconds
    report = stage_report(clock.seconds, 10.0, {"transcriber": {
        "calls": 1, "tokens_in": 0, "tokens_out": 0}})
    assert list(report) == ["decode", "asr", "embed"]
    assert report["asr"]["calls"] == 1
    assert report["decode"]["rtf"] == pytest.approx(clock.seconds["decode"] / 10, abs=1e-3)
    assert stage_report({"asr": 1.0}, 0.0)["asr"]["rtf"] is None


def test_pyramid_link_and_global_calls_count_in_the_memory_llm_stage():
    """Their seconds are charged to the memory_llm stage clock, so their calls and tokens are
    too: the stage table then adds up to the run's LLM totals."""
    by_role = {"memory_llm": {"calls": 3, "tokens_in": 1429, "tokens_out": 361},
               "memory_llm.links": {"calls": 1, "tokens_in": 200, "tokens_out": 40},
               "memory_llm.global": {"calls": 2, "tokens_in": 250, "tokens_out": 57}}
    row = stage_report({"memory_llm": 80.0}, 21.0, by_role)["memory_llm"]
    assert (row["calls"], row["tokens_in"], row["tokens_out"]) == (6, 1879, 458)


