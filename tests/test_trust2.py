"""Trust, round 2 (issue 29): what a new user still hit, each as the user meets it — the
real ``edge`` command in a subprocess, on a real memory file.

Invalid UTF-8 in what the user types is one line and exit code 2; a memory on read-only
media is read (and said so once) by the commands that read, refused with the reason by
those that write; a typo in ``--memory`` makes no new memory and names the ones there are;
a source without sound says so in the recorder's log; failed files of an ingest go to
stderr; ``edge report --no-check`` is the instant list it says it is."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys

import pytest

from edge.store import Memory
from tests.factories import add_clips

CAPTIONS = ["Jake tightens the screws of the shelf with a screwdriver",
            "Lucia waters the flowers on the balcony",
            "Katrina and Alice bake a cake in the kitchen"]


@pytest.fixture()
def env(cli_home):
    from edge.config import models_dir

    cli_home.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "EDGE_HOME": str(cli_home), "EDGE_MODELS_DIR": str(models_dir()),
            "EDGE_PROFILE": "tiny"}


def edge(env, *args, **kw) -> subprocess.CompletedProcess:
    """``python -m edge.cli ARGS`` (bytes arguments pass through as bytes)."""
    return subprocess.run([sys.executable, "-m", "edge.cli", *args], env=env,
                          capture_output=True, timeout=kw.pop("timeout", 120), **kw)


@pytest.fixture()
def memory_file(tmp_path, hub):
    path = tmp_path / "media" / "day.db"
    with Memory(path) as m:
        vecs = hub.embedder.embed([c for c in CAPTIONS for _ in range(5)])
        add_clips(m, CAPTIONS, vectors=vecs.reshape(3, 5, 384), keys="caption")
    return path


def one_line_error(p: subprocess.CompletedProcess) -> str:
    err = p.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("Error: "), err
    assert "Traceback" not in err
    return err


# ---- 1. invalid UTF-8 ----------------------------------------------------------------------

def test_a_question_that_is_not_utf8_is_one_line_and_exit_code_2(env, memory_file):
    m = str(memory_file)
    p = edge(env, "--memory", m, "search", b"\xff\xfe x")
    assert p.returncode == 2 and "the question is not valid UTF-8" in one_line_error(p)
    p = edge(env, "--memory", m, "ask", b"lunch \xff")
    assert p.returncode == 2 and "the question is not valid UTF-8" in one_line_error(p)
    p = edge(env, "--memory", m, "search", "who?", "--choices", b"Jake|Lu\xffcia")
    assert p.returncode == 2 and "option 2 of --choices" in one_line_error(p)
    p = edge(env, "--memory", m, "report", "--topic", b"the sh\xffelf")
    assert p.returncode == 2 and "--topic is not valid UTF-8" in one_line_error(p)


# ---- 2. read-only media --------------------------------------------------------------------

@pytest.fixture()
def read_only(memory_file):
    """The memory's folder and file made immutable (root writes into a folder without write
    permission, so permissions cannot make read-only media here; chattr +i can)."""
    folder = memory_file.parent
    if shutil.which("chattr") is None or subprocess.run(
            ["chattr", "+i", str(memory_file), str(folder)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here: cannot make a read-only folder")
    yield memory_file
    subprocess.run(["chattr", "-i", str(memory_file), str(folder)], check=True)


def test_a_memory_on_read_only_media_is_read_and_only_writing_is_refused(env, read_only):
    m = str(read_only)
    p = edge(env, "--memory", m, "stats", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["clips"] == 3
    assert p.stderr.decode().count("opened read-only") == 1
    p = edge(env, "--memory", m, "search", "who used the screwdriver?", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["moments"][0]["caption"].startswith("Jake tightens")
    p = edge(env, "--memory", m, "build")
    assert p.returncode == 1
    err = one_line_error(p)
    assert "not writable" in err and "copy it somewhere writable" in err
    assert sorted(x.name for x in read_only.parent.iterdir()) == [read_only.name]
    caps = read_only.parent.parent / "caps.json"
    caps.write_text(json.dumps([{"date": "DAY1", "start_time": "11000000",
                                 "end_time": "11003000", "text": "Jake reads a book"}]))
    p = edge(env, "--memory", str(read_only.parent / "new.db"), "ingest-captions", str(caps))
    err = one_line_error(p)
    assert p.returncode == 1
    assert f"the folder {read_only.parent} is not writable" in err


# ---- 3. a typo in --memory -----------------------------------------------------------------

@pytest.mark.parametrize("command", [["ask", "what did I eat?"], ["search", "what did I eat?"],
                                     ["stats"], ["report"], ["chat"],
                                     ["backup", "copy.db"]])
def test_a_memory_that_does_not_exist_is_refused_by_reading_commands(env, tmp_path, command,
                                                                     cli_home):
    with Memory(cli_home / "day1.db") as m:  # a memory the user does have
        add_clips(m, 1)
    typo = tmp_path / "typo" / "m.db"
    p = edge(env, "--memory", str(typo), *command, cwd=tmp_path)
    err = one_line_error(p)
    assert p.returncode == 1 and f"no memory at {typo}" in err
    assert str(cli_home / "day1.db") in err
    assert not typo.parent.exists()


# ---- 6. small things -----------------------------------------------------------------------

def test_a_source_without_an_audio_track_is_said_once_in_the_recorder_s_log(caplog):
    from edge.record.audio import SilenceWatch

    watch = SilenceWatch(silent_after=60.0)
    with caplog.at_level(logging.INFO, logger="edge.record"):
        for i in range(3):
            watch.add(1000.0 + 30 * i, 30.0, None)
    said = [r.getMessage() for r in caplog.records if "no audio track" in r.getMessage()]
    assert len(said) == 1 and watch.warning is None


def test_failed_files_of_an_ingest_are_reported_on_stderr(env, tmp_path):
    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"not a video at all" * 10)
    p = edge(env, "--memory", str(tmp_path / "m.db"), "ingest", "--later", str(broken),
             timeout=300)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 1
    assert " ! failed   broken.mp4" in err and "! failed" not in out
    assert "could not be ingested" in err and "clips added" in out


def test_a_bullet_report_without_checks_makes_no_model_call(env, memory_file):
    p = edge(env, "--memory", str(memory_file), "report", "--style", "bullet", "--no-check",
             "--json")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["usage"]["llm"]["calls"] == 0 and rep["checks"]["skipped"]
    assert {c for s in rep["sentences"] for c in s["clips"]} == {1, 2, 3}  # every clip
    assert all(e["support"] is None for e in rep["evidence"])

