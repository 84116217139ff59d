"""Round-1 retrieval on its own: what ``edge search`` shows and what :func:`edge.answer.ask`
uses as its first round's anchors — one code path for both, no LLM call.

:func:`first_round` fixes the question's time scope (:func:`~edge.answer.question.
resolve_scope`), builds the round's queries (:func:`round_queries`: the question, then any
MARQUIS sub-queries, then — for a multiple-choice question with ``choice_queries`` — one
query per option, fused) and retrieves the top-N anchors (:func:`round_anchors`: MERIT
max-sim, Eq. 6–7, fused by RRF with BM25 when hybrid).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edge.retrieval import ScoredClip, multi_query_retrieve
from edge.store import Memory
from edge.timeline import TimeWindow

from .options import AskOptions
from .question import check_question, resolve_scope

DEFAULT_TOP_N = 5
"""Anchors per round when ``AskOptions.top_n`` is ``None`` and no solver is loaded to say
(a solver with a ≥ 16k context takes 10 in :func:`edge.answer.ask`)."""


@dataclass(frozen=True)
class FirstRound:
    """Round 1 of a question without the LLM: its ``scope`` (clips ending in
    ``(start, end]``), the ``queries`` searched (question first), their 384-d float32 unit
    vectors ``vecs`` (one per query), the ranked ``anchors`` (best first), a ``note`` when a
    named time window was dropped, and the milliseconds it took (embedding + search)."""

    scope: TimeWindow
    queries: list[str]
    vecs: list[np.ndarray]
    anchors: list[ScoredClip]
    note: str
    ms: float


def round_queries(question: str, opts: AskOptions,
                  sub_queries: Sequence[str] = ()) -> list[str]:
    """The first round's queries: ``question``, then ``sub_queries`` (MARQUIS §3.1), then,
    with ``opts.choice_queries`` and choices, one query per option (the question's words
    followed by the option's), duplicates dropped (case-insensitive), order kept."""
    queries = [question, *sub_queries]
    if opts.choices and opts.choice_queries:
        queries += [f"{question} {c}" for c in opts.choices]
    seen: set[str] = set()
    out = []
    for q in queries:
        key = " ".join(q.lower().split())
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out


def embed_queries(embedder, queries: Sequence[str]) -> list[np.ndarray]:
    """One 384-d float32 unit vector per query (one batched call for several)."""
    if len(queries) == 1:
        return [embedder.embed_one(queries[0])]
    return list(embedder.embed(list(queries)))


def round_anchors(memory: Memory, queries: Sequence[str], vecs: Sequence[np.ndarray],
                  opts: AskOptions, scope: TimeWindow, top_n: int) -> list[ScoredClip]:
    """The top-``top_n`` anchors of one round for ``queries`` inside ``scope`` (MERIT
    max-sim over ``opts.key_types``, fused by RRF with BM25 when ``opts.retrieval`` is
    hybrid; several queries fused with ``opts.fusion``), best first."""
    return multi_query_retrieve(
        memory, list(queries), list(vecs), top_n=top_n, key_types=opts.key_types,
        lexical=opts.retrieval == "hybrid", fusion=opts.fusion, k=opts.rrf_k,
        before=scope.end, after=scope.start)


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
            (:func:`~edge.answer.question.check_question`: bad choices, an empty question,
            an empty memory, nothing before ``opts.at``), or an explicit ``window`` holds no
            clip (:func:`~edge.answer.question.resolve_scope`).
        ValueError: an unknown ``retrieval`` or ``loop``.
    """
    t0 = time.perf_counter()
    question, _asked_at = check_question(memory, question, opts)
    scope, note = resolve_scope(memory, question, opts.at, opts.window, opts.auto_window)
    n = top_n or opts.top_n or DEFAULT_TOP_N
    queries = round_queries(question, opts, sub_queries)
    vecs = embed_queries(embedder, queries)
    anchors = round_anchors(memory, queries, vecs, opts, scope, n)
    return FirstRound(scope, queries, vecs, anchors, note,
                      round(1000 * (time.perf_counter() - t0), 1))
