"""The first-run panel: no memory yet, so say exactly how to build one."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.widgets import Static

from tui.session import ingest_commands


def first_run_text(path: Path, exists: bool, error: str | None = None) -> Text:
    """What to do when the memory at ``path`` is missing (``exists`` False), empty, or could
    not be opened (``error``)."""
    footage, captions = ingest_commands(path)
    t = Text()
    t.append("No memory to chat about yet.\n\n", style="bold")
    if error:
        t.append(f"{error}\n\n", style="red")
    else:
        t.append(f"{path} " + ("holds no clips.\n\n" if exists else "does not exist.\n\n"))
    t.append("Turn your footage (files or folders) into memory:\n")
    t.append(f"    {footage}\n\n", style="bold green")
    t.append("or build it from a caption file (EgoLife/MERIT JSON):\n")
    t.append(f"    {captions}\n\n", style="bold green")
    t.append("Then press ctrl+r here (or start `edge chat` again).", style="dim")
    return t


class FirstRun(Static):
    """Shown instead of the conversation while the memory is empty."""
