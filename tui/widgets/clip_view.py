"""One clip in full: keyframe, day and time, the whole caption and transcript."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from tui.session import Entry
from tui.widgets.keyframe import Keyframe


class ClipView(Vertical):
    """The detail of an :class:`Entry`; :meth:`show` swaps the clip."""

    def __init__(self, entry: Entry | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.entry = entry

    def compose(self) -> ComposeResult:
        """Title, keyframe, caption, transcript, further keyframes (or a placeholder)."""
        if self.entry is None:
            yield Static("Pick a clip to see it here.", classes="placeholder")
            return
        e = self.entry
        head = Text.assemble((e.when, "bold"), (f"  clip {e.clip_id}", "dim"),
                             (f"  {e.tag}" if e.tag else "", "italic cyan"))
        yield Static(head, classes="clip-title")
        yield Keyframe(e.keyframes, classes="frame")
        yield Static(Text(" ".join(e.caption.split())), classes="caption")
        if e.transcript.strip():
            yield Static(Text("“" + " ".join(e.transcript.split()) + "”", style="green"),
                         classes="transcript")
        if len(e.keyframes) > 1:
            with Horizontal(classes="more-frames"):
                for p in e.keyframes[1:]:
                    yield Keyframe((p,), classes="thumb")

    async def show(self, entry: Entry | None) -> None:
        """Show ``entry`` instead (None: the placeholder)."""
        self.entry = entry
        await self.recompose()
