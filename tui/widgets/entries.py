"""Rows of clips — the evidence of an answer, the neighbors of a clip — as a ListView."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ListItem, ListView, Static

from tui.messages import ClipChosen
from tui.session import Entry, excerpt
from tui.widgets.keyframe import Keyframe

CAPTION_EXCERPT = 220
TRANSCRIPT_EXCERPT = 120


def entry_text(e: Entry) -> Text:
    """Day and time, tag, caption excerpt and transcript line of one row."""
    t = Text()
    t.append("★ " if e.cited else "  ", style="bold yellow")
    t.append(e.when, style="bold")
    t.append(f"  clip {e.clip_id}", style="dim")
    if e.tag:
        t.append(f"  {e.tag}", style="italic cyan")
    t.append("\n" + excerpt(e.caption, CAPTION_EXCERPT))
    if e.transcript.strip():
        t.append("\n“" + excerpt(e.transcript, TRANSCRIPT_EXCERPT) + "”", style="green")
    return t


class EntryRow(ListItem):
    """One clip: thumbnail beside its text."""

    def __init__(self, entry: Entry) -> None:
        super().__init__()
        self.entry = entry

    def compose(self) -> ComposeResult:
        """Thumbnail, then the row's text."""
        with Horizontal():
            yield Keyframe(self.entry.keyframes, classes="thumb")
            yield Static(entry_text(self.entry), classes="entry-text")


class EntryList(ListView):
    """A list of clips; Enter posts :class:`ClipChosen` for the highlighted one."""

    async def show(self, entries: list[Entry]) -> None:
        """Replace the rows."""
        await self.clear()
        await self.extend(EntryRow(e) for e in entries)
        if entries:
            self.index = 0

    @property
    def entries(self) -> list[Entry]:
        """The entries shown, top to bottom."""
        return [row.entry for row in self.query(EntryRow)]

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        """Enter on a row: post :class:`ClipChosen`."""
        event.stop()
        if isinstance(event.item, EntryRow):
            self.post_message(ClipChosen(event.item.entry.clip_id))
