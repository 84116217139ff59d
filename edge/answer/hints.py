"""What the timeline says about a question before the solver reads any note, with no LLM
call (issue 12, item 5): a small solver should be handed a count and a dated list, not be
asked to count over five clips or to order events it reads out of order.

- A counting / habit question ("how many times", "how often", "usually"): the episodes of
  what it asks about across its whole scope (:func:`edge.answer.search.episodes`, the
  aggregation over the timeline MERIT §5 names as its failure case), with their times.
- A temporal-order question (before / after / first / last / then): the time of the best
  match of each of its events (:func:`edge.answer.search.event_phrases`) and, for a
  multiple-choice question, of each option — in time order.

The hints go after the notes, right before the question the solver reads last.
"""

from __future__ import annotations

from edge.store import Memory
from edge.timeline import TimeWindow, day_of, format_moment

from .options import AskOptions
from .search import (
    embed_queries,
    episodes,
    event_phrases,
    is_counting,
    is_order_question,
    ranked_in_scope,
)

MAX_EPISODES = 8
"""Episodes listed at most (the count says how many were found)."""


def moment(t: float) -> str:
    """``DAY1 11:15`` (or ``2025-02-20 19:30``) for timeline second ``t``: minutes only."""
    return format_moment(t, *day_of(t))[:-3]


def counting_hint(memory: Memory, embedder, question: str, opts: AskOptions) -> str:
    """One line listing the episodes matching ``question`` in its scope, in timeline order
    (at most :data:`MAX_EPISODES`, with the total), or ``""`` when none is found."""
    found = episodes(memory, embedder, question, opts)
    if not found:
        return ""
    shown = "; ".join(moment(e.start) if e.end - e.start <= 60 else
                      f"{moment(e.start)}–{moment(e.end)[-5:]}" for e in found[:MAX_EPISODES])
    more = f" (and {len(found) - MAX_EPISODES} more)" if len(found) > MAX_EPISODES else ""
    return (f"Search of the whole time range: {len(found)} separate episode(s) match the "
            f"question, at {shown}{more}. Check each against the notes.")


def order_hint(memory: Memory, embedder, question: str, opts: AskOptions,
               scope: TimeWindow) -> str:
    """One line with the time of the best match of each event of an order question and of
    each option, sorted by time, or ``""`` when there are fewer than two."""
    labelled = [(f'"{e}"', e) for e in event_phrases(question)]
    labelled += [(f"choice {ltr} ({c})", c)
                 for ltr, c in zip(opts.letters, opts.choices or [])]
    if len(labelled) < 2:
        return ""
    vecs = embed_queries(embedder, [text for _, text in labelled])
    best = {}
    for (label, text), vec in zip(labelled, vecs):
        top = ranked_in_scope(memory, [text], [vec], opts, scope, 1)
        if top:
            best[label] = top[0].clip_id
    if len(best) < 2:
        return ""
    clips = memory.clips(list(set(best.values())))
    found = sorted((clips[cid].t_start, label) for label, cid in best.items())
    words = ["first", *["then"] * (len(found) - 2), "last"]
    return ("Timeline search, in time order: "
            + "; ".join(f"{w} {label} at {moment(t)}" for w, (t, label) in zip(words, found))
            + ".")


def question_hints(memory: Memory, embedder, question: str, opts: AskOptions,
                   scope: TimeWindow) -> str:
    """The hints for ``question`` (``""`` when none applies or ``opts.hints`` is off), as
    lines ending in a blank line, to go after the notes. ``embedder``: 384-d unit
    vectors; ``scope``: the question's time scope (clips ending in ``(start, end]``)."""
    if not opts.hints:
        return ""
    lines = []
    if is_counting(question):
        lines.append(counting_hint(memory, embedder, question, opts))
    elif is_order_question(question):
        lines.append(order_hint(memory, embedder, question, opts, scope))
    text = "\n".join(line for line in lines if line)
    return f"{text}\n\n" if text else ""
