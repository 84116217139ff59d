"""One clip with its neighbors (±Δ on the timeline) and its full caption."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Label

from tui.messages import ClipChosen
from tui.session import Entry
from tui.widgets.clip_view import ClipView
from tui.widgets.entries import EntryList
from tui.widgets.status_bar import StatusBar


class ClipScreen(Screen):
    """The clip ``clip_id``: Enter on a neighbor moves to it; Esc goes back."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("f1", "app.help", "Help"),
    ]

    def __init__(self, clip_id: int) -> None:
        super().__init__()
        self.clip_id = clip_id

    def compose(self) -> ComposeResult:
        """The clip, its neighbors, the status bar."""
        yield Header()
        with VerticalScroll(id="clip-body"):
            yield ClipView(id="clip")
            with Vertical(id="neighbors-box"):
                yield Label("", id="neighbors-title", classes="pane-title")
                yield EntryList(id="neighbors")
        yield StatusBar(id="status")
        yield Footer()

    async def on_mount(self) -> None:
        """Show the clip this screen was opened for."""
        self.query_one(StatusBar).show(self.app.status)
        await self.show_clip(self.clip_id)

    async def show_clip(self, clip_id: int) -> None:
        """Show ``clip_id``, its Δ clips before and after (same day) and the full caption."""
        memory, path, delta = self.app.memory, self.app.memory_path, self.app.delta
        clip = memory.clips([clip_id]).get(clip_id) if memory is not None else None
        if clip is None:
            self.notify(f"clip {clip_id} is not in the memory", severity="error")
            return
        self.clip_id = clip_id
        before, after = memory.neighbors(clip, delta)
        await self.query_one(ClipView).show(Entry.from_clip(clip, path))
        rows = ([Entry.from_clip(c, path, f"{i} before") for i, c in
                 reversed(list(enumerate(before, start=1)))]
                + [Entry.from_clip(c, path, f"{i} after") for i, c in
                   enumerate(after, start=1)])
        self.query_one("#neighbors-title", Label).update(
            f"Neighbors (±{delta} clips) — Enter moves to one")
        neighbors = self.query_one(EntryList)
        await neighbors.show(rows)
        neighbors.focus()

    async def on_clip_chosen(self, message: ClipChosen) -> None:
        """Enter on a neighbor: move to that clip."""
        message.stop()
        await self.show_clip(message.clip_id)
