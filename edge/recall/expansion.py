"""Structure-guided evidence expansion and pruning over the PyraVid pyramid (PyraVid §3.3,
Appendix B.4), as one bounded step of a round of the agent loop.

Seeds are the fact nodes most similar to the round's query (vec0 KNN inside the question's
time scope). Expansion follows the memory graph from the seeds and from the round's anchor
clips: relational fact↔fact links, the facts of clips linked clip↔clip to an anchor, and
the facts of seed clips. Facts of the anchors themselves are left out (the anchors' own
evidence already covers them). The pool is capped at ``max_nodes`` facts of at most
``fact_tokens`` tokens each; then ONE solver call prunes it — it keeps the numbers of the
facts that help answer the question — so only useful nodes enter the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edge.prompts import PRUNE_PROMPT, prune_schema
from edge.store import Memory
from edge.timeline import day_of, format_moment
from models.llm import ContextOverflowError, LLMOutputError


@dataclass(frozen=True)
class Candidate:
    """A fact node offered to pruning. ``via``: ``seed`` (similar to the query),
    ``relational`` (linked to a seed fact), ``linked-clip`` (a fact of a clip linked to an
    anchor). ``score``: cosine similarity for seeds, else the link weight."""

    fact_id: int
    clip_id: int
    t_start: float
    text: str
    via: str
    score: float


def expand(memory: Memory, query_vec: np.ndarray, anchor_ids: list[int], *,
           before: float | None = None, after: float | None = None, seeds: int = 6,
           max_nodes: int = 12, exclude_facts: set[int] | frozenset = frozenset()
           ) -> list[Candidate]:
    """The candidate pool for one round, best first, at most ``max_nodes`` facts; no
    solver call.

    Args:
        query_vec: the round's 384-d unit query vector. anchor_ids: the round's anchor
            clips (their own facts are left out).
        before, after: the time scope (timeline seconds): only facts of clips ending in
            ``(after, before]`` — applied inside the vec0 KNN for the seeds.
        seeds: KNN depth for seed facts. exclude_facts: facts already offered earlier.
    """
    anchors = set(anchor_ids)
    pool: dict[int, Candidate] = {}

    def in_scope(clip_end: float) -> bool:
        return ((before is None or clip_end <= before)
                and (after is None or clip_end > after))

    hits = memory.knn_facts(query_vec, seeds, before=before, after=after)
    facts = memory.facts(fid for fid, _ in hits)
    seed_ids = []
    for fid, sim in hits:
        f = facts.get(fid)
        if f is None:
            continue
        seed_ids.append(fid)
        if f.clip_id not in anchors and fid not in exclude_facts:
            pool.setdefault(fid, Candidate(fid, f.clip_id, f.t_start, f.text, "seed", sim))
    # relational fact↔fact links of the seeds (stored newer → older, followed both ways)
    linked = []
    for ln in memory.links_from("fact", seed_ids, link_kind="relational"):
        other = ln.dst_id if ln.src_id in seed_ids and ln.src_kind == "fact" else ln.src_id
        linked.append((other, ln.weight))
    # clips linked clip↔clip to an anchor: their facts
    linked_clips = {}
    for ln in memory.links_from("clip", anchors, link_kind="relational"):
        other = ln.dst_id if ln.src_id in anchors else ln.src_id
        if other not in anchors:
            linked_clips[other] = max(linked_clips.get(other, 0.0), ln.weight)
    more = memory.facts(fid for fid, _ in linked)
    by_clip = memory.facts_of(linked_clips)
    ends = _clip_ends(memory, {f.clip_id for f in more.values()} | set(linked_clips))
    offers = [(more[fid], w, "relational") for fid, w in linked if fid in more]
    offers += [(f, linked_clips[cid], "linked-clip") for cid, fs in by_clip.items() for f in fs]
    for f, w, via in offers:
        if (f.id in pool or f.id in exclude_facts or f.clip_id in anchors
                or not in_scope(ends[f.clip_id])):
            continue
        pool[f.id] = Candidate(f.id, f.clip_id, f.t_start, f.text, via, float(w))
    return list(pool.values())[:max_nodes]


def prune(llm, question: str, candidates: list[Candidate], *, fact_tokens: int = 60
          ) -> list[Candidate]:
    """The candidates the solver keeps for ``question``, in the solver's order without
    repeats — ONE schema-constrained call; each fact is cut to ``fact_tokens`` tokens.

    Returns ``[]`` for no candidates (no call). Raises :class:`~models.llm.LLMOutputError`
    when the reply is unusable twice and :class:`~models.llm.ContextOverflowError` when the
    prompt cannot fit (the caller then drops expansion for the round).
    """
    if not candidates:
        return []
    lines = []
    for n, c in enumerate(candidates, start=1):
        lines.append(f"[{n}] {format_moment(c.t_start, *day_of(c.t_start))}: "
                     f"{llm.truncate(' '.join(c.text.split()), fact_tokens)}")
    user = f"Question: {question}\n\nFacts:\n" + "\n".join(lines) + f"\n\nQuestion: {question}"
    reply = llm.chat_json([{"role": "system", "content": PRUNE_PROMPT},
                           {"role": "user", "content": user}],
                          role="solver", schema=prune_schema(len(candidates)),
                          max_tokens=8 + 4 * len(candidates))
    keep = [n for n in reply["keep"] if 1 <= n <= len(candidates)]
    return [candidates[n - 1] for n in dict.fromkeys(keep)]


def expand_and_prune(memory: Memory, llm, question: str, query_vec: np.ndarray,
                     anchor_ids: list[int], **kw) -> tuple[list[Candidate], list[Candidate],
                                                            str]:
    """:func:`expand` (``kw`` are its keywords) then :func:`prune`: ``(offered, kept,
    note)``; a failed pruning call keeps nothing and says why in ``note`` (expansion is an
    extra, never a failure). Raises nothing from the solver."""
    offered = expand(memory, query_vec, anchor_ids, **kw)
    try:
        return offered, prune(llm, question, offered), ""
    except (LLMOutputError, ContextOverflowError) as e:
        return offered, [], f"pyramid pruning failed ({e}); expansion skipped this round"


def _clip_ends(memory: Memory, clip_ids: set[int]) -> dict[int, float]:
    return {cid: c.t_end for cid, c in memory.clips(clip_ids).items()}

