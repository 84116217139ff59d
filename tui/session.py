"""What the chat shows about a memory and its models, read through edge's public API.

Kept apart from the widgets so the screens stay thin and these reads test without a terminal.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from edge import config
from edge.store import Clip, Memory
from edge.timeline import format_moment


@dataclass(frozen=True)
class MemoryStatus:
    """The status bar's facts. ``exists`` is False when no memory file is there yet;
    ``last_ingest`` is Unix seconds or None; ``remote_roles`` is empty when all is local."""

    path: Path
    exists: bool
    clips: int
    hours: float
    days: list[str]
    last_ingest: float | None
    profile: str
    remote_roles: list[str]

    @property
    def empty(self) -> bool:
        """No memory file, or one without a single clip: the chat shows how to ingest."""
        return not self.exists or self.clips == 0

    def line(self) -> str:
        """One status-bar line, e.g. ``memory.db · 40 clips · 0.17 h · DAY1 · …``."""
        models = ("remote: " + ", ".join(self.remote_roles)) if self.remote_roles else "local"
        if not self.exists:
            return f"{self.path} · no memory yet · profile {self.profile} · models {models}"
        last = ("never" if self.last_ingest is None
                else datetime.fromtimestamp(self.last_ingest).strftime("%Y-%m-%d %H:%M"))
        days = ", ".join(self.days[:3]) + (" …" if len(self.days) > 3 else "")
        return (f"{self.path} · {self.clips} clips · {self.hours:.2f} h"
                + (f" ({days})" if days else "")
                + f" · last ingest {last} · profile {self.profile} · models {models}")


def remote_roles(hub) -> list[str]:
    """Roles that ``hub`` (a :class:`models.ModelHub`) serves off the device: from its
    profile, or made remote by ``EDGE_<ROLE>_BASE_URL`` (``ModelHub.spec``). Loads nothing."""
    return hub.remote_roles()


def memory_status(path: Path, memory: Memory | None, hub) -> MemoryStatus:
    """The status of the memory at ``path`` (``memory`` is its open connection, or None when
    the file does not exist) and of ``hub``'s profile."""
    stats = memory.stats() if memory is not None else {}
    return MemoryStatus(
        path=Path(path), exists=memory is not None, clips=stats.get("clips", 0),
        hours=stats.get("hours", 0.0), days=stats.get("days", []),
        last_ingest=stats.get("last_ingest"), profile=hub.profile.name,
        remote_roles=remote_roles(hub))


def ingest_commands(path: Path) -> list[str]:
    """The exact commands that build the memory at ``path`` (``--memory`` only when it is not
    the default one)."""
    opt = ""
    if Path(path).expanduser().resolve() != config.default_memory_path().expanduser().resolve():
        opt = f" --memory {shlex.quote(str(path))}"
    return [f"edge{opt} ingest ~/Videos/today/", f"edge{opt} ingest-captions captions.json"]


@dataclass(frozen=True)
class Entry:
    """One clip as a row of the evidence, neighbor or timeline lists. ``tag``: what the row
    is (``cited``, ``anchor``, ``before``, ``after``…); ``keyframes`` are paths on disk."""

    clip_id: int
    when: str
    caption: str
    transcript: str
    keyframes: tuple[Path, ...]
    tag: str = ""
    cited: bool = False

    @classmethod
    def from_moment(cls, m, memory_path: Path) -> Entry:
        """From an :class:`edge.answer.Moment`."""
        tag = "cited" if m.cited else m.role
        if m.score is not None:
            tag += f" · {m.matched or 'score'} {m.score:.2f}"
        return cls(m.clip_id, m.when, m.caption, m.transcript,
                   keyframe_paths(memory_path, m.keyframes), tag, m.cited)

    @classmethod
    def from_clip(cls, c: Clip, memory_path: Path, tag: str = "") -> Entry:
        """From an :class:`edge.store.Clip`."""
        return cls(c.id, format_moment(c.t_start, c.day, c.day_start), c.caption, c.transcript,
                   keyframe_paths(memory_path, c.keyframes), tag)


def keyframe_paths(memory_path: Path, names: list[str]) -> tuple[Path, ...]:
    """Keyframe files of a clip: stored names are relative to ``<memory>.frames/``."""
    return tuple(config.frames_dir(memory_path) / n for n in names)


def excerpt(text: str, limit: int) -> str:
    """``text`` on one line, cut at ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
