"""The sections of ``edge bench report`` (:func:`edge.bench.summary.build_report`): each
reads its inputs, draws its plot (:mod:`.charts`) when there is something to draw, and
returns its Markdown with our numbers beside the papers' (:mod:`.papers`); a missing input
is a line in the section and in :attr:`Section.missing`. What a report reads is a
:class:`ReportInputs` (:func:`edge.bench.summary.load_inputs` fills it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import charts
from . import papers as P
from .answering import rounds_table
from .ingest_speed import CLIP_SECONDS
from .measure import environment, percentiles
from .speed_report import environment_lines

PLOTS = {"hit_vs_delta": "Hit rate vs Δ", "accuracy_vs_rounds": "Accuracy vs rounds",
         "latency_vs_memory": "Latency vs memory size",
         "cost_per_hour": "Cost per hour of footage"}
"""Plot name (the PNG is ``<report stem>_<name>.png``) → its title."""

NO_QA = "no `edge bench qa` result yet: run `edge bench qa --questions easy`"
NO_ANSWERS = ("no answered questions in the qa results yet: run `edge bench qa --questions "
              "hard --split dev --sample 24 --answer`")
NO_SPEED = "no speed result yet: run `edge bench speed`"


@dataclass
class ReportInputs:
    """What a report is built from: ``qa`` and ``knn`` results as ``(path, JSON)``, the
    ``speed`` result (or ``None``), and ``problems``: a line per input that was asked for
    but could not be read."""

    qa: list[tuple[Path, dict]] = field(default_factory=list)
    speed: tuple[Path, dict] | None = None
    knn: list[tuple[Path, dict]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


MERIT_HOURS = P.MERIT_TABLE6_COST["clips"] * CLIP_SECONDS / 3600.0
"""Hours of footage behind MERIT Table 6: its 6,223 key calls, one per 30 s clip (51.9 h)."""


@dataclass
class Section:
    """A report section: ``title``, Markdown ``lines``, its ``plot`` (``None``: none drawn)
    and ``missing``: lines naming inputs it lacked."""

    title: str
    lines: list[str] = field(default_factory=list)
    plot: Path | None = None
    missing: list[str] = field(default_factory=list)

    def lack(self, message: str) -> None:
        """Say in the section (and the report's list) that an input is missing."""
        if self.lines and self.lines[-1]:
            self.lines.append("")
        self.lines += [f"_{message[0].upper()}{message[1:]}._", ""]
        self.missing.append(message)


def _f(x, spec: str = ".3f") -> str:
    return "–" if x is None else format(x, spec)


def _pct(cell: str) -> float | None:
    """A paper's percentage cell as a 0–1 share."""
    v = P.number(cell)
    return None if v is None else v / 100.0


def _label(path: Path, r: dict) -> str:
    """A qa result's short name: set and split (``easy all``), with the file's stem when
    it is not ``bench qa``'s default name for them (``hard dev [lever_d600]``)."""
    label = f"{r.get('set', path.stem)} {r.get('split', '')}".strip()
    default = f"bench_qa_{r.get('set')}_{r.get('split')}"
    return label if path.stem == default else f"{label} [{path.stem}]"


def _no_part(inputs: ReportInputs, part: str) -> str:
    """What to say when the speed result lacks ``part`` (or there is none)."""
    if inputs.speed is None:
        return NO_SPEED
    return (f"no {part} part in `{inputs.speed[0].name}`: run `edge bench speed --only "
            f"{part}`")


def _image(s: Section, name: str) -> None:
    """The Markdown image of the section's plot, named by :data:`PLOTS`."""
    if s.plot:
        s.lines += [f"![{PLOTS[name]}]({s.plot.name})", ""]


def hit_section(inputs: ReportInputs, png: Path) -> Section:
    """Hit rate (0–1) of round 1's top-N anchors ± Δ per qa result and mode, beside MERIT
    Table 12's (GPT-5, over the rounds) and Table 5's; the plot is drawn from both."""
    s = Section(PLOTS["hit_vs_delta"])
    ours: list[charts.Series] = []
    rows = []
    for path, r in inputs.qa:
        for mode, summ in r["retrieval"].items():
            t = summ.get("total", {})
            ds = sorted(int(k.split("Δ")[1]) for k in t if k.startswith("hit@Δ"))
            label = f"ours: {_label(path, r)}, {mode}"
            ours.append((label, ds, [t[f"hit@Δ{d}"] for d in ds]))
            rows.append(f"| {label} (n={t.get('scored', t.get('n', '?'))}, "
                        f"top-{r.get('top_n', '?')}) | " + " | ".join(
                            _f(t.get(f"hit@Δ{d}")) for d in range(5)) + " |")
    t12 = P.MERIT_T12
    merit = ("MERIT Table 12 (GPT-5, EgoLifeQA)", [int(d) for d in t12.column("Δ")],
             [P.number(h) for h in t12.column("Hit.")])
    s.plot = charts.line_chart(png, PLOTS["hit_vs_delta"], "Δ (clips each side)",
                               "hit rate", ours, [merit], ylim=(0, 1.02), integer_x=True)
    _image(s, "hit_vs_delta")
    if not inputs.qa:
        s.lack(NO_QA)
    s.lines += ["| series | Δ0 | Δ1 | Δ2 | Δ3 | Δ4 |", "|---|---|---|---|---|---|", *rows,
                "| MERIT Table 12 (GPT-5, after its rounds) | "
                + " | ".join(t12.column("Hit.")) + " |", "",
                "MERIT Table 5 (hit rate, GPT-5): " + "; ".join(
                    f"{r[0]} {r[2]}" for r in P.MERIT_T5.rows)
                + ". MERIT Table 3: " + "; ".join(
                    f"{r[0]} NF {r[1]} {r[-1]}" for r in P.MERIT_T3.rows if "MERIT" in r[0])
                + ". Ours count round 1's anchors only."]
    return s


def _answer_rows(r: dict) -> list[dict]:
    """A qa result's ``per_question_answers`` with the keys :func:`rounds_table` reads."""
    return [{"scored": False, "correct": False, **row}
            for row in r.get("per_question_answers") or [] if "rounds" in row]


def _overall_lines(answered: list[tuple[str, list[dict]]]) -> list[str]:
    """Accuracy (%), rounds, calls, seconds p50/p95 per answered qa result, beside MERIT
    Table 1's and Table 10's rows."""
    lines = ["| run | questions | accuracy % | rounds (mean) | LLM calls (mean) | "
             "s p50 / p95 |", "|---|---|---|---|---|---|"]
    for label, rows in answered:
        n = len(rows)
        pc = percentiles([row["seconds"] for row in rows if "seconds" in row], digits=1)
        lines.append(f"| ours: {label} | {n} | {100 * sum(r['correct'] for r in rows) / n:.1f}"
                     f" | {sum(r['rounds'] for r in rows) / n:.2f} | "
                     f"{_f(sum(r.get('calls', 0) for r in rows) / n, '.2f')} | "
                     f"{_f(pc['p50'], '.1f')} / {_f(pc['p95'], '.1f')} |")
    for name in ("MERIT (Qwen3-VL-8B)", "MERIT (GPT-5)", "WorldMM (GPT-5)", "EgoRAG (GPT-5)"):
        lines.append(f"| MERIT Table 1: {name} | 500 | {P.MERIT_T1.row(name)['Avg']} | "
                     f"{'1.72 (Table 10)' if name == 'MERIT (GPT-5)' else '–'} | – | – |")
    return lines


def rounds_section(inputs: ReportInputs, png: Path) -> Section:
    """Accuracy (0–1) of the questions that stopped after r rounds and the cumulative hit
    rate by round r (:func:`edge.bench.answering.rounds_table`), beside MERIT Table 10."""
    s = Section(PLOTS["accuracy_vs_rounds"])
    answered = [(_label(p, r), rows) for p, r in inputs.qa if (rows := _answer_rows(r))]
    t10 = P.MERIT_T10
    rounds = [row for row in t10.rows if row[0] not in ("0", "Total")]
    xs = [int(row[0]) for row in rounds]
    col = {c: i for i, c in enumerate(t10.columns)}
    papers = [(f"MERIT Table 10: {who} {what}", xs, [_pct(row[col[f'{who} {key}']])
                                                      for row in rounds])
              for who in ("MERIT", "WorldMM*")
              for what, key in (("accuracy", "Acc."), ("cumulative hit", "C. HR"))]
    ours, table = [], ["| series | round | stopped there (share) | accuracy | cumulative hit |",
                       "|---|---|---|---|---|"]
    for label, rows in answered:
        by = rounds_table(rows)
        ours.append((f"ours: {label} accuracy", [b["round"] for b in by],
                     [b["accuracy"] for b in by]))
        if any(b["cumulative_hit"] is not None for b in by):  # older results lack it
            ours.append((f"ours: {label} cumulative hit", [b["round"] for b in by],
                         [b["cumulative_hit"] for b in by]))
        table += [f"| ours: {label} | {b['round']} | {b['answered']} | {_f(b['accuracy'])} | "
                  f"{_f(b['cumulative_hit'])} |" for b in by]
    table += [f"| MERIT Table 10: MERIT (GPT-5) | {row[0]} | {row[col['MERIT Prop.']]}% | "
              f"{row[col['MERIT Acc.']]}% | {row[col['MERIT C. HR']]}% |" for row in rounds]
    s.plot = charts.line_chart(png, PLOTS["accuracy_vs_rounds"], "rounds taken",
                               "share (0–1)", ours, papers, ylim=(0, 1.02), integer_x=True)
    _image(s, "accuracy_vs_rounds")
    if not answered:
        s.lack(NO_ANSWERS if inputs.qa else NO_QA)
    s.lines += [*table, "", f"MERIT Table 10: {t10.note}", "", *_overall_lines(answered)]
    return s


def _knn_series(inputs: ReportInputs) -> list[tuple[str, dict, int]]:
    """(source label, {size: result}, dim) of the speed result's ``knn`` and each
    knn_scale file's ``results``."""
    out = []
    if inputs.speed and inputs.speed[1].get("knn"):
        k = inputs.speed[1]["knn"]
        out.append(("speed", k["sizes"], k.get("dim", 384)))
    out += [(p.stem, d["results"], d.get("dim", 384)) for p, d in inputs.knn]
    return out


def _answer_latency_lines(inputs: ReportInputs) -> list[str]:
    """``edge ask`` seconds p50/p95 per profile (speed result) beside MARQUIS Table 20 and
    PyraVid §4.6."""
    lines = ["| system | per question | source |", "|---|---|---|"]
    answer = (inputs.speed[1].get("answer") or {}) if inputs.speed else {}
    for profile, res in answer.items():
        c, a = res["summary"]["command_seconds"], res["summary"]["answer_seconds"]
        lines.append(f"| ours `edge ask`, {profile} profile | command {_f(c['p50'], '.1f')} / "
                     f"{_f(c['p95'], '.1f')} s p50/p95 (answer {_f(a['p50'], '.1f')} / "
                     f"{_f(a['p95'], '.1f')} s) | edge bench speed |")
    t20, lat = P.MARQUIS_T20.row("Avg."), P.PYRAVID_LATENCY.rows[0]
    lines += [f"| MARQUIS RLM controller (article generation) | {t20['Wall (min)']} min wall |"
              " MARQUIS Table 20 |",
              f"| PyraVid {lat[0]} | {lat[1]} (VideoMME), {lat[2]} (LVBench), unit not stated "
              "| PyraVid §4.6 |"]
    return lines


def latency_section(inputs: ReportInputs, png: Path) -> Section:
    """KNN and five-type retrieval p50 ms versus key vectors (exact and index paths) from
    the speed result and knn_scale files; ``edge ask`` latency beside the papers'."""
    s = Section(PLOTS["latency_vs_memory"])
    lines: dict[str, list[tuple[int, float]]] = {}
    table = ["| source | size | vectors | KNN exact | KNN index | retrieve exact | "
             "retrieve index | recall@10 |", "|---|---|---|---|---|---|---|---|"]
    for label, sizes, dim in _knn_series(inputs):
        pts = sorted(((r["vectors"], name, r) for name, r in sizes.items() if "all" in r),
                     key=lambda t: t[0])
        for path_, what in (("exact", "knn"), ("index", "knn"), ("exact", "retrieve"),
                            ("index", "retrieve")):
            lines.setdefault(f"{dim}-d {what} {path_}", []).extend(
                (p[0], p[2]["all"][path_][what]["p50_ms"]) for p in pts)
        table += [f"| {label} ({dim}-d) | {name} | {v:,} | {r['all']['exact']['knn']['p50_ms']}"
                  f" | {r['all']['index']['knn']['p50_ms']} | "
                  f"{r['all']['exact']['retrieve']['p50_ms']} | "
                  f"{r['all']['index']['retrieve']['p50_ms']} | "
                  f"{r['all']['index']['recall_retrieve']:.3f} |" for v, name, r in pts]
    series = [(name, [x for x, _ in sorted(pts)], [y for _, y in sorted(pts)])
              for name, pts in sorted(lines.items())]
    if series:
        s.plot = charts.line_chart(png, PLOTS["latency_vs_memory"], "key vectors in memory",
                                   "ms per query (p50)", series, [], log=True)
        _image(s, "latency_vs_memory")
        s.lines += ["p50 ms; KNN = one key type's top 10, retrieve = MERIT max-sim over the "
                    "five key types; recall@10 of the index path against exact.", "", *table]
    else:
        s.lack(_no_part(inputs, "knn"))
    if not (inputs.speed and inputs.speed[1].get("answer")):
        s.lack(_no_part(inputs, "answer"))
    s.lines += ([""] if s.lines[-1] else []) + _answer_latency_lines(inputs)
    return s


def _cost_rows(inputs: ReportInputs) -> list[tuple[str, dict]]:
    """(name, {calls, tokens_in, tokens_out per hour; rt_s, llm_s: compute seconds per hour
    of footage}) for our profiles (speed ingest) and MERIT Table 6's rows (÷ 51.9 h)."""
    out = []
    ingest = (inputs.speed[1].get("ingest") or {}) if inputs.speed else {}
    for profile, res in ingest.items():
        t = res["total"]
        out.append((f"ours ({profile})", {
            "calls": t["per_hour"]["llm_calls"], "tokens_in": t["per_hour"]["llm_tokens_in"],
            "tokens_out": t["per_hour"]["llm_tokens_out"],
            "rt_s": t["realtime"]["rtf"] and t["realtime"]["rtf"] * 3600,
            "llm_s": t["llm_tier"]["rtf"] and t["llm_tier"]["rtf"] * 3600,
            "rtf": (t["realtime"]["rtf"], t["llm_tier"]["rtf"])}))
    for row in P.MERIT_T6.rows:
        name, calls, tin, tout = row
        out.append((f"MERIT Table 6: {name}", {
            k: (P.number(v) or 0) / MERIT_HOURS for k, v in
            (("calls", calls), ("tokens_in", tin), ("tokens_out", tout))}))
    return out


def cost_section(inputs: ReportInputs, png: Path) -> Section:
    """LLM calls and tokens per hour of footage (ours: the LLM tier on the speed run's
    footage; MERIT Table 6 ÷ 51.9 h) and our compute seconds per hour per tier."""
    s = Section(PLOTS["cost_per_hour"])
    rows = _cost_rows(inputs)
    groups = [name.replace("MERIT Table 6: ", "") for name, _ in rows]
    s.plot = charts.grouped_bars(png, PLOTS["cost_per_hour"], groups, [
        ("LLM calls per hour of footage", {"calls": [r["calls"] for _, r in rows]}),
        ("tokens per hour of footage", {"in": [r["tokens_in"] for _, r in rows],
                                        "out": [r["tokens_out"] for _, r in rows]})])
    _image(s, "cost_per_hour")
    if not any("rtf" in r for _, r in rows):
        s.lack(_no_part(inputs, "ingest"))
    s.lines += ["| system | LLM calls / h | tokens in / h | tokens out / h | real-time tier "
                "s / h (RTF) | LLM tier s / h (RTF) |", "|---|---|---|---|---|---|"]
    for name, r in rows:
        rtf = r.get("rtf")
        comp = (f"{_f(r['rt_s'], '.0f')} ({_f(rtf[0])}) | {_f(r['llm_s'], '.0f')} "
                f"({_f(rtf[1])})" if rtf else "– | –")
        s.lines.append(f"| {name} | {_f(r['calls'], ',.1f')} | {_f(r['tokens_in'], ',.0f')} | "
                       f"{_f(r['tokens_out'], ',.0f')} | {comp} |")
    s.lines += ["", f"MERIT Table 6 per hour: its totals ÷ {MERIT_HOURS:.1f} h (6,223 key "
                "calls, one per 30 s clip; §4.1's 44.3 h per video would give 17% more). "
                "Ours: the LLM tier (keys, and the PyraVid pyramid unless off) built by the "
                "profile's local model; compute seconds = RTF × 3600 on this machine."]
    return s


def ranking_section(inputs: ReportInputs) -> Section:
    """nDCG@10 and R@10 (0–1) of round 1 per qa result and mode beside MARQUIS Tables 1
    and 2 (a different corpus and task: article retrieval on MAGMaR2026)."""
    s = Section("Retrieval ranking beside MARQUIS")
    s.lines += ["| run | nDCG@10 | R@10 | source |", "|---|---|---|---|"]
    for path, r in inputs.qa:
        for mode, summ in r["retrieval"].items():
            t = summ.get("total", {})
            s.lines.append(f"| ours: {_label(path, r)}, {mode} | {_f(t.get('nDCG@10'))} | "
                           f"{_f(t.get('R@10'))} | edge bench qa |")
    for table, names in ((P.MARQUIS_T1, ("OmniEmbed", "Max Sim", "RRF K=10", "RRF K=60")),
                         (P.MARQUIS_T2, ("RRF K=10 + RV",))):
        for name in names:
            row = table.row(name)
            s.lines.append(f"| {name} | {row['nDCG@10']} | {row['R@10']} | {table.source} |")
    if not inputs.qa:
        s.lack(NO_QA)
    return s


def inputs_lines(inputs: ReportInputs, missing: list[str]) -> list[str]:
    """Which result files the report read, the ones it could not, and what is missing."""
    lines = ["Inputs:"]
    lines += [f"- qa: `{p}` ({_label(p, r)}, {r.get('questions', '?')} questions, profile "
              f"{r.get('profile') or '–'})" for p, r in inputs.qa] or ["- qa: none"]
    lines.append(f"- speed: `{inputs.speed[0]}`" if inputs.speed else "- speed: none")
    lines += [f"- knn_scale: `{p}`" for p, _ in inputs.knn]
    lines += [f"- could not read {x}" for x in inputs.problems]
    lines += [f"- missing: {m}" for m in dict.fromkeys(missing)]
    return lines


def _qa_config(path: Path, r: dict) -> str:
    """The levers of a qa result in one line."""
    o = r.get("options", {})
    keys = ",".join(o.get("key_types", []) or [])
    return (f"- `{path.name}`: {_label(path, r)}, {r.get('questions')} questions, profile "
            f"{r.get('profile') or '–'}, top-{r.get('top_n')}, retrieval "
            f"{o.get('retrieval')}, keys {keys}, fusion {o.get('fusion')} k={o.get('rrf_k')}, "
            f"loop {o.get('loop')}, R≤{o.get('max_rounds')}, Δ{o.get('delta')}; memory "
            f"`{r.get('memory')}`" + (f"; {_env_short(r['environment'])}"
                                     if r.get("environment") else "; machine not recorded"))


def _env_short(env: dict) -> str:
    m = env.get("machine", {})
    return f"{m.get('cpu_model')}, {m.get('cores')} cores, {m.get('ram_gb')} GB"


def environment_lines_all(inputs: ReportInputs) -> list[str]:
    """Configuration, machine and package versions of each input, and of this machine."""
    lines = ["## Configuration, machine and versions", ""]
    lines += [_qa_config(p, r) for p, r in inputs.qa]
    if inputs.speed:
        cfg = inputs.speed[1].get("config", {})
        parts = cfg.get("parts", [])
        footage = (f", footage {', '.join(Path(f).name for f in cfg.get('footage', []))} "
                   f"(LLM tier {cfg.get('llm_tier')}, pyramid {cfg.get('pyramid')})"
                   if {"ingest", "rss"} & set(parts) else "")
        lines += [f"- `{inputs.speed[0].name}`: profiles {', '.join(cfg.get('profiles', []))}, "
                  f"parts {', '.join(parts)}, KNN sizes {', '.join(cfg.get('sizes', []))} "
                  f"({cfg.get('dim')}-d, {cfg.get('queries')} queries){footage}; "
                  + " ".join(environment_lines(inputs.speed[1].get("environment")))]
    here = environment()
    return lines + ["", "This report was built on: " + " ".join(environment_lines(here))]


def papers_lines() -> list[str]:
    """Every quoted table (:data:`edge.bench.papers.TABLES`) as Markdown."""
    lines: list[str] = []
    for t in P.TABLES:
        lines += [*t.markdown(), ""]
    return lines
