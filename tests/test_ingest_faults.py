"""Ingest faults (issue 42, item 5): an ingest that fails before storing a clip into a new
path leaves no memory, WAL, keyframe folder or folder behind (fast: real media, real
SQLite)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from edge.cli import main
from edge.store import Memory
from tests.conftest import FOOTAGE, shared
from tests.factories import add_clips


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
