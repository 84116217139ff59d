"""Synthetic clips written through the real store (data, not mocks): one factory for every
test that needs a memory with known clips, vectors and facts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edge.store import INDEX_TYPES, Fact, Memory

DIM = 384


def unit_vectors(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    """``(n, dim)`` float32 rows of unit length, reproducible from ``seed``."""
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def add_source(memory: Memory, name: str = "synthetic", *, n_clips: int = 0,
               t_start: float = 0.0, duration: float = 0.0, kind: str = "captions") -> int:
    """Register a synthetic source (hash = ``name``) on the EgoLife day clock; its id."""
    return memory.add_source(path=name, sha256=name, kind=kind, clock="dayclock",
                             start_from="file", t_start=t_start, duration=duration,
                             n_clips=n_clips, info={})


def add_clips(
    memory: Memory,
    captions: Sequence[str] | int,
    *,
    vectors: np.ndarray | None = None,
    seed: int = 0,
    t0: float = 36000.0,
    step: float = 30.0,
    day: str = "DAY1",
    day_start: float = 0.0,
    keys: str = "numbered",
    source: int | str = "synthetic",
    keyframes: Sequence[Sequence[str]] | None = None,
    facts: Sequence[Sequence[str]] | None = None,
    fact_vectors: Sequence[np.ndarray] | None = None,
    finish: bool = False,
    first_idx: int = 0,
) -> list[int]:
    """Store one 30 s clip per caption (or ``n`` clips captioned ``clip i``), back to back
    from ``t0`` (timeline seconds); returns their ids.

    ``vectors``: ``(n, len(INDEX_TYPES), 384)``, ``(n, 384)`` (one vector for every key of a
    clip) or ``(384,)`` (the same for all); random unit vectors from ``seed`` when None.
    ``keys``: ``numbered`` (``"event 3"`` …) or ``caption`` (every key is the caption), all
    with origin ``file``. ``source``: an id, or a name to register. ``facts``: fact texts per
    clip (kind ``action``, equal shares of the clip), with ``fact_vectors`` per clip
    (``(len(facts[i]), 384)``) and a clip node ``("summary i", "room")``.
    """
    if isinstance(captions, int):
        captions = [f"clip {i}" for i in range(captions)]
    n = len(captions)
    if vectors is None:
        vectors = unit_vectors(n * len(INDEX_TYPES), seed).reshape(n, len(INDEX_TYPES), DIM)
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = np.broadcast_to(vectors, (n, len(INDEX_TYPES), vectors.shape[0]))
    elif vectors.ndim == 2:
        vectors = np.repeat(vectors[:, None, :], len(INDEX_TYPES), axis=1)
    sid = source if isinstance(source, int) else add_source(
        memory, source, n_clips=n, t_start=t0, duration=step * n)
    ids = []
    for i, cap in enumerate(captions):
        start = t0 + step * i
        extra: dict = {}
        if facts is not None:
            share = step / max(1, len(facts[i]))
            extra = {
                "facts": [Fact(text, "action", start + share * j, start + share * (j + 1), "llm")
                          for j, text in enumerate(facts[i])],
                "fact_vectors": fact_vectors[i] if fact_vectors is not None else
                unit_vectors(len(facts[i]), seed + 1000 + i),
                "clip_node": (f"summary {i}", "room", "llm"),
            }
        ids.append(memory.add_clip(
            source_id=sid, idx=first_idx + i, t_start=start, t_end=start + step, day=day,
            day_start=day_start, caption=cap, transcript="",
            keyframes=list(keyframes[i]) if keyframes else [], signals={},
            keys={k: ((cap if keys == "caption" else f"{k} {i}"), "file")
                  for k in INDEX_TYPES},
            vectors={k: vectors[i, j] for j, k in enumerate(INDEX_TYPES)}, **extra))
    if finish:
        memory.finish_source(sid)
    return ids
