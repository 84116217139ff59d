"""A keyframe thumbnail: terminal graphics (Sixel, Kitty TGP) where the terminal supports
them, coloured half blocks otherwise (textual-image picks), a placeholder for clips that
have no keyframe (memories built from caption files)."""

from __future__ import annotations

import logging
from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

log = logging.getLogger(__name__)

# textual-image asks the terminal what it supports when imported; that must happen before
# the app starts (edge.cli imports this module before App.run()). Its query fails on a
# terminal that reports no size (a bare pty); the chat then draws half blocks itself. Its
# warnings (a terminal that does not answer the cell-size query) would print tracebacks
# over the screen before the app starts; it copes with them, so they are silenced.
logging.getLogger("textual_image").setLevel(logging.ERROR)
try:
    from textual_image.widget import Image
except Exception as e:  # noqa: BLE001 - any failure of the terminal query
    log.debug("terminal graphics unavailable (%s); keyframes drawn as half blocks", e)
    Image = None


class HalfBlocks(Widget):
    """An image as coloured upper-half blocks (two pixel rows per cell), fitted to the
    widget's size; the fallback when textual-image cannot be used."""

    def __init__(self, path: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.image = path
        self._strips: list[Strip] = []
        self._drawn_for = (0, 0)

    def _render_rows(self, width: int, height: int) -> list[Strip]:
        from PIL import Image as PILImage

        with PILImage.open(self.image) as im:
            px = im.convert("RGB").resize((max(1, width), max(2, height * 2))).load()
        rows = []
        for y in range(height):
            rows.append(Strip([
                Segment("▀", Style(color=f"rgb{px[x, 2 * y]}", bgcolor=f"rgb{px[x, 2 * y + 1]}"))
                for x in range(width)]))
        return rows

    def render_line(self, y: int) -> Strip:
        """Row ``y`` of the image, redrawn when the widget's size changes."""
        size = (self.size.width, self.size.height)
        if size != self._drawn_for:
            self._strips, self._drawn_for = self._render_rows(*size), size
        return self._strips[y] if y < len(self._strips) else Strip.blank(size[0])


class Keyframe(Widget):
    """The first keyframe of a clip, or a placeholder saying why there is none."""

    def __init__(self, paths: tuple[Path, ...], **kwargs) -> None:
        super().__init__(**kwargs)
        self.paths = paths
        if not paths:
            self.add_class("none")  # caption-only clips get a small placeholder

    def compose(self) -> ComposeResult:
        """The image (terminal graphics or half blocks), or a placeholder."""
        if not self.paths:
            yield Static("no keyframe", classes="placeholder")
        elif not self.paths[0].is_file():
            yield Static("keyframe file\nmissing", classes="placeholder")
        elif Image is not None:
            yield Image(str(self.paths[0]))
        else:
            yield HalfBlocks(str(self.paths[0]))
