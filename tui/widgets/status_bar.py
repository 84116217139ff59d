"""The status bar: memory file, clips, hours covered, last ingest, profile, remote roles."""

from __future__ import annotations

from textual.widgets import Static

from tui.session import MemoryStatus


class StatusBar(Static):
    """One line at the bottom of every screen; the app refreshes it (it may grow while a
    recorder writes to the same memory)."""

    def show(self, status: MemoryStatus) -> None:
        """Show ``status`` (a :class:`MemoryStatus`) as one line."""
        self.update(status.line())
