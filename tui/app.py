"""``edge chat``: the Textual application that ties the screens to one memory and one hub.

The app owns two things the screens share: a read connection to the memory for the UI
thread (timeline, clips, status) and the model hub. Each question opens its own connection
in its worker thread (SQLite WAL lets it read while a recorder writes), and questions run
one at a time (``ask_lock``) so a cancelled question's last model call never overlaps the
next question's. A question's model calls run in a :func:`models.cancel_scope` of its
worker's cancel event: Esc (``Worker.cancel``) and Ctrl+Q stop the call in flight within
a moment, and quitting never waits for a model to finish.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from textual.app import App
from textual.binding import Binding
from textual.worker import NoActiveWorker, get_current_worker

from edge.answer import Answer, ask
from edge.errors import USER_ERRORS, StoreError
from edge.store import Memory, ReadOnlyMemoryError
from models import cancel_scope
from tui.screens.chat import ChatScreen
from tui.screens.clip import ClipScreen
from tui.screens.help import HelpScreen
from tui.screens.people import PeopleScreen
from tui.screens.report import ReportScreen
from tui.screens.timeline import TimelineScreen
from tui.session import MemoryStatus, memory_status
from tui.widgets.status_bar import StatusBar

STATUS_EVERY = 5.0
"""Seconds between status refreshes (the memory may grow while a recorder writes)."""


class EdgeApp(App):
    """The chat about one memory.

    Args:
        memory_path: the memory file; it need not exist yet (the first-run panel says how to
            build it) and is never created by the chat.
        hub: a :class:`models.ModelHub`; models load on the first question. The caller
            closes it.
        delta: the neighbor window Δ, for questions and for a clip's neighbors.
        ask_options: more keyword arguments for :func:`edge.answer.ask` (``max_rounds``,
            ``top_n``, ``retrieval``, ``neighbor_filter``).
    """

    CSS_PATH = "edge.tcss"
    TITLE = "edge chat"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    """Under 100 columns (a phone's SSH client, a split pane) the panes stack."""
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, memory_path: Path, hub, *, delta: int = 2,
                 ask_options: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.memory_path = Path(memory_path)
        self.hub = hub
        self.delta = delta
        self.ask_options = dict(ask_options or {})
        self.ask_lock = threading.Lock()
        self.memory: Memory | None = None
        self.readonly = False  # opened read-only (a file or folder it cannot write)
        self.open_error: str | None = None  # why the memory file could not be opened
        self.status: MemoryStatus = memory_status(self.memory_path, None, hub)
        self._open_memory()

    # -- memory and status
    def _open_memory(self) -> None:
        """Open the memory for the UI thread once its file exists; never create it."""
        if self.memory is None and self.memory_path.is_file():
            try:
                try:
                    self.memory = Memory(self.memory_path, create=False)
                except ReadOnlyMemoryError:  # read-only media: read it, record nothing
                    self.memory = Memory(self.memory_path, create=False, readonly=True)
                    self.readonly = True
                    if self.is_running:  # else on_mount says it
                        self.notify(self.readonly_notice(), timeout=10)
                self.open_error = None
            except StoreError as e:
                if str(e) != self.open_error and self.is_running:
                    self.notify(str(e), severity="error", timeout=15)
                self.open_error = str(e)
        self.status = memory_status(self.memory_path, self.memory, self.hub)

    def get_default_screen(self) -> ChatScreen:
        """The chat screen, under every other screen."""
        return ChatScreen()

    def on_mount(self) -> None:
        """Name the memory in the header, report an unreadable file, refresh the status every
        few seconds."""
        self.sub_title = str(self.memory_path)
        if self.readonly:
            self.notify(self.readonly_notice(), timeout=10)
        if self.open_error:
            self.notify(self.open_error, severity="error", timeout=15)
        self.set_interval(STATUS_EVERY, self.action_refresh_memory)

    def action_refresh_memory(self) -> None:
        """Re-read the memory's status (ctrl+r; also every few seconds)."""
        self._open_memory()
        for screen in self.screen_stack:
            if isinstance(screen, ChatScreen) and screen.is_mounted:
                screen.show_status()
            for bar in screen.query(StatusBar):
                bar.show(self.status)

    async def action_quit(self) -> None:
        """Ctrl+Q: cancel every worker first, so a question's model call stops now instead of
        holding the exit (asyncio joins the worker threads when the app ends)."""
        self.workers.cancel_all()
        self.exit()

    def on_unmount(self) -> None:
        """Close the UI thread's connection to the memory."""
        if self.memory is not None:
            self.memory.close()
            self.memory = None

    # -- questions (called from the worker thread)
    def run_ask(self, question: str, on_progress, on_token=None) -> Answer:
        """Answer ``question`` on a connection of this thread; model calls are stored under
        the ``chat`` command like ``edge ask`` stores its own. ``on_token`` gets the answer's
        text as the solver writes it. Called from a Textual worker,
        its model calls stop when the worker is cancelled (Esc, Ctrl+Q): they raise
        :class:`models.GenerationCancelled`."""
        try:
            cancel = get_current_worker().cancelled_event
        except NoActiveWorker:
            cancel = None
        with self._connect() as memory, cancel_scope(cancel):
            mark = self.hub.usage.mark()
            try:
                return ask(memory, self.hub, question, delta=self.delta,
                           on_progress=on_progress, on_token=on_token, **self.ask_options)
            finally:
                self._record_calls(memory, self.hub.usage.records[mark:])

    def run_report(self, request: str, on_progress):
        """The cited report a chat line ``/report [DAY] [STYLE] [TOPIC…]`` asks for
        (:func:`edge.report.parse_request`, :func:`edge.report.make_report`), on a
        connection of this thread, in the worker's cancel scope; model calls are stored
        under ``chat``. Returns an :class:`edge.report.Report`."""
        from edge.report import make_report, parse_request
        from edge.report.evidence import day_span

        try:
            cancel = get_current_worker().cancelled_event
        except NoActiveWorker:
            cancel = None
        with self._connect() as memory, cancel_scope(cancel):
            req = parse_request(request, memory.days())
            start, end = day_span(memory, req["day"])
            mark = self.hub.usage.mark()
            try:
                return make_report(memory, self.hub, start=start, end=end, label=req["day"],
                                   topic=req["topic"], style=req["style"],
                                   on_progress=on_progress)
            finally:
                self._record_calls(memory, self.hub.usage.records[mark:])

    def readonly_notice(self) -> str:
        """What the chat says once when it opened the memory read-only."""
        return (f"{self.memory_path} cannot be written here: opened read-only (model calls "
                "are not recorded).")

    def _connect(self) -> Memory:
        """A connection of the calling (worker) thread, read-only when the memory was."""
        return Memory(self.memory_path, create=False, readonly=self.readonly)

    def _record_calls(self, memory: Memory, records: list) -> None:
        """Store a question's or report's model calls under ``chat``; a memory that refuses
        the write (a read-only file) loses that accounting, with a notice, not the answer.
        Called from the worker thread."""
        import apsw

        from edge.store import write_error

        if memory.readonly:
            return  # said once when it was opened
        try:
            memory.record_calls("chat", records)
        except apsw.Error as e:
            self.call_from_thread(self.notify, f"{write_error(memory.path, e)} The model "
                                  "calls were not recorded.", severity="warning", timeout=10)

    @staticmethod
    def describe_error(e: Exception) -> str:
        """The chat's line for a failed question: the message of the project's own errors,
        the exception type too for anything else."""
        if isinstance(e, USER_ERRORS):
            return str(e)
        return f"{type(e).__name__}: {e}"

    # -- navigation
    def open_report(self, report) -> None:
        """Show a cited report beside its citations."""
        self.push_screen(ReportScreen(report))

    def open_clip(self, clip_id: int) -> None:
        """Show one clip with its neighbors and full caption."""
        self.push_screen(ClipScreen(clip_id))

    def action_timeline(self) -> None:
        """ctrl+t: browse the memory by day and hour (a notice when it holds no clips)."""
        if self.status.empty or self.memory is None:
            self.notify("The memory holds no clips yet.", severity="warning")
            return
        if not isinstance(self.screen, TimelineScreen):
            self.push_screen(TimelineScreen())

    def action_people(self) -> None:
        """ctrl+n: the people of the memory, with their face crops and appearances (how to
        add some when there are none yet). Read-only."""
        if not isinstance(self.screen, PeopleScreen):
            self.push_screen(PeopleScreen())

    def action_help(self) -> None:
        """F1: every key binding, per screen."""
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen([
            ("everywhere", self.BINDINGS),
            ("chat", [*ChatScreen.BINDINGS,
                      Binding("enter", "", "ask (question box) / open the selected moment "
                                           "(evidence)")]),
            ("timeline", TimelineScreen.BINDINGS),
            ("people", [*PeopleScreen.BINDINGS,
                        Binding("enter", "", "show the person's appearances (people) / open "
                                             "the appearance's clip (appearances)")]),
            ("clip", ClipScreen.BINDINGS),
            ("report (/report)", ReportScreen.BINDINGS),
            ("lists", [Binding("up,down", "", "move"),
                       Binding("enter", "", "open the clip / move to the neighbor"),
                       Binding("tab,shift+tab", "", "next / previous pane")]),
        ]))
