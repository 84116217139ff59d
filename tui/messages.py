"""Messages between the ask worker thread and the chat screen (posted thread-safely)."""

from __future__ import annotations

from textual.message import Message


class AskProgress(Message):
    """A progress line of question ``ask_id`` (``round 1/5: searching '…'``)."""

    def __init__(self, ask_id: int, line: str) -> None:
        super().__init__()
        self.ask_id = ask_id
        self.line = line


class AskToken(Message):
    """A piece of question ``ask_id``'s answer text as the solver writes it."""

    def __init__(self, ask_id: int, text: str) -> None:
        super().__init__()
        self.ask_id = ask_id
        self.text = text


class AskFinished(Message):
    """Question ``ask_id`` ended: ``answer`` (an :class:`edge.answer.Answer`, or an
    :class:`edge.report.Report` for a ``/report`` line) or ``error``."""

    def __init__(self, ask_id: int, answer=None, error: str | None = None) -> None:
        super().__init__()
        self.ask_id = ask_id
        self.answer = answer
        self.error = error


class ClipChosen(Message):
    """The user picked a clip (Enter on an evidence, neighbor or timeline row)."""

    def __init__(self, clip_id: int) -> None:
        super().__init__()
        self.clip_id = clip_id
