"""Retrieval over the memory: pure functions, store in, ranked clips out.

MERIT max-similarity (Eq. 6–7): a clip's relevance to a query is the maximum cosine
similarity between the query embedding and any of the clip's keys; the top-N clips are the
anchors. We run one KNN per key type (vec0 partition) with ``k = N`` and take the max per
clip over the union; that is exact, because a clip in the true top-N must be in the top-N
of the key type where its maximum is reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edge.store import KEY_TYPES, Clip, Memory
from models.repeats import norm_words


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
    after: float | None = None,
) -> list[ScoredClip]:
    """Top-``top_n`` clips by max cosine over their keys (MERIT Eq. 6–7), best first.

    Args:
        query: a 384-d float32 unit vector. key_types: which keys vote (any subset of
            event/dialogue/object/summary, plus ``caption``).
        before, after: timeline seconds; only clips that end in ``(after, before]`` are
            considered (applied inside the KNN as vec0 metadata constraints).
    """
    best: dict[int, ScoredClip] = {}
    for ktype in key_types:
        for clip_id, sim in memory.knn_keys(query, ktype, top_n, before=before, after=after):
            cur = best.get(clip_id)
            if cur is None or sim > cur.score:
                best[clip_id] = ScoredClip(clip_id, sim, ktype)
    ranked = sorted(best.values(), key=lambda s: (-s.score, s.clip_id))
    return ranked[:top_n]


STOPWORDS = frozenset(
    "a an and are at be by did do does for from had has have how i in is it me my of on or "
    "the to was were what when where which who whom why with you your".split()
)

FUSIONS = ("rrf", "wrrf", "max", "sum", "mean")
"""Rank fusion methods (MARQUIS §fusion): reciprocal rank fusion, weighted RRF, and
max / sum / mean of the lists' scores."""


def fts_query(text: str) -> str | None:
    """An FTS5 MATCH expression for free text: its words (stopwords dropped), each quoted,
    joined with OR so BM25 ranks clips by how many and how rare the words are. ``None`` when
    no word is left."""
    words = [w for w in norm_words(text) if w not in STOPWORDS]
    words = list(dict.fromkeys(words))
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in words)


def bm25_retrieve(memory: Memory, query: str, *, top_n: int = 5,
                  before: float | None = None, after: float | None = None
                  ) -> list[ScoredClip]:
    """Top-``top_n`` clips by BM25 over captions, transcripts and keys (FTS5), best first,
    among clips that end in ``(after, before]``.

    ``score`` is the BM25 score (positive, unbounded), ``key_type`` is ``"bm25"``.
    """
    match = fts_query(query)
    if match is None:
        return []
    return [ScoredClip(cid, score, "bm25")
            for cid, score in memory.bm25(match, top_n, before, after)]


def fuse(
    ranked_lists: Sequence[Sequence[ScoredClip]],
    *,
    method: str = "rrf",
    k: int = 60,
    weights: Sequence[float] | None = None,
    top_n: int | None = None,
) -> list[ScoredClip]:
    """Fuse ranked lists of clips into one, best first (MARQUIS rank fusion).

    - ``rrf``: Σ 1/(k + rank) over the lists a clip appears in (rank from 1; k = 10/60/100);
    - ``wrrf``: Σ w/(k + rank) where w is the entry's own similarity score (MARQUIS §3.1),
      or, when ``weights`` are given, one weight per list;
    - ``max`` / ``sum`` / ``mean``: of the clip's scores across lists (mean over the lists
      it appears in). Use these only on comparable scores (e.g. cosine from sub-queries).

    Ties break by clip id. ``key_type`` of the result is the ``key_type`` of the entry that
    contributed the most to it (e.g. ``event`` or ``bm25``). Raises ``ValueError`` for a
    ``method`` not in :data:`FUSIONS` or ``weights`` not one per list.
    """
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}; choose from {', '.join(FUSIONS)}")
    if weights is not None and len(weights) != len(ranked_lists):
        raise ValueError("weights need one weight per ranked list")
    w = list(weights) if weights is not None else None
    scores: dict[int, list[float]] = {}
    best: dict[int, tuple[float, str]] = {}
    for li, ranked in enumerate(ranked_lists):
        for rank, item in enumerate(ranked, start=1):
            if method == "rrf":
                contrib = 1.0 / (k + rank)
            elif method == "wrrf":
                contrib = (w[li] if w is not None else item.score) / (k + rank)
            else:
                contrib = item.score
            scores.setdefault(item.clip_id, []).append(contrib)
            if item.clip_id not in best or contrib > best[item.clip_id][0]:
                best[item.clip_id] = (contrib, item.key_type)
    combine = {"rrf": sum, "wrrf": sum, "sum": sum, "max": max,
               "mean": lambda v: sum(v) / len(v)}[method]
    fused = [ScoredClip(cid, float(combine(v)), best[cid][1]) for cid, v in scores.items()]
    fused.sort(key=lambda s: (-s.score, s.clip_id))
    return fused[:top_n] if top_n is not None else fused


def hybrid_retrieve(memory: Memory, query: str, query_vec: np.ndarray, *, top_n: int = 5,
                    key_types: tuple[str, ...] = KEY_TYPES, before: float | None = None,
                    after: float | None = None, k: int = 60, depth: int = 4,
                    dense_weight: float = 1.0) -> list[ScoredClip]:
    """MERIT max-sim over keys (Eq. 6–7; ``query_vec`` a unit vector of the memory's
    width) fused by RRF (K = ``k``) with BM25 over FTS5 for the text ``query``; each list
    is taken ``depth``×``top_n`` deep before fusing, both inside ``(after, before]``
    (timeline seconds). ``dense_weight``: the max-sim list's weight against BM25's 1
    (weighted RRF; 1 = plain RRF). Scores are RRF scores."""
    dense = max_sim_retrieve(memory, query_vec, top_n=top_n * depth, key_types=key_types,
                             before=before, after=after)
    lexical = bm25_retrieve(memory, query, top_n=top_n * depth, before=before, after=after)
    if dense_weight == 1.0:
        return fuse([dense, lexical], method="rrf", k=k, top_n=top_n)
    return fuse([dense, lexical], method="wrrf", k=k, weights=[dense_weight, 1.0],
                top_n=top_n)


def multi_query_retrieve(
    memory: Memory,
    queries: Sequence[str],
    query_vecs: Sequence[np.ndarray],
    *,
    top_n: int = 5,
    key_types: tuple[str, ...] = KEY_TYPES,
    lexical: bool = True,
    fusion: str = "rrf",
    k: int = 60,
    before: float | None = None,
    after: float | None = None,
    depth: int = 4,
    dense_weight: float = 1.0,
) -> list[ScoredClip]:
    """Retrieve for each query (the question and its sub-queries, MARQUIS §3.1) and fuse
    the ranked lists with ``fusion`` (see :func:`fuse`). Each list is ``depth``×``top_n``
    deep; it is hybrid (:func:`hybrid_retrieve`) when ``lexical`` else max-sim. One query is
    just that query's retrieval. ``query_vecs``: one unit vector per query (the memory's
    width); ``dense_weight`` as in :func:`hybrid_retrieve`. Raises
    ``ValueError`` when the counts differ or there is no query, or for an unknown
    ``fusion``."""
    if len(queries) != len(query_vecs) or not queries:
        raise ValueError("one vector per query, at least one query")
    lists = []
    for q, v in zip(queries, query_vecs):
        n = top_n if len(queries) == 1 else top_n * depth
        if lexical:
            lists.append(hybrid_retrieve(memory, q, v, top_n=n, key_types=key_types,
                                         before=before, after=after, k=k, depth=depth,
                                         dense_weight=dense_weight))
        else:
            lists.append(max_sim_retrieve(memory, v, top_n=n, key_types=key_types,
                                          before=before, after=after))
    if len(lists) == 1:
        return lists[0]
    return fuse(lists, method=fusion, k=k, top_n=top_n)


@dataclass
class Neighborhood:
    """An anchor clip with its neighbor window Δ (MERIT Eq. 8): ``before`` and ``after``
    nearest first, ``score`` the anchor's retrieval score; :attr:`clips` in timeline
    order."""

    anchor: Clip
    score: float
    before: list[Clip]
    after: list[Clip]

    @property
    def clips(self) -> list[Clip]:
        """The window in timeline order: ``before`` (reversed), the anchor, ``after``."""
        return [*reversed(self.before), self.anchor, *self.after]


def expand_neighbors(memory: Memory, anchors: list[ScoredClip], delta: int = 2,
                     before: float | None = None) -> list[Neighborhood]:
    """Attach the ``delta`` clips before and after each anchor clip in its own continuous
    footage (:meth:`Memory.neighbors`: never another camera's clips, never across a gap), one
    :class:`Neighborhood` per anchor in the anchors' order; neighbors that end after
    ``before`` (the query time, timeline seconds) are left out."""
    clips = memory.clips([a.clip_id for a in anchors])
    out = []
    for a in anchors:
        clip = clips[a.clip_id]
        prev, nxt = memory.neighbors(clip, delta)
        if before is not None:
            nxt = [c for c in nxt if c.t_end <= before]
        out.append(Neighborhood(clip, a.score, prev, nxt))
    return out


def spread_anchors(memory: Memory, ranked: Sequence[ScoredClip], top_n: int,
                   spread: int) -> list[ScoredClip]:
    """The top-``top_n`` of ``ranked`` (best first) with anchor spreading: a clip within
    ±``spread`` clips of a better-ranked kept anchor in its continuous footage
    (:meth:`Memory.neighbors`) is skipped for the next candidate, since that anchor's
    neighborhood already shows it. ``spread`` 0 keeps ``ranked[:top_n]``. When too few
    clips are spread apart (a short memory) the skipped ones fill the rest in rank order,
    so ``min(top_n, len(ranked))`` come back."""
    if spread <= 0:
        return list(ranked[:top_n])
    return slot_anchors(memory, [], [], ranked, top_n, spread)


def slot_anchors(memory: Memory, lists: Sequence[Sequence[ScoredClip]],
                 quotas: Sequence[int], fill: Sequence[ScoredClip], top_n: int,
                 spread: int = 0) -> list[ScoredClip]:
    """Anchors with slots: list ``i`` of ``lists`` (each best first) gives its best
    ``quotas[i]`` clips, in list order, then ``fill`` (best first) tops up to ``top_n``.
    A clip already kept, or within ±``spread`` clips of a kept anchor in its continuous
    footage (:meth:`Memory.neighbors`), is skipped for the list's next one, as in
    :func:`spread_anchors`. Slots stop at ``top_n``; with too few distinct clips the
    skipped ones fill the rest in ``fill``'s order, so ``min(top_n, len(fill))`` or more
    come back. Used for a multiple-choice question: the question's best, then each
    option's own best (each option's evidence gets a place in round 1)."""
    pool = {r.clip_id for lst in lists for r in lst} | {r.clip_id for r in fill}
    clips = memory.clips(list(pool))
    kept: list[ScoredClip] = []
    covered: set[int] = set()

    def take(r: ScoredClip) -> None:
        kept.append(r)
        covered.add(r.clip_id)
        if spread > 0:
            prev, nxt = memory.neighbors(clips[r.clip_id], spread)
            covered.update(c.id for c in (*prev, *nxt))

    for lst, quota in zip(lists, quotas):
        got = 0
        for r in lst:
            if len(kept) >= top_n or got >= quota:
                break
            if r.clip_id in covered or r.clip_id not in clips:
                continue
            take(r)
            got += 1
    for r in fill:
        if len(kept) >= top_n:
            break
        if r.clip_id not in covered and r.clip_id in clips:
            take(r)
    return top_up(kept, fill, top_n)


def top_up(anchors: Sequence[ScoredClip], ranked: Sequence[ScoredClip],
           top_n: int) -> list[ScoredClip]:
    """``anchors`` followed by the best clips of ``ranked`` not among them, up to
    ``top_n`` in all (``anchors`` first, in their order; the rest in rank order)."""
    taken = {a.clip_id for a in anchors}
    return [*anchors, *(r for r in ranked if r.clip_id not in taken)][:max(top_n, len(anchors))]


@dataclass(frozen=True)
class Episode:
    """A run of matching clips close in time (one occurrence of a habit or an event):
    ``start``/``end`` timeline seconds of its first clip's start and last clip's end,
    ``clip_ids`` in timeline order, ``best`` its best-scoring clip (its anchor)."""

    start: float
    end: float
    day: str
    clip_ids: list[int]
    best: ScoredClip

    @property
    def score(self) -> float:
        """The episode's score: its best clip's."""
        return self.best.score


EPISODE_GAP_SECONDS = 180.0
"""Clips of one episode lie at most this far apart (end of one to start of the next)."""


def group_episodes(memory: Memory, ranked: Sequence[ScoredClip], *, rel: float = 0.5,
                   gap: float = EPISODE_GAP_SECONDS) -> list[Episode]:
    """Episodes of the clips in ``ranked`` (any order) scoring at least ``rel`` × the best
    score (scores ≥ 0, e.g. RRF or cosine), in timeline order: clips of the same day whose
    start lies ≤ ``gap`` seconds after the previous kept clip's end form one episode.
    ``[]`` for an empty ``ranked``."""
    if not ranked:
        return []
    top = max(r.score for r in ranked)
    kept = {r.clip_id: r for r in ranked if r.score >= rel * top}
    clips = sorted(memory.clips(kept).values(), key=lambda c: (c.t_start, c.id))
    runs: list[list] = []
    for c in clips:
        last = runs[-1][-1] if runs else None
        if last is not None and last.day == c.day and c.t_start - last.t_end <= gap:
            runs[-1].append(c)
        else:
            runs.append([c])
    return [Episode(run[0].t_start, run[-1].t_end, run[0].day, [c.id for c in run],
                    max((kept[c.id] for c in run), key=lambda s: (s.score, -s.clip_id)))
            for run in runs]


def episode_anchors(episodes: Sequence[Episode], top_n: int) -> list[ScoredClip]:
    """The best clip of each of the ``top_n`` best-scoring episodes, best first (anchors
    spread across the timeline, one per occurrence)."""
    best = sorted(episodes, key=lambda e: (-e.score, e.start))[:top_n]
    return [e.best for e in best]
