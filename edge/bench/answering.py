"""Answering a question set with :func:`edge.answer.ask` (``edge bench qa --answer``):
accuracy on the options, rounds, LLM calls, prompt tokens sent and evaluated (the rest came
from llama.cpp's KV cache), output tokens, seconds p50/p95, and hit@Δ2
over every round's anchors — totals and per type, tag and part."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from edge.answer import ask
from edge.answer.options import AskOptions
from edge.store import Memory

from .qa import CaptionIndex, groups, question_row, window_hits
from .questions import QAQuestion


def answer_one(memory: Memory, hub, q: QAQuestion, opts: AskOptions,
               index: CaptionIndex) -> dict:
    """Ask ``q`` (its options as choices, its query time) and measure the run: the letter,
    whether it is right, rounds, LLM calls and tokens, seconds, and — when scorable —
    whether a target lies within ±2 clips of any round's anchors (``hit@Δ2``/``all@Δ2``)."""
    row = question_row(q, index)
    mark = hub.usage.mark()
    res = ask(memory, hub, q.question, replace(opts, at=q.at, choices=list(q.choices)))
    llm = hub.usage.summary(mark)["llm"]
    row.update({"answer": res.answer, "truth": q.answer, "correct": res.answer == q.answer,
                "rounds": len(res.rounds), "calls": llm["calls"],
                "tokens_in": llm["tokens_in"],
                "tokens_evaluated": llm.get("tokens_evaluated", llm["tokens_in"]),
                "tokens_out": llm["tokens_out"], "seconds": round(res.seconds, 2),
                "sufficient": res.sufficient, "note": res.note})
    if row["scored"]:
        seen = [index.pos[index.index_of[a["clip_id"]]] for r in res.rounds
                for a in r.anchors if a["clip_id"] in index.index_of]
        hit, every = window_hits(seen, {index.pos[t] for t in q.target_clips}, 2)
        row.update({"hit@Δ2": hit, "all@Δ2": every})
    return row


def run_answers(memory: Memory, hub, questions: list[QAQuestion], index: CaptionIndex,
                opts: AskOptions, on_answer: Callable[[dict], None] | None = None
                ) -> list[dict]:
    """:func:`answer_one` for every question; ``on_answer(row)`` after each (progress, or
    saving partial results)."""
    rows = []
    for q in questions:
        rows.append(answer_one(memory, hub, q, opts, index))
        if on_answer:
            on_answer(rows[-1])
    return rows


def _mean(values: list[float], digits: int = 3) -> float | None:
    """The mean rounded to ``digits`` (an int for 0), ``None`` without values."""
    if not values:
        return None
    m = statistics.mean(values)
    return round(m, digits) if digits else round(m)


def summarize_answers(rows: list[dict]) -> dict:
    """Accuracy, hit@Δ2/all@Δ2 (scored rows only), means of rounds, calls and tokens, and
    seconds p50/p95 of ``rows``."""
    if not rows:
        return {"n": 0}
    scored = [r for r in rows if r["scored"]]
    secs = [r["seconds"] for r in rows]
    return {"n": len(rows), "scored": len(scored),
            "accuracy": _mean([float(r["correct"]) for r in rows]),
            "hit@Δ2": _mean([float(r["hit@Δ2"]) for r in scored]),
            "all@Δ2": _mean([float(r["all@Δ2"]) for r in scored]),
            "rounds_mean": _mean([r["rounds"] for r in rows], 2),
            "calls_mean": _mean([r["calls"] for r in rows], 2),
            "rounds_1": _mean([float(r["rounds"] == 1) for r in rows]),
            "tokens_in_mean": _mean([r["tokens_in"] for r in rows], 0),
            "tokens_evaluated_mean": _mean([r.get("tokens_evaluated", r["tokens_in"])
                                            for r in rows], 0),
            "tokens_out_mean": _mean([r["tokens_out"] for r in rows], 0),
            "seconds_p50": round(float(np.percentile(secs, 50)), 1),
            "seconds_p95": round(float(np.percentile(secs, 95)), 1)}


def answer_summary(rows: list[dict]) -> dict:
    """``total`` and ``by_type``/``by_tag``/``by_part`` (:func:`summarize_answers`)."""
    return {"total": summarize_answers(rows),
            **{f"by_{k}": {name: summarize_answers(g) for name, g in v.items()}
               for k, v in groups(rows).items()}}
