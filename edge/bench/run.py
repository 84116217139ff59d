"""One ``edge bench qa`` run: resolve the files (:func:`plan`), prepare the memory, measure
retrieval (and answering), and write the whole result as JSON (:func:`run_qa`)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from edge import config
from edge.answer.options import AskOptions, with_fusion_of
from edge.embedding import memory_embedder
from edge.errors import BenchError
from edge.store import Memory

from .answering import answer_summary, run_answers
from .qa import MODES, ensure_memory, retrieval_summary, run_retrieval
from .questions import ROOT, in_repo, load_questions, resolve_set, select


@dataclass(frozen=True)
class Plan:
    """What one run measures: the files, the question ``split`` and ``sample``, the
    retrieval ``modes``, the :class:`AskOptions` (levers), whether to ``answer`` too (with
    the hub's ``profile``, recorded), and where the JSON result goes (``out``)."""

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


def _options(opts: AskOptions) -> dict:
    """The levers of the run as JSON (per question fields left out)."""
    d = asdict(opts)
    for k in ("at", "choices"):
        d.pop(k)
    return d


def write_result(result: dict, out: Path) -> None:
    """Write the result JSON (parents created)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")


def _answer(memory: Memory, hub, questions: list, index, p: Plan, result: dict,
            say: Callable[[str], None]) -> list[dict]:
    """``--answer``: every question through ``ask``; the rows go to
    ``result["per_question_answers"]`` as they come and the JSON is rewritten after each,
    so partial results survive an interrupt."""
    rows = result["per_question_answers"] = []

    def saved(row: dict) -> None:
        rows.append(row)
        gold = (f" gold {row['gold_answer']} distilled {row['gold_distilled_answer']}"
                if "gold" in row else "")
        say(f"{row['id']}: {row['answer']} (truth {row['truth']}) {row['rounds']} rounds "
            f"{row['calls']} calls {row['seconds']:.0f} s{gold}")
        write_result(result, p.out)

    run_answers(memory, hub, questions, index, p.opts, on_answer=saved, loss=p.loss)
    return rows


def run_qa(p: Plan, hub, say: Callable[[str], None] = lambda _line: None) -> dict:
    """Measure the plan and write its result to ``p.out``; returns the result (see the
    README's Benchmarks section for its keys). ``say``: progress lines.

    Raises :class:`BenchError` (bad question file, nothing selected), ``CaptionFileError``
    and the store's and models' setup errors.
    """
    from edge.captions import read_caption_file

    n_captions = len(read_caption_file(p.captions))
    questions = select(load_questions(p.questions, n_captions), p.split, p.sample)
    if not questions:
        raise BenchError(f"no question of split {p.split!r} in {p.questions}")
    p.memory.parent.mkdir(parents=True, exist_ok=True)
    with Memory(p.memory) as memory:
        index, added = ensure_memory(memory, hub, p.captions)
        if added:
            say(f"ingested {added} clips of {p.captions.name} into {p.memory}")
        rows = run_retrieval(memory, hub, questions, index, p.opts, p.modes)
        result = {"set": p.name, "questions_file": str(p.questions),
                  "captions_file": str(p.captions), "memory": str(p.memory),
                  "out": str(p.out), "profile": p.profile,
                  "split": p.split, "sample": p.sample, "questions": len(rows),
                  "scored": sum(r["scored"] for r in rows), "unscored": _unscored(rows),
                  "clips_added": added, "top_n": p.opts.top_n or 5, "deep": 10,
                  "modes": list(p.modes),
                  "options": _options(with_fusion_of(p.opts, memory_embedder(memory, hub))),
                  "retrieval": retrieval_summary(rows, p.modes), "answering": None,
                  "per_question": rows}
        write_result(result, p.out)
        if p.answer:
            result["answering"] = answer_summary(_answer(memory, hub, questions, index, p,
                                                         result, say))
    write_result(result, p.out)
    return result
