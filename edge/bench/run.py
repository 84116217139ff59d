"""One ``edge bench qa`` run: resolve the files (:func:`plan`), prepare the memory, measure
retrieval (and answering), and write the whole result as JSON (:func:`run_qa`)."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from edge import config
from edge.answer.options import AskOptions, with_fusion_of
from edge.errors import BenchError
from edge.store import Memory
from edge.store.embedding import memory_embedder

from .answering import answer_summary, run_answers
from .measure import environment
from .qa import MODES, CaptionIndex, ensure_memory, retrieval_summary, run_retrieval
from .questions import ROOT, in_repo, load_questions, resolve_set, select


@dataclass(frozen=True)
class Plan:
    """What one run measures: the files, the question ``split`` and ``sample``, the
    retrieval ``modes``, the :class:`AskOptions` (levers), whether to ``answer`` too (with
    the hub's ``profile``, recorded), and where the JSON result goes (``out``).
    ``open_ended``: answer without the options, judged by the solver; ``workers``: answer
    that many questions at once (a remote solver only); ``resume``: keep the answers
    already in ``out`` from a run with the same settings and answer only the rest."""

    name: str
    questions: Path
    captions: Path
    memory: Path
    out: Path
    split: str = "all"
    sample: int | None = None
    modes: tuple[str, ...] = MODES
    opts: AskOptions = AskOptions()
    answer: bool = False
    loss: bool = True
    profile: str = ""
    open_ended: bool = False
    workers: int = 1
    resume: bool = False


def results_dir() -> Path:
    """``benchmarks/results`` of the checkout ``edge`` runs from, else ``<cache>/bench``."""
    return ROOT / "benchmarks" / "results" if in_repo() else config.cache_dir() / "bench"


def plan(questions: str, captions: Path | None = None, memory: Path | None = None,
         out: Path | None = None, **settings) -> Plan:
    """Resolve ``--questions`` (a path, or ``easy``/``hard``), the caption file (a named
    set's own when not given), the memory (default: the named set's cache, else
    ``<captions stem>.db`` in :func:`results_dir`) and ``out`` (default
    ``bench_qa_<set>_<split>.json`` there). ``settings``: the other :class:`Plan` fields.
    Raises :class:`BenchError` when the question or caption file is missing."""
    qpath, named_captions, named = resolve_set(questions)
    captions = captions or named_captions
    if captions is None:
        raise BenchError("--captions is needed with a question file (the caption file its "
                         "target_clips index); --questions easy|hard know their own")
    for label, path in (("question", qpath), ("caption", captions)):
        if not Path(path).is_file():
            raise BenchError(f"{label} file not found: {path}")
    name = questions if named else qpath.stem
    memory = memory or results_dir() / (named.memory if named else f"{captions.stem}.db")
    split = settings.get("split", "all")
    out = out or results_dir() / f"bench_qa_{name}_{split}.json"
    return Plan(name, qpath, Path(captions), Path(memory), Path(out), **settings)


def _unscored(rows: list[dict]) -> dict[str, int]:
    """How many questions could not be scored for hits, per reason."""
    return dict(Counter(r["unscored"] for r in rows if not r["scored"]))


def options_json(opts: AskOptions) -> dict:
    """The run's levers as JSON (the per-question ``at`` and ``choices`` left out)."""
    return {k: v for k, v in asdict(opts).items() if k not in ("at", "choices")}


def write_result(result: dict, out: Path) -> None:
    """Write the result JSON (parents created) through a temporary file and a rename, so a
    run killed while writing leaves the previous complete file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    os.replace(tmp, out)


RESUME_KEYS = ("questions_file", "captions_file", "memory", "profile", "options", "open_ended")
"""What must match for ``--resume`` to keep a previous run's answers."""


def resumable(p: Plan, result: dict, say: Callable[[str], None]) -> dict[str, dict]:
    """``--resume``: the answers already in ``p.out`` (question id → row), when that file
    is from a run with the same :data:`RESUME_KEYS` and ``p.loss``; ``{}`` otherwise (said
    why)."""
    if not p.resume:
        return {}
    try:
        old = json.loads(p.out.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        say(f"--resume: {p.out} is not readable ({e}); answering every question")
        return {}
    differs = [k for k in RESUME_KEYS if old.get(k) != result.get(k)]
    if old.get("loss") != p.loss:
        differs.append("loss")
    if differs:
        say(f"--resume: {p.out} is from a run with other {', '.join(differs)}; answering "
            "every question")
        return {}
    return {r["id"]: r for r in old.get("per_question_answers") or []}


def _answer(memory: Memory, hub, questions: list, index, p: Plan, result: dict,
            say: Callable[[str], None], done: dict[str, dict]) -> list[dict]:
    """``--answer``: every question through ``ask`` but those in ``done`` (``--resume``);
    the rows go to ``result["per_question_answers"]`` as they come and the JSON is
    rewritten after each, so partial results survive an interrupt; a progress bar with ETA
    on a terminal."""
    from tqdm import tqdm

    todo = [q for q in questions if q.id not in done]
    if done:
        say(f"--resume: {len(questions) - len(todo)} answers kept from {p.out}, "
            f"{len(todo)} to go")
    rows = result["per_question_answers"] = [done[q.id] for q in questions if q.id in done]

    bar = tqdm(total=len(todo), unit="question", desc="answering", leave=False,
               disable=None)  # None: only on a terminal

    def saved(row: dict) -> None:
        rows.append(row)
        gold = (f" gold {row['gold_answer']} distilled {row['gold_distilled_answer']}"
                if "gold" in row else "")
        answer = str(row["answer"])
        answer = answer if len(answer) <= 60 else answer[:57] + "..."
        judged = f" judged {row['judged']}" if "judged" in row else ""
        line = (f"{row['id']}: {answer}{judged} (truth {str(row['truth'])[:40]}) "
                f"{row['rounds']} rounds {row['calls']} calls {row['seconds']:.0f} s{gold}")
        with bar.external_write_mode():
            say(line)
        bar.update()
        write_result(result, p.out)

    with bar:
        run_answers(memory, hub, todo, index, p.opts, on_answer=saved, loss=p.loss,
                    open_ended=p.open_ended, workers=p.workers)
    order = {q.id: n for n, q in enumerate(questions)}
    rows.sort(key=lambda r: order[r["id"]])
    return rows


def ingest_missing(memory: Memory, hub, p: Plan,
                   say: Callable[[str], None]) -> tuple[CaptionIndex, int]:
    """:func:`~edge.bench.qa.ensure_memory` that says first what it will ingest — the hard
    set's memory is 3,119 clips, about 39 minutes on 2 cores with EmbeddingGemma — with a
    progress bar and ETA on a terminal. Returns its ``(index, clips added)``."""
    from tqdm import tqdm

    bar = None

    def missing(n: int, records: int) -> None:
        nonlocal bar
        say(f"{p.memory} holds {records - n} of the {records} clips of {p.captions.name}: "
            f"ingesting {n} first (the file's keys, embedded; no LLM call)")
        bar = tqdm(total=records, unit="clip", desc="ingesting", leave=False,
                   disable=None)  # None: only on a terminal

    try:
        return ensure_memory(memory, hub, p.captions, on_missing=missing,
                             on_progress=lambda n: bar.update(n) if bar else None)
    finally:
        if bar is not None:
            bar.close()


def run_qa(p: Plan, hub, say: Callable[[str], None] = lambda _line: None) -> dict:
    """Measure the plan and write its result to ``p.out``; returns the result (see the
    docs/benchmarks.md for its keys). ``say``: progress lines.

    Raises :class:`BenchError` (bad question file, nothing selected), ``CaptionFileError``
    and the store's and models' setup errors.
    """
    from edge.ingest.captions import read_caption_file

    if p.workers > 1 and "solver" not in hub.remote_roles():
        raise BenchError(f"--workers {p.workers} needs a remote solver (an OpenAI-compatible "
                         "server: see docs/profiles.md, remote roles); a local llama.cpp model "
                         "answers one call at a time, so run with --workers 1")
    n_captions = len(read_caption_file(p.captions))
    questions = select(load_questions(p.questions, n_captions), p.split, p.sample)
    if not questions:
        raise BenchError(f"no question of split {p.split!r} in {p.questions}")
    p.memory.parent.mkdir(parents=True, exist_ok=True)
    with Memory(p.memory) as memory:
        index, added = ingest_missing(memory, hub, p, say)
        if added:
            say(f"ingested {added} clips of {p.captions.name} into {p.memory}")
        rows = run_retrieval(memory, hub, questions, index, p.opts, p.modes)
        result = {"set": p.name, "questions_file": str(p.questions),
                  "captions_file": str(p.captions), "memory": str(p.memory),
                  "out": str(p.out), "profile": p.profile,
                  "split": p.split, "sample": p.sample, "questions": len(rows),
                  "scored": sum(r["scored"] for r in rows), "unscored": _unscored(rows),
                  "clips_added": added, "open_ended": p.open_ended, "loss": p.loss,
                  "workers": p.workers, "top_n": p.opts.top_n or 5, "deep": 10,
                  "modes": list(p.modes),
                  "options": options_json(with_fusion_of(p.opts, memory_embedder(memory, hub))),
                  "retrieval": retrieval_summary(rows, p.modes), "answering": None,
                  "environment": environment(),  # machine, package versions (bench report)
                  "per_question": rows}
        done = resumable(p, result, say) if p.answer else {}
        write_result(result, p.out)
        if p.answer:
            result["answering"] = answer_summary(_answer(memory, hub, questions, index, p,
                                                         result, say, done))
    write_result(result, p.out)
    return result
