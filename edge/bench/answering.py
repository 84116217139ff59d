"""Answering a question set with :func:`edge.answer.ask` (``edge bench qa --answer``):
accuracy on the options, rounds, LLM calls, prompt tokens sent and evaluated (the rest came
from llama.cpp's KV cache), output tokens, seconds p50/p95, and hit@Δ2
over every round's anchors — totals and per type, tag and part.

**The loss, decomposed** (issue 26): for a question whose target clips are in memory the
same solver also answers from (a) the target clips' captions as its only notes (``gold``:
what the model can read, the ceiling), (b) those clips through the distiller ``ask`` uses
(``gold_distilled``), next to (c) ``ask``'s own first round (``round1``: the first round's
reply of the ``adaptive`` loop) and (d) the whole loop: the solver's own letter of its last
reply (``solver``) and the answer after the option grounding checked it (``loop``,
:mod:`edge.answer.grounding`). Each step's change is what it loses or wins: gold →
distilled, the distiller; distilled → round 1, retrieval and packing; round 1 → solver,
the later rounds; solver → loop, the grounding.

**Citations that hold** (issue 26 item 3): with ``--open`` every clip an answer cites is
judged by the report checker — the solver's support (:func:`edge.answer.support.support`
with the citation prompt: does the clip state or show part of the answer?), precise at
:data:`~edge.answer.support.SUPPORT_THRESHOLD` as in ``edge report``; ``ask``'s own support
check already judged them, and what it judged before dropping any is kept too — and, where
the question's target clips are known, by where it lies: within ±2 clips of a target."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace

from edge.answer import ask
from edge.answer.options import AskOptions
from edge.answer.question import start
from edge.answer.steps import decide
from edge.answer.support import SUPPORT_THRESHOLD, check_support
from edge.recall.retrieval import Neighborhood, ScoredClip
from edge.store import Memory

from .judge import judge_answer
from .measure import percentiles
from .qa import CaptionIndex, groups, question_row, window_hits
from .questions import QAQuestion

LOSS_STEPS = ("gold", "gold_distilled", "round1", "solver", "loop")
"""The steps of the loss table, from what the model can read to what ``ask`` answers."""

def gold_answer(memory: Memory, hub, q: QAQuestion, opts: AskOptions, index: CaptionIndex,
                *, distilled: bool) -> tuple[str | None, list[int]]:
    """The solver's answer to ``q`` (its options, its query time) with the target clips as
    the only notes — their captions as they are (``raw`` view, each cut to
    ``opts.anchor_tokens``), or ``distilled`` as ``ask``'s ``adaptive`` loop distils its
    evidence — in one decision call of ``ask``'s own prompt (:func:`edge.answer.steps.decide`);
    ``None`` when the call failed. ``q`` must be scorable (every target in memory)."""
    run = start(memory, hub, q.question,
                replace(opts, at=q.at, choices=list(q.choices), max_rounds=1), None)
    ids = [index.clip_ids[t] for t in q.target_clips]
    clips = memory.clips([i for i in ids if i is not None])
    anchors = [ScoredClip(i, 1.0, "gold") for i in ids if i in clips]
    run.evidence.add_neighborhoods(1, anchors,
                                   [Neighborhood(clips[a.clip_id], 1.0, [], []) for a in anchors])
    run.tried.add(run.question.lower())
    packed = run.pack("distilled" if distilled else "raw")
    decision = decide(run, 1, packed)
    return (decision["answer"] if decision else None), [p.item.clip.id for p in packed]


def answer_one(memory: Memory, hub, q: QAQuestion, opts: AskOptions,
               index: CaptionIndex, *, loss: bool = False, open_ended: bool = False) -> dict:
    """Ask ``q`` (its options as choices, its query time) and measure the run: the letter,
    whether it is right, rounds, LLM calls and tokens, seconds, and — when scorable —
    whether a target lies within ±2 clips of any round's anchors (``hit@Δ2``/``all@Δ2``).
    ``loss``: a scorable question is also answered from its target clips
    (:func:`gold_answer`, raw and distilled: two more solver calls, not counted in the
    row's calls and seconds), and the first round's reply is scored (``round1``).
    ``open_ended``: asked without its options, the free answer judged against the right
    option's text by the solver (:func:`edge.bench.judge.judge_answer`; ``judged`` is
    ``None`` when the judge's reply was unusable, counted wrong); no loss steps."""
    row = question_row(q, index)
    with hub.usage.thread_scope():  # this question's calls only, also beside other workers
        res = ask(memory, hub, q.question,
                  replace(opts, at=q.at, choices=None if open_ended else list(q.choices)))
        llm = hub.usage.summary()["llm"]
    row.update({"answer": res.answer, "truth": q.answer, "correct": res.answer == q.answer,
                "rounds": len(res.rounds), "calls": llm["calls"],
                "tokens_in": llm["tokens_in"],
                "tokens_evaluated": llm.get("tokens_evaluated", llm["tokens_in"]),
                "tokens_out": llm["tokens_out"], "seconds": round(res.seconds, 2),
                "sufficient": res.sufficient, "note": res.note})
    if row["scored"]:
        row.update(round_hits(res.rounds, q, index))
    if open_ended:
        reference = q.choices["ABCD".index(q.answer)]
        judged = judge_answer(hub.llm("solver"), q.question, reference, res.answer).correct
        cites = judge_citations(memory, hub.llm("solver"), res, q, index)
        row.update({"truth": reference, "judged": judged, "correct": judged is True,
                    "verdict": res.verdict,
                    "flagged": bool(res.citation_check.get("flagged")),
                    "not_found": res.verdict in ("not_found", "not_yet"),
                    "citations": cites["cited"], "judged_citations": cites["judged"]})
        return row
    row["solver_answer"] = res.extra.get("solver_answer", res.answer)  # before grounding
    row["solver_correct"] = row["solver_answer"] == q.answer
    first = res.rounds[0].decision if res.rounds else None
    if loss and opts.loop != "merit":  # merit's rounds decide sufficiency, not the answer
        row["round1"] = bool(first) and first.get("answer") == q.answer
    if loss and row["scored"]:
        for step, distilled in (("gold", False), ("gold_distilled", True)):
            row[f"{step}_answer"], row[f"{step}_clips"] = gold_answer(
                memory, hub, q, opts, index, distilled=distilled)
            row[step] = row[f"{step}_answer"] == q.answer
    return row


def judge_citations(memory: Memory, llm, res, q: QAQuestion,
                    index: CaptionIndex) -> dict:
    """The clips open answer ``res`` cites, judged as the report checker judges a
    citation, each ``{"clip_id", "support"}`` (0–1) with ``"near_target"`` (within ±2 clips
    of one of ``q``'s target clips; ``None`` when the targets are not known):
    ``{"cited": the final citations, "judged": every clip ask's support check judged (the
    citations before it dropped any; the final ones when it did not run)}``. The support
    ``ask`` computed is reused; otherwise :func:`~edge.answer.support.check_support` judges
    them, one solver call a clip, not counted in the question's calls and seconds."""
    cited = [m.clip_id for m in res.moments if m.cited]
    scores = (res.citation_check or {}).get("support") or check_support(
        llm, res.answer, cited, memory.clips(cited))["support"]
    targets = {index.pos[t] for t in q.target_clips} if q.target_clips else set()

    def row(cid: int) -> dict:
        pos = index.pos[index.index_of[cid]] if cid in index.index_of else None
        near = None if not targets or pos is None else window_hits([pos], targets, 2)[0]
        return {"clip_id": cid, "near_target": near, "support": scores[cid]}

    rows = {cid: row(cid) for cid in scores}  # ask's final citations are among them
    return {"cited": [rows[c] for c in cited], "judged": list(rows.values())}


def citation_summary(rows: list[dict]) -> dict | None:
    """Citation precision over the open answers of ``rows`` (``None`` without any):
    ``precision`` (cited clips with support ≥
    :data:`~edge.answer.support.SUPPORT_THRESHOLD` / cited clips), ``near_target``
    (cited clips within ±2 of a target / cited clips whose targets are known), the same
    two over every clip ``ask``'s support check judged (``precision_judged``,
    ``near_target_judged``: the solver's citations before the check dropped any),
    ``citations`` (count), ``answers_citing`` (answers citing at least one clip),
    ``flagged`` (share of answers marked unverified or not found), ``not_found`` (share
    not found in memory), and the judged accuracy of the answers found and not found
    (``accuracy_found``, ``accuracy_not_found``). Shares 0–1, 3 places."""
    open_rows = [r for r in rows if "citations" in r]
    if not open_rows:
        return None

    def shares(cites: list[dict]) -> tuple[float | None, float | None]:
        located = [c for c in cites if c["near_target"] is not None]
        return (mean_or_none([float(c["support"] >= SUPPORT_THRESHOLD) for c in cites]),
                mean_or_none([float(c["near_target"]) for c in located]))

    cites = [c for r in open_rows for c in r["citations"]]
    precision, near = shares(cites)
    precision_judged, near_judged = shares([c for r in open_rows
                                            for c in r.get("judged_citations", [])])
    return {"citations": len(cites),
            "answers_citing": sum(bool(r["citations"]) for r in open_rows),
            "precision": precision, "near_target": near,
            "precision_judged": precision_judged, "near_target_judged": near_judged,
            "support_mean": mean_or_none([c["support"] for c in cites]),
            "flagged": mean_or_none([float(r["flagged"]) for r in open_rows]),
            "not_found": mean_or_none([float(r.get("not_found", False)) for r in open_rows]),
            "accuracy_found": mean_or_none([float(r["correct"]) for r in open_rows
                                            if not r.get("not_found")]),
            "accuracy_not_found": mean_or_none([float(r["correct"]) for r in open_rows
                                                if r.get("not_found")])}


def round_hits(rounds: list, q: QAQuestion, index: CaptionIndex) -> dict:
    """MERIT's hit over the rounds of one answer (Table 10, §4.3): ``hit@Δ2``/``all@Δ2`` —
    a / every target clip within ±2 clips of any round's anchors — and ``first_hit_round``,
    the first round (1-based) whose anchors reach a target within ±2, ``None`` if none."""
    targets = {index.pos[t] for t in q.target_clips}
    seen: list[int] = []
    first = None
    for n, r in enumerate(rounds, start=1):
        seen += [index.pos[index.index_of[a["clip_id"]]] for a in r.anchors
                 if a["clip_id"] in index.index_of]
        if first is None and window_hits(seen, targets, 2)[0]:
            first = n
    hit, every = window_hits(seen, targets, 2)
    return {"hit@Δ2": hit, "all@Δ2": every, "first_hit_round": first}


def run_answers(memory: Memory, hub, questions: list[QAQuestion], index: CaptionIndex,
                opts: AskOptions, on_answer: Callable[[dict], None] | None = None, *,
                loss: bool = False, open_ended: bool = False, workers: int = 1) -> list[dict]:
    """:func:`answer_one` for every question (``loss``: with the loss steps; ``open_ended``:
    without options, judged), in the questions' order; ``on_answer(row)`` after each, as
    it ends (progress, or saving partial results). ``workers`` > 1 answers that many
    questions at once on threads, each with its own connection to the memory file and its
    own call counts (:meth:`models.usage.UsageMeter.thread_scope`): worth it only when the
    solver is remote (a local llama.cpp model serves one call at a time) — the caller
    checks that."""
    def one(q: QAQuestion, m: Memory) -> dict:
        return answer_one(m, hub, q, opts, index, loss=loss, open_ended=open_ended)

    if workers <= 1:
        rows = []
        for q in questions:
            rows.append(one(q, memory))
            if on_answer:
                on_answer(rows[-1])
        return rows
    local = threading.local()
    opened: list[Memory] = []

    def in_thread(q: QAQuestion) -> dict:
        if getattr(local, "memory", None) is None:
            local.memory = Memory(memory.path, create=False)
            opened.append(local.memory)
        return one(q, local.memory)

    by_id: dict[str, dict] = {}
    try:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench") as pool:
            for fut in as_completed([pool.submit(in_thread, q) for q in questions]):
                row = fut.result()
                by_id[row["id"]] = row
                if on_answer:
                    on_answer(row)
    finally:
        for m in opened:
            m.close()
    return [by_id[q.id] for q in questions]


def mean_or_none(values: list[float], digits: int = 3) -> float | None:
    """The mean rounded to ``digits`` (an int for 0), ``None`` without values."""
    if not values:
        return None
    m = statistics.mean(values)
    return round(m, digits) if digits else round(m)


def summarize_answers(rows: list[dict]) -> dict:
    """Accuracy, hit@Δ2/all@Δ2 (scored rows only), means of rounds, calls and tokens, and
    seconds p50/p95 of ``rows``; with the loss steps (:func:`loss_summary`) under
    ``loss`` and, for open answers, their citation precision (:func:`citation_summary`)
    under ``citations``."""
    if not rows:
        return {"n": 0}
    scored = [r for r in rows if r["scored"]]
    return {"n": len(rows), "scored": len(scored), "loss": loss_summary(rows),
            "citations": citation_summary(rows), "grounding": grounding_summary(rows),
            "accuracy": mean_or_none([float(r["correct"]) for r in rows]),
            "hit@Δ2": mean_or_none([float(r["hit@Δ2"]) for r in scored]),
            "all@Δ2": mean_or_none([float(r["all@Δ2"]) for r in scored]),
            "rounds_mean": mean_or_none([r["rounds"] for r in rows], 2),
            "calls_mean": mean_or_none([r["calls"] for r in rows], 2),
            "rounds_1": mean_or_none([float(r["rounds"] == 1) for r in rows]),
            "tokens_in_mean": mean_or_none([r["tokens_in"] for r in rows], 0),
            "tokens_evaluated_mean": mean_or_none([r.get("tokens_evaluated", r["tokens_in"])
                                            for r in rows], 0),
            "tokens_out_mean": mean_or_none([r["tokens_out"] for r in rows], 0),
            **_percentiles(rows, "calls", 0), **_percentiles(rows, "tokens_in", 0),
            **_percentiles(rows, "tokens_out", 0), **_percentiles(rows, "seconds", 1),
            "by_round": rounds_table(rows)}


def _percentiles(rows: list[dict], key: str, digits: int) -> dict:
    """``<key>_p50``/``<key>_p95`` of ``rows`` (:func:`~edge.bench.measure.percentiles`),
    rounded to ``digits`` (0: whole numbers)."""
    return {f"{key}_{q}": v for q, v in percentiles((r[key] for r in rows), digits=digits).items()}


def rounds_table(rows: list[dict]) -> list[dict]:
    """MERIT Table 10 for ``rows``: for each round r from 1 to the most any question ran,
    ``answered`` (share of questions that stopped after r rounds), ``cumulative`` (share
    stopped by r), ``accuracy`` of those that stopped at r (``None`` when none did), and
    ``cumulative_hit`` (share of the scored questions whose first hit came by round r;
    ``None`` without scored rows). Shares are 0–1, rounded to 3 places."""
    if not rows:
        return []
    scored = [r for r in rows if r["scored"] and "first_hit_round" in r]
    out, done = [], 0
    for n in range(1, max(r["rounds"] for r in rows) + 1):
        at = [r for r in rows if r["rounds"] == n]
        done += len(at)
        hits = [r for r in scored if r["first_hit_round"] is not None
                and r["first_hit_round"] <= n]
        out.append({"round": n, "answered": round(len(at) / len(rows), 3),
                    "cumulative": round(done / len(rows), 3),
                    "accuracy": mean_or_none([float(r["correct"]) for r in at]),
                    "cumulative_hit": round(len(hits) / len(scored), 3) if scored else None})
    return out


def loss_summary(rows: list[dict]) -> dict | None:
    """Accuracy at each of :data:`LOSS_STEPS` on the rows that have every step (scorable
    questions answered with ``loss``), their count ``n``; ``None`` when none has."""
    full = [r for r in rows if all(k in r for k in ("gold", "gold_distilled", "round1"))]
    if not full:
        return None
    out: dict = {"n": len(full)}
    for step in LOSS_STEPS:
        key = {"loop": "correct", "solver": "solver_correct"}.get(step, step)
        out[step] = mean_or_none([float(r[key]) for r in full if key in r])
    return out


def grounding_summary(rows: list[dict]) -> dict | None:
    """What the option grounding did to the multiple-choice answers of ``rows``: in how
    many of ``n`` it replaced the solver's letter (``replaced``), how many of those it
    made right (``won``: the solver's letter was wrong) or wrong (``lost``); ``None``
    when no row has the solver's letter (open answers, older results)."""
    mc = [r for r in rows if "solver_answer" in r]
    if not mc:
        return None
    moved = [r for r in mc if r["solver_answer"] != r["answer"]]
    return {"n": len(mc), "replaced": len(moved),
            "won": sum(r["correct"] and not r["solver_correct"] for r in moved),
            "lost": sum(r["solver_correct"] and not r["correct"] for r in moved)}


def answer_summary(rows: list[dict]) -> dict:
    """``total`` and ``by_type``/``by_tag``/``by_part`` (:func:`summarize_answers`)."""
    return {"total": summarize_answers(rows),
            **{f"by_{k}": {name: summarize_answers(g) for name, g in v.items()}
               for k, v in groups(rows).items()}}
