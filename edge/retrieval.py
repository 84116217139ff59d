"""Retrieval over the memory: pure functions, store in, ranked clips out.

MERIT max-similarity (Eq. 6–7): a clip's relevance to a query is the maximum cosine
similarity between the query embedding and any of the clip's keys; the top-N clips are the
anchors. We run one KNN per key type (vec0 partition) with ``k = N`` and take the max per
clip over the union; that is exact, because a clip in the true top-N must be in the top-N
of the key type where its maximum is reached.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edge.store import KEY_TYPES, Clip, Memory


@dataclass(frozen=True)
class ScoredClip:
    """A retrieved clip: ``score`` is the max cosine similarity (−1…1) and ``key_type`` the
    key that reached it."""

    clip_id: int
    score: float
    key_type: str


def max_sim_retrieve(
    memory: Memory,
    query: np.ndarray,
    *,
    top_n: int = 5,
    key_types: tuple[str, ...] = KEY_TYPES,
    before: float | None = None,
) -> list[ScoredClip]:
    """Top-``top_n`` clips by max cosine over their keys (MERIT Eq. 6–7), best first.

    Args:
        query: a 384-d float32 unit vector. key_types: which keys vote (any subset of
            event/dialogue/object/summary, plus ``caption``).
        before: timeline seconds; only clips that end by then are considered (applied
            inside the KNN).
    """
    best: dict[int, ScoredClip] = {}
    for ktype in key_types:
        for clip_id, sim in memory.knn_keys(query, ktype, top_n, before=before):
            cur = best.get(clip_id)
            if cur is None or sim > cur.score:
                best[clip_id] = ScoredClip(clip_id, sim, ktype)
    ranked = sorted(best.values(), key=lambda s: (-s.score, s.clip_id))
    return ranked[:top_n]


@dataclass
class Neighborhood:
    """An anchor clip with its ±Δ neighbors, in timeline order (MERIT Eq. 8)."""

    anchor: Clip
    score: float
    before: list[Clip]
    after: list[Clip]

    @property
    def clips(self) -> list[Clip]:
        return [*reversed(self.before), self.anchor, *self.after]


def expand_neighbors(memory: Memory, anchors: list[ScoredClip], delta: int = 2,
                     before: float | None = None) -> list[Neighborhood]:
    """Attach the ``delta`` clips before and after each anchor (same day); neighbors that end
    after ``before`` (the question time) are left out."""
    clips = memory.clips([a.clip_id for a in anchors])
    out = []
    for a in anchors:
        clip = clips[a.clip_id]
        prev, nxt = memory.neighbors(clip, delta)
        if before is not None:
            nxt = [c for c in nxt if c.t_end <= before]
        out.append(Neighborhood(clip, a.score, prev, nxt))
    return out
