"""Ingest faults (issue 42, item 5): an ingest beside another process that holds the
memory's build lock says its clips are stored and leaves the LLM tier to `edge build`
(exit 0; slow, real models), and an ingest that fails before storing a clip into a new path
leaves no memory, WAL, keyframe folder or folder behind (fast: real media, real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from edge.build.lock import build_lock
from edge.cli import main
from edge.cli.options import State
from edge.store import Memory
from tests.conftest import FOOTAGE, shared
from tests.factories import add_clips

SHORT = "everyday_reading.mp4"  # 9.7 s: one clip


def _tree(folder: Path) -> set[str]:
    """Every path under ``folder`` (relative), folders included."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _broken(tmp_path: Path) -> Path:
    """A real video cut after its first 2 kB: no stream can be read from it."""
    broken = tmp_path / "footage" / "broken.mp4"
    broken.parent.mkdir()
    broken.write_bytes(shared(FOOTAGE / "ego_classroom_vfr_audio.mp4").read_bytes()[:2048])
    return broken


def test_a_failed_ingest_into_a_new_path_leaves_nothing_behind(run, tmp_path):
    broken = _broken(tmp_path)
    before = _tree(tmp_path)
    for mem in (tmp_path / "new.db", tmp_path / "new folder" / "deeper" / "new.db"):
        r = run("--memory", mem, "ingest", broken)
        assert r.exit_code == 1, r.output
        assert " ! failed   broken.mp4" in r.stderr and "Traceback" not in r.output
        assert "0 clips added" in r.output
        assert _tree(tmp_path) - {"home"} == before, _tree(tmp_path) - before
        assert f"No memory was created at {mem}: nothing was stored." in r.output, r.output


def test_a_failed_ingest_into_an_existing_memory_keeps_it(run, tmp_path):
    broken = _broken(tmp_path)
    mem = tmp_path / "day.db"
    with Memory(mem) as m:
        add_clips(m, 2, finish=True)
    r = run("--memory", mem, "ingest", broken)
    assert r.exit_code == 1 and " ! failed   broken.mp4" in r.stderr
    with Memory(mem, create=False) as m:
        assert m.count_clips() == 2


def test_a_model_error_before_the_first_clip_leaves_no_new_memory(tmp_path):
    """The captioner's weights were never pulled: ingest stops with one line before its
    first clip, and the new path stays empty."""
    (tmp_path / "profiles.toml").write_text(
        '[profiles.vlm-missing]\nbase = "tiny"\n[profiles.vlm-missing.roles]\n'
        'captioner = "smolvlm2-256m-video-instruct"\n')
    env = {"EDGE_HOME": str(tmp_path / "home"), "EDGE_MODELS_DIR": str(tmp_path / "models"),
           "EDGE_PROFILES": str(tmp_path / "profiles.toml"), "EDGE_MEMORY": ""}
    mem = tmp_path / "memories" / "new.db"
    r = CliRunner().invoke(main, ["--memory", str(mem), "--profile", "vlm-missing", "ingest",
                                  str(shared(FOOTAGE / "tiny_drawing_noaudio.mp4"))], env=env)
    assert r.exit_code == 1, r.output
    assert "edge models pull smolvlm2-256m-video-instruct" in r.output
    assert not (tmp_path / "memories").exists(), _tree(tmp_path / "memories")


@pytest.mark.slow
def test_an_ingest_beside_another_builder_stores_its_clip_and_defers_the_llm_tier(
        tmp_path, cli_home, hub, monkeypatch):
    """Another `edge ingest` (or `edge build`, a recorder) is building this memory's LLM
    tier, holding its build lock: this ingest's clip is stored all the same (real-time
    tier), it says so and that `edge build` builds the rest, and exits 0."""
    monkeypatch.setattr(State, "hub", lambda self: hub)
    mem = tmp_path / "day.db"
    with build_lock(mem):  # as the other process holds it
        r = CliRunner().invoke(main, ["--memory", str(mem), "ingest",
                                      str(shared(FOOTAGE / SHORT))])
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output and "Error" not in r.output, r.output
    assert " + ingested everyday_reading.mp4  1 clips" in r.stdout, r.output
    assert "1 clips added" in r.stdout
    deferred = [ln for ln in r.stdout.splitlines() if "`edge build`" in ln]
    assert len(deferred) == 1 and "another process" in deferred[0], r.output
    with Memory(mem, create=False) as m:
        assert m.count_clips() == 1 and len(m.queued()) == 1  # stored, its LLM tier queued
