"""How much pyramid to build (:class:`PyramidOptions`), what was built
(:class:`PyramidCounts`), and the usage-meter roles of the pyramid's memory-LLM calls."""

from __future__ import annotations

from dataclasses import dataclass, field

ROLE_CLIP = "memory_llm"
"""Role of the per-clip call: keys, fact nodes and the clip node (PyraVid App. B.1)."""
ROLE_LINKS = "memory_llm.links"
"""Role of the per-clip relational-link judgement (PyraVid App. B.3)."""
ROLE_GLOBAL = "memory_llm.global"
"""Role of the global-node updates (per day and overall)."""


@dataclass
class PyramidOptions:
    """How much pyramid to build.

    ``max_facts``: fact nodes per clip (3: issue 13 bounds the per-clip reply, most of the
    LLM tier's time on the device — each fact is ~15 generated tokens). ``links``: judge
    relational links (costs one call per clip with candidates). ``link_k``: similar earlier
    facts per new fact; ``link_floor``: cosine similarity a candidate needs;
    ``max_candidates``: pairs judged per clip (the highest similarities). ``global_every``:
    clips per global-node update (K). ``global_words``: length the global summary is asked
    to stay under. ``max_tokens``: reply budget of the per-clip call;
    ``max_caption_tokens``: the caption is cut to this many tokens before it is sent.
    """

    max_facts: int = 3
    links: bool = True
    link_k: int = 3
    link_floor: float = 0.45
    max_candidates: int = 6
    global_every: int = 20
    global_words: int = 150
    max_tokens: int = 700
    max_caption_tokens: int = 1500


@dataclass
class PyramidCounts:
    """What a :class:`~edge.build.pyramid.Pyramid` did in this process (for reports and the
    benchmark). ``seconds``: wall-clock seconds per pyramid step (``extract``, ``embed``,
    ``store``, ``links``, ``global``), rounded to milliseconds."""

    clips: int = 0
    facts: int = 0
    fallbacks: int = 0
    candidates_judged: int = 0
    link_calls: int = 0
    links_accepted: int = 0
    link_failures: int = 0
    global_updates: int = 0
    global_fallbacks: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """The counts (and ``seconds`` per stage) as a plain dict, for JSON output."""
        return dict(self.__dict__)
