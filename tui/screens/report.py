"""A cited report (``/report`` in the chat): the report beside its citations; Enter on a
citation opens the clip with its neighbors and keyframe."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, Static

from tui.messages import ClipChosen
from tui.session import Entry
from tui.widgets.entries import EntryList
from tui.widgets.status_bar import StatusBar


def report_text(report) -> Text:
    """The report's title, text (citations as ``[DAY1 11:15]``) and its checks line."""
    title = report.scope + (f": {report.topic}" if report.topic else "") + f" ({report.style})"
    body = report.text or (f"Nothing reached support {report.threshold:.2f}; try a lower "
                           "threshold or a wider scope (`edge report --threshold`).")
    return Text.assemble((title, "bold"), "\n\n", body, "\n\n",
                         (report.checks_line(), "dim"))


def cited_entries(report, memory, memory_path) -> list[Entry]:
    """One row per cited clip, in the order the report cites them, tagged with the best
    support its evidence got."""
    cited = report.cited_clips
    clips = memory.clips(cited) if memory is not None else {}
    best: dict[int, float] = {}
    for r in report.evidence:
        best[r.clip_id] = max(best.get(r.clip_id, 0.0), r.support or 0.0)
    return [Entry.from_clip(clips[c], memory_path, f"cited · support {best.get(c, 0):.2f}")
            for c in cited if c in clips]


class ReportScreen(Screen):
    """The report on the left, its cited clips on the right (Enter opens one); Esc back."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("ctrl+o", "toggle_focus", "Report ⇄ citations"),
        Binding("f1", "app.help", "Help"),
    ]

    def __init__(self, report) -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        """Report and citations side by side, the status bar below."""
        yield Header()
        with Horizontal(id="panes"):
            with VerticalScroll(id="report-pane"):
                yield Static(report_text(self.report), id="report")
            with Vertical(id="evidence-pane"):
                yield Label("Citations — Enter opens a moment", classes="pane-title")
                yield EntryList(id="citations")
        yield StatusBar(id="status")
        yield Footer()

    async def on_mount(self) -> None:
        """List the cited clips and focus them."""
        self.query_one(StatusBar).show(self.app.status)
        entries = cited_entries(self.report, self.app.memory, self.app.memory_path)
        await self.query_one(EntryList).show(entries)
        self.query_one(EntryList).focus()

    def action_toggle_focus(self) -> None:
        """Move the focus between the report and its citations."""
        citations = self.query_one(EntryList)
        if citations.has_focus:
            self.query_one("#report-pane").focus()
        else:
            citations.focus()

    def on_clip_chosen(self, message: ClipChosen) -> None:
        """Open the chosen clip."""
        self.app.open_clip(message.clip_id)
