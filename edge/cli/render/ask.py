"""What ``edge ask``, ``edge chat`` (its one-shot fallback) and ``edge search`` print: the
answer streamed as it is written (:class:`AskStream`), the answer with its cited moments,
and the search's anchors with the time scope searched."""

from __future__ import annotations

import sys
import textwrap
import time

import click

from edge.answer.records import verdict_words
from edge.cli.render import WIDTH

EXCERPT = 160
"""Characters of a moment's caption shown under it by ``edge ask``."""


class AskStream:
    """``edge ask`` on a terminal: the loop's progress lines and, as the solver writes it,
    the answer's text, on stderr (stdout keeps only the final answer block). Nothing is
    written when stderr is not a terminal."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._mid_line = False
        self._t0 = time.monotonic()

    def _end_line(self) -> None:
        if self._mid_line:
            click.echo("", err=True)
            self._mid_line = False

    def progress(self, line: str) -> None:
        """One progress line with the seconds since the question was asked
        (``… 2.1 s  round 1/5: the solver reads 9 note(s)``)."""
        if self.tty:
            self._end_line()
            click.echo(f"… {time.monotonic() - self._t0:4.1f} s  {line}", err=True)

    def token(self, text: str) -> None:
        """A piece of the answer, written as it comes."""
        if self.tty:
            if not self._mid_line:
                click.echo("  ", err=True, nl=False)
            click.echo(text, err=True, nl=False)
            self._mid_line = True

    def close(self) -> None:
        """End a streamed line before the final block is printed."""
        if self.tty:
            self._end_line()


def answer_lines(result) -> list[str]:
    """``edge ask``: the answer (marked unverified when the citation check flagged it), what
    the check did, its cost, then every moment (``*`` = cited, after the check) with an
    excerpt of its caption and the evidence kept from it."""
    lines = []
    if result.scope.get("label"):
        lines.append(f"Searched {result.scope['label']}.")
    if result.sub_queries:
        lines.append("Sub-queries: " + "; ".join(result.sub_queries))
    answer = result.answer or "(no answer)"
    if result.extra.get("choices") and result.answer:
        answer = (f"{result.answer}. {result.extra['choices'][result.answer]} — "
                  f"{result.extra['reason']}")
    lines.append(f"Answer{verdict(result)}: {answer}")
    if result.note:
        lines.append(f"Note: {result.note}")
    if result.citation_check:
        lines.append(f"Citations: {result.citation_check['summary']}")
    u = result.usage["llm"]
    lines.append(f"({len(result.rounds)} round(s), {u['calls']} LLM call(s), {u['tokens_in']} "
                 f"tokens in / {u['tokens_out']} out, {result.seconds:.1f} s)")
    if result.moments:  # none when the answer said what is not in memory
        lines.append("\nMoments (* = cited by the answer):")
    for m in result.moments:
        lines += moment_lines(m)
    return lines


def verdict(result) -> str:
    """`` (not found in memory: …)``, `` (not yet: …)`` or `` (unverified: …)`` after
    ``Answer`` by the answer's ``verdict``; ``""`` when it is found."""
    words = verdict_words(result)
    return f" ({words})" if words else ""


def moment_lines(m) -> list[str]:
    """One :class:`edge.answer.Moment`: its head line, caption excerpt and kept evidence."""
    star = "*" if m.cited else " "
    score = f" score {m.score:.3f} via {m.matched}" if m.score is not None else ""
    lines = [f" {star} {m.when}  clip {m.clip_id}  ({m.role}{score})"]
    excerpt = " ".join(m.caption.split())
    if len(excerpt) > EXCERPT:
        excerpt = excerpt[:EXCERPT].rstrip() + "…"
    lines.append(textwrap.indent(textwrap.fill(excerpt, WIDTH - 6), "     "))
    if m.evidence:
        lines.append(textwrap.indent(textwrap.fill(f"kept: {m.evidence}", WIDTH - 6), "     "))
    return lines


def search_lines(result: dict) -> list[str]:
    """``edge search``: one line per moment (rank, when, score, what matched, clip id,
    caption excerpt), then the note, the scope searched and the milliseconds it took. A
    clip listed because a person the question names was seen or heard in it (matched
    ``face``/``voice``), not because retrieval scored it, shows ``—`` for its score."""
    lines = [f"{rank:2}. {m['when']}  {_score(m)}  {m['matched']:9} clip {m['clip_id']:<5} "
             f"{m['caption']}" for rank, m in enumerate(result["moments"], 1)]
    if not lines:
        lines.append("No moments found.")
    if result["note"]:
        lines.append(f"Note: {result['note']}")
    lines.append(f"Searched {scope_words(result['scope'])}; {len(result['queries'])} "
                 f"quer{'y' if len(result['queries']) == 1 else 'ies'} in {result['ms']:.0f} ms.")
    return lines


def _score(m: dict) -> str:
    """A moment's score in six columns; ``—`` for a person's clip retrieval did not score."""
    if not m["score"] and m["matched"] in ("face", "voice"):
        return f"{'—':>6}"
    return f"{m['score']:.4f}"


def scope_words(scope: dict) -> str:
    """A scope (``Answer.scope``: label, start, end in timeline seconds) in words:
    ``yesterday evening (DAY1 18:00:00 to DAY1 23:59:59)``, ``everything before DAY1
    11:21:00`` or ``everything``."""
    from edge.answer.scope import time_label

    if scope["start"] is None and scope["end"] is None:
        return "everything"
    if scope["start"] is None and not scope["label"]:
        return f"everything before {time_label(scope['end'], 'now')}"
    span = (f"clips ending after {time_label(scope['start'], 'the start')} and by "
            f"{time_label(scope['end'], 'now')}")
    return f"{scope['label']} ({span})" if scope["label"] else span
