"""A real SIGKILL in the middle of an ingest, then a restart: every clip exactly once."""

import os
import signal
import subprocess
import sys
import time

import pytest

from edge.config import models_dir
from edge.store import Memory
from tests.conftest import EGOLIFE_DAY1, shared

pytestmark = pytest.mark.slow


def _edge(*args: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edge.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_sigkill_mid_ingest_then_restart_stores_every_clip_once(tmp_path):
    day1 = shared(EGOLIFE_DAY1)
    mem = tmp_path / "kill.db"
    env = {**os.environ, "EDGE_HOME": str(tmp_path / "home"),
           "EDGE_MODELS_DIR": str(models_dir())}
    args = ("--memory", str(mem), "ingest-captions", str(day1), "--limit", "200",
            "--no-pyramid")
    proc = _edge(*args, env=env)
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if mem.exists():
            with Memory(mem, create=False) as m:
                stored = m.count_clips()
            if stored > 0:
                break
    assert proc.poll() is None, "the ingest finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Memory(mem, create=False) as m:
        assert 0 < m.count_clips() < 200
        assert m.stats()["partial_sources"]

    rerun = _edge(*args, env=env)
    out = rerun.communicate(timeout=300)[0].decode()
    assert rerun.returncode == 0, out
    assert "resumed" in out
    with Memory(mem, create=False) as m:
        db = m.db
        assert m.count_clips() == 200
        assert db.execute("SELECT count(DISTINCT idx) FROM clips").fetchone()[0] == 200
        assert db.execute("SELECT count(*) FROM keys").fetchone()[0] == 200 * 5
        assert db.execute("SELECT count(*) FROM key_vec").fetchone()[0] == 200 * 5
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
