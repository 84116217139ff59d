"""Query decomposition (MARQUIS §3.1): one solver call splits a question into atomic
sub-queries — short search phrases, each about one retrievable fact — which are searched
separately next to the question itself and fused
(:func:`edge.recall.retrieval.multi_query_retrieve`).

A question about a single fact needs no decomposition; the model may return one sub-query
then, or an empty list, and retrieval degrades to the question alone.
"""

from __future__ import annotations

from edge.prompts import DECOMPOSE_PROMPT, REWRITE_PROMPT, decompose_schema
from models.llm import ContextOverflowError, LLMOutputError

STYLES = ("phrases", "statements")
"""What :func:`decompose` writes: atomic search phrases, or statements in the memory's style."""


def decompose(llm, question: str, *, max_queries: int = 3,
              choices: list[str] | None = None, style: str = "phrases") -> list[str]:
    """Atomic sub-queries of ``question``, deduplicated, the question itself excluded.

    One schema-constrained call to ``llm`` (the solver role). Multiple-choice options are
    shown so phrases can name what the choices mention. Returns ``[]`` — and retrieval uses
    the question alone — when the reply is unusable after the backend's one repair
    (:class:`~models.llm.LLMOutputError`) or the question does not fit the context; both
    are normal degradations, not errors.

    ``style="statements"``: instead of search phrases, the question rewritten as
    ``max_queries`` statements in the memory's own style ("I ... while Shure ..."), notes
    the answer's clips could hold — HyDE-style query rewriting (MARQUIS §3.1 decomposition
    with hypothetical evidence).
    """
    prompt = REWRITE_PROMPT if style == "statements" else DECOMPOSE_PROMPT
    options = "".join(f"\n- {c}" for c in choices or [])
    user = f"Question: {question}" + (f"\nPossible answers:{options}" if options else "")
    messages = [{"role": "system", "content": prompt.format(n=max_queries)},
                {"role": "user", "content": user}]
    try:
        reply = llm.chat_json(messages, role="solver", schema=decompose_schema(max_queries),
                              max_tokens=40 * max_queries + 20)
    except (LLMOutputError, ContextOverflowError):
        return []
    seen = {question.strip().lower()}
    out = []
    for q in reply["queries"]:
        q = " ".join(q.split())
        if q and q.lower() not in seen:
            seen.add(q.lower())
            out.append(q)
    return out[:max_queries]
