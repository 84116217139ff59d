"""``edge bench speed`` and ``edge bench report`` (edge.bench.speed, .summary): percentiles
against hand-computed values, a real subprocess's peak RSS, the KNN part on a tiny synthetic
memory (real SQLite + sqlite-vec) with its JSON and Markdown, the answer rows read from
``edge ask --json``, and the report from small hand-written results: each plot named and a
valid PNG, missing inputs said, the papers' quoted numbers in their rows. No model loads
(the ``slow`` test at the end runs the real thing on a short clip)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from edge.bench import summary
from edge.bench.charts import PNG_SIGNATURE
from edge.bench.measure import CommandRun, percentiles, run_measured
from edge.bench.papers import MERIT_TABLE6_COST, TABLES, number
from edge.bench.questions import parse_question
from edge.bench.speed import (
    ask_row,
    ask_time,
    parse_parts,
    parse_sizes,
    run_speed,
    speed_plan,
    summarize_asks,
)
from edge.bench.speed_report import speed_markdown
from edge.bench.summary import PLOTS, build_report, load_inputs
from edge.cli import main
from edge.errors import BenchError
from tests.conftest import FOOTAGE, ROOT, shared

PAPERS = ROOT.parent / "shared" / "papers"
NEW_MODULES = ("measure", "speed", "speed_report", "ingest_speed", "knn_speed", "papers",
               "charts", "summary", "summary_sections")


# ---- measuring --------------------------------------------------------------------------

def test_percentiles_match_hand_computed_values():
    # numpy's linear interpolation: rank = q/100 * (n - 1)
    assert percentiles([10, 1, 4, 3, 2]) == {"p50": 3.0, "p95": 8.8}  # 4 + 0.8 * (10 - 4)
    assert percentiles([1, 2, 3, 4]) == {"p50": 2.5, "p95": 3.85}  # 3 + 0.85 * (4 - 3)
    assert percentiles([7.0]) == {"p50": 7.0, "p95": 7.0}
    assert percentiles([]) == {"p50": None, "p95": None}
    assert percentiles([0.1234, 0.5678], qs=(90,), digits=2) == {"p90": 0.52}


def test_the_peak_rss_of_a_real_child_process():
    """A child that touches 150 MB peaks above it; an idle interpreter far below, also
    while this process holds 400 MB (a forked child would start at the parent's peak)."""
    held = bytearray(400_000_000)
    held[::4096] = b"x" * len(held[::4096])  # resident, not just reserved
    big = run_measured([sys.executable, "-c", "b = bytearray(150_000_000)\n"
                        "for i in range(0, len(b), 4096): b[i] = 1\nprint('done')"])
    small = run_measured([sys.executable, "-c", "print('hi')"])
    assert big.rc == 0 and big.stdout.strip() == "done" and not big.timed_out
    assert 400 > big.peak_rss_mb >= 150 > 100 > small.peak_rss_mb > 1
    assert 0 < small.seconds < big.seconds + 60
    del held


def test_a_command_past_its_timeout_is_killed_and_said():
    run = run_measured([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.5)
    assert run.timed_out and run.rc < 0 and run.seconds < 10 and run.peak_rss_mb is None
    missing = run_measured(["/nonexistent/edge-command"])
    assert missing.rc == 127 and "cannot run /nonexistent/edge-command" in missing.stderr
    failed = run_measured([sys.executable, "-c", "import sys; sys.exit('broken')"])
    assert failed.rc == 1 and failed.summary()["stderr_tail"] == ["broken"]
    assert "stdout" not in failed.summary()


# ---- the speed command ------------------------------------------------------------------

def test_parts_and_sizes_are_checked():
    assert parse_parts("knn, ingest") == ("ingest", "knn")
    assert parse_sizes("1k,2500") == ("1k", "2500")
    with pytest.raises(BenchError, match="unknown part.*latency"):
        parse_parts("knn,latency")
    with pytest.raises(BenchError, match="--sizes"):
        parse_sizes("10q")
    with pytest.raises(BenchError, match="holds no clip"):
        parse_sizes("3")


@pytest.fixture(scope="module")
def knn_run(tmp_path_factory):
    """``edge bench speed --only knn`` on two tiny synthetic memories."""
    out = tmp_path_factory.mktemp("speed") / "speed.json"
    plan = speed_plan(out=out, parts=("knn",), sizes=("500", "1k"), queries=4)
    return run_speed(plan), out


def test_the_knn_part_measures_exact_and_index_per_size(knn_run):
    result, out = knn_run
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    knn = result["knn"]
    assert knn["dim"] == 384 and knn["queries"] == 4 and list(knn["sizes"]) == ["500", "1k"]
    r = knn["sizes"]["1k"]
    assert r["vectors"] == 1000 and r["clips"] == 200
    for scope in ("all", "7d", "180d"):
        for path in ("exact", "index"):
            row = r[scope][path]
            assert 0 < row["knn"]["p50_ms"] <= row["knn"]["p95_ms"]
            assert 0 < row["retrieve"]["p50_ms"] <= row["retrieve"]["p95_ms"]
        assert r[scope]["exact"]["recall_knn"] == 1.0  # exact against itself
    assert r["memory_mb_per_vector"] > 0 and "index_build_s" in r
    assert result["ingest"] is result["answer"] is result["rss"] is None


def test_the_speed_json_records_machine_packages_and_config(knn_run):
    result, _ = knn_run
    m = result["environment"]["machine"]
    assert m["cores"] >= 1 and m["cpu_model"] and m["ram_gb"] > 0 and m["python"]
    assert result["environment"]["packages"]["numpy"] and "sqlite-vec" in \
        result["environment"]["packages"]
    assert result["config"]["parts"] == ["knn"] and result["config"]["sizes"] == ["500", "1k"]


def test_the_speed_markdown_has_every_section(knn_run):
    result, out = knn_run
    md = out.with_suffix(".md").read_text()
    for heading in ("# edge bench speed", "## Ingest: real-time factor per stage and tier",
                    "## Answer latency (`edge ask`, one process per question)",
                    "## KNN latency versus memory size", "## Peak RSS per command"):
        assert heading in md
    assert "Not measured in this run (`--only` left out `ingest`)" in md
    assert "| 1k | 1,000 |" in md and "| 1k | last 7d |" in md
    assert result["environment"]["machine"]["cpu_model"] in md


def test_edge_bench_speed_on_the_command_line(tmp_path, cli_home):
    out = tmp_path / "s.json"
    res = CliRunner().invoke(main, ["bench", "speed", "--only", "knn", "--sizes", "500",
                                    "--queries", "2", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "## KNN latency versus memory size" in res.output and out.exists()
    bad = CliRunner().invoke(main, ["bench", "speed", "--only", "warp"])
    assert bad.exit_code == 1 and "unknown part(s) warp" in bad.output


def test_an_edge_ask_json_becomes_a_row_and_rows_a_summary():
    q = parse_question({"ID": "Q7", "query_time": {"date": "DAY2", "time": "09050700"},
                        "type": "EntityLog", "question": "Who?", "choice_a": "a",
                        "choice_b": "b", "choice_c": "c", "choice_d": "d", "answer": "B",
                        "target_time": {"date": "DAY1", "time": "11000000"}})
    assert ask_time(q) == "DAY2 09:05:07"
    out = json.dumps({"answer": "B", "seconds": 4.5, "rounds": [{}, {}],
                      "usage": {"llm": {"calls": 2, "tokens_in": 900, "tokens_out": 40}}})
    rows = [ask_row(q, CommandRun(["edge"], 0, s, 700.0 + s, out, "")) for s in (6.0, 8.0)]
    rows.append(ask_row(q, CommandRun(["edge"], 1, 1.0, 90.0, "", "Error: no memory")))
    assert rows[0] | {} == {"id": "Q7", "rc": 0, "command_seconds": 6.0, "peak_rss_mb": 706.0,
                            "answer": "B", "truth": "B", "seconds": 4.5, "rounds": 2,
                            "calls": 2, "tokens_in": 900, "tokens_out": 40}
    assert rows[2]["error"] == "Error: no memory"
    s = summarize_asks(rows)
    assert s["n"] == 2 and s["failed"] == 1 and s["peak_rss_mb"] == 708.0
    assert s["command_seconds"] == {"p50": 7.0, "p95": 7.9}  # 6 + 0.95 * (8 - 6)
    assert s["answer_seconds"] == {"p50": 4.5, "p95": 4.5} and s["rounds_mean"] == 2.0


# ---- the report -------------------------------------------------------------------------

QA = {"set": "easy", "split": "all", "questions": 4, "scored": 4, "top_n": 5,
      "profile": "tiny", "memory": "day1.db",
      "options": {"retrieval": "hybrid", "key_types": ["event", "summary"], "fusion": "rrf",
                  "rrf_k": 10, "loop": "adaptive", "max_rounds": 5, "delta": 2},
      "retrieval": {"question": {"total": {"n": 4, "scored": 4, "hit@Δ0": 0.5,
                                           "hit@Δ1": 0.75, "hit@Δ2": 1.0, "all@Δ2": 0.75,
                                           "R@10": 0.812, "nDCG@10": 0.693}}},
      "per_question_answers": [
          {"id": "Q1", "rounds": 1, "correct": True, "scored": True, "first_hit_round": 1,
           "seconds": 10.0, "calls": 1},
          {"id": "Q2", "rounds": 1, "correct": False, "scored": True, "first_hit_round": None,
           "seconds": 12.0, "calls": 1},
          {"id": "Q3", "rounds": 2, "correct": True, "scored": True, "first_hit_round": 2,
           "seconds": 20.0, "calls": 2},
          {"id": "Q4", "rounds": 2, "correct": True, "scored": False, "seconds": 30.0,
           "calls": 2}]}


def _knn_size(vectors: int, exact: float, index: float) -> dict:
    path = lambda ms: {"knn": {"p50_ms": ms, "p95_ms": round(ms * 1.1, 2)},  # noqa: E731
                       "retrieve": {"p50_ms": round(ms * 5, 2), "p95_ms": round(ms * 6, 2)},
                       "recall_knn": 1.0, "recall_retrieve": 0.99}
    return {"vectors": vectors, "clips": vectors // 5, "insert_s": 1.0, "index_build_s": 0.5,
            "memory_mb_per_vector": 0.0022, "index_mb_per_vector": 0.00045,
            "index_load_s": 0.01, "rss_index_mb": 3.0,
            "all": {"exact": path(exact), "index": path(index)}}


def _ingest_total() -> dict:
    stages = {s: {"seconds": 1.0, "rtf": 0.014, "calls": 1, "tokens_in": 0, "tokens_out": 0}
              for s in ("decode", "caption", "embed", "store")}
    return {"file": "**all**", "media_seconds": 71.1,
            "realtime": {"wall_seconds": 5.0, "rtf": 0.0703, "stages": stages},
            "llm_tier": {"wall_seconds": 21.3, "rtf": 0.2996, "clips": 3,
                         "seconds_per_clip": 7.1, "llm_calls": 3, "llm_tokens_in": 2400,
                         "llm_tokens_evaluated": 2000, "llm_tokens_out": 600, "by_role": {}},
            "per_hour": {"llm_calls": 151.9, "llm_tokens_in": 121519.0,
                         "llm_tokens_out": 30379.7}}


SPEED = {
    "kind": "speed", "out": "s.json",
    "config": {"parts": ["ingest", "answer", "knn", "rss"], "profiles": ["tiny"],
               "sizes": ["10k", "100k"], "dim": 384, "queries": 20,
               "footage": ["ego.mp4"], "llm_tier": True, "pyramid": True},
    "environment": {"machine": {"cpu_model": "Test CPU 9000", "cores": 2, "cores_usable": 2,
                                "ram_gb": 23.4, "platform": "Linux", "python": "3.11.7"},
                    "packages": {"edge-memory": "0.1.0", "numpy": "2.4.6"},
                    "at": "2026-01-01T00:00:00Z"},
    "ingest": {"tiny": {"pyramid": True, "llm_tier": True, "threads": 2,
                        "model_load_seconds": 1.5, "models": {},
                        "files": [_ingest_total() | {"file": "ego.mp4"}],
                        "total": _ingest_total(),
                        "merit_table6_per_hour": {"llm_calls": 120.0, "tokens_in": 15715.9,
                                                  "tokens_out": 5553.6},
                        "day_backlog": None}},
    "answer": {"tiny": {"memory": "m.db", "rows": [], "summary": {
        "n": 3, "failed": 0, "command_seconds": {"p50": 14.2, "p95": 19.8},
        "answer_seconds": {"p50": 11.1, "p95": 16.4}, "peak_rss_mb": 812.5,
        "rounds_mean": 1.0, "calls_mean": 1.33}}},
    "knn": {"dim": 384, "queries": 20,
            "sizes": {"10k": _knn_size(10_000, 1.4, 0.9), "100k": _knn_size(100_000, 13.8, 2.5)}},
    "rss": {"tiny": [{"command": c, "argv": [], "rc": 0, "seconds": s, "peak_rss_mb": m,
                      "timed_out": False, "stderr_tail": []}
                     for c, s, m in (("ingest", 40.2, 1333.3), ("search", 3.1, 402.0),
                                     ("ask", 15.0, 812.5))]},
}


@pytest.fixture()
def results(tmp_path, monkeypatch):
    """Hand-written qa and speed results in a results folder of their own."""
    monkeypatch.setattr(summary, "results_dir", lambda: tmp_path)
    (tmp_path / "bench_qa_easy_all.json").write_text(json.dumps(QA))
    (tmp_path / "bench_speed.json").write_text(json.dumps(SPEED))
    return tmp_path


def test_the_report_names_each_plot_and_writes_valid_pngs(results):
    done = build_report(load_inputs(), results / "report.md")
    md = done["markdown"].read_text()
    assert set(done["plots"]) == set(PLOTS) and done["missing"] == []
    for name, title in PLOTS.items():
        png = results / f"report_{name}.png"
        assert done["plots"][name] == png
        assert f"## {title}" in md and f"![{title}](report_{name}.png)" in md
        data = png.read_bytes()
        assert data[:8] == PNG_SIGNATURE and len(data) > 1000


def test_the_report_puts_our_numbers_beside_the_papers(results):
    md = build_report(load_inputs(), results / "report.md")["markdown"].read_text()
    assert "| ours: easy all, question (n=4, top-5) | 0.500 | 0.750 | 1.000 | – | – |" in md
    assert "| MERIT Table 12 (GPT-5, after its rounds) | 0.40 | 0.52 | 0.56 | 0.60 | 0.61 |" \
        in md
    # accuracy by rounds: 2 stopped after 1 round (1 right), 2 after 2 (both right);
    # cumulative hit over the 3 scored with a first hit round: 1/3 by round 1, 2/3 by 2
    assert "| ours: easy all | 1 | 0.5 | 0.500 | 0.333 |" in md
    assert "| ours: easy all | 2 | 0.5 | 1.000 | 0.667 |" in md
    assert "| MERIT Table 10: MERIT (GPT-5) | 1 | 68.2% | 74.5% | 46.4% |" in md
    assert "| ours: easy all | 4 | 75.0 | 1.50 | 1.50 | 16.0 / 28.5 |" in md
    assert "| MERIT Table 1: MERIT (GPT-5) | 500 | 71.2 | 1.72 (Table 10) | – | – |" in md
    assert "| speed (384-d) | 100k | 100,000 | 13.8 | 2.5 | 69.0 | 12.5 | 0.990 |" in md
    assert "command 14.2 / 19.8 s p50/p95 (answer 11.1 / 16.4 s)" in md
    assert "| MARQUIS RLM controller (article generation) | 36±12 min wall |" in md
    assert "| ours (tiny) | 151.9 | 121,519 | 30,380 | 253 (0.070) | 1079 (0.300) |" in md
    assert "| MERIT Table 6: MERIT | 120.0 | 15,716 | 5,554 | – | – |" in md
    assert "| ours: easy all, question | 0.693 | 0.812 | edge bench qa |" in md
    assert "| RRF K=10 + RV | 0.759 | 0.652 | MARQUIS Table 2 |" in md


def test_the_report_shows_configuration_machine_and_versions(results):
    md = build_report(load_inputs(), results / "report.md")["markdown"].read_text()
    assert "## Configuration, machine and versions" in md
    assert "Test CPU 9000, 2 cores (2 usable), 23.4 GB RAM" in md
    assert "edge-memory 0.1.0, numpy 2.4.6" in md
    assert "retrieval hybrid, keys event,summary, fusion rrf k=10, loop adaptive, R≤5" in md
    assert "This report was built on: Machine:" in md


def test_the_papers_rows_carry_the_quoted_numbers(results):
    md = build_report(load_inputs(), results / "report.md")["markdown"].read_text()
    for row in ("| MERIT | 6,223 | 815K | 288K |", "| WorldMM* | 23,731 | 6,860K | 2,472K |",
                "| MERIT (GPT-5) | 67.2 | 70.6 | 73.8 | 74.4 | 71.4 | 71.2 |",
                "| MERIT (GPT-5) | ✓ | 67.2 | 70.6 | 73.8 | 74.4 | 71.4 | 71.2 | 0.56 |",
                "| GPT-5 | 10 | 67.2 | 70.6 | 73.8 | 74.4 | 71.4 | 71.2 |",
                "| 1 | 214 | 42.8 | 73.4 | 37.4 | 341 | 68.2 | 74.5 | 46.4 |",
                "| PyraVid(32B) | 46.7 | 56.3 | 69.1 | 58.5 |",
                "| RRF K=10 | 0.700 | 0.739 | 0.777 | 0.612 | 0.735 | 0.832 |",
                "| Iter-QA-Base | 3.83 | 8 | 14.0% | 34.7 | 31.3 | 26.8 | 25.8 |",
                "| Avg. | 92±2 | 1.1±0.4 | 36±12 | 438±109 | 326±72 |"):
        assert row in md, row
    for t in TABLES:
        assert f"**{t.source}**" in md
    assert MERIT_TABLE6_COST == {"clips": 6223, "llm_calls": 6223, "tokens_in": 815_000,
                                 "tokens_out": 288_000}
    assert [number(c) for c in ("2,472K", "81.2%", "36±12", "–")] == [2_472_000, 81.2, 36, None]


def test_every_quoted_number_is_in_the_paper_text():
    """Verbatim: each cell of each table occurs in its paper's text (``$\\pm$`` read as ±)."""
    if not PAPERS.is_dir():
        pytest.skip(f"papers not found: {PAPERS}")
    for t in TABLES:
        text = (PAPERS / t.file).read_text().replace("$\\pm$", "±")
        for row in t.rows:
            for cell in row[1:]:
                assert cell in ("✗", "✓", "–") or cell in text, (t.source, row[0], cell)


def test_missing_inputs_are_reported_not_fatal(tmp_path, monkeypatch):
    monkeypatch.setattr(summary, "results_dir", lambda: tmp_path)
    (tmp_path / "junk.json").write_text(json.dumps({"hello": 1}))
    inputs = load_inputs(qa=[tmp_path / "junk.json"], speed=tmp_path / "none.json")
    done = build_report(inputs, tmp_path / "r.md")
    md = done["markdown"].read_text()
    assert "no `edge bench qa` result yet: run `edge bench qa --questions easy`" in md
    assert "no speed result yet: run `edge bench speed`" in md
    assert "junk.json: not an `edge bench qa` result (no `retrieval`)" in md
    assert "none.json: not found" in md
    assert "latency_vs_memory" not in done["plots"]  # nothing to draw: no plot, said instead
    assert not (tmp_path / "r_latency_vs_memory.png").exists()
    assert set(done["plots"]) == {"hit_vs_delta", "accuracy_vs_rounds", "cost_per_hour"}
    assert "no speed result yet: run `edge bench speed`" in done["missing"]


def test_a_speed_result_without_a_part_names_the_command(results):
    part = {**SPEED, "ingest": None, "answer": None}
    (results / "bench_speed.json").write_text(json.dumps(part))
    md = build_report(load_inputs(), results / "r.md")["markdown"].read_text()
    assert "No ingest part in `bench_speed.json`: run `edge bench speed --only ingest`" in md
    assert "No answer part in `bench_speed.json`: run `edge bench speed --only answer`" in md


def test_the_speed_markdown_of_every_part():
    md = speed_markdown(SPEED)
    assert "Machine: Test CPU 9000, 2 cores (2 usable), 23.4 GB RAM" in md
    assert "| **all** | 71.1 | 5.0 | 0.070 |" in md and "| 0.300 | 7.1 | 3 | 2400 / 600 |" in md
    assert "| tiny | 3 (0) | 14.2 | 19.8 | 11.1 | 16.4 | 1.0 | 1.33 | 812.5 | `m.db` |" in md
    assert "| 10k | 10,000 | 1.4 (1.54) | 0.9 (0.99) | 7.0 | 4.5 | 1.000 / 0.990 | 0.5 |" in md
    assert "| tiny | `edge ingest` | 1333.3 | 40.2 | 0 |" in md


def test_edge_bench_report_on_the_command_line(results, cli_home):
    res = CliRunner().invoke(main, ["bench", "report", "--out", str(results / "cli.md")])
    assert res.exit_code == 0, res.output
    assert f"wrote {results / 'cli.md'}" in res.output and "cost_per_hour:" in res.output
    assert (results / "cli_hit_vs_delta.png").read_bytes()[:8] == PNG_SIGNATURE


def test_the_new_modules_stay_small():
    """Each new bench module under 400 lines, each function under 60."""
    for name in NEW_MODULES:
        path = ROOT / "edge" / "bench" / f"{name}.py"
        source = path.read_text()
        assert len(source.splitlines()) < 400, path
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef):
                assert node.end_lineno - node.lineno < 60, (path, node.name)


# ---- the real thing (slow) --------------------------------------------------------------

@pytest.mark.slow
def test_a_real_speed_run_on_a_short_clip(tmp_path, monkeypatch, cli_home):
    """Every part with the tiny profile on a 5 s clip, a 10-clip answer memory and one
    question: RTF per stage and tier, ask latency, RSS per command."""
    import edge.bench.speed as speed_mod

    clip = shared(FOOTAGE / "tiny_drawing_noaudio.mp4")
    monkeypatch.setattr(speed_mod, "results_dir", lambda: tmp_path)
    res = CliRunner().invoke(main, [
        "bench", "speed", "--profile", "tiny", "--footage", str(clip), "--sizes", "1k",
        "--queries", "3", "--clips", "10", "--asks", "1", "--json",
        "--out", str(tmp_path / "s.json")])
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "s.json").read_text())
    total = result["ingest"]["tiny"]["total"]
    assert total["media_seconds"] > 4 and total["realtime"]["rtf"] > 0
    assert total["realtime"]["stages"]["decode"]["seconds"] > 0
    assert result["answer"]["tiny"]["summary"]["n"] == 1
    rss = {r["command"]: r for r in result["rss"]["tiny"]}
    assert set(rss) == {"ingest", "ingest-captions", "search", "ask"}
    assert all(r["rc"] == 0 and r["peak_rss_mb"] > 50 for r in rss.values())
    assert Path(result["markdown"]).exists()
