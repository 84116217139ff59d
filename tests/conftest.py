"""Shared fixtures: the real data in ../shared/data, and one model hub per test session
(models load once, as in the product)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
FOOTAGE = SHARED / "footage"
EGOLIFE_DAY1 = SHARED / "egolife" / "A1_JAKE_day1_captions.json"

# CLI runs in tests use the tiny profile (the 0.5B solver loads in a second) unless a test
# names another: the default profile's 1.5B is exercised by the slow tests that say so.
os.environ.setdefault("EDGE_PROFILE", "tiny")


def shared(path: Path) -> Path:
    """A file from ../shared/data, or skip the test with the reason."""
    if not path.exists():
        pytest.skip(f"shared test data not found: {path} (set EDGE_SHARED_DATA)")
    return path


@pytest.fixture(scope="session")
def hub():
    """The tiny profile, loaded lazily, shared by every test; weights must be installed by
    scripts/setup.sh (the resolver names the package otherwise)."""
    from edge.config import models_dir
    from models import ModelHub, load_manifest

    h = ModelHub(load_manifest().profile("tiny"), models_dir())
    yield h
    h.close()


@pytest.fixture(scope="session")
def default_solver():
    """The default (small) profile's solver, Qwen2.5-Coder-1.5B, loaded once per session: the
    model reports are calibrated with and `edge bench qa --open` judges with. The tiny
    profile's 0.5B is near chance at these yes/no judgements, and its verdict flips with
    llama.cpp's kernels (flash attention, the AVX-512 build): P(yes) 0.55 for a claim
    against its own clip, 0.54–0.56 against another clip; "Alice tuned the red guitar"
    judged wrong for the reference "Alice". The 1.5B gives 0.93 against 0.03."""
    from edge.config import models_dir
    from models import ModelHub, load_manifest

    h = ModelHub(load_manifest().profile("small"), models_dir())
    yield h.llm("solver")
    h.close()


@pytest.fixture()
def cli_home(tmp_path, monkeypatch):
    """A temporary user directory for CLI runs (``$EDGE_HOME``), no ``$EDGE_MEMORY``, and the
    already assembled model weights (``$EDGE_MODELS_DIR``) so nothing is assembled again."""
    from edge.config import models_dir

    monkeypatch.setenv("EDGE_MODELS_DIR", str(models_dir()))
    monkeypatch.setenv("EDGE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("EDGE_MEMORY", raising=False)
    return tmp_path / "home"


@pytest.fixture()
def run(cli_home):
    """``run(*args)``: the ``edge`` command line in-process (click's runner) with ``args``
    (made strings), exceptions raised rather than caught, in :func:`cli_home`."""
    from click.testing import CliRunner

    from edge.cli import main

    runner = CliRunner()
    return lambda *args: runner.invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture()
def memory(tmp_path):
    from edge.store import Memory

    with Memory(tmp_path / "memory.db") as m:
        yield m
