"""``edge bench speed``: how fast and how big, on this machine (issue 27 item 4).

Four parts, each optional (``--only``):

- ``ingest``: real-time factor per stage and tier (real-time tier vs LLM tier) on footage,
  per profile, in this process with the models loaded first (:mod:`.ingest_speed`);
- ``answer``: ``edge ask --json`` run as a command per question on a memory, per profile:
  command seconds (process start to exit: what a user waits, model loading included), the
  answer's own seconds, rounds, LLM calls, peak RSS; p50/p95 (:func:`measure_answer`);
- ``knn``: key search latency versus memory size on synthetic memories (:mod:`.knn_speed`);
- ``rss``: peak resident memory (MB) of ``edge ingest``, ``ingest-captions``, ``search``
  and ``ask`` each run as its own process (:func:`~edge.bench.measure.run_measured`).

The answer memory is ``--memory`` or, per profile, the first ``clips`` records of a caption
file ingested by ``edge ingest-captions`` (file keys, the real-time tier: enough for
``ask``) into :func:`~edge.bench.run.results_dir` — kept, so a second run reuses it.
:func:`run_speed` writes the JSON and the Markdown (:mod:`.speed_report`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from edge.errors import BenchError

from . import knn_speed
from .measure import CommandRun, environment, percentiles, run_measured
from .questions import ROOT, QAQuestion, load_questions, select, shared_data
from .run import results_dir, write_result

PARTS = ("ingest", "answer", "knn", "rss")
"""What ``--only`` chooses from, in the order they run."""

Say = Callable[[str], None]


@dataclass(frozen=True)
class SpeedPlan:
    """What one ``edge bench speed`` run measures: the ``parts``, the ``profiles``, the
    ``footage`` files (ingest, and the first one for ``edge ingest``'s RSS), the LLM tier
    (``llm_tier``, with the ``pyramid``), the KNN ``sizes`` (key vectors: ``10k``, ``100k``
    … or a number), ``queries`` and ``dim``, the answer ``memory`` (``None``: built from
    ``captions``' first ``clips`` records), the ``questions`` file and how many of it
    (``n_questions``), a per-command ``timeout`` (seconds) and where the JSON goes
    (``out``; the Markdown beside it, ``.md``)."""

    out: Path
    parts: tuple[str, ...] = PARTS
    profiles: tuple[str, ...] = ("small",)
    footage: tuple[Path, ...] = ()
    llm_tier: bool = True
    pyramid: bool = True
    sizes: tuple[str, ...] = ("10k", "100k")
    queries: int = 20
    dim: int = knn_speed.DIM
    memory: Path | None = None
    captions: Path = Path()
    clips: int = 120
    questions: Path = Path()
    n_questions: int = 3
    timeout: float = 1800.0


def parse_parts(text: str) -> tuple[str, ...]:
    """``--only ingest,knn`` → the parts in :data:`PARTS` order; ``BenchError`` for an
    unknown name."""
    names = [p.strip() for p in text.split(",") if p.strip()]
    unknown = sorted(set(names) - set(PARTS))
    if unknown or not names:
        raise BenchError(f"--only: unknown part(s) {', '.join(unknown) or '(none)'}; "
                         f"choose from {', '.join(PARTS)}")
    return tuple(p for p in PARTS if p in names)


def parse_sizes(text: str) -> tuple[str, ...]:
    """``--sizes 10k,100k`` → the names, each checked (:func:`knn_speed.parse_size`)."""
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    try:
        for s in names:
            knn_speed.parse_size(s)
    except ValueError as e:
        raise BenchError(f"--sizes: {e} (names: {', '.join(knn_speed.SIZES)}, or a "
                         "count)") from None
    return names


def speed_plan(*, footage: tuple[Path, ...] = (), captions: Path | None = None,
               questions: Path | None = None, out: Path | None = None,
               memory: Path | None = None, **settings) -> SpeedPlan:
    """Resolve the defaults: footage = every media file of the shared ``footage/`` folder
    (a folder given is searched), captions = the shared EgoLife day-1 file, questions = the
    easy set's file, ``out`` = ``bench_speed.json`` in :func:`results_dir`. ``settings``: the
    other :class:`SpeedPlan` fields. Raises :class:`BenchError` for a missing file that a
    chosen part needs."""
    from edge.ingest.run import find_media

    parts = settings.get("parts", PARTS)
    files = tuple(find_media(list(footage) or [shared_data() / "footage"]))
    captions = captions or shared_data() / "egolife" / "A1_JAKE_day1_captions.json"
    questions = questions or ROOT / "benchmarks" / "egolife_day1_questions.json"
    needs = []
    if {"ingest", "rss"} & set(parts):
        needs += [(p, "footage") for p in (list(footage) or [shared_data() / "footage"])]
        if not files:
            raise BenchError(f"no media file in {', '.join(map(str, footage)) or 'footage'}")
    if {"answer", "rss"} & set(parts):
        needs += [(questions, "question")] + ([(memory, "memory")] if memory else
                                              [(captions, "caption")])
    for path, label in needs:
        if not Path(path).exists():
            raise BenchError(f"{label} file not found: {path}")
    return SpeedPlan(out=out or results_dir() / "bench_speed.json", footage=files,
                     captions=Path(captions), questions=Path(questions), memory=memory,
                     **settings)


def edge_argv(profile: str, memory: Path, *args: str) -> list[str]:
    """``python -m edge.cli --profile P --memory M ARGS…``: this interpreter's ``edge``."""
    return [sys.executable, "-m", "edge.cli", "--profile", profile, "--memory", str(memory),
            *map(str, args)]


def ask_time(q: QAQuestion) -> str:
    """``--at`` of a question: ``"DAY1 11:21:02"`` from its query time."""
    s = round(q.at - (q.day - 1) * 86400.0)
    return f"DAY{q.day} {s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def pick_questions(path: Path, clips: int | None, n: int) -> list[QAQuestion]:
    """``n`` questions spread over ``path``, preferring those whose target clips are all
    among the first ``clips`` records (in the answer memory; ``None``: any question)."""
    qs = load_questions(path)
    inside = [q for q in qs if clips is None
              or (q.target_clips and max(q.target_clips) < clips)]
    return select(inside if len(inside) >= n else qs, "all", n)


def answer_memory(plan: SpeedPlan, profile: str, say: Say) -> tuple[Path, CommandRun | None]:
    """The memory ``ask`` runs on for ``profile``: ``plan.memory``, or the caption file's
    first ``plan.clips`` records ingested with ``edge ingest-captions`` (measured; an
    existing file is reused, ``None`` then)."""
    if plan.memory:
        return plan.memory, None
    path = results_dir() / f"speed_{plan.captions.stem}_{plan.clips}_{profile}.db"
    if path.exists():
        say(f"{profile}: reusing {path}")
        return path, None
    path.parent.mkdir(parents=True, exist_ok=True)
    say(f"{profile}: edge ingest-captions {plan.captions.name} --limit {plan.clips} ...")
    run = run_measured(edge_argv(profile, path, "ingest-captions", plan.captions,
                                 "--limit", plan.clips), timeout=plan.timeout)
    if run.rc:
        raise BenchError(f"edge ingest-captions failed ({run.rc}): "
                         f"{run.stderr.strip()[-500:]}")
    return path, run


def ask_row(q: QAQuestion, run: CommandRun) -> dict:
    """One ``edge ask --json`` run: the question's id, command seconds, peak RSS (MB) and,
    from its JSON, the answer, the answer's own seconds, rounds, LLM calls and tokens."""
    row = {"id": q.id, "rc": run.rc, "command_seconds": run.seconds,
           "peak_rss_mb": run.peak_rss_mb}
    try:
        res = json.loads(run.stdout)
    except json.JSONDecodeError:
        return row | {"error": run.stderr.strip()[-300:] or "no JSON on stdout"}
    llm = (res.get("usage") or {}).get("llm", {})
    return row | {"answer": res.get("answer"), "truth": q.answer,
                  "seconds": res.get("seconds"), "rounds": len(res.get("rounds") or []),
                  "calls": llm.get("calls"), "tokens_in": llm.get("tokens_in"),
                  "tokens_out": llm.get("tokens_out")}


def summarize_asks(rows: list[dict]) -> dict:
    """p50/p95 of command seconds and of the answers' own seconds, peak RSS (max, MB),
    means of rounds and LLM calls, over the rows that succeeded (``n``; ``failed``)."""
    ok = [r for r in rows if r["rc"] == 0 and "error" not in r]

    def mean(key: str) -> float | None:
        return round(sum(r[key] or 0 for r in ok) / len(ok), 2) if ok else None

    return {"n": len(ok), "failed": len(rows) - len(ok),
            "command_seconds": percentiles([r["command_seconds"] for r in ok], digits=2),
            "answer_seconds": percentiles([r["seconds"] for r in ok
                                           if r.get("seconds") is not None], digits=2),
            "peak_rss_mb": max((r["peak_rss_mb"] for r in ok if r["peak_rss_mb"]),
                               default=None),
            "rounds_mean": mean("rounds"), "calls_mean": mean("calls")}


def measure_answer(plan: SpeedPlan, profile: str, memory: Path, questions: list[QAQuestion],
                   say: Say) -> dict:
    """``edge ask --json --at … --choices …`` per question on ``memory`` with ``profile``:
    ``{"memory", "rows": [ask_row], "summary": summarize_asks}``."""
    rows = []
    for q in questions:
        run = run_measured(edge_argv(profile, memory, "ask", "--json", "--at", ask_time(q),
                                     "--choices", "|".join(q.choices), q.question),
                           timeout=plan.timeout)
        rows.append(ask_row(q, run))
        say(f"{profile}: ask {q.id}: {rows[-1].get('answer')} (truth {q.answer}), "
            f"{run.seconds:.1f} s, {run.peak_rss_mb} MB")
    return {"memory": str(memory), "rows": rows, "summary": summarize_asks(rows)}


def measure_rss(plan: SpeedPlan, profile: str, memory: Path, q: QAQuestion, workdir: Path,
                say: Say) -> list[dict]:
    """Peak RSS and seconds of ``edge ingest`` (the first footage file into a fresh memory,
    both tiers unless ``llm_tier`` is off), ``edge search`` and ``edge ask`` (one question on
    ``memory``), each its own process: ``[{"command", …CommandRun.summary}]``."""
    target = workdir / f"rss_{profile}.db"
    ingest = ["ingest", plan.footage[0], "--start", "2025-03-01 09:00",
              *([] if plan.pyramid else ["--no-pyramid"]),
              *([] if plan.llm_tier else ["--later"])]
    commands = [("ingest", edge_argv(profile, target, *ingest)),
                ("search", edge_argv(profile, memory, "search", "--at", ask_time(q),
                                     q.question)),
                ("ask", edge_argv(profile, memory, "ask", "--at", ask_time(q), "--choices",
                                  "|".join(q.choices), q.question))]
    out = []
    for name, argv in commands:
        run = run_measured(argv, timeout=plan.timeout)
        out.append({"command": name} | run.summary())
        say(f"{profile}: edge {name}: {run.peak_rss_mb} MB peak, {run.seconds:.1f} s"
            + (f" (exit {run.rc})" if run.rc else ""))
    return out


def measure_knn(plan: SpeedPlan, workdir: Path, say: Say) -> dict:
    """:func:`knn_speed.synthetic` per size: ``{"dim", "queries", "sizes": {size: …}}``."""
    return {"dim": plan.dim, "queries": plan.queries,
            "sizes": {s: knn_speed.synthetic(s, workdir, plan.queries, dim=plan.dim,
                                             say=say) for s in plan.sizes}}


def _profile_hub(profile: str):
    """A model hub of ``profile`` (the shipped manifest with the user's profiles)."""
    from edge import config
    from models import ModelHub
    from models.registry import load_manifest_with_user

    manifest = load_manifest_with_user(config.user_profiles_file())
    return ModelHub(manifest.profile(profile), config.models_dir(), manifest=manifest)


def _ingest(plan: SpeedPlan, profile: str, workdir: Path, say: Say) -> dict:
    """The ``ingest`` part of one profile (:func:`ingest_speed.measure_ingest`)."""
    from .ingest_speed import measure_ingest

    hub = _profile_hub(profile)
    try:
        work = workdir / f"ingest_{profile}"
        work.mkdir(exist_ok=True)
        return measure_ingest(hub, list(plan.footage), work, pyramid=plan.pyramid,
                              llm_tier=plan.llm_tier, say=say)
    finally:
        hub.close()


def _config(plan: SpeedPlan) -> dict:
    """The plan as JSON values (paths as strings, tuples as lists)."""
    def value(v):
        if isinstance(v, tuple | list):
            return [value(x) for x in v]
        return str(v) if isinstance(v, Path) else v

    return {k: value(v) for k, v in asdict(plan).items()}


def _per_profile(plan: SpeedPlan, profile: str, result: dict, workdir: Path,
                 say: Say) -> None:
    """The profile's ingest, answer and rss parts into ``result``."""
    if "ingest" in plan.parts:
        result["ingest"][profile] = _ingest(plan, profile, workdir, say)
    if not {"answer", "rss"} & set(plan.parts):
        return
    memory, built = answer_memory(plan, profile, say)
    questions = pick_questions(plan.questions, None if plan.memory else plan.clips,
                               plan.n_questions)
    if "answer" in plan.parts:
        result["answer"][profile] = measure_answer(plan, profile, memory, questions, say)
    if "rss" in plan.parts:
        rows = measure_rss(plan, profile, memory, questions[0], workdir, say)
        if built:
            rows.insert(1, {"command": "ingest-captions"} | built.summary())
        result["rss"][profile] = rows


def run_speed(plan: SpeedPlan, say: Say = lambda _line: None) -> dict:
    """Measure the plan's parts and write the JSON to ``plan.out`` and the Markdown to
    ``plan.out`` with ``.md``; returns the result: ``config``, ``environment`` (machine,
    packages), and per part (``None`` when not run) ``ingest``/``answer``/``rss`` as
    ``{profile: …}`` and ``knn``. Raises :class:`BenchError` when the answer memory cannot
    be built."""
    from .speed_report import speed_markdown

    result: dict = {"kind": "speed", "config": _config(plan), "environment": environment(),
                    "out": str(plan.out), "markdown": str(plan.out.with_suffix(".md"))}
    for part in PARTS:
        result[part] = {} if part in plan.parts else None
    with tempfile.TemporaryDirectory(prefix="edge-speed-") as tmp:
        for profile in plan.profiles:
            _per_profile(plan, profile, result, Path(tmp), say)
        if "knn" in plan.parts:
            result["knn"] = measure_knn(plan, Path(tmp), say)
    write_result(result, plan.out)
    plan.out.with_suffix(".md").write_text(speed_markdown(result) + "\n")
    return result
