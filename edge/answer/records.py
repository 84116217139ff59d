"""What :func:`edge.answer.ask` returns: the :class:`Answer` with its :class:`Moment` s and
one :class:`Round` per round. The JSON of ``edge ask --json`` is :meth:`Answer.as_dict`.

The dict-shaped fields are typed dicts (plain dicts at run time, so they serialize as
they are and readers index them by key): the solver's replies as their JSON schemas in
:mod:`edge.prompts` define them, plus what the loop adds.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal, TypedDict

from .citations import CitationCheck

Verdict = Literal["found", "not_found", "not_yet", "unverified", "no_answer"]
"""What an answer is worth, said the same way everywhere: ``found`` — its cited clips hold
it; ``not_found`` — no clip in memory holds it (the guess is shown, nothing cited);
``not_yet`` — what it asks about has not happened by the question time; ``unverified`` — a
multiple-choice letter no cited clip's words show; ``no_answer`` — the solver gave none."""

VERDICT_SAID = {
    "not_found": "not found in memory: no clip states this guess",
    "not_yet": "not yet",
    "unverified": "unverified: no cited moment shows it",
}
"""What ``edge ask`` and the chat say beside the answer for each :data:`Verdict` (nothing
for ``found`` and ``no_answer``); see :func:`verdict_words`."""


def verdict_words(answer: Answer) -> str:
    """What ``edge ask`` and the chat say beside ``answer`` (:data:`VERDICT_SAID`), ``""``
    for none. A ``not_found`` answer that no model wrote (the program's own sentence: "Barack
    Obama has not been seen or heard in memory.", "No lunch on DAY2 is in memory.") is not a
    guess and is said to be only "not found in memory"."""
    words = VERDICT_SAID.get(answer.verdict, "")
    if answer.verdict == "not_found" and not answer.usage.get("llm", {}).get("calls"):
        return "not found in memory"
    return words

Role = Literal["anchor", "neighbor", "linked"]
"""Why a clip is evidence: retrieved (anchor clip), inside an anchor's neighbor window Δ
(neighbor), or the clip of a fact kept by PyraVid pruning (linked)."""


class AnchorHit(TypedDict):
    """An anchor clip of a round: ``score`` rounded to 4 places (cosine −1…1, or an RRF
    score for hybrid/fused retrieval) and the ``key`` type (or ``bm25``) that ranked it."""

    clip_id: int
    score: float
    key: str


class OfferedFact(TypedDict):
    """A fact node offered to PyraVid pruning (:class:`edge.recall.expansion.Candidate`)."""

    fact_id: int
    clip_id: int
    via: str


class Expansion(TypedDict, total=False):
    """PyraVid §3.3 expansion of a round: the facts ``offered`` to pruning and the fact ids
    ``kept``; empty when the pyramid is off."""

    offered: list[OfferedFact]
    kept: list[int]


class Decision(TypedDict, total=False):
    """A round's decision (``SUFFICIENCY_SCHEMA``; ``SOLVER_SCHEMA`` or a choice schema in
    ``loop="single"``, which adds ``answer``, ``cited`` note numbers, ``reason`` for a
    multiple-choice question and ``cited_clips``: the cited notes as clip ids;
    ``scores`` per letter with ``choice_scoring="likelihood"``)."""

    sufficient: bool
    search: str
    answer: str
    reason: str
    cited: list[int]
    cited_clips: list[int]
    scores: dict[str, dict[str, float]]


class FinalReply(TypedDict, total=False):
    """The final answer call's reply (``ANSWER_SCHEMA`` or a choice schema) plus
    ``cited_clips``: the cited note numbers as clip ids; ``scores``: per letter, the
    probabilities of ``choice_scoring="likelihood"``."""

    answer: str
    reason: str
    cited: list[int]
    cited_clips: list[int]
    scores: dict[str, dict[str, float]]


class Scope(TypedDict):
    """The time window searched: clips ending in ``(start, end]`` (timeline seconds;
    ``None`` = open) and its ``label`` in words (``""`` for everything before ``end``)."""

    label: str
    start: float | None
    end: float | None


class Choices(TypedDict):
    """``Answer.extra`` of a multiple-choice question: letter → option, and the reason."""

    choices: dict[str, str]
    reason: str


@dataclass
class Moment:
    """A clip shown with the answer. ``role``: anchor (retrieved), neighbor (±Δ) or linked
    (a kept pyramid fact's clip); ``cited``: the answer relies on it (the solver's
    citations after the citation check). Times are timeline seconds; ``score`` as in
    :class:`AnchorHit` (``None`` for neighbors); ``evidence``: what neighbor filtering kept
    from this clip."""

    clip_id: int
    when: str
    t_start: float
    t_end: float
    caption: str
    transcript: str
    keyframes: list[str]
    role: Role
    score: float | None
    round: int
    cited: bool = False
    matched: str = ""  # for anchors: the key type (or "bm25") that ranked it highest
    evidence: str = ""  # what neighbor filtering kept from this clip


@dataclass
class Round:
    """One round of the loop (MERIT Appendix 0.A): its search ``queries`` (``query`` is the
    first), the ``anchors`` found, the clip ids whose ``evidence`` the solver read, what
    neighbor filtering kept per new anchor clip id (``filtered``), the PyraVid expansion
    and the solver's ``decision`` (``None`` in the last merit round or when it failed)."""

    round: int
    query: str
    anchors: list[AnchorHit]
    evidence: list[int]
    decision: Decision | None
    queries: list[str] = field(default_factory=list)
    filtered: dict[int, str] = field(default_factory=dict)
    expanded: Expansion = field(default_factory=dict)


@dataclass
class Answer:
    """The result of :func:`edge.answer.ask`. ``moments``: cited clips first, then the
    other anchors (and linked clips) by priority. ``note``: why the answer is degraded or
    what was searched instead, else ``""``. ``usage``: the hub's call and token summary
    for this question. ``evidence_count``: notes the answering call read.
    ``citation_check``: what checking the solver's citations against the evidence text did
    (:class:`edge.answer.citations.CitationCheck`; the cited moments are its result, the
    solver's own citations stay in ``final``/the rounds' decisions). ``verdict``: the one
    word the CLI, the chat and ``--json`` all say about the answer (:data:`Verdict`);
    ``quotes``: for an open answer, the sentences of its clips that hold it (each
    ``clip_id``, ``text``, the answer's terms it ``holds``; :mod:`edge.answer.quotes`)."""

    question: str
    asked_at: str
    answer: str
    sufficient: bool
    moments: list[Moment]
    rounds: list[Round]
    usage: dict
    seconds: float
    note: str = ""
    evidence_count: int = 0
    extra: Choices | dict = field(default_factory=dict)
    scope: Scope | dict = field(default_factory=dict)
    sub_queries: list[str] = field(default_factory=list)
    final: FinalReply | None = None
    citation_check: CitationCheck | dict = field(default_factory=dict)
    verdict: Verdict | None = None
    quotes: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.verdict is None:  # from the citation check, unless given (``not_yet``)
            self.verdict = verdict_of(self.answer, self.citation_check)

    def as_dict(self) -> dict:
        """Everything as JSON-ready values, field by field (``edge ask --json``)."""
        return asdict(self)


def verdict_of(answer: str, check: CitationCheck | dict) -> Verdict:
    """The :data:`Verdict` of an answer's text and its citation check: ``no_answer`` for no
    text, ``not_found`` when nothing in memory holds it, ``unverified`` when the check is
    flagged, else ``found``."""
    if not answer:
        return "no_answer"
    if check.get("not_found"):
        return "not_found"
    return "unverified" if check.get("flagged") else "found"
