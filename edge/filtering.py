"""Neighbor filtering (MERIT §3.4, Eq. 9; prompt after MERIT Appendix 0.F, in our words).

Each anchor clip is shown with its ±Δ neighbors (before_2 … center … after_2); ONE batched
solver call returns, per anchor, only the information relevant to the question — an empty
string when there is none. The reply is a JSON object keyed ``clip_1`` … ``clip_N`` whose
schema is built for exactly those anchors, so it is validated like every other LLM reply.
"""

from __future__ import annotations

from edge.prompts import FILTER_PROMPT, filter_schema
from edge.retrieval import Neighborhood
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


def filter_neighborhoods(
    llm,
    question: str,
    hoods: list[Neighborhood],
    *,
    budget_tokens: int | None = None,
    max_tokens: int | None = None,
) -> dict[int, str]:
    """Relevant information per anchor clip id (``""`` when nothing is relevant).

    One solver call for all ``hoods``. Neighbor captions are shortened until the prompt fits
    ``budget_tokens`` (default: the context left after the reply); the reply gets
    ``max_tokens`` (default 80 per clip + 40). Raises
    :class:`models.llm.LLMOutputError` when the reply is unusable twice,
    :class:`models.llm.ContextOverflowError` when even the shortest prompt is too long.
    """
    if not hoods:
        return {}
    max_tokens = max_tokens or 80 * len(hoods) + 40
    budget_tokens = budget_tokens or llm.n_ctx - max_tokens - 64
    center, neighbor = 220, 110
    while True:
        blocks = [f"clip_{i}:\n{neighborhood_text(h, llm, center, neighbor)}"
                  for i, h in enumerate(hoods, start=1)]
        user = f"Question: {question}\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question}"
        if llm.count_tokens(FILTER_PROMPT + user) <= budget_tokens or neighbor <= 20:
            break
        center, neighbor = int(center * 0.75), int(neighbor * 0.7)
    messages = [{"role": "system", "content": FILTER_PROMPT},
                {"role": "user", "content": user}]
    reply = llm.chat_json(messages, role="solver", schema=filter_schema(len(hoods)),
                          max_tokens=max_tokens)
    return {h.anchor.id: " ".join(reply[f"clip_{i}"].split())
            for i, h in enumerate(hoods, start=1)}


__all__ = ["FILTER_PROMPT", "filter_neighborhoods", "filter_schema", "neighborhood_text"]
