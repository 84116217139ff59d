""":func:`ask`: the bounded agent loop of MERIT Appendix 0.A, step by step."""

from __future__ import annotations

import time
from collections.abc import Callable

from edge.recall.entities import people as known_people
from edge.store import Memory
from models.repeats import collapse_loops

from .citations import CitationCheck, check_citations, stem
from .evidence import Packed
from .grounding import ground_reply
from .options import AskOptions
from .people import people_answer
from .question import Run, start
from .quotes import ClipSentences, check_quotes
from .records import Answer, Decision, FinalReply, Round
from .search import round_queries
from .steps import (
    anchor_hits,
    answer,
    cut_off_note,
    decide,
    decompose,
    expand,
    filter_neighbors,
    insist,
    next_queries,
    retrieve,
)
from .support import SUPPORT_THRESHOLD, check_support


def ask(memory: Memory, hub, question: str, options: AskOptions | None = None, *,
        on_progress: Callable[[str], None] | None = None,
        on_token: Callable[[str], None] | None = None, **overrides) -> Answer:
    """Answer ``question`` from ``memory`` with cited moments (see :mod:`edge.answer`).

    Args:
        hub: the :class:`models.ModelHub` (its embedder and ``solver`` role; calls are
            counted in ``Answer.usage``).
        options: an :class:`AskOptions`; ``overrides`` replace its fields by name, e.g.
            ``ask(m, hub, q, at=t, delta=1)``.
        on_progress: called with one short line before each search and solver call
            (``round 2/5: searching 'power bank'``), from the calling thread. It may raise
            to stop the question early; the exception propagates.
        on_token: called with each piece of the answer's text as the solver writes it
            (the ``answer`` field of its reply; in ``adaptive``/``single`` every round's
            answer streams, a later round's replacing the earlier one), from the calling
            thread.
    Raises:
        AskError: the question is empty, the memory is empty, or holds nothing in scope;
            bad choices; frames asked of a solver that does not take them.
        ValueError: an unknown ``retrieval``, ``loop`` or ``fusion``.
        TypeError: an override that is not an :class:`AskOptions` field.
    """
    # checks, time scope, solver, prompt frame
    run = start(memory, hub, question, AskOptions.merge(options, overrides), on_progress,
                on_token)
    if run.event is not None and run.event.missing:  # "after lunch" with no lunch yet
        return not_in_memory(run)
    if not run.opts.choices and (seen := people_answer(run)) is not None:
        return seen  # "when did I last see Alice?": from the appearances (issue 43)
    sub_queries = decompose(run)  # MARQUIS §3.1, only with opts.decompose
    queries = round_queries(run.question, run.opts, sub_queries)  # + options, fused
    rounds: list[Round] = []
    packed: list[Packed] = []
    for r in range(1, run.opts.max_rounds + 1):  # round r ≤ R
        run.tried.update(q.lower() for q in queries)
        anchors, hoods, vecs = retrieve(run, r, queries)  # top-N anchors ± Δ, Eq. 6–8
        filtered = filter_neighbors(run, r, hoods)  # Eq. 9
        run.evidence.add_neighborhoods(r, anchors, hoods)
        expanded = expand(run, r, vecs[0], anchors)  # PyraVid §3.3
        packed = run.pack(run.opts.evidence_view)  # into the token budget
        rnd = Round(r, queries[0], anchor_hits(anchors), [p.item.clip.id for p in packed],
                    None, list(queries), filtered, expanded)
        rounds.append(rnd)
        if run.opts.loop == "merit" and r == run.opts.max_rounds:
            break  # the last round's evidence goes straight to the answer
        rnd.decision = insist(run, r, packed, decide(run, r, packed))  # sufficient, else
        # the next query; an open answer that misses its kind asked once more (issue 42)
        queries, why = next_queries(rnd.decision, run.tried)
        run.note.remark(why)
        if not queries:
            break  # sufficient, failed, or no new query to try
    final = None
    if run.opts.loop == "merit":
        final, packed = answer(run, packed)  # one final call, cited; frames if allowed
    return conclude(run, rounds, packed, final, sub_queries)


def not_in_memory(run: Run) -> Answer:
    """The answer to a question whose named event is not in memory before the question
    time (:attr:`Run.event`): the sentence saying so ("No lunch on DAY1 is in memory before
    13:00: it has not happened yet."), verdict ``not_yet`` (it may still come that day) or
    ``not_found``; no model call, nothing cited."""
    ev = run.event
    return Answer(
        question=run.question, asked_at=run.asked_at, answer=ev.missing, sufficient=False,
        moments=[], rounds=[], usage=run.usage.summary(run.usage_mark),
        seconds=round(time.perf_counter() - run.started, 2),
        scope={"label": run.scope.label, "start": run.scope.start, "end": run.scope.end},
        verdict="not_yet" if ev.not_yet else "not_found")


def conclude(run: Run, rounds: list[Round], packed: list[Packed], final: FinalReply | None,
             sub_queries: list[str]) -> Answer:
    """The :class:`Answer`: in ``loop="merit"`` from the final reply, sufficient when it
    came and the latest decision (if any) said the evidence sufficed; in
    ``loop="single"`` from the last round's decision. ``packed``: the evidence the answer
    read."""
    o = run.opts
    if o.loop == "merit":
        reply: Decision | FinalReply | None = final
        verdict = next((rd.decision for rd in reversed(rounds) if rd.decision is not None),
                       None)
        sufficient = final is not None and (verdict is None or bool(verdict["sufficient"]))
    else:
        reply = rounds[-1].decision if rounds else None
        sufficient = bool(reply and reply["sufficient"])
    if o.choices and o.option_grounding and reply and reply.get("answer"):
        reply = ground_reply(run, reply, packed)  # the evidence's check of the letter
    cited = list(dict.fromkeys(reply["cited_clips"])) if reply else []
    text = collapse_loops((reply or {}).get("answer", "").strip())  # a looping phrase: once
    reason = (reply or {}).get("reason", "") if o.choices else None
    if reply is not None and not text:
        run.note.failure("the solver gave no answer; showing the retrieved evidence")
    elif cut := cut_off_note(text, reason):  # e.g. 'Lucia said,'
        run.note.failure(cut)
    extra = {}
    if o.choices:
        extra = {"choices": dict(zip(o.letters, o.choices)),
                 "reason": reason}
        # per letter: P with choice_scoring="likelihood", the option grounding; and the
        # solver's letter when the grounding replaced it
        extra.update({k: reply[k] for k in ("scores", "grounding", "solver_answer")
                      if reply and k in reply})
    if not o.choices and o.open_check == "quotes" and reply is not None and text:
        cited, check = check_held(run, text, reply, packed)
    else:
        cited, check = check_cited(run, text, extra, cited, packed)
        if not o.choices and o.open_check == "judge" and text and cited:
            cited, check = check_supported(run, text, cited, check)
    return Answer(
        question=run.question, asked_at=run.asked_at, answer=text, extra=extra,
        sufficient=sufficient, moments=run.evidence.moments(cited), rounds=rounds,
        usage=run.usage.summary(run.usage_mark),
        seconds=round(time.perf_counter() - run.started, 2), note=run.note.text,
        evidence_count=len(packed), sub_queries=sub_queries, final=final,
        scope={"label": run.scope.label, "start": run.scope.start, "end": run.scope.end},
        citation_check=check, quotes=[q for q in check.get("quotes", []) if q["supports"]])


def check_held(run: Run, text: str, reply: dict,
               packed: list[Packed]) -> tuple[list[int], CitationCheck]:
    """An open answer's quotes checked against the evidence clips' own words (caption and
    transcript; :func:`edge.answer.quotes.check_quotes`): the clips of the quotes that hold
    it are cited; with none the answer is not found in memory — nothing is cited and the
    check is flagged (``not_found``). The check (a :class:`CitationCheck`) adds
    ``quotes``; ``kept``/``dropped`` are the solver's quoted clips that hold / do not hold
    the answer, ``added`` the clips of quotes the program found."""
    items = sorted(run.evidence.items.values(), key=lambda i: (i.clip.t_start, i.clip.id))
    clips = [ClipSentences.of(it.clip.id, f"{it.clip.caption} {it.clip.transcript}",
                              it.clip.t_start, it.clip.t_end) for it in items]
    given = [(packed[q["note"] - 1].item.clip.id if 1 <= q["note"] <= len(packed) else None,
              q["text"]) for q in reply.get("quotes", [])]
    people = frozenset(stem(n) for n, _ in known_people(run.memory))
    read = [] if reply.get("not_stated") else [p.item.clip.id for p in packed]
    qc = check_quotes(text, run.question, given, clips, read, people)
    solver = list(dict.fromkeys(reply.get("cited_clips", [])))
    row = {q["clip_id"]: q for q in qc.quotes}

    def rows(ids: list[int]) -> list[dict]:
        return [{"clip_id": c, "holds": row[c]["holds"] if c in row else []} for c in ids]

    kept = [c for c in solver if c in qc.cited]
    check = CitationCheck(
        terms=qc.terms, checked=True, flagged=not qc.held, kept=rows(kept),
        dropped=rows([c for c in solver if c not in qc.cited]),
        added=rows([c for c in qc.cited if c not in solver]), sharing=[],
        summary=qc.summary(), not_found=not qc.held)
    check["quotes"] = qc.quotes
    check["invented"] = qc.invented
    return qc.cited, check


def check_supported(run: Run, text: str, cited: list[int],
                    check: CitationCheck) -> tuple[list[int], CitationCheck]:
    """An open answer's cited clips (after :func:`check_cited`) judged against it by the
    report checker's judge (:func:`edge.answer.support.check_support`): those under its
    bar are no longer cited; with none left the answer is not found in memory — nothing
    is cited and the check is flagged (``not_found``). ``check`` gains ``support`` (clip
    id → 0–1) and ``not_found``, and its summary says what the judge kept."""
    clips = {cid: run.evidence.items[cid].clip for cid in cited}
    res = check_support(run.solver, text, cited, clips, on_step=lambda n, total: run.progress(
        f"checking citation {n}/{total} against the answer"))
    scores = ", ".join(f"clip {cid} {res['support'][cid]:.2f}" for cid in cited)
    if res["supported"]:
        said = (f"{check['summary']}; judged against the answer (support ≥ "
                f"{SUPPORT_THRESHOLD}): {scores}")
        return res["supported"], {**check, "flagged": False, "not_found": False,
                                  "support": res["support"], "summary": said}
    said = (f"not found in memory: no cited clip supports the answer ({scores}; the bar is "
            f"{SUPPORT_THRESHOLD}), so none is cited; {check['summary']}")
    return [], {**check, "flagged": True, "not_found": True, "support": res["support"],
                "summary": said}


def check_cited(run: Run, text: str, extra: dict, cited: list[int],
                packed: list[Packed]) -> tuple[list[int], CitationCheck]:
    """The citations of answer ``text`` checked against every evidence clip's text
    (:mod:`edge.answer.citations`; the clips of ``packed`` preferred when one is added). A
    multiple-choice answer is checked as its option's text and the solver's reason (as its
    option's text alone when the grounding replaced the letter: the reason then only says
    so, in words no clip holds)."""
    if extra.get("choices"):
        reason = "" if "solver_answer" in extra else extra["reason"]
        text = f"{extra['choices'].get(text, '')} {reason}".strip()
    return check_citations(text, run.question, cited,
                           run.evidence.check_texts([p.item.clip.id for p in packed]))
