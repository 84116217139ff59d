"""One question being answered: the frame every prompt shares, the state its rounds build
up (:class:`Run`) and :func:`start`, which checks the question and fixes its time scope
(:mod:`.scope`) before round 1, then adds the timeline's hints (:mod:`.hints`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from edge.errors import AskError, QuestionError
from edge.prompts import (
    ANSWER_INSTRUCTION,
    ANSWER_SCHEMA,
    DECIDE_INSTRUCTION,
    OPEN_ANSWER_SCHEMA,
    OPEN_SCHEMA,
    SOLVER_SCHEMA,
    SOLVER_SYSTEM,
    choice_schema,
    for_choices,
    for_open,
)
from edge.store import Memory
from edge.store.embedding import memory_embedder, reembed_note
from edge.timeline import TimeWindow, day_of

from .distill import Distiller
from .events import EventScope
from .evidence import Evidence, Packed, numbered_notes
from .hints import question_hints
from .options import AskOptions, with_fusion_of
from .scope import check_question, join_notes, resolve_scope, unbuilt_note
from .search import scope_by_event

PROMPT_SLACK_TOKENS = 96
"""Tokens kept free in every prompt for the chat template."""

MIN_EVIDENCE_TOKENS = 256
"""The least evidence (tokens) a prompt must have room for, or the question is refused."""


def global_context(memory: Memory, scope: TimeWindow, llm, max_tokens: int = 160) -> str:
    """The PyraVid global node of the day the question is about (the latest version that
    integrates only clips ending by the query time), cut to ``max_tokens``; ``""`` when
    the memory has none."""
    t = scope.end if scope.end is not None else memory.stats()["last"]
    day, _ = day_of(t)
    node = memory.global_node(day, before=scope.end) or memory.global_node("", before=scope.end)
    if node is None or not node.text.strip():
        return ""
    text = llm.truncate(" ".join(node.text.split()), max_tokens)
    return f"Summary of {node.day or 'the memory'} so far: {text}\n\n"


class Note:
    """The answer's note, by one rule: the latest failure, else the first remark.

    A failure (a solver call that failed, an empty answer) says why the answer is degraded
    and replaces any earlier note; a remark (a dropped time window, a skipped pyramid
    expansion, filtering that kept nothing) only says what was done instead.
    """

    def __init__(self) -> None:
        self._failure = ""
        self._remark = ""

    def failure(self, text: str) -> None:
        """Record a failure: it replaces any earlier failure or remark as the note."""
        self._failure = text

    def remark(self, text: str) -> None:
        """Record a remark; kept only if no remark came before and no failure comes."""
        if not self._remark:
            self._remark = text

    @property
    def text(self) -> str:
        """The note: the latest failure, else the first remark, else ``""``."""
        return self._failure or self._remark


@dataclass(frozen=True)
class Prompt:
    """What every solver prompt of one question says around the evidence, laid out so its
    calls share their prefix (llama.cpp reuses the KV cache of the longest common prefix
    of consecutive calls): the one system prompt (:data:`~edge.prompts.SOLVER_SYSTEM`),
    then the ``header`` (the day's global node, the question with its query time and
    options), the numbered notes, the timeline's hints and the question again — small
    models answer from what they read last — and last the step's own instruction."""

    header: str
    question: str
    options: str
    hints: str = ""

    def messages(self, notes: str, instruction: str) -> list[dict]:
        """Chat messages ``[system, user]``: the user turn is the header, ``notes``, the
        timeline's hints, the question with its options, then ``instruction`` (the step's
        reply format)."""
        return self.after_notes(notes, f"Question: {self.question}{self.options}"
                                       f"{instruction}")

    def after_notes(self, notes: str, tail: str) -> list[dict]:
        """Chat messages ``[system, user]`` whose user turn is the header, ``notes`` and the
        timeline's hints — the prefix every call of the question shares — then ``tail``."""
        return [{"role": "system", "content": SOLVER_SYSTEM},
                {"role": "user", "content": f"{self.header}{notes}\n\n{self.hints}{tail}"}]

    def with_notes(self, packed: list[Packed], instruction: str) -> list[dict]:
        """:meth:`messages` with ``packed`` evidence written as numbered notes."""
        return self.messages(numbered_notes(packed) or "(none)", instruction)


@dataclass
class Run:
    """One question being answered: what every step reads (``opts`` with ``top_n``,
    ``pyramid`` and ``frames`` resolved) and the state the rounds build up — the
    :class:`~edge.answer.evidence.Evidence`, the :class:`Note` and the queries ``tried``
    (lowercased). ``budget``: tokens of evidence one prompt may hold.
    ``sentence_embedder``: returns the embedder the distiller picks sentences with (the
    hub's ``sentence_embedder`` role, loaded on first use); ``None``: ``embedder``.
    ``event``: the event the question names as its time (:mod:`edge.answer.events`); when
    it is ``missing`` from memory the run makes no solver call and has no rounds."""

    memory: Memory
    solver: object
    embedder: object
    usage: object
    opts: AskOptions
    question: str
    asked_at: str
    scope: TimeWindow
    prompt: Prompt
    budget: int
    progress: Callable[[str], None]
    started: float
    on_token: Callable[[str], None] | None = None
    usage_mark: int = 0
    note: Note = field(default_factory=Note)
    evidence: Evidence = field(default_factory=Evidence)
    tried: set[str] = field(default_factory=set)
    sentence_embedder: Callable[[], object] | None = None
    event: EventScope | None = None

    def say(self, round_no: int, line: str) -> None:
        """Report progress within a round (``round 2/5: …``)."""
        self.progress(f"round {round_no}/{self.opts.max_rounds}: {line}")

    def pack(self, view: str) -> list[Packed]:
        """:meth:`Evidence.pack` into this question's budget; ``view="distilled"``: every
        clip's sentences closest to the question, its options (``opts.distill_options``)
        and the queries tried,
        within ``opts.distill_tokens`` (:mod:`edge.answer.distill`, no LLM call)."""
        distiller = None
        if view == "distilled":
            relevance = relevance_texts(self.opts, self.tried)
            embedder = self.sentence_embedder() if self.sentence_embedder else self.embedder
            distiller = Distiller(embedder, self.question, relevance, self.opts.distill_tokens)
            view = "all"
        return self.evidence.pack(self.solver, self.budget, anchor_tokens=self.opts.anchor_tokens,
                                  neighbor_tokens=self.opts.neighbor_tokens, view=view,
                                  distiller=distiller)


def relevance_texts(opts: AskOptions, tried: set[str]) -> tuple[str, ...]:
    """The texts besides the question that the distiller keeps sentences close to: the
    options (with ``opts.distill_options``), then the queries ``tried``, sorted."""
    options = opts.choices if opts.choices and opts.distill_options else []
    return (*options, *sorted(tried))


def start(memory: Memory, hub, question: str, opts: AskOptions,
          on_progress: Callable[[str], None] | None,
          on_token: Callable[[str], None] | None = None) -> Run:
    """Check the question against the memory, fix its scope, load the solver and frame
    its prompts (with the timeline's :mod:`~edge.answer.hints`). ``on_token`` gets the
    answer's text as the solver writes it. Raises :class:`AskError` (see
    :func:`edge.answer.ask`) or ``ValueError`` for unknown options."""
    started = time.perf_counter()
    question, asked_at = check_question(memory, question, opts)
    scope, remark = resolve_scope(memory, question, opts.at, opts.window, opts.auto_window,
                                  day_part=opts.day_part)
    if opts.pyramid is None:
        opts = replace(opts, pyramid=memory.has_facts())
    mark = hub.usage.mark()
    embedder, solver = memory_embedder(memory, hub), hub.llm("solver")
    opts = with_fusion_of(opts, embedder)
    opts = _fit_to_solver(opts, solver)
    options = option_lines(opts)
    check_question_fits(solver, opts, question, options, asked_at)  # before any model use
    scope, event = scope_by_event(memory, embedder, question, opts, scope)
    if event is not None and event.missing:  # answered without a solver call
        return Run(memory, solver, embedder, hub.usage, opts, question, asked_at, scope,
                   Prompt("", question, options), 0, on_progress or (lambda _line: None),
                   started, on_token, mark, event=event)
    context = global_context(memory, scope, solver) if opts.pyramid else ""
    hints = question_hints(memory, embedder, question, opts, scope)
    prompt = Prompt(f"{context}Question (asked at {asked_at}): {question}{options}\n\n"
                    "Notes:\n", question, options, hints)
    budget = (solver.n_ctx - opts.answer_tokens - solver.count_tokens(SOLVER_SYSTEM)
              - solver.count_tokens(step_instruction(opts))
              - solver.count_tokens(prompt.header) - solver.count_tokens(question + options)
              - solver.count_tokens(hints)
              - PROMPT_SLACK_TOKENS)
    check_question_fits(solver, opts, question, options, asked_at,
                        other_tokens=solver.count_tokens(context) + solver.count_tokens(hints))
    check_fits(opts, solver, budget)
    run = Run(memory, solver, embedder, hub.usage, opts, question, asked_at, scope, prompt,
              budget, on_progress or (lambda _line: None), started, on_token, mark,
              event=event)
    run.sentence_embedder = lambda: hub.sentence_embedder
    uses_pyramid = bool(opts.pyramid) or opts.loop == "merit"
    run.note.remark(join_notes(remark, unbuilt_note(memory, scope, pyramid=uses_pyramid),
                               reembed_note(memory, hub) or ""))
    return run


def option_lines(opts: AskOptions) -> str:
    """A multiple-choice question's options as every prompt lists them after the question
    (``\nA. …\nB. …``); ``""`` for an open question."""
    return "".join(f"\n{ltr}. {c}" for ltr, c in zip(opts.letters, opts.choices or []))


def check_question_length(solver, opts: AskOptions, question: str, asked_at: str) -> None:
    """The length check :func:`start` makes first, for a caller that answers nothing:
    ``edge search`` refuses the question ``edge ask`` would refuse as too long, at the same
    length. ``solver``: anything with ``count_tokens(text)`` and ``n_ctx`` for the solver
    (the model, or :meth:`models.ModelHub.tokenizer`'s vocabulary alone); ``question``
    and ``asked_at`` as :func:`~.scope.check_question` returns them. Raises
    :class:`~edge.errors.QuestionError` (see :func:`check_question_fits`)."""
    check_question_fits(solver, opts, question, option_lines(opts), asked_at)


def check_question_fits(solver, opts: AskOptions, question: str, options: str,
                        asked_at: str, *, other_tokens: int = 0) -> None:
    """Refuse, before any model call, a question (with its ``options`` as the prompt lists
    them) too long to leave :data:`MIN_EVIDENCE_TOKENS` of the solver's context for notes:
    the prompt holds it twice (in the header and again last), beside the system prompt,
    the reply instruction, ``opts.answer_tokens`` for the reply, ``other_tokens`` (the
    day's global context and the hints) and :data:`PROMPT_SLACK_TOKENS`. Raises
    :class:`~edge.errors.QuestionError` (an :class:`AskError`) in one line: the question's
    length and the most it may have, in the solver's tokens. Nothing is raised when even
    an empty question would not fit (``opts.answer_tokens`` too large: :func:`check_fits`
    says so)."""
    n = solver.count_tokens(question + options)
    frame = solver.count_tokens(f"Question (asked at {asked_at}): \n\nNotes:\n")
    room = (solver.n_ctx - opts.answer_tokens - solver.count_tokens(SOLVER_SYSTEM)
            - solver.count_tokens(step_instruction(opts)) - frame - other_tokens
            - PROMPT_SLACK_TOKENS - MIN_EVIDENCE_TOKENS)
    most = room // 2
    if n > most > 0:  # with no room at all the reply's budget is at fault: check_fits
        what = "with its options " if options else ""
        raise QuestionError(f"the question is too long ({n} tokens {what}for the solver; at "
                            f"most {most} tokens leave room for notes in its "
                            f"{solver.n_ctx}-token context): ask it in fewer words")


def step_instruction(opts: AskOptions) -> str:
    """The longest step instruction a question's prompts end with (the answer-and-decide
    reply of its kind: multiple choice, open with quotes, or open), whose tokens every
    prompt keeps free."""
    return reply_format(opts, decide=True)[0]


def reply_format(o: AskOptions, *, decide: bool) -> tuple[str, dict]:
    """The instruction and JSON schema of an answering call: a multiple-choice question's
    letter and reason (:func:`~edge.prompts.for_choices`); an open question's quotes, then
    its answer, with ``open_check="quotes"`` (:func:`~edge.prompts.for_open`); else the
    answer and its cited notes. ``decide``: the call also says whether the notes suffice
    and what to search next (``adaptive``/``single``), else it is ``merit``'s final
    answer."""
    instruction = DECIDE_INSTRUCTION if decide else ANSWER_INSTRUCTION
    if o.choices:
        return (for_choices(instruction, reason_first=o.reason_first),
                choice_schema(o.letters, decide=decide, reason_first=o.reason_first))
    if o.open_check == "quotes":
        return for_open(instruction), OPEN_SCHEMA if decide else OPEN_ANSWER_SCHEMA
    return instruction, SOLVER_SCHEMA if decide else ANSWER_SCHEMA


def check_fits(opts: AskOptions, solver, budget: int) -> None:
    """Refuse, before any model call, options whose reply and least evidence cannot fit
    the solver's context: :class:`AskError` in one line naming them and the limit."""
    if budget < MIN_EVIDENCE_TOKENS:
        raise AskError(
            f"answer_tokens {opts.answer_tokens} leaves {max(budget, 0)} of the solver's "
            f"{solver.n_ctx}-token context for evidence (at least {MIN_EVIDENCE_TOKENS} "
            "needed); lower answer_tokens or use a solver with a larger context")


def _fit_to_solver(opts: AskOptions, solver) -> AskOptions:
    """``top_n`` and ``frames`` resolved for ``solver``; :class:`AskError` when frames are
    asked of a solver that does not take them."""
    top_n = opts.top_n if opts.top_n is not None else (10 if solver.n_ctx >= 16384 else 5)
    takes_frames = bool(getattr(solver, "accepts_frames", False))
    if opts.frames and not takes_frames:
        raise AskError("the solver does not take frames: use a VLM solver whose backend "
                       "allows them (allow_frames = true for that role), or drop --frames")
    frames = takes_frames if opts.frames is None else opts.frames
    return replace(opts, top_n=top_n, frames=frames)
