"""Neighbor filtering (MERIT §3.4, Eq. 9; prompt after MERIT Appendix 0.F, in our words).

Each anchor clip is shown with its ±Δ neighbors (before_2 … center … after_2); ONE batched
solver call returns, per anchor, only the information relevant to the question — an empty
string when there is none. The reply is a JSON object keyed ``clip_1`` … ``clip_N`` whose
schema is built for exactly those anchors, so it is validated like every other LLM reply.
"""

from __future__ import annotations

from edge.prompts import FILTER_PROMPT, filter_schema
from edge.recall.retrieval import Neighborhood
from edge.timeline import format_moment

LABELS = {-2: "before_2", -1: "before_1", 0: "center", 1: "after_1", 2: "after_2"}


def _label(offset: int) -> str:
    return LABELS.get(offset, f"{'before' if offset < 0 else 'after'}_{abs(offset)}")


def neighborhood_text(hood: Neighborhood, llm, center_tokens: int, neighbor_tokens: int) -> str:
    """One anchor clip's block for the filter prompt: ``time`` (the anchor's start), then
    the clips labelled by offset (``before_2`` … ``center`` … ``after_2``), the anchor cut
    to ``center_tokens`` and each neighbor to ``neighbor_tokens`` tokens of ``llm``."""
    lines = [f"time {format_moment(hood.anchor.t_start, hood.anchor.day, hood.anchor.day_start)}"]
    offsets = [(-(i + 1), c) for i, c in enumerate(hood.before)][::-1]
    offsets += [(0, hood.anchor)] + [(i + 1, c) for i, c in enumerate(hood.after)]
    for off, clip in offsets:
        cap = center_tokens if off == 0 else neighbor_tokens
        lines.append(f"{_label(off)}: {llm.truncate(' '.join(clip.caption.split()), cap)}")
    return "\n".join(lines)


REPLY_TOKENS_PER_CLIP = 80
"""Reply budget per anchor clip when the context allows (the reply's JSON adds 40)."""

MIN_REPLY_TOKENS_PER_CLIP = 24
"""The least reply budget per anchor clip; below it the anchors are split into batches."""

CHARS_PER_REPLY_TOKEN = 3
"""Characters of an anchor's reply per token of its budget (the schema's ``maxLength``)."""

SHRINK_STEPS = ((220, 110), (165, 77), (123, 53), (92, 37), (69, 25), (51, 17))
"""(anchor, neighbor) caption caps in tokens, tried in turn until the prompt fits."""


def _user_text(llm, question: str, hoods: list[Neighborhood], center: int, neighbor: int) -> str:
    blocks = [f"clip_{i}:\n{neighborhood_text(h, llm, center, neighbor)}"
              for i, h in enumerate(hoods, start=1)]
    return f"Question: {question}\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question}"


def reply_tokens_per_clip(llm, question: str, hoods: list[Neighborhood]) -> int:
    """The reply budget per anchor clip of one call over ``hoods``: 80, or what fits in
    the context beside the shortest prompt (the captions at their smallest caps)."""
    least = llm.count_tokens(FILTER_PROMPT + _user_text(llm, question, hoods, *SHRINK_STEPS[-1]))
    room = llm.n_ctx - least - 64 - 40
    return min(REPLY_TOKENS_PER_CLIP, room // len(hoods))


def filter_neighborhoods(
    llm,
    question: str,
    hoods: list[Neighborhood],
    *,
    budget_tokens: int | None = None,
    max_tokens: int | None = None,
) -> dict[int, str]:
    """Relevant information per anchor clip id (``""`` when nothing is relevant).

    One solver call for all ``hoods`` when it fits the context with at least 24 reply
    tokens per anchor, else the anchors are halved into batches (one call each). Neighbor
    captions are shortened until the prompt fits ``budget_tokens`` (default: the context
    left after the reply); the reply gets ``max_tokens`` (default 80 per clip + 40, less
    when only less fits beside the prompt). Raises
    :class:`models.llm.LLMOutputError` when the reply is unusable twice,
    :class:`models.llm.ContextOverflowError` when even the shortest prompt is too long.
    """
    if not hoods:
        return {}
    per_clip = REPLY_TOKENS_PER_CLIP
    if max_tokens is None:
        per_clip = reply_tokens_per_clip(llm, question, hoods)
        if per_clip < MIN_REPLY_TOKENS_PER_CLIP and len(hoods) > 1:
            half = (len(hoods) + 1) // 2
            return {**filter_neighborhoods(llm, question, hoods[:half]),
                    **filter_neighborhoods(llm, question, hoods[half:])}
        max_tokens = max(per_clip, 1) * len(hoods) + 40
    budget_tokens = budget_tokens or llm.n_ctx - max_tokens - 64
    for center, neighbor in SHRINK_STEPS:
        user = _user_text(llm, question, hoods, center, neighbor)
        if llm.count_tokens(FILTER_PROMPT + user) <= budget_tokens:
            break
    messages = [{"role": "system", "content": FILTER_PROMPT},
                {"role": "user", "content": user}]
    max_chars = 300 if per_clip >= REPLY_TOKENS_PER_CLIP else per_clip * CHARS_PER_REPLY_TOKEN
    reply = llm.chat_json(messages, role="solver", schema=filter_schema(len(hoods), max_chars),
                          max_tokens=max_tokens)
    return {h.anchor.id: " ".join(reply[f"clip_{i}"].split())
            for i, h in enumerate(hoods, start=1)}


__all__ = ["FILTER_PROMPT", "filter_neighborhoods", "filter_schema", "neighborhood_text"]
