"""Round-1 retrieval on its own: what ``edge search`` shows and what :func:`edge.answer.ask`
uses as its first round's anchors — one code path for both, no LLM call.

:func:`first_round` fixes the question's time scope (:func:`~edge.answer.scope.
resolve_scope`), builds the round's queries (:func:`round_queries`: the question, then any
MARQUIS sub-queries, then — with ``split_events`` — the event phrases of a before/after
question (:func:`event_phrases`), then — for a multiple-choice question with
``choice_queries`` — one query per option) and retrieves the top-N anchors
(:func:`round_anchors`: MERIT max-sim, Eq. 6–7, fused by RRF with BM25 when hybrid; a soft
part of day ranked first; with ``choice_slots``, one anchor per option after the
question's best (:func:`choice_anchors`); with ``spread``, anchors spread over the footage; with
``aggregate``, a counting question's anchors are its best episodes, :func:`episodes`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from edge.recall.retrieval import (
    STOPWORDS,
    Episode,
    ScoredClip,
    episode_anchors,
    fuse,
    group_episodes,
    multi_query_retrieve,
    slot_anchors,
    spread_anchors,
    top_up,
)
from edge.store import Memory
from edge.timeline import TimeWindow
from models.repeats import norm_words

from .events import EventScope, event_scope
from .options import AskOptions, with_fusion_of
from .people_search import unseen_note, with_people
from .scope import check_question, join_notes, resolve_scope, unbuilt_note

DEFAULT_TOP_N = 5
"""Anchors per round when ``AskOptions.top_n`` is ``None`` and no solver is loaded to say
(a solver with a ≥ 16k context takes 10 in :func:`edge.answer.ask`)."""
SPREAD_DEPTH = 4
"""With ``spread``, anchors are picked from the SPREAD_DEPTH × top-N best candidates."""
AGGREGATE_DEPTH = 50
"""With ``aggregate``, episodes are built from this many best clips in scope."""
AGGREGATE_REL = 0.5
"""With ``aggregate``, a clip joins an episode when its fused score is ≥ this × the best."""
EPISODE_FUSION = {"rrf_k": 60, "dense_weight": 1.0}
"""The fusion episodes are ranked with: :data:`AGGREGATE_REL` was chosen on RRF scores with
k = 60 and BM25 weighted as max-sim. With k = 10 the scores below the best are closer to
it (a clip one list ranks first scores 0.58 of one both lists do, against 0.49 at k = 60),
and every clip of a 12-clip morning passed the bar as one episode."""

COUNTING_RE = re.compile(
    r"\b(how\s+many\s+(?:\w+\s+)?times|how\s+often|usually|every\s+time|each\s+time|each\s+day|"
    r"every\s+day|typically|normally|tend\s+to|most\s+often|habit)\b", re.I)
"""A counting / habit question: its evidence is every occurrence, not one moment."""
ORDER_RE = re.compile(
    r"\b(before|after|first|then|earlier|later|afterwards|prior\s+to|once|next|last)\b", re.I)
"""A temporal-order question: two events and their order."""
_NOT_ORDER_RE = re.compile(  # time phrases whose order words name no event
    r"\bthe\s+day\s+before\s+yesterday\b|\bthe\s+\w+\s+day\b|\bfirst\s+time\b|"
    r"\blast\s+(?:night|week)\b", re.I)
_SPLIT_RE = re.compile(
    r"[,;:.?]|\b(?:before\s+or\s+after|after\s+or\s+before|earlier\s+or\s+later|"
    r"earlier\s+than|later\s+than|prior\s+to|followed\s+by|and\s+then|before|after|then|"
    r"first|earlier|later|afterwards|once|next|last|or)\b", re.I)
_SCAFFOLD = STOPWORDS | frozenset(
    "happen happened come came thing things something yesterday today tonight morning noon "
    "afternoon evening night day days ago time first second third last right just when "
    "while whose end ended up".split())


@dataclass(frozen=True)
class FirstRound:
    """Round 1 of a question without the LLM: its ``scope`` (clips ending in
    ``(start, end]``), the ``queries`` searched (question first), their 384-d float32 unit
    vectors ``vecs`` (one per query), the ranked ``anchors`` (best first), a ``note`` when a
    named time window was dropped or clips in scope wait for the LLM tier
    (:func:`~edge.answer.scope.unbuilt_note`), and the milliseconds it took (embedding +
    search)."""

    scope: TimeWindow
    queries: list[str]
    vecs: list[np.ndarray]
    anchors: list[ScoredClip]
    note: str
    ms: float


def event_phrases(question: str) -> list[str]:
    """The event phrases of a temporal-order question, by rule (no LLM): ``question`` cut
    at its order words (before/after/first/then/earlier/later, "before or after", "prior
    to", "once", "next", "last", "or") and commas, each piece kept when it holds two
    content words (not stopwords, time words or "happen"). ``[]`` when the question has no
    order word outside time phrases ("the day before yesterday", "the first day", "last
    night") or only one piece is left that is the whole question.

    >>> event_phrases("Did I wash the cups before or after Shure played the guitar?")
    ['Did I wash the cups', 'Shure played the guitar']
    """
    if not is_order_question(question):
        return []
    text = _NOT_ORDER_RE.sub(lambda m: "_".join(m.group(0).split()), question)  # one word
    pieces = [" ".join(p.replace("_", " ").split()) for p in _SPLIT_RE.split(text)]
    out = [p for p in pieces if sum(w not in _SCAFFOLD for w in norm_words(p)) >= 2]
    return [] if out == [question.strip()] else out


def is_order_question(question: str) -> bool:
    """Whether ``question`` asks about the order of events: an order word (before, after,
    first, last, then, …) outside time phrases ("the day before yesterday", "the first
    day", "last night")."""
    return bool(ORDER_RE.search(_NOT_ORDER_RE.sub(" ", question)))


def is_counting(question: str) -> bool:
    """Whether ``question`` asks how many times / how often / what usually happens."""
    return bool(COUNTING_RE.search(question))


def round_queries(question: str, opts: AskOptions,
                  sub_queries: Sequence[str] = ()) -> list[str]:
    """The first round's queries: ``question``, then ``sub_queries`` (MARQUIS §3.1), then,
    with ``opts.split_events``, its :func:`event_phrases`, then, with
    ``opts.choice_queries`` and choices, one query per option (the question's words
    followed by the option's), duplicates dropped (case-insensitive), order kept."""
    queries = [question, *sub_queries]
    if opts.split_events:
        queries += event_phrases(question)
    if opts.choices and opts.choice_queries:
        queries += [f"{question} {c}" for c in opts.choices]
    seen: set[str] = set()
    out = []
    for q in queries:
        key = query_key(q)
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out


def query_key(query: str) -> str:
    """``query`` as queries are told apart: lowercased, spacing collapsed."""
    return " ".join(query.lower().split())


def embed_queries(embedder, queries: Sequence[str]) -> list[np.ndarray]:
    """One float32 unit vector per query, embedded as a query (the model's query prompt,
    where it has one: EmbeddingGemma), in one batched call for several."""
    if len(queries) == 1:
        return [embedder.embed_one(queries[0], query=True)]
    return list(embedder.embed(list(queries), query=True))


def ranked_in_scope(memory: Memory, queries: Sequence[str], vecs: Sequence[np.ndarray],
                    opts: AskOptions, scope: TimeWindow, top_n: int) -> list[ScoredClip]:
    """The ``top_n`` best clips for ``queries`` inside ``scope`` (MERIT max-sim over
    ``opts.key_types``, fused by RRF with BM25 when ``opts.retrieval`` is hybrid; several
    queries fused with ``opts.fusion``), best first. With ``scope.prefer`` (a soft part of
    day) the same search inside ``prefer`` is fused in by RRF, so its clips rank first.
    ``opts.rrf_k``/``dense_weight`` still ``None`` (not resolved for an embedder by
    :func:`~edge.answer.options.with_fusion_of`) are RRF's usual 60 and 1."""
    opts = with_fusion_of(opts, None)

    def search(after: float | None, before: float | None) -> list[ScoredClip]:
        return multi_query_retrieve(
            memory, list(queries), list(vecs), top_n=top_n, key_types=opts.key_types,
            lexical=opts.retrieval == "hybrid", fusion=opts.fusion, k=opts.rrf_k,
            before=before, after=after, dense_weight=opts.dense_weight)

    ranked = search(scope.start, scope.end)
    if scope.prefer is None:
        return ranked
    inside = search(*scope.prefer)
    return fuse([ranked, inside], method="rrf", k=opts.rrf_k, top_n=top_n)


def round_anchors(memory: Memory, queries: Sequence[str], vecs: Sequence[np.ndarray],
                  opts: AskOptions, scope: TimeWindow, top_n: int) -> list[ScoredClip]:
    """:func:`ranked_anchors`, with the clips of a person ``queries[0]`` names (one the
    character memory knows) first (:func:`~edge.answer.people_search.with_people`)."""
    anchors = ranked_anchors(memory, queries, vecs, opts, scope, top_n)
    return with_people(memory, queries[0], scope, anchors, top_n)


def ranked_anchors(memory: Memory, queries: Sequence[str], vecs: Sequence[np.ndarray],
                   opts: AskOptions, scope: TimeWindow, top_n: int) -> list[ScoredClip]:
    """The top-``top_n`` anchors of one round for ``queries`` inside ``scope``
    (:func:`ranked_in_scope`), best first. With ``opts.coverage``, an activity question
    (:func:`is_activity`) over a named hard scope gets :func:`coverage_anchors` (a soft
    part of day, ``scope.prefer``, keeps its ranking: in-part clips first). A
    multiple-choice question with
    ``opts.choice_slots`` gets a slot per option (:func:`choice_anchors`). With
    ``opts.aggregate`` and a counting question (``queries[0]``, :func:`is_counting`), the
    best clip of each of the top-``top_n`` :func:`episodes`, topped up from the ranking;
    else with ``opts.spread``, anchors spread ±``spread`` clips apart
    (:func:`edge.recall.retrieval.spread_anchors`) from the :data:`SPREAD_DEPTH` × ``top_n``
    best."""
    n_options = option_query_count(queries, opts)
    if opts.choice_slots and n_options:
        return choice_anchors(memory, queries, vecs, opts, scope, top_n, n_options)
    if opts.aggregate and is_counting(queries[0]):
        ranked = ranked_in_scope(memory, queries, vecs, replace(opts, **EPISODE_FUSION), scope,
                                 AGGREGATE_DEPTH)
        anchors = episode_anchors(group_episodes(memory, ranked, rel=AGGREGATE_REL), top_n)
        return top_up(anchors, ranked, top_n)
    if opts.coverage and scope.label and scope.prefer is None and is_activity(queries[0]):
        ranked = ranked_in_scope(memory, queries, vecs, opts, scope, AGGREGATE_DEPTH)
        return coverage_anchors(memory, ranked, scope, top_n)
    if opts.spread:
        ranked = ranked_in_scope(memory, queries, vecs, opts, scope, SPREAD_DEPTH * top_n)
        return spread_anchors(memory, ranked, top_n, opts.spread)
    return ranked_in_scope(memory, queries, vecs, opts, scope, top_n)


ACTIVITY_RE = re.compile(
    r"^\s*what\s+(?:(?:did|do|have|had)\s+(?:i|we)\s+(?:do|done|been\s+doing|get\s+up\s+to)\b|"
    r"(?:was|were)\s+(?:i|we)\s+(?:\w+ing|up\s+to)\b|(?:else\s+)?happened\b)", re.I)
"""An activity question over a stretch of time ("what did I do after lunch?", "what were
we assembling this morning?"): its answer is spread over the stretch, not one moment."""


def is_activity(question: str) -> bool:
    """Whether ``question`` asks what was done over a stretch of time (:data:`ACTIVITY_RE`)."""
    return bool(ACTIVITY_RE.search(question))


def coverage_anchors(memory: Memory, ranked: Sequence[ScoredClip], scope: TimeWindow,
                     top_n: int) -> list[ScoredClip]:
    """Anchors that cover ``scope`` (issue 42 item 3): its clips in timeline order cut into
    ``top_n`` runs of equal length (footage, not clock time: a break in recording holds
    nothing to cover), each giving its clip ranked best in ``ranked`` (the question's fused
    ranking), else its middle clip (score 0, ``matched`` "coverage"); best first.
    ``ranked`` alone when the scope holds at most 3 × ``top_n`` clips."""
    clips = memory.clips_ending_in(scope.start, scope.end)
    if len(clips) <= 3 * top_n:
        return list(ranked[:top_n])
    spans = [clips[len(clips) * k // top_n:len(clips) * (k + 1) // top_n] for k in range(top_n)]
    rank = {r.clip_id: r for r in ranked}
    out = []
    for span in (s for s in spans if s):
        inside = [rank[c.id] for c in span if c.id in rank]
        out.append(max(inside, key=lambda r: r.score) if inside
                   else ScoredClip(span[len(span) // 2].id, 0.0, "coverage"))
    return sorted(out, key=lambda r: -r.score)


def option_query_count(queries: Sequence[str], opts: AskOptions) -> int:
    """How many of ``queries`` (from :func:`round_queries`, options last) are the
    per-option queries of a multiple-choice question (0 without ``choices`` or
    ``choice_queries``)."""
    if not (opts.choices and opts.choice_queries):
        return 0
    option_keys = {query_key(f"{queries[0]} {c}") for c in opts.choices}
    n = 0
    for q in reversed(queries[1:]):
        if query_key(q) not in option_keys:
            break
        n += 1
    return n


def choice_anchors(memory: Memory, queries: Sequence[str], vecs: Sequence[np.ndarray],
                   opts: AskOptions, scope: TimeWindow, top_n: int,
                   n_options: int) -> list[ScoredClip]:
    """Round-1 anchors of a multiple-choice question with ``opts.choice_slots``: the best
    max(1, ``top_n`` − ``n_options``) clips of the question's own queries (fused), then
    the best clip of each option's query (the last ``n_options`` of ``queries``), then the
    fused ranking of all queries (:func:`ranked_in_scope`, :data:`SPREAD_DEPTH` ×
    ``top_n`` deep each) up to ``top_n`` — spread ±``opts.spread`` clips apart
    (:func:`edge.recall.retrieval.slot_anchors`). A wrong option is a real event elsewhere, so
    fusing the options into one ranking lets the question's words drown the right
    option's evidence; a slot per option shows the solver each option's best moment."""
    opts = with_fusion_of(opts, None)  # the caller's fusion, else the defaults
    depth = SPREAD_DEPTH * top_n
    lists = [ranked_in_scope(memory, [q], [v], opts, scope, depth)
             for q, v in zip(queries, vecs)]
    head, per_option = lists[:-n_options], lists[-n_options:]
    head_ranked = head[0] if len(head) == 1 else fuse(
        head, method=opts.fusion, k=opts.rrf_k, top_n=depth)
    fused = fuse(lists, method=opts.fusion, k=opts.rrf_k, top_n=depth)
    quotas = [max(1, top_n - n_options), *[1] * n_options]
    return slot_anchors(memory, [head_ranked, *per_option], quotas, fused, top_n,
                        opts.spread)


def scope_by_event(memory: Memory, embedder, question: str, opts: AskOptions,
                   scope: TimeWindow) -> tuple[TimeWindow, EventScope | None]:
    """``scope`` narrowed to the event the question names as its time ("after lunch",
    "since we got back from the supermarket": :func:`edge.answer.events.event_scope`),
    found in the memory before the query time with round 1's retrieval; unchanged with
    ``None`` when the question names no event, an explicit ``opts.window`` was given or
    ``opts.auto_window`` is off. The :class:`~edge.answer.events.EventScope` says when the
    event is not in memory (``missing``); the event's window replaces the clock hours
    :func:`~edge.answer.scope.resolve_scope` read ("after lunch" is not "the afternoon")."""
    if opts.window is not None or not opts.auto_window:
        return scope, None
    opts = with_fusion_of(opts, embedder)

    def search(text: str, window: TimeWindow, n: int) -> list[ScoredClip]:
        return ranked_in_scope(memory, [text], embed_queries(embedder, [text]),
                               replace(opts, **EPISODE_FUSION), window, n)

    at = opts.at if opts.at is not None else memory.stats()["last"]
    ev = event_scope(memory, question, at, search)
    if ev is None or ev.window is None:
        return scope, ev
    return ev.window.until(opts.at), ev


def first_round(memory: Memory, embedder, question: str, opts: AskOptions, *,
                sub_queries: Sequence[str] = (), top_n: int | None = None) -> FirstRound:
    """Round-1 anchors of ``question`` exactly as :func:`edge.answer.ask` retrieves them,
    without any LLM call (``sub_queries``, if any, come from the caller).

    Args:
        embedder: the profile's embedder (``embed_one``/``embed``, 384-d unit vectors).
        opts: the question's :class:`AskOptions` (``at``, ``window``, ``auto_window``,
            ``choices``, ``choice_queries``, ``key_types``, ``retrieval``, ``fusion``).
        top_n: anchors to return; default ``opts.top_n`` or :data:`DEFAULT_TOP_N`.
    Raises:
        AskError: what ``ask`` refuses before any model call, in its words
            (:func:`~edge.answer.scope.check_question`: bad choices, an empty question,
            an empty memory, nothing before ``opts.at``), or an explicit ``window`` holds no
            clip (:func:`~edge.answer.scope.resolve_scope`).
        ValueError: an unknown ``retrieval`` or ``loop``.
    """
    t0 = time.perf_counter()
    question, _asked_at = check_question(memory, question, opts)
    opts = with_fusion_of(opts, embedder)
    scope, note = resolve_scope(memory, question, opts.at, opts.window, opts.auto_window,
                                day_part=opts.day_part)
    scope, event = scope_by_event(memory, embedder, question, opts, scope)
    if event is not None and event.missing:
        note = join_notes(event.missing, note)
    n = top_n or opts.top_n or DEFAULT_TOP_N
    queries = round_queries(question, opts, sub_queries)
    vecs = embed_queries(embedder, queries)
    anchors = round_anchors(memory, queries, vecs, opts, scope, n)
    note = join_notes(note, unseen_note(memory, question, scope))
    return FirstRound(scope, queries, vecs, anchors, join_notes(note, unbuilt_note(memory, scope)),
                      round(1000 * (time.perf_counter() - t0), 1))


def episodes(memory: Memory, embedder, question: str, opts: AskOptions, *,
             depth: int = AGGREGATE_DEPTH, rel: float = AGGREGATE_REL) -> list[Episode]:
    """Every episode of what ``question`` asks about inside its scope, in timeline order:
    the ``depth`` best clips (round 1's queries and ranking, :func:`ranked_in_scope`) that
    score ≥ ``rel`` × the best, grouped into runs of clips at most
    :data:`edge.recall.retrieval.EPISODE_GAP_SECONDS` apart
    (:func:`edge.recall.retrieval.group_episodes`):
    each with start/end (timeline seconds), day, clip ids and its best clip — the count and
    the dated list of a "how many times / how often" question. Raises :class:`AskError`
    when an explicit ``opts.window`` holds no clip."""
    scope, _ = resolve_scope(memory, question, opts.at, opts.window, opts.auto_window,
                             day_part=opts.day_part)
    queries = round_queries(question, opts)
    ranked = ranked_in_scope(memory, queries, embed_queries(embedder, queries),
                             replace(opts, **EPISODE_FUSION), scope, depth)
    return group_episodes(memory, ranked, rel=rel)
