"""Before any model is used: a question's checks, the time scope it searches and the note
for a partly built memory — what ``edge search`` (:mod:`.search`) and the answer loop
(:mod:`.question`) both need, so neither imports the other for it.

The question's time scope (:func:`resolve_scope`): clips that end before the query time
and, when the question names one ("yesterday evening") or ``--from/--to`` gives it, inside
that window — applied inside the KNN.
"""

from __future__ import annotations

from edge.errors import AskError, QuestionError, require_utf8
from edge.store import Memory
from edge.timeline import TimeWindow, day_of, format_moment, window_from_question

from .options import AskOptions


def time_label(t: float | None, default: str) -> str:
    """``DAY1 11:21:00`` (or a wall-clock moment) for timeline second ``t``; ``default``
    for ``None``."""
    if t is None:
        return default
    return format_moment(t, *day_of(t))


def resolve_scope(memory: Memory, question: str, at: float | None,
                  window: TimeWindow | None, auto_window: bool, *,
                  day_part: str = "strict") -> tuple[TimeWindow, str]:
    """The time window a question searches and a note when a named window was dropped.

    ``window`` (from ``--from/--to``) wins; else, with ``auto_window``, a day or part of a
    day the question names (:func:`edge.timeline.window_from_question`, relative to ``at``
    or, without ``at``, to the last clip) is used when memory holds clips in it. The window
    always ends by ``at`` (the query time, timeline seconds); ``day_part`` says how a named
    part of day scopes it (:data:`edge.timeline.DAY_PARTS`). Raises :class:`AskError` when
    an explicit window is empty.
    """
    if window is not None:
        w = window.until(at)
        if memory.count_clips(before=w.end, after=w.start) == 0:
            raise AskError(f"nothing in memory ends between {time_label(w.start, 'the start')} "
                           f"and {time_label(w.end, 'now')}; widen --from/--to")
        return w, ""
    everything = TimeWindow(None, at, "")
    if not auto_window:
        return everything, ""
    ref = at if at is not None else memory.stats()["last"]
    named = window_from_question(question, ref, day_part=day_part)
    if named is None:
        return everything, ""
    if memory.count_clips(before=named.end, after=named.start) == 0:
        return everything, (f"the question names {named.label}, but memory holds nothing "
                            "then; everything before the question time was searched")
    return named, ""


def check_question(memory: Memory, question: str, opts: AskOptions) -> tuple[str, str]:
    """Refuse, before any model is used, a question no search can answer; the question
    stripped and the moment it is asked (``DAY1 11:21:00``, ``now`` without ``opts.at``).

    Raises:
        QuestionError: bad ``--choices`` (:meth:`AskOptions.check`), an empty question.
        AskError: an empty memory, or nothing in memory ending before ``opts.at``.
        InputError: a question or option that is not valid UTF-8.
        ValueError: an unknown ``retrieval`` or ``loop``.
    """
    opts.check()
    question = require_utf8(question, "the question").strip()
    for i, choice in enumerate(opts.choices or [], start=1):
        require_utf8(choice, f"option {i} of --choices")
    if not question:
        raise QuestionError("the question is empty")
    stats = memory.stats()
    if stats["clips"] == 0:
        named = [p.name for p in memory.persons() if p.name] if memory.people_ready() else []
        held = (f"holds no footage yet, only the people you enrolled ({', '.join(named[:3])}"
                f"{', …' if len(named) > 3 else ''}): nobody has been seen or heard"
                if named else "is empty")
        raise AskError(f"the memory at {memory.path} {held}; ingest footage first with "
                       "`edge ingest VIDEO...` or `edge ingest-captions FILE`")
    asked_at = time_label(opts.at, "now")
    if opts.at is not None and memory.count_clips(before=opts.at) == 0:
        first, last = (format_moment(t, *day_of(t)) for t in (stats["first"], stats["last"]))
        raise AskError(f"nothing in memory ends before the question time {asked_at}; the "
                       f"memory covers {first} to {last}. Use a later --at (same form).")
    return question, asked_at


def unbuilt_note(memory: Memory, scope: TimeWindow, *, pyramid: bool = False) -> str:
    """The note for a partly built memory, only when the answer would use what is missing:
    clips in ``scope`` without their keys (then only their caption vector and BM25 find
    them), or — when ``pyramid`` (PyraVid expansion, the merit loop) would use it — without
    their pyramid; ``""`` otherwise (a caption file's clips have their keys: waiting for the
    pyramid alone changes nothing a plain question reads)."""
    b = memory.backlog(before=scope.end, after=scope.start)
    if b["keys"]:
        total = memory.count_clips(before=scope.end, after=scope.start)
        verb = "has" if b["keys"] == 1 else "have"
        return (f"{b['keys']} of the {total} clips in scope {verb} no keys yet (found by "
                "caption and BM25 only); `edge build` builds them")
    if pyramid and b["pyramid"]:
        total = memory.count_clips(before=scope.end, after=scope.start)
        verb = "has" if b["pyramid"] == 1 else "have"
        return (f"{b['pyramid']} of the {total} clips in scope {verb} no pyramid yet, which "
                "this answer would expand into; `edge build` builds it")
    return ""


def join_notes(*notes: str) -> str:
    """Non-empty notes joined by ``; ``."""
    return "; ".join(n for n in notes if n)
