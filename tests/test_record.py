"""Headless recording: clip names, the retention plan, the status file and the CLI's checks
(fast); on real footage, clip files cut from a replayed video, a half-written clip repaired
after SIGKILL, a reader while the recorder writes, a watched folder under a tiny budget, a
clean SIGTERM, a file resumed after a restart, a silent microphone and the pyramid built as
by `edge ingest` (slow)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from edge.cli import main
from edge.config import models_dir
from edge.ingest.media import iter_clips, probe
from edge.record import (
    ClipFile,
    Recorder,
    RecordOptions,
    Segmenter,
    SourceSpec,
    clip_name,
    clip_start,
    finished_clips,
    open_source,
    partial_clips,
    plan_retention,
    read_status,
    recorder_status,
    repair,
    spool_dir,
    status_path,
)
from edge.store import Memory
from tests.conftest import FOOTAGE, ROOT, shared

LONG = "ego_fisheye_b_noaudio.mp4"      # 71 s, keyframes every 8.3 s → clips of 33, 32, 6 s
SHORT = "everyday_reading.mp4"          # 9.7 s
SHORTER = "everyday_livingroom.mp4"     # 6.1 s
ORIGIN = 1_795_980_000.0                # 2026-11-29 ~19:20 UTC


# ---- fast: no footage, no models --------------------------------------------------------

def test_recording_mode_does_not_import_textual():
    code = ("import sys, edge.record, edge.cli\n"
            "from edge.cli import main\n"
            "main(['record', '--help'], standalone_mode=False)\n"
            "main(['status', '--help'], standalone_mode=False)\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'tui'))\n"
            "assert not bad, bad\n"
            "print('headless ok')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "headless ok" in out.stdout and "--raw-budget" in out.stdout


def _clips(tmp_path: Path, offsets: list[float], sizes: list[int]) -> list[ClipFile]:
    """Finished clips as :func:`finished_clips` lists them (the files need not exist)."""
    return [ClipFile(tmp_path / clip_name(ORIGIN + o), ORIGIN + o, n)
            for o, n in zip(offsets, sizes)]


def test_retention_deletes_oldest_clips_already_in_memory(tmp_path):
    sizes = [3_000_000, 2_900_000, 600_000]
    clips = _clips(tmp_path, [0.0, 33.0, 65.0], sizes)
    total = sum(sizes)
    names = [c.path.name for c in clips]
    everything = set(names)
    # budget: room for the newest clip only → the two oldest go, oldest first
    plan = plan_retention(clips, everything, now=ORIGIN + 100, budget=sizes[-1] + 1,
                          keep_raw=None)
    assert [d.clip.path.name for d in plan] == names[:2]
    assert "over --raw-budget" in plan[0].reason
    # a clip not yet in memory is never deleted, whatever the budget
    plan = plan_retention(clips, set(names[1:]), now=ORIGIN + 100, budget=1, keep_raw=None)
    assert [d.clip.path.name for d in plan] == names[1:]
    # retention by age, then the disk floor
    plan = plan_retention(clips, everything, now=clips[1].start + 60, budget=None,
                          keep_raw=60.5)
    assert [d.clip.path.name for d in plan] == names[:1] and "--keep-raw" in plan[0].reason
    plan = plan_retention(clips, everything, now=ORIGIN, budget=total, keep_raw=None,
                          free=100, min_free=100 + sizes[0] + 1)
    assert [d.clip.path.name for d in plan] == names[:2] and "--min-free" in plan[0].reason
    assert plan_retention(clips, everything, now=ORIGIN, budget=total, keep_raw=None) == []


def test_clip_names_carry_the_start_time_and_list_oldest_first(tmp_path):
    spool = tmp_path / "m.db.spool"
    assert spool_dir(tmp_path / "m.db") == spool
    assert finished_clips(spool) == [] and partial_clips(spool) == []  # no spool yet
    spool.mkdir()
    later, first = clip_name(ORIGIN + 30.25), clip_name(ORIGIN)
    assert first == "clip-20261129T192000.000Z.mkv"
    assert clip_start(later) == pytest.approx(ORIGIN + 30.25, abs=1e-3)
    assert clip_start(later.replace(".mkv", "-1.mkv")) == clip_start(later)  # a name clash
    assert clip_start("notes.mkv") is None
    (spool / later).write_bytes(b"x" * 10)
    (spool / first).write_bytes(b"x" * 20)
    (spool / (clip_name(ORIGIN + 60) + ".part")).write_bytes(b"x")
    (spool / "record.log").write_text("log")
    clips = finished_clips(spool)
    assert [(c.path.name, c.size) for c in clips] == [(first, 20), (later, 10)]
    assert [p.name for p in partial_clips(spool)] == [clip_name(ORIGIN + 60) + ".part"]


STATUS_KEYS = {"state", "pid", "memory", "spool", "source", "started_at", "current_clip",
               "clips_recorded", "clips_ingested", "ingesting", "queue", "queue_capacity",
               "backpressure", "failed_clips", "lag_seconds", "ingested_until", "disk",
               "audio", "last_deletion", "last_error", "updated_at"}


def test_mark_stopped_writes_a_stopped_status_file(tmp_path):
    mem = tmp_path / "m.db"
    assert recorder_status(mem) is None  # never ran
    rec = Recorder(mem, SourceSpec("file", str(tmp_path / "a.mp4")), RecordOptions(),
                   hub_factory=lambda: None)
    rec.state = "recording"
    rec.write_status()
    running = recorder_status(mem)
    assert running["state"] == "recording" and running["running"] is True  # this process
    rec.mark_stopped()
    assert rec.state == "stopped"
    s = read_status(status_path(mem))
    assert set(s) == STATUS_KEYS
    assert s["state"] == "stopped" and s["pid"] == os.getpid() and s["queue"] == 0
    assert s["source"] == f"file {tmp_path / 'a.mp4'}" and s["queue_capacity"] == 120
    stopped = recorder_status(mem)
    assert stopped["state"] == "stopped" and stopped["running"] is False


@pytest.fixture()
def run(cli_home):
    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args))


def test_record_refuses_to_start_below_the_disk_floor(run, tmp_path):
    src = shared(FOOTAGE / SHORT)
    mem = tmp_path / "m.db"
    r = run("--memory", str(mem), "record", "--url", str(src), "--min-free", "1000PB")
    assert r.exit_code == 1
    assert "below the floor --min-free" in r.output
    assert not mem.exists()  # nothing recorded, no memory created


def test_record_and_status_explain_bad_input(run, tmp_path):
    r = run("--memory", str(tmp_path / "m.db"), "record")
    assert r.exit_code == 2 and "exactly one source" in r.output
    r = run("record", "--url", str(tmp_path / "nope.mp4"))
    assert r.exit_code == 2 and "no such file" in r.output
    r = run("record", "--url", "rtsp://x/y", "--raw-budget", "lots")
    assert r.exit_code == 2 and "not a size" in r.output
    r = run("--memory", str(tmp_path / "m.db"), "status")
    assert r.exit_code == 0 and "never run" in r.output and "edge record" in r.output


# ---- slow: real footage, no models ------------------------------------------------------

def _cut(src: Path, spool: Path, *, reencode: bool = False, origin: float = ORIGIN):
    spool.mkdir(parents=True, exist_ok=True)
    done: list[tuple[Path, float, float]] = []
    seg = Segmenter(spool, reencode=reencode, stop=threading.Event(),
                    on_clip=lambda p, s, d: done.append((p, s, d)))
    with open_source(SourceSpec("file", str(src))) as c:
        seconds = seg.run(c, origin)
    return done, seconds


@pytest.mark.slow
def test_stream_copy_cuts_keyframe_clips_on_the_timeline(tmp_path):
    src = shared(FOOTAGE / LONG)
    done, seconds = _cut(src, tmp_path / "spool")
    assert seconds == pytest.approx(71.1, abs=0.2)
    assert [round(d) for _, _, d in done] == [33, 32, 6]  # cut at the keyframe after 30 s
    clips = finished_clips(tmp_path / "spool")
    assert [c.path for c in clips] == [p for p, _, _ in done]
    assert not list((tmp_path / "spool").glob("*.part"))
    for (path, start, _), nxt in zip(done, [*done[1:], None]):
        info = probe(path)
        assert info.video_codec == "h264" and info.width == 720
        # the start time is in the name and, to the microsecond, in the container
        assert clip_start(path) == pytest.approx(start, abs=1e-3)
        assert info.creation_time == pytest.approx(start, abs=1e-3)
        if nxt is not None:  # back to back on the timeline
            assert start + info.duration == pytest.approx(nxt[1], abs=0.05)
    assert sum(probe(p).duration for p, _, _ in done) == pytest.approx(71.1, abs=0.3)


@pytest.mark.slow
def test_reencode_writes_a_decodable_h264_clip(tmp_path):
    src = shared(FOOTAGE / SHORT)
    done, _ = _cut(src, tmp_path / "spool", reencode=True)
    assert len(done) == 1
    info = probe(done[0][0])
    assert info.video_codec in ("h264", "mpeg4")
    assert info.duration == pytest.approx(9.7, abs=0.3)
    spans = list(iter_clips(info))
    assert sum(len(s.frames) for s in spans) >= 9  # 1 fps over ~9.7 s


@pytest.mark.slow
def test_half_written_clip_is_repaired_or_discarded(tmp_path, caplog):
    src = shared(FOOTAGE / LONG)
    done, _ = _cut(src, tmp_path / "cut")
    whole, start, _ = done[0]
    spool = tmp_path / "spool"
    spool.mkdir()
    data = whole.read_bytes()
    part = spool / (whole.name + ".part")
    part.write_bytes(data[: len(data) * 6 // 10])  # the recorder was killed here
    caplog.set_level(logging.INFO, logger="edge.record")
    fixed = repair(part)
    assert fixed is not None and fixed.name == whole.name and not part.exists()
    info = probe(fixed)
    assert 5.0 < info.duration < 33.0
    assert info.creation_time == pytest.approx(start, abs=1e-3)
    frames = sum(len(s.frames) for s in iter_clips(info))
    assert frames >= int(info.duration) - 1
    assert any("repaired half-written clip" in r.message for r in caplog.records)

    stub = spool / "clip-20261129T190000.000Z.mkv.part"
    stub.write_bytes(data[:3000])  # header only: nothing decodes
    assert repair(stub) is None
    assert not stub.exists() and not list(spool.glob("*.fix"))
    assert any("discarded half-written clip" in r.message for r in caplog.records)


# ---- slow: the real recorder with the real models -----------------------------------------

def _env(tmp_path: Path) -> dict:
    return {**os.environ, "EDGE_HOME": str(tmp_path / "home"),
            "EDGE_MODELS_DIR": str(models_dir()), "PYTHONPATH": str(ROOT)}


def _record(mem: Path, *args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edge.cli", "--memory", str(mem), "record",
                             "--min-free", "100MB", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait(cond, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"recorder exited early:\n{proc.stdout.read()}")
        time.sleep(0.1)
    raise AssertionError("timed out")


@pytest.mark.slow
def test_sigkill_mid_clip_then_restart_keeps_every_clip_once(tmp_path, hub):
    from edge.recall.retrieval import max_sim_retrieve

    long, short = shared(FOOTAGE / LONG), shared(FOOTAGE / SHORT)
    mem = tmp_path / "day.db"
    spool = spool_dir(mem)
    env = _env(tmp_path)
    first = _record(mem, "--url", str(long), "--realtime", "--speed", "6", env=env)
    # wait for one finished clip and the next one half written, then pull the plug
    _wait(lambda: finished_clips(spool) and any(p.stat().st_size > 50_000
                                                 for p in spool.glob("*.part")), 60, first)
    first.send_signal(signal.SIGKILL)
    first.wait()
    killed = list(spool.glob("*.part"))
    assert len(killed) == 1
    before = {c.path.name for c in finished_clips(spool)}

    # restart (a short replay), with a reader querying the memory while it writes
    second = _record(mem, "--url", str(short), "--realtime", "--speed", "6", env=env)
    seen: list[int] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            _wait(lambda: mem.exists() and mem.stat().st_size > 0, 120)
            query = hub.embedder.embed_one("a person in a room")
            with Memory(mem, create=False) as m:
                while second.poll() is None:
                    seen.append(m.count_clips())
                    max_sim_retrieve(m, query, top_n=3)
                    m.bm25("room OR person OR text", 3)
                    time.sleep(0.3)
        except BaseException as e:  # noqa: BLE001 (reported by the assert below)
            errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    out = second.communicate(timeout=600)[0]
    t.join()
    assert second.returncode == 0, out
    assert not errors, errors
    assert seen and seen == sorted(seen) and seen[-1] >= 1  # grew while the recorder wrote
    assert "repaired half-written clip" in out or "discarded half-written clip" in out
    assert "resuming: " in out

    clips = finished_clips(spool)
    names = {c.path.name for c in clips}
    assert before <= names and not list(spool.glob("*.part"))
    repaired = killed[0].name.removesuffix(".part")
    if "repaired half-written clip" in out:
        assert repaired in names
    with Memory(mem, create=False) as m:
        db = m.db
        rows = db.execute("SELECT s.path, count(c.id) FROM sources s LEFT JOIN clips c "
                          "ON c.source_id = s.id GROUP BY s.id").fetchall()
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {Path(p).name: n for p, n in rows}
        assert stored == {n: 1 for n in names}  # every clip file in memory exactly once
        assert m.stats()["partial_sources"] == []
        starts = [c.t_start for c in m.all_clips()]
        assert sorted(starts) == pytest.approx(sorted(c.start for c in clips), abs=1e-3)
        assert db.execute("SELECT count(*) FROM calls WHERE command = 'record'"
                          ).fetchone()[0] >= len(names)
    status = read_status(status_path(mem))
    assert status["state"] == "stopped" and status["queue"] == 0
    assert status["clips_ingested"] == len(names)
    shown = CliRunner().invoke(main, ["--memory", str(mem), "status"])
    assert shown.exit_code == 0, shown.output
    assert "recorder   stopped" in shown.output and f"{len(names)} clips" in shown.output
    assert "queue      0/120" in shown.output


@pytest.mark.slow
def test_watched_folder_budget_and_clean_sigterm(tmp_path):
    reading, living = shared(FOOTAGE / SHORT), shared(FOOTAGE / SHORTER)
    inbox = tmp_path / "camera"
    inbox.mkdir()
    mem = tmp_path / "watch.db"
    spool = spool_dir(mem)
    shutil.copy(reading, inbox / "a.mp4")
    os.utime(inbox / "a.mp4", (time.time() - 60, time.time() - 60))  # recorded a minute ago
    shutil.copy(living, inbox / "b.mp4")
    rec = _record(mem, "--watch", str(inbox), "--settle", "0.5", "--raw-budget", "400KB",
                  "--max-pending", "1", env=_env(tmp_path))

    def in_memory() -> int:
        s = read_status(status_path(mem))
        return s["clips_ingested"] if s else 0

    # a folder can wait: with a queue bound of 1, b.mp4 is cut only after a.mp4's clip is in
    # memory, and the status says why
    _wait(lambda: (read_status(status_path(mem)) or {}).get("state") == "backpressure", 60, rec)
    s = read_status(status_path(mem))
    assert s["backpressure"] and s["queue"] == 1 == s["queue_capacity"]
    assert len(finished_clips(spool)) == 1
    _wait(lambda: in_memory() == 2, 400, rec)
    _wait(lambda: len(finished_clips(spool)) == 1, 10, rec)
    live = read_status(status_path(mem))
    assert live["state"] == "recording" and live["source"].startswith("watch ")
    rec.send_signal(signal.SIGTERM)
    out = rec.communicate(timeout=120)[0]
    assert rec.returncode == 0, out
    assert "SIGTERM: closing the current clip" in out
    lines = [ln for ln in out.splitlines() if "deleted raw clip" in ln]
    assert len(lines) == 1 and "over --raw-budget" in lines[0] and "already in memory" in lines[0]
    kept = finished_clips(spool)
    with Memory(mem, create=False) as m:
        clips = m.all_clips()
        assert len(clips) == 2  # the memory of the deleted raw clip is kept
        oldest = min(clips, key=lambda c: c.t_start)
    deleted = lines[0].split("deleted raw clip ")[1].split()[0]
    assert clip_start(deleted) == pytest.approx(oldest.t_start, abs=1e-3)  # the oldest went
    assert kept[0].start > oldest.t_start
    status = read_status(status_path(mem))
    assert status["state"] == "stopped" and status["disk"]["deleted_clips"] == 1
    assert status["disk"]["raw_clips"] == 1 and status["last_deletion"]
    ledger = json.loads((spool / "watched.json").read_text())
    assert all(e["complete"] for e in ledger.values()) and len(ledger) == 2


@pytest.mark.slow
def test_network_stream_is_recorded_and_reconnected(tmp_path):
    """A live MPEG-TS stream over HTTP (served by the ffmpeg CLI in real time); when it
    ends the recorder keeps trying to reconnect until SIGTERM."""
    import socket

    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        pytest.skip("the ffmpeg command is needed to serve a live stream (scripts/setup.sh)")
    src = shared(FOOTAGE / SHORT)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/live.ts"
    server = subprocess.Popen([ffmpeg, "-v", "error", "-re", "-i", str(src), "-c", "copy",
                               "-f", "mpegts", "-listen", "1", url])
    mem = tmp_path / "stream.db"
    try:
        time.sleep(0.5)
        rec = _record(mem, "--url", url, env=_env(tmp_path))
        _wait(lambda: (read_status(status_path(mem)) or {}).get("clips_ingested", 0) >= 1,
              300, rec)
        _wait(lambda: "Connection refused" in ((read_status(status_path(mem)) or {})
                                               .get("last_error") or ""), 60, rec)
        rec.send_signal(signal.SIGINT)
        out = rec.communicate(timeout=120)[0]
    finally:
        server.kill()
        server.wait()
    assert rec.returncode == 0, out
    assert "ended; reconnecting" in out and "retrying in" in out
    clips = finished_clips(spool_dir(mem))
    assert len(clips) == 1 and probe(clips[0].path).duration == pytest.approx(9.7, abs=0.5)
    with Memory(mem, create=False) as m:
        assert m.count_clips() == 1
    status = read_status(status_path(mem))
    assert status["state"] == "stopped" and status["source"] == f"stream {url}"


@pytest.mark.slow
def test_a_replay_stopped_by_sigterm_is_not_logged_as_the_end_of_the_file(tmp_path):
    mem = tmp_path / "cut.db"
    rec = _record(mem, "--url", str(shared(FOOTAGE / SHORT)), "--realtime",
                  env=_env(tmp_path))
    _wait(lambda: (read_status(status_path(mem)) or {}).get("state") == "recording", 60, rec)
    time.sleep(2.0)
    rec.send_signal(signal.SIGTERM)
    out = rec.communicate(timeout=300)[0]
    assert rec.returncode == 0, out
    assert "before its end" in out and "INFO end of" not in out


# ---- slow: a file resumed, a silent source, the same memory as `edge ingest` ---------------

@pytest.fixture()
def record_log(caplog):
    """The recorder's log records (an earlier CLI run may have stopped its propagation)."""
    logger = logging.getLogger("edge.record")
    propagate = logger.propagate
    logger.propagate = True
    caplog.set_level(logging.INFO, logger="edge.record")
    yield caplog
    logger.propagate = propagate


def _spans(mem: Path) -> list[tuple[float, float]]:
    with Memory(mem, create=False) as m:
        return sorted((c.t_start, c.t_end) for c in m.all_clips())


@pytest.mark.slow
def test_restarted_file_recording_resumes_where_it_stopped(tmp_path, hub, record_log):
    src = shared(FOOTAGE / LONG)
    mem = tmp_path / "resume.db"
    spool = spool_dir(mem)
    spec = SourceSpec("file", str(src), realtime=True, speed=6)

    def sigterm_in_the_second_clip() -> None:
        _wait(lambda: finished_clips(spool) and any(p.stat().st_size > 50_000
                                                     for p in spool.glob("*.part")), 120)
        os.kill(os.getpid(), signal.SIGTERM)  # as `kill` would: the recorder's handler

    stopper = threading.Thread(target=sigterm_in_the_second_clip)
    stopper.start()
    first = Recorder(mem, spec, RecordOptions(min_free=0), hub_factory=lambda: hub).run()
    stopper.join()
    assert first == 0
    cut = sum(probe(c.path).duration for c in finished_clips(spool))
    assert 30.0 < cut < 65.0  # stopped mid-way

    again = Recorder(mem, spec, RecordOptions(min_free=0), hub_factory=lambda: hub).run()
    assert again == 0
    clips = finished_clips(spool)
    spans = _spans(mem)
    assert len(spans) == len(clips) >= 3
    starts = [a for a, _ in spans]
    assert len(set(starts)) == len(starts)  # no clip stored twice
    for (_, end), (nxt, _) in zip(spans, spans[1:]):
        assert nxt == pytest.approx(end, abs=0.1)  # back to back: no overlap, no gap
    assert sum(b - a for a, b in spans) == pytest.approx(71.1, abs=0.3)  # the file, once
    assert any("resuming " in r.message for r in record_log.records)
    # a third start finds the file complete and records nothing
    assert Recorder(mem, spec, RecordOptions(min_free=0), hub_factory=lambda: hub).run() == 0
    assert len(finished_clips(spool)) == len(clips) and len(_spans(mem)) == len(spans)


def _with_silent_audio(video: Path, out: Path) -> Path:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        pytest.skip("the ffmpeg command is needed to add a silent track (scripts/setup.sh)")
    subprocess.run([ffmpeg, "-v", "error", "-i", str(video), "-f", "lavfi", "-i",
                    "anullsrc=r=16000:cl=mono", "-map", "0:v", "-map", "1:a", "-c:v", "copy",
                    "-c:a", "aac", "-shortest", str(out)], check=True, timeout=120)
    return out


@pytest.mark.slow
def test_audio_levels_of_real_footage(tmp_path):
    from edge.record import SILENCE_DBFS, SilenceWatch, audio_level
    from edge.record.audio import FLOOR_DBFS

    silent = _with_silent_audio(shared(FOOTAGE / SHORT), tmp_path / "silent.mp4")
    assert audio_level(silent) == FLOOR_DBFS
    assert audio_level(shared(FOOTAGE / "ego_classroom_vfr_audio.mp4")) > -30.0  # speech
    quiet_room = audio_level(shared(FOOTAGE / "exo_grid_hevc_aac.mp4"))
    assert SILENCE_DBFS < quiet_room < -40.0  # a quiet room is not a dead microphone
    assert audio_level(shared(FOOTAGE / SHORT)) is None  # no audio track: not "silent"
    watch = SilenceWatch(silent_after=60.0)
    watch.add(ORIGIN, 30.0, FLOOR_DBFS)
    assert watch.warning is None and watch.status()["silent_seconds"] == 30.0
    watch.add(ORIGIN + 30, 30.0, FLOOR_DBFS)
    assert "silent" in watch.warning and watch.status()["silent_since"] == ORIGIN
    watch.add(ORIGIN + 60, 30.0, quiet_room)  # sound again: the stretch ends
    assert watch.warning is None and watch.silent_seconds == 0.0
    watch.add(ORIGIN + 90, 30.0, None)
    assert watch.status()["has_audio"] is False and watch.warning is None


@pytest.mark.slow
def test_silent_source_is_warned_about_in_the_log_and_status(tmp_path, hub, record_log):
    src = _with_silent_audio(shared(FOOTAGE / SHORT), tmp_path / "muted.mp4")
    mem = tmp_path / "muted.db"
    options = RecordOptions(min_free=0, silent_after=5.0)
    assert Recorder(mem, SourceSpec("file", str(src)), options, hub_factory=lambda: hub
                    ).run() == 0
    warned = [r for r in record_log.records if r.levelno == logging.WARNING
              and "audio has been silent" in r.message]
    assert len(warned) == 1 and "-60 dBFS" in warned[0].message
    audio = read_status(status_path(mem))["audio"]
    assert audio["has_audio"] is True and audio["silent_seconds"] == pytest.approx(9.7, abs=0.3)
    assert audio["warning"] == warned[0].message
    shown = CliRunner().invoke(main, ["--memory", str(mem), "status"])
    assert shown.exit_code == 0, shown.output
    assert "audio      WARNING: the source's audio has been silent" in shown.output


@pytest.mark.slow
def test_recorded_memory_has_the_pyramid_edge_ingest_builds(tmp_path, hub):
    from edge.build.pyramid import Pyramid, PyramidOptions
    from edge.ingest.run import ingest_paths

    src = shared(FOOTAGE / SHORT)
    recorded = tmp_path / "recorded.db"
    options = RecordOptions(min_free=0, pyramid=PyramidOptions())
    assert Recorder(recorded, SourceSpec("file", str(src)), options, hub_factory=lambda: hub
                    ).run() == 0
    with Memory(tmp_path / "ingested.db") as m:
        ingest_paths(m, hub, [src], pyramid=Pyramid(m, hub, PyramidOptions()))
        want = m.pyramid_stats()
    with Memory(recorded, create=False) as m:
        got = m.pyramid_stats()
        assert m.count_clips() == 1
        (clip,) = m.all_clips()
        day = clip.day
    assert got["facts"] > 0 and got["clip_nodes"] == want["clip_nodes"] == 1
    assert set(got["links"]) == set(want["links"])  # fact->clip, clip->global
    assert got["links"]["hierarchical fact->clip"] == got["facts"]
    assert set(got["global_nodes"]) == {day, "all"} and len(want["global_nodes"]) == 2
    assert got["global_nodes"][day]["clips"] == 1


@pytest.mark.slow
def test_a_clip_coming_in_cancels_the_slack_build_so_the_real_time_tier_never_waits(
        tmp_path, hub):
    """The worker builds the LLM tier only in slack: a clip published while a memory-LLM call
    runs cancels it (that clip stays queued, nothing of it is written) so the real-time tier
    ingests the new clip at once — the real-time backlog stays at one clip."""
    from edge.build.pyramid import PyramidOptions
    from edge.ingest.captions import ingest_caption_file
    from edge.ingest.memory_writer import Deferred

    mem = tmp_path / "m.db"
    caps = tmp_path / "caps.json"
    caps.write_text(json.dumps([{
        "date": "DAY1", "start_time": f"1100{s:02d}00", "end_time": f"1100{s + 30:02d}00",
        "text": "I sliced bread in the kitchen while Alice talked about the picnic plans, "
                "then I wiped the counter and put the knife in the drawer."}
        for s in (0,)]))
    with Memory(mem) as m:
        ingest_caption_file(m, hub, caps, deferred=Deferred(pyramid=True))
    rec = Recorder(mem, SourceSpec("file", str(shared(FOOTAGE / SHORT))),
                   RecordOptions(min_free=0, pyramid=PyramidOptions()), hub_factory=lambda: hub)
    worker = rec.worker
    with Memory(mem, create=False) as m:
        (item,) = m.queued()
        result: list[bool] = []
        t = threading.Thread(target=lambda: result.append(worker._build_next(m, hub)))
        t.start()
        time.sleep(1.0)  # the pyramid call is reading its prompt
        worker.wake.set()  # capture published a clip
        t.join(timeout=120)
        assert result == [True] and not t.is_alive()
        assert [q.clip_id for q in m.queued()] == [item.clip_id]  # still queued
        assert m.db.execute("SELECT count(*) FROM builds").fetchone()[0] == 0
        assert m.db.execute("SELECT count(*) FROM facts").fetchone()[0] == 0
        # the next slack builds it (wake cleared by the loop before building)
        worker.wake.clear()
        assert worker._build_next(m, hub) is True
        assert m.queued() == [] and m.count_clip_nodes() == 1
