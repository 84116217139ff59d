"""``edge bench report``: one Markdown file with PNG plots from the JSON results of ``edge
bench qa`` and ``edge bench speed`` (and ``benchmarks/knn_scale.py``), our numbers beside
the papers' (:mod:`.papers`), with the configuration, package versions and machine that
produced them (issue 27 item 5).

Plots (:mod:`.charts`): hit rate vs Δ (ours: ``retrieval[mode].total["hit@Δd"]``; MERIT
Table 12), accuracy vs rounds (ours: ``per_question_answers`` by ``rounds``; MERIT Table
10), latency vs memory size (``knn`` of a speed result, knn_scale files), cost per hour of
footage (``ingest`` of a speed result; MERIT Table 6). An input that is missing or
unreadable is said in the report ("no speed result yet: run `edge bench speed`"), never an
error. The sections' Markdown is :mod:`.summary_sections`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from . import summary_sections as sec
from .run import results_dir
from .summary_sections import PLOTS, ReportInputs


def _read(path: Path, problems: list[str], must: str, kind: str) -> dict | None:
    """``path``'s JSON object if it has the key ``must``; else ``None`` and a line in
    ``problems`` (missing, unreadable, or not a ``kind`` result)."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        problems.append(f"{path}: not found")
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        problems.append(f"{path}: not readable JSON ({e})")
        return None
    if not isinstance(data, dict) or must not in data:
        problems.append(f"{path}: not an {kind} result (no `{must}`)")
        return None
    return data


def load_inputs(qa: list[Path] | None = None, speed: Path | None = None,
                knn: list[Path] | None = None) -> ReportInputs:
    """Read the inputs; defaults from :func:`results_dir`: every ``bench_qa_*.json``,
    ``bench_speed.json`` and every ``knn_scale_*.json`` (a default that is absent is not a
    problem, only a missing section)."""
    d = results_dir()
    inputs = ReportInputs()
    for path in qa if qa is not None else sorted(d.glob("bench_qa_*.json")):
        if (data := _read(path, inputs.problems, "retrieval", "`edge bench qa`")) is not None:
            inputs.qa.append((Path(path), data))
    speed_path = speed or d / "bench_speed.json"
    if speed or speed_path.exists():
        data = _read(speed_path, inputs.problems, "knn", "`edge bench speed`")
        inputs.speed = (speed_path, data) if data is not None else None
    for path in knn if knn is not None else sorted(d.glob("knn_scale_*.json")):
        if (data := _read(path, inputs.problems, "results", "knn_scale")) is not None:
            inputs.knn.append((Path(path), data))
    return inputs


def build_report(inputs: ReportInputs, out: Path) -> dict:
    """Write the Markdown to ``out`` and its PNGs beside it (``<stem>_<plot>.png``, see
    :data:`PLOTS`). Returns ``{"markdown": path, "plots": {name: path}, "missing": [lines
    saying what was not there]}``; matplotlib is imported on first use (:mod:`.charts`)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    png = {name: out.parent / f"{out.stem}_{name}.png" for name in PLOTS}
    parts = [sec.hit_section(inputs, png["hit_vs_delta"]),
             sec.rounds_section(inputs, png["accuracy_vs_rounds"]),
             sec.latency_section(inputs, png["latency_vs_memory"]),
             sec.cost_section(inputs, png["cost_per_hour"]),
             sec.ranking_section(inputs)]
    missing = list(dict.fromkeys(m for p in parts for m in p.missing))
    lines = ["# edge bench report", "",
             f"Built {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. Our numbers come "
             "from the JSON results below; the papers' are quoted verbatim from their texts "
             "(`../shared/papers/`, last section), each with its table or section. The "
             "papers ran other models on other data (EgoLifeQA's 500 questions over 44.3 h "
             "per video with GPT-5 or Qwen3-VL-8B; MARQUIS on MAGMaR2026): read them as "
             "context, not as a head-to-head.", "",
             *sec.inputs_lines(inputs, missing), "", *sec.environment_lines_all(inputs), ""]
    for p in parts:
        lines += [f"## {p.title}", "", *p.lines, ""]
    lines += ["## The papers' tables (quoted)", "", *sec.papers_lines()]
    out.write_text("\n".join(lines) + "\n")
    drawn = {p.plot for p in parts}
    for name in PLOTS:
        if png[name] not in drawn:
            png[name].unlink(missing_ok=True)  # a previous report's plot would mislead
    return {"markdown": out, "plots": {n: png[n] for n in PLOTS if png[n] in drawn},
            "missing": missing}
