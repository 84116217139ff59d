"""The options of one question (:class:`AskOptions`) and how :func:`edge.answer.ask` takes
them: an ``AskOptions`` value, keyword overrides of its fields, or both."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from edge.errors import QuestionError
from edge.recall.decompose import STYLES as DECOMPOSE_STYLES
from edge.store import INDEX_TYPES
from edge.timeline import DAY_PARTS, TimeWindow

LOOPS = ("adaptive", "merit", "single")
"""The agent loops :func:`edge.answer.ask` runs (see :mod:`edge.answer`)."""

RETRIEVALS = ("keys", "hybrid")

CHOICE_SCORINGS = ("generate", "likelihood")
"""How a multiple-choice letter is picked (``AskOptions.choice_scoring``)."""

OPEN_CHECKS = ("quotes", "judge", "words")
"""How an open answer is tied to its clips (``AskOptions.open_check``)."""


@dataclass(frozen=True)
class AskOptions:
    """How one question is answered; the defaults are the product's (``edge ask``).

    Attributes:
        at: the query time (timeline seconds); only clips ending by then are used.
            ``None`` means no limit.
        window: search only clips ending inside it (``--from/--to``); ``auto_window``
            reads one from the question ("last night") when none is given.
        top_n: top-N anchor clips per round; ``None`` = 10 for a solver with ≥ 16k
            context, else 5.
        delta: the neighbor window Δ (clips on each side, 0–4).
        max_rounds: R, the bound on retrieval rounds (MERIT Appendix 0.A).
        key_types: which vectors vote in max-sim (MERIT Eq. 6–7): any of
            event/dialogue/object/summary and caption; default all five (keys + caption:
            hit@Δ2 0.962 vs 0.949 for the four keys alone, hybrid, on the 78-question
            day-1 set).
        retrieval: ``hybrid`` (max-sim fused by RRF with BM25 over FTS5) or ``keys``
            (max-sim only, MERIT as published).
        loop: ``adaptive`` (default: one call per round answers and decides over the
            evidence distilled to ``distill_tokens``, so a question whose round-1 evidence
            suffices costs one call), ``merit`` (filter + sufficiency per round, then a
            final answer) or ``single`` (one call per round answers and decides over the
            captions as they are).
        decompose: MARQUIS §3.1 sub-queries (one more call) fused with ``fusion``
            (rrf/wrrf/max/sum/mean; ``rrf_k`` = K of RRF).
        decompose_style: ``phrases`` (atomic search phrases) or ``statements`` (the
            question rewritten as notes in the memory's style, HyDE;
            :func:`edge.recall.decompose.decompose`).
        dense_weight: with ``hybrid``, the weight of the max-sim list against BM25's 1
            in their fusion (weighted RRF; 1 = plain RRF).
            ``rrf_k``/``dense_weight`` ``None`` (the default): the values tuned for the
            embedder of the memory's vectors (its manifest ``rrf_k``/``dense_weight``,
            :func:`with_fusion_of`), else 60 and 1. Measured on the hard set's dev half
            (``benchmarks/lever_sweep.py``): EmbeddingGemma at k=10, 2:1 (its manifest
            values) — hit@5(±2) with the question alone 0.870 → 0.922, with the options
            0.935 → 0.922, all targets 0.701 → 0.766 against k=60, 1:1; MiniLM at k=10, 2:1
            — 0.870 → 0.870 alone, 0.948 → 0.909 with the options: it keeps k=60, 1:1.
        choices: multiple-choice options (2–26), lettered A, B, …; the answer is exactly
            one letter and the reason goes to ``Answer.extra["reason"]``.
        choice_scoring: with ``choices``, how ``adaptive``/``single``/``merit`` pick the
            letter: ``generate`` (the solver writes a JSON reply: letter, reason, cited
            notes) or ``likelihood`` (no text generated: P(letter) of one forward pass
            times P(yes) of verifying each option, :mod:`edge.answer.likelihood`; a solver
            without token probabilities, e.g. a remote one, or a solver shown keyframes,
            generates). Measured paired on the same notes (1.5B, hard set): dev 40 q
            0.600 → 0.650 (4 wins, 2 losses), test 77 q 0.532 → 0.481 (6 wins, 10
            losses) — no gain; ``likelihood`` saves the ~64 written tokens (~4 s a
            question net on 2 cores) but gives no reason and cites by embedding, so
            ``generate`` stays the default.
        reason_first: with ``choices`` and ``choice_scoring="generate"``, the reply
            writes its one-sentence reason before the letter (a short chain of thought)
            instead of after it; the same tokens are written either way. Measured on
            the hard set's dev half (77, ``edge bench qa --answer --ablate
            reason_first=false,true``): 0.545 → 0.519 (9 wins, 11 losses), though the
            1.5B's ceiling on the target clips alone rose 0.662 → 0.701: off by default.
        choice_queries: with ``choices``, round 1 also searches each option (the
            question's words and the option's), fused with ``fusion``.
        choice_slots: with ``choices`` and ``choice_queries``, each option's own search
            gets one round-1 anchor slot (its best clip not already shown), after the
            question's best top-N − options (at least 1); the fused ranking fills the
            rest; off (the default), the option queries are only fused into one ranking.
            Slots find more (hard dev half, EmbeddingGemma: hit@5(±2) with the options
            0.883 → 0.922) but show the solver the moments of the wrong options, which
            really happened elsewhere: answered by the 1.5B, the dev half's 77 questions
            scored 0.506 with slots and 0.545 without (``edge bench qa --answer``).
        spread: anchor spreading (0 = off): a candidate within ±``spread`` clips of a
            better-ranked anchor in the same footage is skipped for the next one (its
            neighborhood is shown already); candidates come 4×top-N deep.
        split_events: a before/after/first/then/earlier/later question is split (by rule,
            no LLM) into its event phrases, each searched as one more query, fused.
        aggregate: a counting/habit question ("how many times", "how often", "usually",
            "every time", "each day") takes anchors from episodes: the 50 best clips in
            scope, those scoring ≥ half the best grouped into runs of clips ≤ 3 minutes
            apart, the best clip of each of the top-N episodes.
        day_part: how a part of day the question names scopes it (``strict`` its hours,
            ``wide`` ± 0.5 h, ``soft`` the whole day with the part ranked first; see
            :func:`edge.timeline.window_from_question`). A named day is always hard.
            Defaults ``spread=2``, ``split_events``, ``day_part="wide"``: measured on the
            hard set's dev half (77 questions, ``edge bench qa --questions hard --split
            dev``), round-1 hit@5(±2) 0.831 → 0.870 with the question alone and 0.844 →
            0.870 with the options; ``aggregate`` and ``soft`` did not pay there.
        coverage: an activity question ("what did I do after lunch?", "what were we
            assembling this morning?") whose scope is a named stretch of time (a part of
            day, an event) takes one anchor per equal span of that stretch — the span's
            clip best ranked for the question (:func:`edge.answer.search.coverage_anchors`)
            — so the answer covers the stretch, not its best-matching moment (issue 42
            item 3).
        distill_tokens: the most tokens of evidence an ``adaptive`` call reads: the
            sentences of the evidence clips closest to the question and its options, by
            embedding and word overlap, no LLM call (:mod:`edge.answer.distill`). 500
            read 300 fewer tokens (~6 s on 2 cores) but answered 0.455 on the hard test
            half against 0.519 at 800 (dev: 0.575 vs 0.55 on 40): kept at 800. 600
            again with EmbeddingGemma and no choice slots (issue 26): 18.8 s p50 against
            21.2 on 24 dev questions, 0.532 against 0.545 on the 77: kept at 800.
        distill_options: with ``choices``, each option's own text is one of the texts
            the distiller keeps sentences close to (besides the question and the queries
            tried, which with ``choice_queries`` hold the question followed by each option).
            Without the bare options (so that sentences naming a wrong option's person or
            thing elsewhere score lower) the dev half answered 0.506 against 0.545 (1 win,
            4 losses; ``edge bench qa --answer --set distill_options=false``): on.
        hints: hand the solver what the timeline says after the notes, no LLM call
            (:mod:`edge.answer.hints`): for a counting question the matching episodes
            with their times; for a before/after/first/last question the time of each
            event's (or option's) best match.
        neighbor_filter: ``loop="single"``/``"adaptive"`` only — add MERIT neighbor
            filtering (Eq. 9).
        pyramid: PyraVid §3.3 expansion and pruning each round (one more solver call) and
            the day's global node as context; ``None`` = when the memory has a pyramid.
        frames: send anchor keyframes with the final answer; ``None`` = when the solver's
            ``accepts_frames`` is true. ``True`` with a solver that does not take frames
            makes :func:`~edge.answer.ask` raise :class:`AskError`.
        answer_tokens: the reply budget (tokens) of answering calls.
        anchor_tokens, neighbor_tokens: the most tokens of one anchor's / one neighbor's
            evidence text in a prompt.
        open_check: how an open question's (no ``choices``) answer is tied to its clips.
            ``quotes`` (the default, issue 42): the solver quotes the notes that answer it,
            then answers from the quotes; the program checks that each quote is in its
            clip, holds the answer's own words and is not turned down there
            (:mod:`edge.answer.quotes`), and cites only those clips; with none the answer
            is "not found in memory". ``judge``: the solver writes the answer and its
            cited notes, the word rule checks them (:mod:`edge.answer.citations`) and each
            cited clip is judged by the report checker's support judge
            (:func:`edge.answer.support.support`, one solver call a clip, ~5 s on 2
            cores): a clip under :data:`edge.answer.support.SUPPORT_THRESHOLD` is dropped,
            none left is "not found in memory" (issue 26 item 3). ``words``: the word rule
            alone.
        option_grounding: with ``choices``, the solver's letter is checked against the
            evidence by the embedder (:mod:`edge.answer.grounding`, no solver call): an
            option that an evidence clip about the question says clearly better — its
            grounding exceeds the solver's option's by more than
            :data:`~edge.answer.grounding.GROUNDING_MARGIN` — replaces it, cited by the
            notes whose clips ground it best. Hard set (77 a half, small profile): dev
            0.532 → 0.688 (17 letters made right, 5 made wrong), test 0.584 → 0.597
            (9 right, 8 wrong): on, since it lost on neither half.
    """

    at: float | None = None
    window: TimeWindow | None = None
    auto_window: bool = True
    top_n: int | None = None
    delta: int = 2
    max_rounds: int = 5
    key_types: tuple[str, ...] = INDEX_TYPES
    retrieval: str = "hybrid"
    loop: str = "adaptive"
    decompose: bool = False
    decompose_style: str = "phrases"
    fusion: str = "rrf"
    rrf_k: int | None = None
    dense_weight: float | None = None
    choices: list[str] | None = None
    choice_scoring: str = "generate"
    reason_first: bool = False
    choice_queries: bool = True
    choice_slots: bool = False
    spread: int = 2
    split_events: bool = True
    aggregate: bool = False
    day_part: str = "wide"
    coverage: bool = True
    distill_tokens: int = 800
    distill_options: bool = True
    hints: bool = True
    neighbor_filter: bool = False
    pyramid: bool | None = None
    frames: bool | None = None
    answer_tokens: int = 300
    anchor_tokens: int = 300
    neighbor_tokens: int = 100
    open_check: str = "quotes"
    option_grounding: bool = True

    @classmethod
    def merge(cls, options: AskOptions | None, overrides: dict) -> AskOptions:
        """``options`` (default: all defaults) with ``overrides`` (field name → value)
        applied. Raises ``TypeError`` for a name that is not a field."""
        names = {f.name for f in fields(cls)}
        for name in overrides:
            if name not in names:
                raise TypeError(f"ask() got an unexpected keyword argument {name!r}")
        return replace(options or cls(), **overrides)

    def check(self) -> None:
        """Refuse options no question can run with, before any work.

        Raises:
            QuestionError: fewer than 2 or more than 26 choices, or an empty choice.
            ValueError: an unknown ``retrieval``, ``loop``, ``day_part``,
                ``decompose_style``, ``choice_scoring`` or ``open_check``, a negative
                ``spread`` or ``distill_tokens`` under 64.
        """
        if self.choices is not None and not 2 <= len(self.choices) <= 26:
            raise QuestionError("a multiple-choice question needs 2 to 26 choices")
        if self.choices is not None and any(not str(c).strip() for c in self.choices):
            empty = [chr(ord("A") + i) for i, c in enumerate(self.choices) if not str(c).strip()]
            raise QuestionError(f"choice {', '.join(empty)} is empty; write each option "
                                "between the '|' separators, e.g. --choices "
                                "'Tasha|Alice|Shure|Lucia'")
        if self.retrieval not in RETRIEVALS:
            raise ValueError(f"unknown retrieval {self.retrieval!r}; use 'keys' or 'hybrid'")
        if self.loop not in LOOPS:
            raise ValueError(f"unknown loop {self.loop!r}; use {' or '.join(LOOPS)}")
        if self.day_part not in DAY_PARTS:
            raise ValueError(f"unknown day_part {self.day_part!r}; use {', '.join(DAY_PARTS)}")
        if self.decompose_style not in DECOMPOSE_STYLES:
            raise ValueError(f"unknown decompose_style {self.decompose_style!r}; use "
                             f"{' or '.join(DECOMPOSE_STYLES)}")
        if self.choice_scoring not in CHOICE_SCORINGS:
            raise ValueError(f"unknown choice_scoring {self.choice_scoring!r}; use "
                             f"{' or '.join(CHOICE_SCORINGS)}")
        if self.open_check not in OPEN_CHECKS:
            raise ValueError(f"unknown open_check {self.open_check!r}; use "
                             f"{' or '.join(OPEN_CHECKS)}")
        if self.spread < 0:
            raise ValueError(f"spread is a count of clips (0 = off), not {self.spread}")
        if self.distill_tokens < 64:
            raise ValueError(f"distill_tokens {self.distill_tokens} is too few for evidence "
                             "(at least 64)")

    @property
    def letters(self) -> list[str]:
        """``A``, ``B``, … one per choice (empty without choices)."""
        return [chr(ord("A") + i) for i in range(len(self.choices or []))]

    @property
    def filtering(self) -> bool:
        """Whether rounds run MERIT neighbor filtering (always in ``loop="merit"``)."""
        return self.loop == "merit" or self.neighbor_filter

    @property
    def evidence_view(self) -> str:
        """How the rounds pack their evidence (:meth:`Evidence.pack` ``view``): what
        filtering kept when it runs, else ``distilled`` in ``loop="adaptive"`` and the
        captions as they are (``all``) in ``loop="single"``."""
        if self.filtering:
            return "filtered"
        return "distilled" if self.loop == "adaptive" else "all"


FUSION_DEFAULTS = {"rrf_k": 60, "dense_weight": 1.0}
"""RRF's K and the max-sim weight when neither the options nor the embedder name them."""


def with_fusion_of(opts: AskOptions, embedder: object) -> AskOptions:
    """``opts`` with ``rrf_k``/``dense_weight`` left ``None`` filled in: the values tuned for
    ``embedder`` (its ``fusion`` dict, from its manifest entry: EmbeddingGemma k=10, 2:1),
    else :data:`FUSION_DEFAULTS`. Values the caller set are kept."""
    tuned = {**FUSION_DEFAULTS, **(getattr(embedder, "fusion", None) or {})}
    return replace(opts, **{k: tuned[k] for k in FUSION_DEFAULTS if getattr(opts, k) is None})
