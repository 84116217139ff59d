"""The timeline: days → hours → clips with per-hour activity counts, to browse without asking."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Tree

from tui.session import Entry, excerpt
from tui.widgets.clip_view import ClipView
from tui.widgets.status_bar import StatusBar

BAR = 20


def hour_label(hour: int, clips: int, most: int) -> Text:
    """``11:00  ████████   23 clips`` with a bar scaled to the busiest hour."""
    width = max(1, round(BAR * clips / most)) if most else 0
    return Text.assemble((f"{hour:02d}:00  ", "bold"), ("█" * width, "cyan"),
                         (" " * (BAR - width)), f" {clips:4d} clip" + ("s" if clips != 1 else ""))


class TimelineScreen(Screen):
    """A tree of the memory; clips load when their hour is opened. Enter on a clip opens it."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("f1", "app.help", "Help"),
    ]

    def compose(self) -> ComposeResult:
        """The tree beside the highlighted clip, the status bar."""
        yield Header()
        with Horizontal(id="timeline-panes"):
            yield Tree("memory", id="timeline")
            with VerticalScroll(id="timeline-clip-box"):
                yield ClipView(id="timeline-clip")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        """One node per day and, under it, one per hour with its number of clips."""
        self.query_one(StatusBar).show(self.app.status)
        tree = self.query_one(Tree)
        tree.show_root = False
        memory = self.app.memory
        rows = memory.activity_by_hour() if memory is not None else []
        most = max((n for *_, n in rows), default=0)
        days: dict[str, object] = {}
        totals: dict[str, int] = {}
        for day, _start, _hour, n in rows:
            totals[day] = totals.get(day, 0) + n
        for day, day_start, hour, n in rows:
            if day not in days:
                days[day] = tree.root.add(Text.assemble((day, "bold"),
                                                        f"  {totals[day]} clips"),
                                          data=("day", day), expand=True)
            days[day].add(hour_label(hour, n, most),
                          data=("hour", day_start + hour * 3600.0, n), allow_expand=True)
        if not rows:
            tree.root.add_leaf("no clips yet")
        tree.focus()

    def on_tree_node_expanded(self, event: Tree.NodeExpanded) -> None:
        """Opening an hour lists its clips (read then, not before)."""
        node = event.node
        if not node.data or node.data[0] != "hour" or node.children:
            return
        path = self.app.memory_path
        for clip in self.app.memory.clips_between(node.data[1], node.data[1] + 3600.0):
            e = Entry.from_clip(clip, path)
            node.add_leaf(Text.assemble((e.when.split()[-1], "bold"), "  ",
                                        excerpt(e.caption, 70)),
                          data=("clip", clip.id))

    async def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        """Show the highlighted clip beside the tree."""
        data = event.node.data
        if data and data[0] == "clip":
            clip = self.app.memory.clips([data[1]]).get(data[1])
            if clip is not None:
                await self.query_one(ClipView).show(Entry.from_clip(clip, self.app.memory_path))

    def on_tree_node_selected(self, event: Tree.NodeSelected) -> None:
        """Enter on a clip opens it."""
        data = event.node.data
        if data and data[0] == "clip":
            self.app.open_clip(data[1])
