"""Ctrl-C during `edge ingest-captions` (a real SIGINT to a real process): one line instead of
a traceback, exit 130, every finished clip kept, and the same command resumes without adding
anything twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import apsw
import pytest

from edge.config import models_dir
from tests.conftest import EGOLIFE_DAY1, ROOT, shared

pytestmark = pytest.mark.slow  # a real process loads the embedder and ingests 160 records


def _count(db) -> tuple[int, int]:
    try:
        with apsw.Connection(str(db)) as c:
            return c.execute("SELECT count(*), count(DISTINCT idx) FROM clips").fetchone()
    except apsw.Error:  # not created yet, or its schema is being written
        return 0, 0


def test_ctrl_c_during_ingest_captions_keeps_clips_and_resumes(tmp_path):
    src = shared(EGOLIFE_DAY1)
    mem = tmp_path / "day1.db"
    env = {**os.environ, "EDGE_HOME": str(tmp_path / "home"),
           "EDGE_MODELS_DIR": str(models_dir()), "PYTHONPATH": str(ROOT)}
    # file keys and no pyramid: the embedder only, 64 records per stored batch; 160 leaves
    # more than a whole batch to go when the first one is stored
    cmd = [sys.executable, "-m", "edge.cli", "--memory", str(mem), "ingest-captions", str(src),
           "--no-pyramid", "--limit", "160"]
    # a shell running the tests in the background hands its children SIGINT ignored, and
    # Python then keeps it ignored: restore the default so Ctrl-C means what it does for a user
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while _count(mem)[0] == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "the ingest ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, out
    assert "Interrupted" in out and "Traceback" not in out
    kept, distinct = _count(mem)
    assert 0 < kept < 160 and kept == distinct
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resumed" in done.stdout and f"{160 - kept} clips added" in done.stdout
    assert _count(mem) == (160, 160)
