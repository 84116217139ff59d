"""A model that cannot run (here: a VLM captioner whose weights were never pulled) is a setup
error, not a bad file: `edge ingest` stops with one line saying what to do instead of failing
every file of a folder the same way, and `edge record` keeps the clip in the spool (it was
moved to failed/ and never ingested, even after the model was pulled)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from click.testing import CliRunner

from edge.cli import main
from edge.config import models_dir
from edge.record import finished_clips, spool_dir
from tests.conftest import FOOTAGE, ROOT, shared

PROFILE = """
[profiles.vlm-missing]
base = "tiny"
[profiles.vlm-missing.roles]
captioner = "smolvlm2-256m-video-instruct"
"""


def _env(tmp_path) -> dict:
    (tmp_path / "profiles.toml").write_text(PROFILE)
    return {"EDGE_HOME": str(tmp_path / "home"), "EDGE_MODELS_DIR": str(tmp_path / "models"),
            "EDGE_PROFILES": str(tmp_path / "profiles.toml"), "EDGE_MEMORY": ""}


def test_ingest_stops_once_when_a_model_is_not_downloaded(tmp_path):
    folder = tmp_path / "dump"
    folder.mkdir()
    for name in ("tiny_drawing_noaudio.mp4", "everyday_livingroom.mp4"):
        shutil.copy(shared(FOOTAGE / name), folder / name)
    env = _env(tmp_path)
    res = CliRunner().invoke(main, ["--memory", str(tmp_path / "m.db"), "--profile",
                                    "vlm-missing", "ingest", str(folder)], env=env)
    assert res.exit_code == 1, res.output
    assert res.output.count("edge models pull smolvlm2-256m-video-instruct") == 1
    assert "Traceback" not in res.output and " ! failed" not in res.output


def test_recorder_keeps_the_clip_in_the_spool_when_a_model_is_not_downloaded(tmp_path):
    mem = tmp_path / "rec.db"
    env = {**os.environ, **_env(tmp_path), "PYTHONPATH": str(ROOT)}
    env["EDGE_MODELS_DIR"] = str(models_dir())  # the shipped GGUF; the VLM is still missing
    out = subprocess.run(
        [sys.executable, "-m", "edge.cli", "--memory", str(mem), "--profile", "vlm-missing",
         "record", "--min-free", "100MB", "--url", str(shared(FOOTAGE / "everyday_reading.mp4"))],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    log = out.stdout + out.stderr
    assert "stays in the spool" in log and "edge models pull" in log, log
    assert not (spool_dir(mem) / "failed").exists()
    assert len(finished_clips(spool_dir(mem))) == 1
