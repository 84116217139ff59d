"""The people screen's parts: a person's row (name or ``person N``, a suggested name marked
as one, counts, first and last seen), a face crop, and a person's appearances (time, kind,
clip, crop). What they show is read through :class:`edge.store.Memory`'s people readers
(:mod:`edge.store.people_read`); nothing here writes.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widget import Widget
from textual.widgets import ListItem, ListView, Static

from edge import config
from edge.timeline import day_of, format_moment
from tui.messages import ClipChosen
from tui.widgets.keyframe import HalfBlocks, Image

MOST_APPEARANCES = 200
"""Appearances listed for one person (``edge people show`` lists them all)."""


def moment(t: float | None) -> str:
    """Timeline second ``t`` as the chat writes clip times (``DAY1 11:15:24`` or
    ``2025-02-20 19:30:52``); ``-`` for ``None``."""
    if t is None:
        return "-"
    return format_moment(t, *day_of(t))


def plural(n: int, word: str) -> str:
    """``1 face``, ``2 faces``."""
    return f"{n} {word}" + ("" if n == 1 else "s")


def add_command(memory_path: Path) -> str:
    """``edge people add NAME FILE...`` for the memory at ``memory_path`` (``--memory`` only
    when it is not the default one, as :func:`tui.session.ingest_commands` does)."""
    opt = ""
    if (Path(memory_path).expanduser().resolve()
            != config.default_memory_path().expanduser().resolve()):
        opt = f" --memory {shlex.quote(str(memory_path))}"
    return f"edge{opt} people add NAME FILE..."


def empty_text(memory_path: Path, tier_on: bool) -> Text:
    """What the people screen says when the memory knows no one yet: how to enrol someone
    and where people come from (or that this profile keeps no faces or voices)."""
    t = Text()
    t.append("No people in this memory yet.\n\n", style="bold")
    t.append("Enrol someone from photos of their face or recordings of their voice:\n")
    t.append(f"    {add_command(memory_path)}\n\n", style="bold green")
    if tier_on:
        t.append("Faces and voices in the footage you ingest appear here too, as "
                 "unnamed people you can name with `edge people name ID NAME`.", style="dim")
    else:
        t.append("The character tier is off in this profile (characters = false): new "
                 "footage adds no one.", style="dim")
    return t


def person_text(p) -> Text:
    """One person (:class:`edge.store.people_read.Person`): the name or ``person ID`` (the
    id ``edge people name ID NAME`` takes), a suggested name marked as a suggestion (never
    applied here), counts, first and last seen (timeline seconds, written as clip times)."""
    t = Text()
    t.append(p.label, style="bold" if p.name else "bold italic")
    if p.name:  # an unnamed one's label is already ``person ID``
        t.append(f"  id {p.id}", style="dim")
    if p.suggested_name and not p.name:
        t.append(f"\n  suggested: {p.suggested_name}? ({plural(p.suggested_clips, 'clip')})",
                 style="italic yellow")
    t.append(f"\n  {plural(p.faces, 'face')} · {plural(p.voices, 'voice')} · "
             f"{plural(p.clips, 'clip')}")
    if p.enrolled:
        t.append(f" · {p.enrolled} enrolled", style="dim")
    if p.first_seen is not None:
        t.append(f"\n  seen {moment(p.first_seen)} – {moment(p.last_seen)}", style="dim")
    return t


def appearance_text(a) -> Text:
    """One appearance (:class:`edge.store.people_read.Appearance`): time, kind, clip,
    source and seconds into it, a voice's words; an enrolled one names its file."""
    t = Text()
    if a.enrolled:
        t.append("enrolled", style="bold")
        t.append(f"  {a.kind}", style="cyan")
        t.append(f"\n{Path(a.source or '?').name}", style="dim")
        return t
    t.append(moment(a.at), style="bold")
    t.append(f"  {a.kind}", style="cyan")
    t.append(f"  clip {a.clip_id}", style="dim")
    where = f"{Path(a.source).name} @ {a.t:.1f} s" if a.source and a.t is not None else ""
    t.append(f"\n{where}", style="dim")
    if a.text:
        t.append(f"\n“{' '.join(a.text.split())}”", style="green")
    return t


class FaceCrop(Widget):
    """A face crop (terminal graphics or half blocks, as :class:`Keyframe` draws), or a
    placeholder for a person without one (only a voice) or a crop file that is gone."""

    def __init__(self, path: Path | None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.path = path
        if path is None or not path.is_file():
            self.add_class("none")

    def compose(self) -> ComposeResult:
        """The crop, or a placeholder saying why there is none."""
        if self.path is None:
            yield Static("no face", classes="placeholder")
        elif not self.path.is_file():
            yield Static("crop missing", classes="placeholder")
        elif Image is not None:
            yield Image(str(self.path))
        else:
            yield HalfBlocks(str(self.path))


class PersonRow(ListItem):
    """One person in the list: their crop beside their text."""

    def __init__(self, person, frames: Path) -> None:
        super().__init__()
        self.person = person
        self.frames = frames

    def compose(self) -> ComposeResult:
        """Thumbnail, then the person's lines."""
        thumb = self.frames / self.person.thumbnail if self.person.thumbnail else None
        with Horizontal():
            yield FaceCrop(thumb, classes="thumb")
            yield Static(person_text(self.person), classes="person-text")


class PersonList(ListView):
    """The people of the memory; highlighting one shows them beside the list."""

    async def show(self, people: list, frames: Path) -> None:
        """Replace the rows with ``people`` (crops under ``frames``)."""
        await self.clear()
        await self.extend(PersonRow(p, frames) for p in people)
        if people:
            self.index = 0


class AppearanceRow(ListItem):
    """One appearance: a face's crop beside its time, kind and clip."""

    def __init__(self, appearance, frames: Path) -> None:
        super().__init__()
        self.appearance = appearance
        self.frames = frames

    def compose(self) -> ComposeResult:
        """The crop (faces), then the lines."""
        a = self.appearance
        with Horizontal():
            if a.kind == "face":
                yield FaceCrop(self.frames / a.crop if a.crop else None, classes="thumb")
            yield Static(appearance_text(a), classes="appearance-text")


class AppearanceList(ListView):
    """A person's appearances; Enter on one in a clip posts :class:`ClipChosen`."""

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        """Enter on a row: open its clip (an enrolled one has none: say so)."""
        event.stop()
        if not isinstance(event.item, AppearanceRow):
            return
        a = event.item.appearance
        if a.clip_id is None:
            self.notify(f"Enrolled from {a.source}: it is in no clip.", severity="warning")
        else:
            self.post_message(ClipChosen(a.clip_id))


class PersonView(Vertical):
    """The selected person: their best face crop, their lines, their appearances."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.person = None
        self.appearances: list = []
        self.frames = Path()

    def compose(self) -> ComposeResult:
        """Crop and lines, then the appearances (or a placeholder)."""
        p = self.person
        if p is None:
            yield Static("Pick a person to see them here.", classes="placeholder")
            return
        with Horizontal(classes="person-head"):
            yield FaceCrop(self.frames / p.thumbnail if p.thumbnail else None, classes="face")
            yield Static(person_text(p), classes="person-text")
        shown = self.appearances[:MOST_APPEARANCES]
        more = len(self.appearances) - len(shown)
        title = f"{plural(len(self.appearances), 'appearance')} — Enter opens the clip"
        if more:
            title += f" (first {len(shown)}; `edge people show {p.id}` lists all)"
        yield Static(title, classes="pane-title")
        yield AppearanceList(*(AppearanceRow(a, self.frames) for a in shown),
                             id="appearances")

    async def show(self, person, appearances: list, frames: Path) -> None:
        """Show ``person`` and their ``appearances`` (crops under ``frames``)."""
        self.person, self.appearances, self.frames = person, appearances, frames
        await self.recompose()
