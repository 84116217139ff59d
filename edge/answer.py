"""Answering a question from memory: the bounded agent loop (MERIT §3.2, Appendix 0.A).

Before round 1 the question's time scope is fixed: clips that end before the question time
and, when the question names one ("yesterday evening") or ``--from/--to`` gives it, inside
that window — applied inside the KNN. With ``decompose`` one solver call splits the
question into atomic sub-queries (MARQUIS §3.1) searched next to the question and fused.

``loop="merit"`` (default), round r ≤ R:
  1. retrieve the top-N anchors for the round's queries (max-sim over keys, MERIT Eq. 6–7,
     fused by RRF with BM25 when ``retrieval="hybrid"``), add ±Δ neighbors (Eq. 8);
  2. neighbor filtering (Eq. 9): ONE batched solver call keeps, per new anchor, only what
     the question needs;
  3. sufficiency: one solver call reads the filtered evidence so far and says whether it
     suffices, else writes the next search query (skipped in the last round, whose
     evidence goes to the answer anyway).
  Then one final answer call cites the evidence; frames of the anchors go with it only to a
  solver that takes images and is allowed them (adaptive budget, MERIT Appendix 0.A).
  Calls: 2 per round (1 in the last) + 1, plus 1 for decomposition.

``loop="single"``: one call per round answers and decides together over the raw captions
(``neighbor_filter`` optionally adds the filter call) — the cheapest loop for slow CPUs.

Evidence accumulates across rounds without duplicates and is packed into a token budget
(anchors first, by rank) so no prompt ever overflows the solver's context.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from edge.config import frames_dir
from edge.decompose import decompose as decompose_question
from edge.errors import AskError  # noqa: F401 (re-exported)
from edge.expansion import expand_and_prune
from edge.filtering import filter_neighborhoods
from edge.prompts import (
    ANSWER_PROMPT,
    ANSWER_SCHEMA,
    SOLVER_PROMPT,
    SOLVER_SCHEMA,
    SUFFICIENCY_PROMPT,
    SUFFICIENCY_SCHEMA,
    choice_schema,
)
from edge.retrieval import Neighborhood, expand_neighbors, multi_query_retrieve
from edge.store import INDEX_TYPES, Clip, Memory
from edge.timeline import TimeWindow, day_of, format_moment, window_from_question
from models.llm import ContextOverflowError, LLMOutputError
from models.vlm import image_parts

LOOPS = ("merit", "single")



@dataclass
class Moment:
    """A clip shown with the answer. ``role``: anchor (retrieved) or neighbor (±Δ);
    ``cited``: the solver said it relied on it. Times are timeline seconds."""

    clip_id: int
    when: str
    t_start: float
    t_end: float
    caption: str
    transcript: str
    keyframes: list[str]
    role: str
    score: float | None
    round: int
    cited: bool = False
    matched: str = ""  # for anchors: the key type (or "bm25") that ranked it highest
    evidence: str = ""  # what neighbor filtering kept for this anchor's neighborhood


@dataclass
class RoundTrace:
    """One round: its search ``queries`` (``query`` is the first), the anchors found,
    the clips whose evidence the solver read, what filtering kept per anchor clip id, and
    the solver's decision (with ``cited_clips`` as clip ids in ``loop="single"``)."""

    round: int
    query: str
    anchors: list[dict]
    evidence: list[int]
    decision: dict | None
    queries: list[str] = field(default_factory=list)
    filtered: dict[int, str] = field(default_factory=dict)
    expanded: dict = field(default_factory=dict)


@dataclass
class Answer:
    """The result of :func:`ask`. ``moments``: cited clips first, then the other anchors.
    ``scope``: the time window searched (``label``, ``start``, ``end`` timeline seconds)."""

    question: str
    asked_at: str
    answer: str
    sufficient: bool
    moments: list[Moment]
    rounds: list[RoundTrace]
    usage: dict
    seconds: float
    note: str = ""
    evidence_count: int = 0
    extra: dict = field(default_factory=dict)
    scope: dict = field(default_factory=dict)
    sub_queries: list[str] = field(default_factory=list)
    final: dict | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Item:
    clip: Clip
    role: str
    score: float | None
    round: int
    rank: tuple
    matched: str = ""


def _pack(items: list[_Item], llm, budget: int, anchor_tokens: int,
          neighbor_tokens: int, texts: dict[int, str] | None = None) -> list[tuple[_Item, str]]:
    """Choose evidence by priority until ``budget`` tokens are used; chronological output.
    ``texts`` replaces a clip's caption (e.g. by its filtered note)."""
    chosen: list[tuple[_Item, str]] = []
    used = 0
    for it in sorted(items, key=lambda i: i.rank):
        cap = anchor_tokens if it.role == "anchor" else neighbor_tokens
        raw = (texts or {}).get(it.clip.id, it.clip.caption)
        text = llm.truncate(" ".join(raw.split()), cap)
        cost = llm.count_tokens(text) + 16
        if used + cost > budget:
            continue
        chosen.append((it, text))
        used += cost
    chosen.sort(key=lambda p: (p[0].clip.t_start, p[0].clip.id))
    return chosen


def frame_budget(round_no: int, rank: int) -> int:
    """Frames of an anchor clip shown to a VLM solver in the final answer (MERIT
    Appendix 0.A): 6 per clip for round-1 anchors, 6 for the top 5 of round 2 (0 for the
    rest), 1 per clip from round 3 on. ``rank`` counts from 0 within the round."""
    if round_no == 1:
        return 6
    if round_no == 2:
        return 6 if rank < 5 else 0
    return 1


def resolve_scope(memory: Memory, question: str, at: float | None,
                  window: TimeWindow | None, auto_window: bool) -> tuple[TimeWindow, str]:
    """The time window a question searches and a note when a named window was dropped.

    ``window`` (from ``--from/--to``) wins; else, with ``auto_window``, a day or part of a
    day the question names (:func:`edge.timeline.window_from_question`, relative to ``at``
    or, without ``at``, to the last clip) is used when memory holds clips in it. The window
    always ends by ``at``. Raises :class:`AskError` when an explicit window is empty.
    """
    if window is not None:
        w = window.until(at)
        if memory.count_clips(before=w.end, after=w.start) == 0:
            raise AskError(f"nothing in memory ends between {_label(w.start, 'the start')} "
                           f"and {_label(w.end, 'now')}; widen --from/--to")
        return w, ""
    everything = TimeWindow(None, at, "")
    if not auto_window:
        return everything, ""
    ref = at if at is not None else memory.stats()["last"]
    named = window_from_question(question, ref)
    if named is None:
        return everything, ""
    if memory.count_clips(before=named.end, after=named.start) == 0:
        return everything, (f"the question names {named.label}, but memory holds nothing "
                            "then; everything before the question time was searched")
    return named, ""


def ask(
    memory: Memory,
    hub,
    question: str,
    *,
    at: float | None = None,
    window: TimeWindow | None = None,
    auto_window: bool = True,
    top_n: int | None = None,
    delta: int = 2,
    max_rounds: int = 5,
    key_types: tuple[str, ...] = INDEX_TYPES,
    retrieval: str = "hybrid",
    loop: str = "merit",
    decompose: bool = False,
    fusion: str = "rrf",
    rrf_k: int = 60,
    choices: list[str] | None = None,
    neighbor_filter: bool = False,
    pyramid: bool | None = None,
    frames: bool | None = None,
    answer_tokens: int = 300,
    anchor_tokens: int = 300,
    neighbor_tokens: int = 100,
    on_progress: Callable[[str], None] | None = None,
) -> Answer:
    """Answer ``question`` from ``memory`` with cited moments.

    Args:
        at: the question time (timeline seconds); only clips ending by then are used.
            ``None`` means no limit.
        window: search only clips ending inside it (``--from/--to``); ``auto_window``
            reads one from the question ("last night") when none is given.
        top_n: anchors per round; default 10 for a solver with ≥ 16k context, else 5.
        delta: neighbor window Δ (0–4). max_rounds: R, the bound on retrieval rounds.
        key_types: which vectors vote in max-sim: any of event/dialogue/object/summary
            and caption; default all five (keys + caption: hit@Δ2 0.962 vs 0.949 for the
            four keys alone, hybrid, on the 78-question day-1 set).
        retrieval: ``hybrid`` (max-sim fused by RRF with BM25 over FTS5) or ``keys``
            (max-sim only, MERIT as published).
        loop: ``merit`` (filter + sufficiency per round, then a final answer) or
            ``single`` (one call per round answers and decides; see the module doc).
        decompose: MARQUIS sub-queries (one more call) fused with ``fusion``
            (rrf/wrrf/max/sum/mean; ``rrf_k`` = K of RRF).
        choices: multiple-choice options, lettered A, B, …; the answer is exactly one
            letter and the reason goes to ``Answer.extra["reason"]``.
        neighbor_filter: ``loop="single"`` only — add MERIT neighbor filtering.
        pyramid: PyraVid expansion and pruning each round (one more solver call: fact
            seeds + linked facts, pruned; :mod:`edge.expansion`) and the day's global node
            as context; ``None`` = when the memory has a pyramid.
        frames: send anchor keyframes with the final answer; ``None`` = when the solver's
            ``accepts_frames`` is true (a VLM whose backend allows frames; remote roles
            only with ``allow_frames``). ``True`` with a solver that does not take frames
            raises :class:`AskError`.
        on_progress: called with one short line before each search and solver call
            (``round 2/5: searching 'power bank'``), from the calling thread. It may raise
            to stop the question early; the exception propagates.
    Raises:
        AskError: the question is empty, the memory is empty, or holds nothing in scope.
        ValueError: an unknown ``retrieval``, ``loop`` or ``fusion``.
    """
    if choices is not None and not 2 <= len(choices) <= 26:
        raise AskError("a multiple-choice question needs 2 to 26 choices")
    if choices is not None and any(not str(c).strip() for c in choices):
        empty = [chr(ord("A") + i) for i, c in enumerate(choices) if not str(c).strip()]
        raise AskError(f"choice {', '.join(empty)} is empty; write each option between the "
                       "'|' separators, e.g. --choices 'Tasha|Alice|Shure|Lucia'")
    if retrieval not in ("keys", "hybrid"):
        raise ValueError(f"unknown retrieval {retrieval!r}; use 'keys' or 'hybrid'")
    if loop not in LOOPS:
        raise ValueError(f"unknown loop {loop!r}; use {' or '.join(LOOPS)}")
    t0 = time.perf_counter()
    question = question.strip()
    if not question:
        raise AskError("the question is empty")
    stats = memory.stats()
    if stats["clips"] == 0:
        raise AskError(f"the memory at {memory.path} is empty; ingest footage first with "
                       "`edge ingest VIDEO...` or `edge ingest-captions FILE`")
    asked_at = _label(at, "now")
    if at is not None and memory.count_clips(before=at) == 0:
        first, last = (format_moment(t, *day_of(t)) for t in (stats["first"], stats["last"]))
        raise AskError(f"nothing in memory ends before the question time {asked_at}; the "
                       f"memory covers {first} to {last}. Use a later --at (same form).")
    scope, note = resolve_scope(memory, question, at, window, auto_window)
    progress = on_progress or (lambda _line: None)
    if pyramid is None:
        pyramid = memory.has_facts()

    mark = hub.usage.mark()
    embedder, solver = hub.embedder, hub.llm("solver")
    if top_n is None:
        top_n = 10 if solver.n_ctx >= 16384 else 5
    takes_frames = bool(getattr(solver, "accepts_frames", False))
    if frames and not takes_frames:
        raise AskError("the solver does not take frames: use a VLM solver whose backend "
                       "allows them (allow_frames = true for that role), or drop --frames")
    if frames is None:
        frames = takes_frames
    letters = [chr(ord("A") + i) for i in range(len(choices or []))]
    options = "".join(f"\n{ltr}. {c}" for ltr, c in zip(letters, choices or []))
    context = _global_context(memory, scope, solver) if pyramid else ""
    header = f"{context}Question (asked at {asked_at}): {question}{options}\n\nNotes:\n"
    budget = (solver.n_ctx - answer_tokens - solver.count_tokens(SOLVER_PROMPT)
              - solver.count_tokens(header) - solver.count_tokens(question + options) - 96)

    def notes_text(numbered: list[tuple[_Item, str]]) -> str:
        return "\n".join(
            f"[{n}] {format_moment(it.clip.t_start, it.clip.day, it.clip.day_start)}: {text}"
            for n, (it, text) in enumerate(numbered, start=1))

    def messages(system: str, notes: str, tail: str = "") -> list[dict]:
        # The question is repeated after the notes: small models answer what they read last.
        return [{"role": "system", "content": system},
                {"role": "user", "content": f"{header}{notes}\n\nQuestion: {question}"
                                            f"{options}{tail}"}]

    sub_queries: list[str] = []
    queries = [question]
    if decompose:
        progress("splitting the question into search phrases")
        sub_queries = decompose_question(solver, question, choices=choices)
        queries += sub_queries

    items: dict[int, _Item] = {}
    filtered: dict[int, str] = {}
    linked: dict[int, list[str]] = {}  # clip id → facts kept by pyramid pruning
    offered: set[int] = set()
    anchors_by_round: list[list[int]] = []
    rounds: list[RoundTrace] = []
    tried: set[str] = set()
    decision: dict | None = None
    numbered: list[tuple[_Item, str]] = []
    filtering = loop == "merit" or neighbor_filter
    for r in range(1, max_rounds + 1):
        tried.update(q.lower() for q in queries)
        progress(f"round {r}/{max_rounds}: searching {queries[0]!r}"
                 + (f" and {len(queries) - 1} sub-queries" if len(queries) > 1 else ""))
        vecs = list(embedder.embed(queries)) if len(queries) > 1 else [
            embedder.embed_one(queries[0])]
        anchors = multi_query_retrieve(
            memory, queries, vecs, top_n=top_n, key_types=key_types,
            lexical=retrieval == "hybrid", fusion=fusion, k=rrf_k,
            before=scope.end, after=scope.start)
        anchors_by_round.append([a.clip_id for a in anchors])
        hoods: list[Neighborhood] = expand_neighbors(memory, anchors, delta, before=at)
        new_filtered: dict[int, str] = {}
        if filtering:
            new = [h for h in hoods if h.anchor.id not in filtered]
            if new:
                progress(f"round {r}/{max_rounds}: filtering {len(new)} neighborhood(s)")
                try:
                    new_filtered = filter_neighborhoods(solver, question, new)
                except (LLMOutputError, ContextOverflowError) as e:
                    note = f"neighbor filtering failed ({e}); raw captions were used"
                    new_filtered = {h.anchor.id: " ".join(h.anchor.caption.split())
                                    for h in new}
                filtered.update(new_filtered)
        for rank, h in enumerate(hoods):
            old = items.get(h.anchor.id)
            if old is None or old.role != "anchor":
                items[h.anchor.id] = _Item(h.anchor, "anchor", h.score, r, (0, r, rank),
                                           matched=anchors[rank].key_type)
            for dist, c in [*((i + 1, c) for i, c in enumerate(h.before)),
                            *((i + 1, c) for i, c in enumerate(h.after))]:
                if c.id not in items:
                    items[c.id] = _Item(c, "neighbor", None, r, (1, dist, r, rank))
        expanded: dict = {}
        if pyramid:
            progress(f"round {r}/{max_rounds}: expanding over the pyramid")
            pool, kept_facts, pnote = expand_and_prune(
                memory, solver, question, vecs[0], [a.clip_id for a in anchors],
                before=scope.end, after=scope.start, exclude_facts=offered)
            note = note or pnote
            offered.update(c.fact_id for c in pool)
            new_clips = [c.clip_id for c in kept_facts if c.clip_id not in items]
            clips = memory.clips(new_clips)
            for i, c in enumerate(kept_facts):
                linked.setdefault(c.clip_id, []).append(" ".join(c.text.split()))
                if c.clip_id not in items:
                    items[c.clip_id] = _Item(clips[c.clip_id], "linked", c.score, r,
                                             (0, r, top_n + i), matched=c.via)
            expanded = {"offered": [{"fact_id": c.fact_id, "clip_id": c.clip_id,
                                     "via": c.via} for c in pool],
                        "kept": [c.fact_id for c in kept_facts]}
        texts = {cid: "; ".join(fs) for cid, fs in linked.items()}
        if filtering:  # the filtered notes stand for whole neighborhoods
            texts.update({cid: t for cid, t in filtered.items() if t})
            kept = [it for cid, it in items.items()
                    if (it.role == "anchor" and filtered.get(cid)) or it.role == "linked"]
            numbered = _pack(kept, solver, budget, anchor_tokens, neighbor_tokens,
                             texts=texts)
        else:
            numbered = _pack(list(items.values()), solver, budget, anchor_tokens,
                             neighbor_tokens, texts=texts)
        trace = RoundTrace(r, queries[0],
                           [{"clip_id": a.clip_id, "score": round(a.score, 4),
                             "key": a.key_type} for a in anchors],
                           [it.clip.id for it, _ in numbered], None, list(queries),
                           new_filtered, expanded)
        rounds.append(trace)
        if loop == "merit":
            if r == max_rounds:
                break  # the last round's evidence goes straight to the answer
            progress(f"round {r}/{max_rounds}: checking {len(numbered)} note(s)")
            tried_list = "; ".join(sorted(tried))
            try:
                decision = solver.chat_json(
                    messages(SUFFICIENCY_PROMPT, notes_text(numbered) or "(none)",
                             f"\n\nQueries already tried: {tried_list}"),
                    role="solver", schema=SUFFICIENCY_SCHEMA, max_tokens=80)
            except (LLMOutputError, ContextOverflowError) as e:
                note = f"the sufficiency check failed ({e}); answering with what was found"
                break
        else:
            progress(f"round {r}/{max_rounds}: the solver reads {len(numbered)} note(s)")
            schema = choice_schema(letters) if choices else SOLVER_SCHEMA
            try:
                decision = solver.chat_json(messages(SOLVER_PROMPT, notes_text(numbered)),
                                            role="solver", schema=schema,
                                            max_tokens=answer_tokens)
            except (LLMOutputError, ContextOverflowError) as e:
                decision = None
                note = f"the solver's reply was unusable ({e}); showing the retrieved evidence"
            if decision is not None:  # the trace names clips, not note numbers
                decision = {**decision, "cited_clips": _cited_clips(decision, numbered)}
        trace.decision = decision
        if decision is None or decision["sufficient"]:
            break
        nxt = " ".join(decision.get("search", "").split())
        if not nxt or nxt.lower() in tried:
            break
        queries = [nxt]

    final = None
    if loop == "merit":
        if not numbered:  # filtering kept nothing: read the raw captions rather than nothing
            note = note or ("neighbor filtering found nothing relevant; the answer reads "
                            "the raw captions")
            numbered = _pack(list(items.values()), solver, budget, anchor_tokens,
                             neighbor_tokens)
        progress(f"answering from {len(numbered)} note(s)")
        msgs = messages(ANSWER_PROMPT, notes_text(numbered))
        if frames:
            msgs[-1]["content"] = [{"type": "text", "text": msgs[-1]["content"]},
                                   *_frame_parts(items, anchors_by_round,
                                                 frames_dir(memory.path))]
        schema = choice_schema(letters, decide=False) if choices else ANSWER_SCHEMA
        try:
            try:
                final = solver.chat_json(msgs, role="solver", schema=schema,
                                         max_tokens=answer_tokens)
            except ContextOverflowError:
                if not frames:
                    raise
                # the images did not fit the context: answer from the text evidence alone
                note = "the keyframes did not fit the solver's context; answered from text"
                final = solver.chat_json(messages(ANSWER_PROMPT, notes_text(numbered)),
                                         role="solver", schema=schema,
                                         max_tokens=answer_tokens)
            final = {**final, "cited_clips": _cited_clips(final, numbered)}
        except (LLMOutputError, ContextOverflowError) as e:
            note = f"the solver's answer was unusable ({e}); showing the retrieved evidence"
        answer_from = final
        sufficient = final is not None and (decision is None or bool(decision["sufficient"]))
    else:
        answer_from = decision
        sufficient = bool(decision and decision["sufficient"])

    cited_ids = list(dict.fromkeys(answer_from["cited_clips"])) if answer_from else []
    anchor_ids = [it.clip.id for it in sorted(items.values(), key=lambda i: i.rank)
                  if it.role in ("anchor", "linked")]
    moments = [_moment(items[cid], filtered, cited=True) for cid in cited_ids]
    moments += [_moment(items[cid], filtered) for cid in anchor_ids if cid not in cited_ids]
    answer_text = (answer_from or {}).get("answer", "").strip()
    if answer_from is not None and not answer_text:
        note = "the solver gave no answer; showing the retrieved evidence"
    extra = {}
    if choices:
        extra = {"choices": dict(zip(letters, choices)),
                 "reason": (answer_from or {}).get("reason", "")}
    return Answer(
        question=question, asked_at=asked_at, answer=answer_text, extra=extra,
        sufficient=sufficient, moments=moments, rounds=rounds,
        usage=hub.usage.summary(mark), seconds=round(time.perf_counter() - t0, 2), note=note,
        evidence_count=len(numbered), sub_queries=sub_queries, final=final,
        scope={"label": scope.label, "start": scope.start, "end": scope.end})


def _global_context(memory: Memory, scope: TimeWindow, llm, max_tokens: int = 160) -> str:
    """The PyraVid global node of the day the question is about (the latest version that
    integrates only clips ending by the question time), cut to ``max_tokens``; ``""`` when
    the memory has none."""
    t = scope.end if scope.end is not None else memory.stats()["last"]
    day, _ = day_of(t)
    node = memory.global_node(day, before=scope.end) or memory.global_node("", before=scope.end)
    if node is None or not node.text.strip():
        return ""
    text = llm.truncate(" ".join(node.text.split()), max_tokens)
    return f"Summary of {node.day or 'the memory'} so far: {text}\n\n"


def _cited_clips(reply: dict, numbered: list[tuple[_Item, str]]) -> list[int]:
    return [numbered[n - 1][0].clip.id for n in reply["cited"] if 1 <= n <= len(numbered)]


def _frame_parts(items: dict[int, _Item], anchors_by_round: list[list[int]],
                 folder: Path) -> list[dict]:
    """Image parts for the anchors' keyframes (paths relative to ``folder``) by
    :func:`frame_budget`, each clip once, in round order; missing files are skipped."""
    parts, seen = [], set()
    for r, ids in enumerate(anchors_by_round, start=1):
        for rank, cid in enumerate(ids):
            if cid in seen:
                continue
            seen.add(cid)
            paths = [folder / p for p in items[cid].clip.keyframes][: frame_budget(r, rank)]
            parts += image_parts([p for p in paths if p.is_file()])
    return parts


def _moment(it: _Item, filtered: dict[int, str], cited: bool = False) -> Moment:
    c = it.clip
    return Moment(c.id, format_moment(c.t_start, c.day, c.day_start), c.t_start, c.t_end,
                  c.caption, c.transcript, c.keyframes, it.role,
                  None if it.score is None else round(it.score, 4), it.round, cited,
                  it.matched, filtered.get(c.id, ""))


def _label(t: float | None, default: str) -> str:
    if t is None:
        return default
    return format_moment(t, *day_of(t))
