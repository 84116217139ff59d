"""Recording faults (issue 42, item 5), on real footage with the real models and a real
SQLite/sqlite-vec memory: a disk that fills while `edge record` runs (one line, exit 1,
nothing stored lost, and the restart stores each span of the file once), and a file source
that pauses under the disk floor instead of dropping footage (slow)."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from edge.cli import main
from edge.cli.options import State
from edge.record import Recorder, RecordOptions, SourceSpec, finished_clips, spool_dir
from edge.store import Memory
from tests.conftest import FOOTAGE, shared
from tests.diskfull import full_disk  # noqa: F401 (a fixture)

LONG = "ego_fisheye_b_noaudio.mp4"  # 71.1 s, keyframes every 8.3 s: clips of 33, 32, 6 s
LONG_SECONDS = 71.1



@pytest.fixture()
def cli(cli_home, hub, monkeypatch):
    """``cli(*args)``: the ``edge`` command line in-process (so the test's full disk applies
    to it), with the session's model hub."""
    monkeypatch.setattr(State, "hub", lambda self: hub)
    runner = CliRunner()
    return lambda *args: runner.invoke(main, [str(a) for a in args])


@pytest.fixture()
def record_log(caplog):
    """The recorder's log records (a CLI run stops their propagation)."""
    logger = logging.getLogger("edge.record")
    propagate = logger.propagate
    logger.propagate = True
    caplog.set_level(logging.INFO, logger="edge.record")
    yield caplog
    logger.propagate = propagate


def _memory_spans(mem: Path, *, readonly: bool = False
                  ) -> tuple[list[tuple[float, float]], list[str]]:
    """The clips in memory as sorted (start, end) and the paths of their sources."""
    with Memory(mem, create=False, readonly=readonly) as m:
        assert m.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        spans = sorted((c.t_start, c.t_end) for c in m.all_clips())
        paths = [r[0] for r in m.db.execute("SELECT path FROM sources")]
    return spans, paths


def _assert_the_file_once(spans: list[tuple[float, float]], seconds: float) -> None:
    """The spans cover the file once: no span twice, back to back, its length in all."""
    starts = [a for a, _ in spans]
    assert len(set(starts)) == len(starts), f"a span stored twice: {spans}"
    for (_, end), (nxt, _) in zip(spans, spans[1:]):
        assert nxt == pytest.approx(end, abs=0.1), f"overlap or gap: {spans}"
    assert sum(b - a for a, b in spans) == pytest.approx(seconds, abs=0.5)


def test_a_log_file_on_a_full_disk_is_said_once_not_a_traceback_per_line(tmp_path, capsys):
    """The recorder's log goes to stderr and record.log; when the disk is full, writing the
    file fails for every line: said once in one line, and the log goes on on stderr."""
    import errno

    from edge.cli.record import record_logging

    record_logging(tmp_path / "spool")
    log = logging.getLogger("edge.record")
    (file_handler,) = [h for h in log.handlers if hasattr(h, "baseFilename")]

    class FullStream:
        def write(self, _text):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def flush(self):
            pass

        def seek(self, *_args):
            return 0

        def tell(self):
            return 0

    real = file_handler.stream
    file_handler.stream = FullStream()
    try:
        log.info("clip one finished")
        log.info("clip two finished")
    finally:
        file_handler.stream = real
        for h in list(log.handlers):
            log.removeHandler(h)
            h.close()
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Logging error" not in err, err
    assert err.count("cannot write the log file") == 1, err
    assert "No space left on device" in err
    assert "clip one finished" in err and "clip two finished" in err


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["published", "opened"])
def test_a_disk_that_fills_stops_record_with_one_line_and_the_restart_stores_each_span_once(
        tmp_path, cli, full_disk, monkeypatch, moment):  # noqa: F811 (the fixture)
    """The disk fills just as the second clip of the file is published, or just as its
    file is opened (the memory, the spool's ledger and FFmpeg's clip file all refuse
    writes from then on): one line says the disk is full and what to do, exit code 1, the
    first clip stays in memory. After space is freed the same command resumes where the
    memory ends: every span of the file is stored once (a run had stored a 33 s span
    twice)."""
    src = shared(FOOTAGE / LONG)
    mem = tmp_path / "day.db"
    real_replace = os.replace
    published: list[str] = []
    parts: set[str] = set()
    filled: list[bool] = []

    def replace(a, b, **kw):  # the disk fills at the second clip
        real_replace(a, b, **kw)
        if str(a).endswith(".mkv.part"):
            published.append(Path(b).name)
            if moment == "published" and len(published) == 2:
                full_disk.fill()
        if moment == "opened" and Path(b).name == "watched.json":
            parts.update(e.get("part") for e in json.loads(Path(b).read_text()).values())
            if len(parts - {None}) == 2 and not filled:  # the ledger names clip 2's file
                filled.append(True)
                full_disk.fill()

    monkeypatch.setattr(os, "replace", replace)
    args = ("--memory", mem, "record", "--url", src, "--min-free", "0", "--no-pyramid",
            "--max-pending", "1")  # a file waits at the bound: clip 1 is in memory first
    first = cli(*args)
    out = first.output
    assert first.exception is None or isinstance(first.exception, SystemExit), out
    assert "Traceback" not in out and "Logging error" not in out, out
    errors = [ln for ln in out.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, out
    assert "disk is full" in errors[0] and "free some space" in errors[0].lower(), errors[0]
    assert "same command" in errors[0], errors[0]
    assert first.exit_code == 1, out
    assert len(published) == (2 if moment == "published" else 1)
    spans, _ = _memory_spans(mem, readonly=True)  # stored before the disk filled: intact
    assert len(spans) == 1 and spans[0][1] - spans[0][0] == pytest.approx(33.3, abs=0.2)

    full_disk.free()
    again = cli(*args)
    assert again.exit_code == 0, again.output
    assert "Traceback" not in again.output
    spans, paths = _memory_spans(mem)
    _assert_the_file_once(spans, LONG_SECONDS)
    assert len(paths) == len(set(paths)) == len(spans)  # each clip file once
    assert sorted(Path(p).name for p in paths) == [
        c.path.name for c in finished_clips(spool_dir(mem))]


@pytest.mark.slow
@pytest.mark.parametrize("speed", [None, 6.0], ids=["file", "realtime"])
def test_a_file_under_the_disk_floor_pauses_and_loses_no_footage(tmp_path, hub, record_log,
                                                                 speed):
    """Free disk drops below --min-free for 3 s just after the first clip: a file source,
    replayed as fast as it reads or in real time, waits (only a camera or stream must drop
    footage), so the memory holds the whole file, back to back — a replay had lost 8.3 s (a
    keyframe interval) of 131 s."""
    src = shared(FOOTAGE / LONG)
    mem = tmp_path / "floor.db"
    spool = spool_dir(mem)
    floor = 10**9
    spec = SourceSpec("file", str(src), realtime=speed is not None, speed=speed or 1.0)
    rec = Recorder(mem, spec, RecordOptions(min_free=floor), hub_factory=lambda: hub)
    low: dict[str, float] = {}
    states: set[str] = set()

    def free_bytes() -> int:  # the disk dips below the floor once the first clip is out
        if "since" not in low and finished_clips(spool):
            low["since"] = time.monotonic()
        if "since" in low and time.monotonic() - low["since"] < 3.0:
            states.add(rec.state)
            return floor // 2
        return floor * 100

    rec.free_bytes = free_bytes
    assert rec.run() == 0
    assert "since" in low  # the dip happened while the file was being cut
    spans, _ = _memory_spans(mem)
    _assert_the_file_once(spans, LONG_SECONDS)
    paused = [r.message for r in record_log.records if "below the floor" in r.message]
    assert paused and "paus" in paused[0], paused
    assert "paused" in states
