"""The help screen: every key binding of every screen, read from their BINDINGS."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


def bindings_table(sections: list[tuple[str, list]]) -> Table:
    """A table of ``(screen name, BINDINGS)`` sections: keys and what they do."""
    table = Table(show_header=True, header_style="bold", box=None, expand=True)
    table.add_column("where")
    table.add_column("keys", style="bold cyan")
    table.add_column("does")
    for name, bindings in sections:
        for b in bindings:
            if isinstance(b, Binding):
                keys, description = b.key, b.tooltip or b.description
            else:
                keys, description = b[0], b[2] if len(b) > 2 else b[1]
            table.add_row(name, keys.replace(",", " / "), description)
            name = ""
    return table


def close_line() -> str:
    """``Esc, q or F1 closes this help (↑ ↓ scroll it)``: the keys of
    :attr:`HelpScreen.BINDINGS` that close it."""
    keys = [k.strip() for k in HelpScreen.BINDINGS[0].key.split(",")]
    names = [{"escape": "Esc"}.get(k, k.upper() if k.startswith("f") else k) for k in keys]
    said = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
    return f"{said} closes this help (↑ ↓ scroll it)."


class HelpScreen(ModalScreen):
    """Key bindings; Esc, q or F1 closes it."""

    BINDINGS = [Binding("escape,q,f1", "app.pop_screen", "Close help")]

    def __init__(self, sections: list[tuple[str, list]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        """How to close it, the bindings table and a line on keyboard, SSH and mouse use."""
        with VerticalScroll(id="help-box"):
            yield Static("edge chat — keys", classes="pane-title")
            yield Static(close_line(), id="help-close", classes="dim")
            yield Static(bindings_table(self.sections), id="help-table")
            yield Static("Everything works from the keyboard and over SSH; Tab moves between "
                         "panes; the mouse works too where the terminal sends it.",
                         classes="dim")
