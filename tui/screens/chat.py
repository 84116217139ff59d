"""The chat screen: conversation and question box on the left, evidence on the right.

A question runs in a Textual worker thread, so the screen never freezes while a model
works. Esc cancels: the screen returns at once and drops the late result; the model call
in flight stops (:meth:`tui.app.EdgeApp.run_ask` runs it in the worker's cancel scope),
and the progress callback raises before the next search or model call.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label
from textual.worker import Worker, get_current_worker

from edge.report import Report
from tui.messages import AskFinished, AskProgress, AskToken, ClipChosen
from tui.session import Entry
from tui.widgets.conversation import Bubble, Conversation
from tui.widgets.entries import EntryList
from tui.widgets.first_run import FirstRun, first_run_text
from tui.widgets.status_bar import StatusBar


def is_report(line: str) -> bool:
    """Whether a line typed in the question box asks for a report (``/report …``, any
    case, as :func:`edge.report.parse_request` reads it)."""
    return [w.lower() for w in line.split(maxsplit=1)[:1]] == ["/report"]


QUESTION_HINT = "Ask about your day (Enter); /report DAY1 for a report"
"""The question box's hint: whole in the box from 80 columns (stacked panes) and in the
chat pane beside the evidence from 100 (Esc, cancel, is in the footer)."""


class _Cancelled(Exception):
    """Raised inside the worker thread to stop a cancelled question."""


class ChatScreen(Screen):
    """Ask questions; see progress, the answer and the cited moments."""

    BINDINGS = [
        # the footer shows the short descriptions, within 80 columns with F1 and quit; the
        # help screen (F1) the tooltips, and the keys the footer leaves out
        Binding("escape", "cancel", "Cancel", tooltip="cancel the running question"),
        Binding("ctrl+t", "app.timeline", "Timeline"),
        Binding("ctrl+n", "app.people", "People",
                tooltip="people: names, face crops and where each was seen or heard"),
        Binding("ctrl+r", "app.refresh_memory", "Reload memory", show=False,
                tooltip="reload the memory (also every 5 s)"),
        Binding("ctrl+l", "clear", "Clear chat",
                tooltip="clear the conversation and its evidence"),
        Binding("ctrl+o", "toggle_focus", "Question ⇄ evidence", show=False),
        Binding("f1", "app.help", "Help", tooltip="help: every key of every screen"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._ask_id = 0
        self._worker: Worker | None = None
        self._pending: Bubble | None = None
        self._question: Bubble | None = None  # the running (or last) question's turn
        self._cancelled_turn: list[Bubble] = []  # removed when the next question comes
        self._lines: list[str] = []
        self._draft = ""  # the answer's text so far, as the solver writes it
        self._started = 0.0
        self._step_started = 0.0
        self.last_answer = None  # the edge.answer.Answer shown last
        self._ticker = None

    def compose(self) -> ComposeResult:
        """Conversation and question on the left, evidence on the right, status below."""
        yield Header()
        with Horizontal(id="panes"):
            with Vertical(id="chat-pane"):
                yield FirstRun(id="first-run")
                yield Conversation(id="conversation")
                yield Input(placeholder=QUESTION_HINT, id="question")
            with Vertical(id="evidence-pane"):
                yield Label("Evidence — Enter opens a moment", classes="pane-title")
                yield EntryList(id="evidence")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        """Focus the question and show the memory's status."""
        self.query_one("#question", Input).focus()
        self.show_status()

    def show_status(self) -> None:
        """Show the app's current :class:`MemoryStatus` (first-run panel when empty)."""
        status = self.app.status
        self.query_one(StatusBar).show(status)
        first = self.query_one(FirstRun)
        first.update(first_run_text(status.path, status.exists, self.app.open_error))
        first.display = status.empty
        self.query_one(Conversation).display = not status.empty

    # -- asking
    @property
    def asking(self) -> bool:
        """Whether a question is running."""
        return self._worker is not None

    @on(Input.Submitted, "#question")
    def submit(self, event: Input.Submitted) -> None:
        """Enter: ask the typed question in a worker thread (one at a time)."""
        question = event.value.strip()
        if not question:
            return
        if self.asking:
            self.notify("Still answering the last question; Esc cancels it.", severity="warning")
            return
        if self.app.status.empty:
            self.notify("There is no memory to ask yet; see the commands on the left.",
                        severity="error")
            return
        event.input.clear()
        self.query_one(EntryList).clear()  # the last question's evidence goes with it
        conv = self.query_one(Conversation)
        for bubble in self._cancelled_turn:  # a cancelled turn gives way to the next question
            bubble.remove()
        self._cancelled_turn = []
        self._question = conv.say(Text(question, style="bold"), "question")
        self._lines = []
        self._draft = ""
        self._started = self._step_started = time.monotonic()
        self._pending = conv.say(Text("thinking…", style="italic"), "pending")
        self._ask_id += 1
        self._worker = self._ask(self._ask_id, question)
        self._ticker = self.set_interval(1.0, self._show_progress)

    @work(thread=True, group="ask", exit_on_error=False)
    def _ask(self, ask_id: int, question: str) -> None:
        """Run :func:`edge.answer.ask` off the UI thread; post progress and the result."""
        worker = get_current_worker()
        app = self.app

        def post(message) -> None:
            if not worker.is_cancelled:
                try:
                    self.post_message(message)
                except RuntimeError:  # the app closed while this thread finished its call
                    pass

        def progress(line: str) -> None:
            if worker.is_cancelled:
                raise _Cancelled
            post(AskProgress(ask_id, line))

        def token(text: str) -> None:
            post(AskToken(ask_id, text))

        if not app.ask_lock.acquire(blocking=False):
            post(AskProgress(ask_id, "waiting for the previous question's model call to end"))
            app.ask_lock.acquire()
        try:
            if worker.is_cancelled:
                return
            if is_report(question):
                result = app.run_report(question, on_progress=progress)
            else:
                result = app.run_ask(question, on_progress=progress, on_token=token)
        except _Cancelled:
            return
        except Exception as e:  # shown in the chat; the screen must stay usable
            post(AskFinished(ask_id, error=app.describe_error(e)))
            return
        finally:
            app.ask_lock.release()
        post(AskFinished(ask_id, answer=result))

    def on_ask_progress(self, message: AskProgress) -> None:
        """Show a progress line of the running question (a new step: an earlier round's
        draft answer gives way to the next)."""
        if message.ask_id != self._ask_id or self._pending is None:
            return
        self._lines.append(message.line)
        self._draft = ""
        self._step_started = time.monotonic()
        self._show_progress()
        self.query_one(Conversation).scroll_end(animate=False)

    def on_ask_token(self, message: AskToken) -> None:
        """Add a piece of the answer as the solver writes it."""
        if message.ask_id != self._ask_id or self._pending is None:
            return
        self._draft += message.text
        self._show_progress()

    def _show_progress(self) -> None:
        """The pending turn: the last progress lines, the seconds the current step and the
        question have taken (every second, so a long model call visibly runs), and the
        answer as far as the solver has written it."""
        if self._pending is None:
            return
        now = time.monotonic()
        text = Text("\n".join(self._lines[-6:]) or "thinking…", style="italic")
        if self._lines:
            text.append(f" — {now - self._step_started:.0f} s", style="dim")
        if self._draft:
            text.append("\n")
            text.append(self._draft)
        text.append(f"\n{now - self._started:.0f} s in all — Esc cancels", style="dim")
        self._pending.update(text)

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    async def on_ask_finished(self, message: AskFinished) -> None:
        """Show the answer (or the error) and its moments as the evidence."""
        if message.ask_id != self._ask_id or self._pending is None:
            return  # a cancelled question's late result
        conv = self.query_one(Conversation)
        pending, self._pending, self._worker = self._pending, None, None
        self._stop_ticker()
        if message.error is not None:
            pending.set_classes("error")
            pending.update(Text(message.error))
            return
        if isinstance(message.answer, Report):
            rep = message.answer
            pending.set_classes("answer")
            pending.update(Text(f"{rep.scope} report ({rep.style}): {len(rep.sentences)} "
                                f"sentence(s) — {rep.checks_line()}"))
            self.app.open_report(rep)
            return
        answer = self.last_answer = message.answer
        pending.set_classes("answer")
        pending.update(conv.answer_text(answer))
        conv.scroll_end(animate=False)
        path = self.app.memory_path
        await self.query_one(EntryList).show(
            [Entry.from_moment(m, path) for m in answer.moments])

    def action_cancel(self) -> None:
        """Esc: stop the running question; the UI is free again at once."""
        if self._worker is None:
            self.query_one("#question", Input).focus()
            return
        self._worker.cancel()
        self._worker = None
        self._stop_ticker()
        if self._pending is not None:
            self._pending.set_classes("cancelled")
            self._pending.update(Text("cancelled", style="italic"))
            self._cancelled_turn = [b for b in (self._question, self._pending) if b is not None]
            self._pending = None
        self._ask_id += 1  # anything the old worker still posts is ignored

    # -- navigation
    async def action_clear(self) -> None:
        """Ctrl+L: clear the conversation and the evidence pane; a running question goes
        too (cancelled, as by Esc)."""
        self.action_cancel()
        self._cancelled_turn, self._question, self.last_answer = [], None, None
        await self.query_one(Conversation).remove_children()
        await self.query_one(EntryList).clear()

    def action_toggle_focus(self) -> None:
        """Move the focus between the question and the evidence."""
        question = self.query_one("#question", Input)
        if question.has_focus:
            self.query_one(EntryList).focus()
        else:
            question.focus()

    def on_clip_chosen(self, message: ClipChosen) -> None:
        """Open the chosen clip."""
        self.app.open_clip(message.clip_id)
