"""The pure part of identity matching: grouping vectors with scikit-learn's agglomerative
clustering (average linkage, cut at the match threshold), choosing the identity a group
joins from the KNN candidates the store returns, and planning the moves of a re-clustering.
No model, no store: arrays and ids in, decisions out.

Distances: faces are compared by Euclidean distance between 128-d dlib descriptors (two
descriptors under ``FACE_MATCH`` are one person, dlib's own rule); voices by cosine
distance ``1 − cos`` between 256-d GE2E embeddings (one speaker above ``VOICE_MATCH``
similarity, i.e. under ``1 − VOICE_MATCH`` distance).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

METRIC = {"face": "euclidean", "voice": "cosine"}
"""The scikit-learn metric each kind of vector is clustered with."""


def group(vectors: np.ndarray, threshold: float, kind: str) -> np.ndarray:
    """Cluster labels ``(n,)`` (0, 1, …) for the ``(n, dim)`` ``vectors`` of ``kind``
    (``face``/``voice``): agglomerative clustering with average linkage whose merges stop at
    the distance ``threshold`` (scikit-learn ``AgglomerativeClustering``; average linkage
    keeps one blurry outlier from chaining two people together, as single linkage would).
    One vector is its own group; none gives ``(0,)``."""
    vectors = np.asarray(vectors, dtype=np.float64)
    if len(vectors) < 2:
        return np.zeros(len(vectors), dtype=np.int64)
    from sklearn.cluster import AgglomerativeClustering

    model = AgglomerativeClustering(n_clusters=None, distance_threshold=float(threshold),
                                    linkage="average", metric=METRIC[kind])
    return model.fit_predict(vectors).astype(np.int64)


def split_by_preference(labels: np.ndarray, preferred: Sequence[int | None],
                        weights: Sequence[float]) -> np.ndarray:
    """``labels`` (:func:`group`'s clusters of one clip's vectors) split so that no cluster
    holds two vectors that each clearly prefer a different known identity (``preferred``:
    per vector, the identity it is clearly nearest, or ``None``): a cannot-link between
    them. A vector with no preference goes with the part of its cluster holding the most
    ``weights`` (seconds of speech). Returns new labels ``(n,)`` (0, 1, …). Noise makes
    turns of different voices alike to one another before they are alike to anyone known
    (white noise at ~15 dB: two enrolled readers' turns grouped, then stored as one unnamed
    person)."""
    labels = np.asarray(labels)
    out = np.empty(len(labels), dtype=np.int64)
    n = 0
    for k in sorted(set(labels.tolist())):
        rows = np.flatnonzero(labels == k)
        parts: dict[int | None, list[int]] = {}
        for r in rows:
            parts.setdefault(preferred[r], []).append(int(r))
        loose = parts.pop(None, [])
        if not parts:
            parts = {None: loose}
            loose = []
        biggest = max(parts, key=lambda p: (sum(weights[r] for r in parts[p]), -min(parts[p])))
        parts[biggest] += loose
        for p in sorted(parts, key=lambda p: min(parts[p])):
            out[parts[p]] = n
            n += 1
    return out


def centroid(vectors: np.ndarray, kind: str) -> np.ndarray:
    """The mean of ``vectors`` ``(n, dim)`` as float32; a voice centroid is L2-normalised
    (GE2E compares directions)."""
    c = np.asarray(vectors, dtype=np.float64).mean(axis=0)
    if kind == "voice":
        c = c / max(float(np.linalg.norm(c)), 1e-12)
    return c.astype(np.float32)


def distances(vector: np.ndarray, members: np.ndarray, kind: str) -> np.ndarray:
    """``(n,)``: the distance from ``vector`` to each row of ``members`` (Euclidean for
    faces, ``1 − cos`` for voices)."""
    v, m = np.asarray(vector, np.float64), np.asarray(members, np.float64)
    if kind == "face":
        return np.linalg.norm(m - v, axis=1)
    norms = np.linalg.norm(m, axis=1) * max(float(np.linalg.norm(v)), 1e-12)
    return 1.0 - (m @ v) / np.maximum(norms, 1e-12)


def choose(candidates: Sequence[tuple[int, int, float]], threshold: float
           ) -> tuple[int | None, float]:
    """The identity a group of vectors joins: ``candidates`` are ``(appearance_id,
    identity_id, distance)`` from the store's KNN (for each of the group's vectors, pooled);
    the identity of the nearest one when its distance is under ``threshold``, with that
    distance; else ``(None, nearest distance or inf)`` — the group starts a new identity."""
    if not candidates:
        return None, float("inf")
    _, identity, dist = min(candidates, key=lambda c: (c[2], c[1]))
    return (identity if dist < threshold else None), dist


def plan_moves(identities: np.ndarray, enrolled: np.ndarray, labels: np.ndarray,
               named: Mapping[int, bool]) -> dict[int, list[int]]:
    """What a re-clustering changes: ``{identity_id: [row, ...]}``, the rows (indices into
    the arrays) that move to that identity.

    ``identities``: each vector's identity now; ``enrolled``: rows the user gave;
    ``labels``: the new clusters (:func:`group`); ``named``: identity → has a name. Only the
    vectors of unnamed identities ever move (what the user named or enrolled is never
    taken away by a rebuild). Per cluster: one holding vectors of two or more named
    identities is left alone (two persons the user named are never merged); one holding a
    named identity's enrolled vector, or as many of its vectors as any unnamed identity
    holds, belongs to that person; else to the identity holding most of its vectors (the
    lowest id on a tie). The cluster's unnamed vectors of other identities move to its
    owner: clusters merge identities and pull stray vectors back; an identity left without
    vectors is deleted by the caller."""
    moves: dict[int, list[int]] = {}
    for label in np.unique(labels):
        rows = np.flatnonzero(labels == label)
        held = Counter(int(identities[r]) for r in rows)
        names = [i for i in held if named.get(i)]
        if len(names) > 1:
            continue
        owner = min(held, key=lambda i: (-held[i], i))
        if names and (held[names[0]] >= held[owner] or any(
                enrolled[r] and int(identities[r]) == names[0] for r in rows)):
            owner = names[0]
        for r in rows:
            ident = int(identities[r])
            if ident != owner and not named.get(ident) and not enrolled[r]:
                moves.setdefault(owner, []).append(int(r))
    return moves
