"""The CLI as a user drives it (click's runner, a temporary user directory)."""

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import EGOLIFE_DAY1, ROOT, shared


def test_help_lists_the_commands(run):
    out = run("--help").output
    listed = out[out.index("Commands:"):].splitlines()[1:]
    assert [line.split()[0] for line in listed if line.strip()] == [
        "ask", "backup", "bench", "build", "chat", "doctor", "ingest", "ingest-captions", "models",
        "people", "record", "report", "search", "stats", "status"]
    out = run("models", "--help").output
    listed = out[out.index("Commands:"):].splitlines()[1:]
    assert [line.split()[0] for line in listed if line.strip()] == [
        "add", "list", "pull", "recommended", "user", "verify"]


def test_ask_and_chat_share_the_answer_loop_options():
    from edge.cli.ask import ask, chat

    def spec(command, name):
        p = next(p for p in command.params if p.name == name)
        return (p.opts, p.secondary_opts, repr(p.type), p.default, p.show_default)

    for name in ("delta", "rounds", "loop", "neighbor_filter"):
        assert spec(ask, name) == spec(chat, name), name


def test_python_dash_m_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "edge.cli", "status", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Usage: python -m edge.cli status [OPTIONS]")


def test_models_list_resolves_every_role(run):
    r = run("models", "list", "--no-load", "--json")
    rows = json.loads(r.output)
    assert r.exit_code == 0
    assert {row["role"] for row in rows} == {"transcriber", "embedder", "sentence_embedder",
                                             "captioner", "memory_llm", "solver"}
    assert all(row["ok"] for row in rows), rows


def test_unknown_profile_is_a_clear_error(run):
    r = run("--profile", "huge", "models", "list", "--no-load")
    assert r.exit_code == 1 and "unknown profile 'huge'" in r.output


def test_ask_without_memory_says_how_to_build_one(run):
    r = run("ask", "where are my keys?")
    assert r.exit_code == 1
    assert "edge ingest" in r.output and "Traceback" not in r.output


def test_bad_time_and_missing_path_are_clear_errors(run, tmp_path):
    r = run("ingest", str(tmp_path / "nope.mp4"))  # exit code 2: what was typed (docs/errors.md)
    assert r.exit_code == 2 and "no such file" in r.output
    r = run("ingest", "--start", "teatime", str(tmp_path))
    assert r.exit_code == 2 and "cannot read the time" in r.output


def test_a_folder_without_media_is_an_error_and_creates_no_memory(run, tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("buy milk\n")
    r = run("--memory", str(tmp_path / "m.db"), "ingest", str(tmp_path / "notes"))
    assert r.exit_code == 1 and "no video or audio files in" in r.output and ".mp4" in r.output
    assert not (tmp_path / "m.db").exists()


def test_a_file_that_fails_before_its_length_is_known_gets_its_line_not_a_0_of_0_bar(
        run, tmp_path):
    (tmp_path / "empty.mp4").write_bytes(b"")
    r = run("--memory", str(tmp_path / "m.db"), "ingest", str(tmp_path / "empty.mp4"))
    assert r.exit_code == 1
    assert "0/0" not in r.output and "ingest:" not in r.stderr  # no progress bar at all
    assert r.stderr.splitlines()[0].split()[:3] == ["!", "failed", "empty.mp4"]  # issue 29
    assert "! failed" not in r.stdout and "0 clips added" in r.stdout


def test_status_of_a_memory_whose_recorder_never_ran(run, tmp_path):
    r = run("--memory", str(tmp_path / "m.db"), "status")
    assert r.exit_code == 0
    assert r.output.splitlines() == [
        f"memory     {tmp_path / 'm.db'}  (not created yet)",
        "recorder   has never run for this memory; start it with `edge record --camera 0` "
        "(or --url URL, --watch DIR)"]
    r = run("--memory", str(tmp_path / "m.db"), "status", "--json")
    assert json.loads(r.output) == {"recorder": None, "memory": str(tmp_path / "m.db"),
                                    "memory_stats": None}


def test_stats_of_synthetic_clips(run, tmp_path):
    from edge.store import Memory
    from tests.factories import add_clips

    mem = tmp_path / "m.db"
    with Memory(mem) as m:
        add_clips(m, 4, finish=True)
    r = run("--memory", str(mem), "stats")
    assert r.exit_code == 0
    lines = r.output.splitlines()  # four MERIT keys a clip; 4 x 30 s = 0.03 h
    assert lines[:7] == [f"memory   {mem}", "sources  1", "clips    4", "keys     16",
                         "hours    0.03", "days     DAY1", "facts    0"]
    assert not any(line.startswith(("partial", "calls", "ingest")) for line in lines)
    s = json.loads(run("--memory", str(mem), "stats", "--json").output)
    assert (s["clips"], s["days"], s["calls"], s["ingest_cost"]["stages"]) == (4, ["DAY1"], [],
                                                                               {})


def test_record_refuses_anything_but_one_valid_source(run, tmp_path):
    mem = str(tmp_path / "m.db")
    for args, message in [((), "give exactly one source"),
                          (("--camera", "0", "--url", "x"), "give exactly one source"),
                          (("--url", str(tmp_path / "nope.mp4")), "no such file"),
                          (("--url", "rtsp://cam/1", "--realtime"), "--realtime applies to"),
                          (("--camera", "0", "--raw-budget", "lots"), "is not a size"),
                          (("--camera", "0", "--keep-raw", "a while"), "is not a duration")]:
        r = run("--memory", mem, "record", *args)
        assert r.exit_code == 2 and message in r.output, (args, r.output)
    assert not (tmp_path / "m.db").exists()


@pytest.mark.slow
def test_doctor_reports_every_role_working(run):
    r = run("doctor")
    assert r.exit_code == 0, r.output
    lines = r.output.strip().splitlines()
    for role in ("transcriber", "embedder", "captioner", "memory_llm", "solver"):
        assert any(line.startswith("ok") and f"role {role}" in line for line in lines), lines
    solver = next(line for line in lines if "role solver" in line)
    assert re.search(r"llama\.cpp (AVX-512|AVX2|generic) build", solver), solver


@pytest.mark.slow
def test_ingest_captions_then_ask_json(run, tmp_path):
    mem = str(tmp_path / "day1.db")
    r = run("ingest-captions", str(shared(EGOLIFE_DAY1)), "--limit", "30", "--no-pyramid",
            "--memory", mem,
            "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{"):])
    assert out["source"]["clips_added"] == 30 and out["memory_stats"]["clips"] == 30
    r = run("ask", "--memory", mem, "--at", "DAY1 11:21", "--rounds", "1", "--json",
            "--retrieval", "hybrid", "--loop", "single", "--choices", "Tasha|Alice|Shure|Lucia",
            "Who used the screwdriver first?")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{"):])
    assert out["moments"] and out["rounds"][0]["anchors"]
    assert out["answer"] in "ABCD" and len(out["answer"]) == 1
    assert out["extra"]["choices"]["B"] == "Alice" and out["extra"]["reason"]
    assert any(a["key"] in ("bm25", "event", "dialogue", "object", "summary")
               for a in out["rounds"][0]["anchors"])
    solver = out["usage"]["by_role"]["solver"]
    assert solver["calls"] - solver["retries"] == 1  # the single loop: one answer call
    assert out["usage"]["llm"]["tokens_in"] > 0
    r = run("stats", "--memory", mem)
    lines = r.output.splitlines()
    assert "clips    30" in lines
    assert any(line.split()[:3] == ["calls", "ask", "solver"] for line in lines), lines


def test_status_ages_are_whole_seconds():
    import time

    from edge.cli.render import ago

    assert ago(time.time() - 860.06) == "14 minutes and 20 seconds ago"
    assert ago(None) == "-"


def test_the_readme_names_a_broken_file_with_the_word_ingest_prints():
    """``edge ingest`` marks a file it cannot read ``! failed``; docs/memory.md says the same."""
    import re
    from types import SimpleNamespace

    from edge.cli.render.ingest import ingest_lines
    from edge.ingest.memory_writer import SourceResult

    report = SimpleNamespace(
        results=[SourceResult("broken.mp4", "failed", message="empty file")], media_seconds=0,
        usage={"llm": {"calls": 0, "tokens_in": 0, "tokens_out": 0}}, clips_added=0,
        seconds=0.1)
    lines = ingest_lines(report, ROOT / "m.db", {"clips": 0, "hours": 0.0})
    printed = lines[0].split()[1]
    assert (lines[0].split()[0], printed) == ("!", "failed")
    docs = " ".join((ROOT / "docs" / "memory.md").read_text().split())
    said = re.search(r"A broken file is listed as `?(\w+)`?", docs).group(1)
    assert said == printed


@pytest.mark.slow
def test_a_memory_that_refuses_writes_still_gets_its_answer(tmp_path, run):
    """`edge ask` writes one thing, its calls row, after the model calls; a memory that
    refuses it (a read-only file) lost the answer to the write error."""
    from edge.store import Memory
    from tests.factories import add_clips

    mem = tmp_path / "ro.db"
    with Memory(mem) as m:
        add_clips(m, ["I put the black power bank into the desk drawer."], keys="caption")
        m.db.execute("CREATE TRIGGER ro BEFORE INSERT ON calls BEGIN "
                     "SELECT RAISE(ABORT, 'attempt to write a readonly database'); END")
    r = run("--memory", mem, "ask", "--rounds", "1", "--loop", "single", "--json",
            "Where did I put the power bank?")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["moments"]
    assert "readonly database" in r.stderr and "`edge ask` were not recorded" in r.stderr
