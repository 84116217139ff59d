"""The steps of the agent loop (MERIT Appendix 0.A), one function each; every step reads
and extends the :class:`~edge.answer.question.Run` of the question.

Solver calls: :func:`decompose` 1 (optional), per round :func:`filter_neighbors` 1,
:func:`expand` 1 (with a pyramid) and :func:`decide` 1 (not in the last merit round),
then :func:`answer` 1 — each may repair its reply once inside the backend; an open answer
that misses what its question asks for is asked once more (:func:`insist`, the notes'
prefix reused). A
multiple-choice answer with ``choice_scoring="likelihood"`` is 1 + one per option calls
that write nothing (:mod:`edge.answer.likelihood`).
"""

from __future__ import annotations

import json

import numpy as np

from edge.config import frames_dir
from edge.prompts import SUFFICIENCY_INSTRUCTION, SUFFICIENCY_SCHEMA
from edge.recall.decompose import decompose as decompose_question
from edge.recall.entities import people as known_people
from edge.recall.expansion import expand_and_prune
from edge.recall.filtering import filter_neighborhoods
from edge.recall.retrieval import Neighborhood, ScoredClip, expand_neighbors
from models.jsonstream import JsonFieldStream
from models.llm import ContextOverflowError, LLMOutputError
from models.repeats import collapse_loops, norm_words

from .evidence import Packed, cited_clips
from .kinds import NOT_STATED, WHERE_Q, missing_kind
from .likelihood import likelihood_decision, supports_likelihood
from .question import Run, reply_format
from .records import AnchorHit, Decision, Expansion, FinalReply
from .search import embed_queries, round_anchors

SUFFICIENCY_TOKENS = 80
"""Reply budget of the sufficiency call (a boolean and a short query)."""


def streamed(run: Run) -> dict:
    """``{"on_token": …, "on_retry": …}`` for the call whose reply is an answer, when the
    caller asked for the answer's text as it is written (``ask(on_token=…)``): the reply's
    ``answer`` field (a multiple-choice question's one-sentence ``reason``, after its
    letter) reaches ``run.on_token`` piece by piece. When that reply is broken JSON (a free
    reply cut before its answer) and the solver asks again under the schema, a progress line
    says so (the chat and the terminal drop the draft) and the second reply streams afresh;
    ``{}`` when nothing is streamed."""
    if run.on_token is None:
        return {}
    field = "reason" if run.opts.choices else "answer"
    on_token = run.on_token

    def again():
        run.progress("the reply was not valid JSON: asking again under its schema")
        return JsonFieldStream(field, on_token).feed

    return {"on_token": JsonFieldStream(field, on_token).feed, "on_retry": again}


def decompose(run: Run) -> list[str]:
    """MARQUIS §3.1 sub-queries of the question (one solver call) when
    ``opts.decompose``; else ``[]``."""
    if not run.opts.decompose:
        return []
    run.progress("splitting the question into search phrases")
    return decompose_question(run.solver, run.question, choices=run.opts.choices,
                              style=run.opts.decompose_style)


def retrieve(run: Run, round_no: int, queries: list[str]
             ) -> tuple[list[ScoredClip], list[Neighborhood], list[np.ndarray]]:
    """The round's top-N anchor clips for ``queries`` inside the time scope (max-sim over
    keys, MERIT Eq. 6–7, fused by RRF with BM25 when hybrid) with their ±Δ neighbors
    (Eq. 8; none after the query time), and the queries' 384-d unit vectors."""
    o = run.opts
    run.say(round_no, f"searching {queries[0]!r}"
            + (f" and {len(queries) - 1} more queries" if len(queries) > 1 else ""))
    vecs = embed_queries(run.embedder, queries)
    anchors = round_anchors(run.memory, queries, vecs, o, run.scope, o.top_n)
    hoods = expand_neighbors(run.memory, anchors, o.delta, before=o.at)
    return anchors, hoods, vecs


def anchor_hits(anchors: list[ScoredClip]) -> list[AnchorHit]:
    """The anchors as a round records them (scores rounded to 4 places)."""
    return [{"clip_id": a.clip_id, "score": round(a.score, 4), "key": a.key_type}
            for a in anchors]


def filter_neighbors(run: Run, round_no: int, hoods: list[Neighborhood]) -> dict[int, str]:
    """MERIT neighbor filtering (Eq. 9) of the anchors not filtered before: one batched
    solver call; what it keeps per anchor clip id (``""``: nothing relevant), also added
    to the evidence. When the call fails the anchors' raw captions stand in, with a note.
    ``{}`` without filtering or new anchors."""
    if not run.opts.filtering:
        return {}
    new = [h for h in hoods if h.anchor.id not in run.evidence.filtered]
    if not new:
        return {}
    run.say(round_no, f"filtering {len(new)} neighborhood(s)")
    try:
        kept = filter_neighborhoods(run.solver, run.question, new)
    except (LLMOutputError, ContextOverflowError) as e:
        run.note.failure(f"neighbor filtering failed ({e}); raw captions were used")
        kept = {h.anchor.id: " ".join(h.anchor.caption.split()) for h in new}
    run.evidence.filtered.update(kept)
    return kept


def expand(run: Run, round_no: int, query_vec: np.ndarray,
           anchors: list[ScoredClip]) -> Expansion:
    """PyraVid §3.3 expansion over the pyramid from the round's first query vector and
    anchors, then one pruning call; the kept facts join the evidence (their clips as
    linked clips, ranked after the top-N anchors). ``{}`` without a pyramid."""
    if not run.opts.pyramid:
        return {}
    run.say(round_no, "expanding over the pyramid")
    ev = run.evidence
    pool, kept, remark = expand_and_prune(
        run.memory, run.solver, run.question, query_vec, [a.clip_id for a in anchors],
        before=run.scope.end, after=run.scope.start, exclude_facts=ev.offered)
    run.note.remark(remark)
    ev.offered.update(c.fact_id for c in pool)
    clips = run.memory.clips([c.clip_id for c in kept if c.clip_id not in ev.items])
    ev.add_facts(round_no, kept, clips, first_rank=run.opts.top_n)
    return {"offered": [{"fact_id": c.fact_id, "clip_id": c.clip_id, "via": c.via}
                        for c in pool],
            "kept": [c.fact_id for c in kept]}


def decide(run: Run, round_no: int, packed: list[Packed]) -> Decision | None:
    """The solver's decision on the round's evidence, or ``None`` (with a note) when the
    call fails. ``loop="merit"``: the sufficiency call — enough, else the next search
    query, shown the queries tried. ``loop="adaptive"``/``"single"``: one call answers
    (with keyframes when ``opts.frames``, streamed to ``run.on_token``) and decides; its
    cited note numbers are also given as ``cited_clips``."""
    o = run.opts
    if o.loop == "merit":
        run.say(round_no, f"checking {len(packed)} note(s)")
        tried = "; ".join(sorted(run.tried))
        try:
            return run.solver.chat_json(
                run.prompt.with_notes(packed, SUFFICIENCY_INSTRUCTION.format(tried=tried)),
                role="solver", schema=SUFFICIENCY_SCHEMA, max_tokens=SUFFICIENCY_TOKENS)
        except (LLMOutputError, ContextOverflowError) as e:
            run.note.failure(f"the sufficiency check failed ({e}); answering with what was found")
            return None
    run.say(round_no, f"the solver reads {len(packed)} note(s)")
    read, decision = likelihood_reply(run, packed)
    if read:
        return decision
    instruction, schema = reply_format(run.opts, decide=True)
    try:
        decision = answer_call(run, packed, instruction, schema)
    except (LLMOutputError, ContextOverflowError) as e:
        run.note.failure(f"{what_failed(e)} ({e}); showing the retrieved evidence")
        return None
    return with_cited_clips(decision, packed)  # clips, not numbers


def insist(run: Run, round_no: int, packed: list[Packed],
           decision: Decision | None) -> Decision | None:
    """An open answer that misses what its question asks for (:func:`~edge.answer.kinds.
    missing_kind`: no number for "how much", no person for "who", only the question's own
    words) is asked for once more over the same notes — the prompt's prefix is the same, so
    llama.cpp reads only the new tail (~5 s on 2 cores, not the ~1,000 tokens of notes). The
    second reply replaces the first when it gives the kind, or says the notes do not hold it
    (the first answer is then kept as the guess, its quotes dropped). ``decision``
    unchanged for a multiple-choice question, ``open_check`` other than quotes, or an
    answer that gives its kind."""
    o = run.opts
    if o.choices or o.open_check != "quotes" or not decision or not decision.get("answer"):
        return decision
    people = frozenset(n.lower() for n, _ in known_people(run.memory)) \
        if WHERE_Q.search(run.question) else frozenset()  # only "where" reads them
    what = missing_kind(run.question, decision["answer"], people)
    if not what:
        return decision
    run.say(round_no, f"asking again: the answer does not say {what}")
    instruction, schema = reply_format(o, decide=True)
    again = (f"\n\nYour first answer, {json.dumps(decision['answer'])}, does not say {what}. "
             "Read the notes again." + instruction)
    try:
        second = answer_call(run, packed, again, schema)
    except (LLMOutputError, ContextOverflowError):
        return decision
    if NOT_STATED.search(second.get("answer", "")):  # no note says it: not found
        return {**decision, "quotes": [], "cited": [], "cited_clips": [], "not_stated": True}
    if missing_kind(run.question, second.get("answer", ""), people):
        return decision
    return with_cited_clips(second, packed)


def normal_query(text: str) -> str:
    """``text`` as queries are compared: lowercased words, punctuation and spacing dropped."""
    return " ".join(norm_words(text))


def collapse_query(text: str) -> str:
    """``text`` with its spacing collapsed and a phrase repeated in a row (twice or more)
    cut to one copy — a query the question looped into."""
    text = " ".join(text.split())
    return collapse_loops(text, min_repeats=2, max_ngram=max(1, len(text.split()) // 2))


def next_queries(decision: Decision | None, tried: set[str]) -> tuple[list[str], str]:
    """The next round's query and why the loop ends instead (``""`` when it goes on): the
    decision's ``search`` when it is insufficient and names a query not tried yet (a
    phrase repeated in it is cut to one copy, and queries are compared by
    :func:`normal_query`); ``[]`` ends the loop."""
    if decision is None or decision["sufficient"]:
        return [], ""
    nxt = collapse_query(decision.get("search", ""))
    if not nxt:
        return [], ""
    if any(repeats_query(nxt, t) for t in tried):
        return [], f"the next search {nxt!r} was already searched; answering with what was found"
    return [nxt], ""


def repeats_query(query: str, tried: str) -> bool:
    """Whether ``query`` is the ``tried`` query again, compared by :func:`normal_query`:
    the same words, or the same words followed by a copy of them cut short, even mid-word
    (``"who bought the kettle who bought th"``: a looping query stopped by its token budget,
    whose cut tail :func:`collapse_query` cannot see as a repeat)."""
    q, t = normal_query(query), normal_query(tried)
    if not t:
        return False
    if q == t:
        return True
    tail = q[len(t) + 1:] if q.startswith(t + " ") else ""
    return bool(tail) and t.startswith(tail)


_DANGLING = frozenset("a an and but of or says said say tells told than that the to with".split())


def ends_mid_sentence(text: str) -> bool:
    """Whether an answer stops mid-sentence: it ends on ``,`` ``;`` ``:`` or a dash, or on
    a word that cannot end an English sentence (``and``, ``the``, ``said`` ...) with no
    closing punctuation — what a reply cut by its token budget, or a loop cut to one copy
    (``"Lucia said,"``), looks like. ``""`` is not (no answer is reported apart)."""
    text = text.rstrip()
    if not text:
        return False
    if text.endswith((",", ";", ":", "-", "–", "—")):
        return True
    last = text.split()[-1].lower()
    return last.isalpha() and last in _DANGLING


def cut_off_note(answer: str, reason: str | None = None) -> str:
    """The note for a reply that stops mid-sentence (:func:`ends_mid_sentence`), else
    ``""``: an open answer's text is checked; a multiple-choice reply (``reason`` given)
    has a letter for its answer — ``"A"`` is not the article *a* — so its ``reason`` is
    checked instead."""
    if reason is None:
        return "the answer was cut off mid-sentence" if ends_mid_sentence(answer) else ""
    return "the reason was cut off mid-sentence" if ends_mid_sentence(reason) else ""


def answer(run: Run, packed: list[Packed]) -> tuple[FinalReply | None, list[Packed]]:
    """The final answer call of ``loop="merit"`` over the last round's evidence (the raw
    captions, with a note, when filtering kept nothing), with the anchors' keyframes when
    ``opts.frames`` (text only, with a note, when they overflow the context). Returns the
    reply with ``cited_clips`` (``None`` and a note when it failed) and the evidence read."""
    if not packed:  # filtering kept nothing: read the raw captions rather than nothing
        run.note.remark("neighbor filtering found nothing relevant; the answer reads the "
                        "raw captions")
        packed = run.pack("raw")
    run.progress(f"answering from {len(packed)} note(s)")
    o = run.opts
    read, final = likelihood_reply(run, packed)
    if read:
        return final, packed
    instruction, schema = reply_format(o, decide=False)
    try:
        final = answer_call(run, packed, instruction, schema)
    except (LLMOutputError, ContextOverflowError) as e:
        run.note.failure(f"{what_failed(e)} ({e}); showing the retrieved evidence")
        return None, packed
    return with_cited_clips(final, packed), packed


def with_cited_clips(reply: dict, packed: list[Packed]) -> dict:
    """``reply`` with ``cited_clips``: the clip ids of the notes it cites — its quotes'
    notes when it quotes (an open answer), else its ``cited`` numbers — and ``cited`` set
    to those note numbers."""
    if "quotes" in reply:
        reply = {**reply, "cited": list(dict.fromkeys(q["note"] for q in reply["quotes"]))}
    return {**reply, "cited_clips": cited_clips(reply, packed)}


def by_likelihood(run: Run) -> bool:
    """Whether this multiple-choice question is answered from token probabilities
    (``opts.choice_scoring="likelihood"``, :mod:`edge.answer.likelihood`): only with a
    solver that reads them and no keyframes to show (else it writes its reply)."""
    o = run.opts
    return bool(o.choices) and o.choice_scoring == "likelihood" and not o.frames \
        and supports_likelihood(run.solver)


def likelihood_reply(run: Run, packed: list[Packed]) -> tuple[bool, Decision | None]:
    """The answer from token probabilities when :func:`by_likelihood`: ``(True, reply
    with cited_clips)``, or ``(True, None)`` with a note when the notes overflow the
    solver's context; ``(False, None)`` when the solver must write its reply instead
    (not asked for, or a model without a chat template of its own)."""
    if not by_likelihood(run):
        return False, None
    try:
        reply = likelihood_decision(run, packed)
    except NotImplementedError:  # no chat template of its own: the reply is written
        return False, None
    except ContextOverflowError as e:
        run.note.failure(f"the notes did not fit the solver's context ({e}); showing the "
                         "retrieved evidence")
        return True, None
    return True, {**reply, "cited_clips": cited_clips(reply, packed)}


def answer_call(run: Run, packed: list[Packed], instruction: str, schema: dict) -> dict:
    """A call whose reply answers (:func:`final_call`) over ``packed``, with the anchors'
    keyframes when ``opts.frames`` — from text alone, with a note, when they overflow the
    solver's context. Raises :class:`LLMOutputError` / :class:`ContextOverflowError`."""
    msgs = run.prompt.with_notes(packed, instruction)
    if not run.opts.frames:
        return final_call(run, msgs, schema)
    msgs[-1]["content"] = [{"type": "text", "text": msgs[-1]["content"]},
                           *run.evidence.frame_parts(frames_dir(run.memory.path))]
    try:
        return final_call(run, msgs, schema)
    except ContextOverflowError:
        run.note.failure("the keyframes did not fit the solver's context; answered from text")
        return final_call(run, run.prompt.with_notes(packed, instruction), schema)


def what_failed(e: Exception) -> str:
    """The note's words for a failed answering call: cut off by its budget, or unusable."""
    return "the answer was cut off" if getattr(e, "cut", False) else \
        "the solver's answer was unusable"


def final_call(run: Run, msgs: list[dict], schema: dict) -> dict:
    """An answering call (the final answer, or ``adaptive``/``single``'s answer-and-decide)
    with ``opts.answer_tokens``, its answer streamed to ``run.on_token``; a reply cut at
    that budget is asked again once with twice the budget (when that fits the context), streamed
    too (the quotes come first: a cut reply has often not reached its answer yet)."""
    budget = run.opts.answer_tokens
    try:
        return run.solver.chat_json(msgs, role="solver", schema=schema, max_tokens=budget,
                                    **streamed(run))
    except LLMOutputError as e:
        if not e.cut:
            raise
        try:
            return run.solver.chat_json(msgs, role="solver", schema=schema,
                                        max_tokens=2 * budget, **streamed(run))
        except ContextOverflowError:
            raise LLMOutputError(f"{budget} tokens were not enough", cut=True) from e
