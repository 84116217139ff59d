"""A keyframe thumbnail: terminal graphics (Sixel, Kitty TGP) where the terminal supports
them, coloured half blocks otherwise (textual-image picks), a placeholder for clips that
have no keyframe (memories built from caption files)."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.widget import Widget
from textual.widgets import Static

# textual-image asks the terminal what it supports when imported; that must happen before
# the app starts (edge.cli imports this module before App.run()).
from textual_image.widget import Image


class Keyframe(Widget):
    """The first keyframe of a clip, or a placeholder saying why there is none."""

    def __init__(self, paths: tuple[Path, ...], **kwargs) -> None:
        super().__init__(**kwargs)
        self.paths = paths
        if not paths:
            self.add_class("none")  # caption-only clips get a small placeholder

    def compose(self) -> ComposeResult:
        if not self.paths:
            yield Static("no keyframe", classes="placeholder")
        elif not self.paths[0].is_file():
            yield Static("keyframe file\nmissing", classes="placeholder")
        else:
            yield Image(str(self.paths[0]))
