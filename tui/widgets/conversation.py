"""The chat transcript: questions, progress while a question runs, answers, errors."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from edge.answer.records import verdict_words


class Bubble(Static):
    """One turn. CSS classes say which: ``question``, ``pending``, ``answer``, ``error``,
    ``cancelled``."""


class Conversation(VerticalScroll):
    """Turns, newest at the bottom; scrolls to the end as they arrive."""

    def say(self, text: Text | str, kind: str) -> Bubble:
        """Add a turn of ``kind`` (its CSS class) at the bottom; returns it to update later."""
        bubble = Bubble(text, classes=kind)
        self.mount(bubble)
        self.scroll_end(animate=False)
        return bubble

    def answer_text(self, answer) -> Text:
        """An :class:`edge.answer.Answer` as the chat shows it."""
        t = Text()
        body = answer.answer or "(no answer)"
        if answer.extra.get("choices") and answer.answer:
            body = (f"{answer.answer}. {answer.extra['choices'][answer.answer]} — "
                    f"{answer.extra['reason']}")
        check = answer.citation_check
        said = verdict_words(answer)
        if said:
            t.append(f"{said[0].upper()}{said[1:]} — ", style="yellow")
        t.append(body)
        if answer.note:
            t.append(f"\nNote: {answer.note}", style="yellow")
        if check:
            t.append(f"\nCitations: {check['summary']}",
                     style="yellow" if check["flagged"] else "dim")
        u = answer.usage["llm"]
        cited = sum(m.cited for m in answer.moments)
        if answer.scope.get("label"):
            t.append(f"\nsearched {answer.scope['label']}", style="dim")
        t.append(f"\n{len(answer.rounds)} round(s) · {u['calls']} LLM call(s) · "
                 f"{u['tokens_in']}→{u['tokens_out']} tokens · {answer.seconds:.1f} s · "
                 f"{cited} cited, {len(answer.moments)} moment(s)", style="dim")
        return t
