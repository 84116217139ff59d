"""The people screen: the persons of the character memory (issue 43) with their face crops,
first and last seen, and where each was seen or heard; Enter on an appearance opens its
clip. Read-only: naming, merging and forgetting stay with ``edge people`` on the command
line (the screen says how)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, ListView, Static

from edge import config
from tui.messages import ClipChosen
from tui.widgets.people import (
    AppearanceList,
    PersonList,
    PersonRow,
    PersonView,
    empty_text,
    plural,
)
from tui.widgets.status_bar import StatusBar


class PeopleScreen(Screen):
    """The people list beside the highlighted person; Enter on a person moves to their
    appearances, Enter on an appearance opens its clip; Esc goes back."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back"),
        Binding("f1", "app.help", "Help"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.people: list = []  # read when the screen is composed

    def compose(self) -> ComposeResult:
        """The list and the person, or how to add people when there are none."""
        memory = self.app.memory
        self.people = memory.persons() if memory is not None else []
        self.frames = config.frames_dir(self.app.memory_path)
        yield Header()
        if not self.people:
            tier_on = getattr(self.app.hub.profile, "characters", True)
            yield Static(empty_text(self.app.memory_path, tier_on), id="people-empty")
        else:
            with Horizontal(id="people-panes"):
                with Vertical(id="people-list-pane"):
                    yield Label(f"{plural(len(self.people), 'person')} — Enter shows their "
                                "appearances", classes="pane-title")
                    yield PersonList(id="people")
                with VerticalScroll(id="person-pane"):
                    yield PersonView(id="person")
        yield StatusBar(id="status")
        yield Footer()

    async def on_mount(self) -> None:
        """Fill the list; the first person shows beside it."""
        self.query_one(StatusBar).show(self.app.status)
        if self.people:
            people = self.query_one(PersonList)
            await people.show(self.people, self.frames)
            people.focus()

    async def on_list_view_highlighted(self, event: ListView.Highlighted) -> None:
        """A person highlighted in the list: show their crop and appearances."""
        if not isinstance(event.list_view, PersonList) or not isinstance(event.item,
                                                                          PersonRow):
            return
        person = event.item.person
        view = self.query_one(PersonView)
        if view.person is not None and view.person.id == person.id:
            return
        await view.show(person, self.app.memory.appearances(person.id), self.frames)

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        """Enter on a person: move to their appearances."""
        if isinstance(event.list_view, PersonList):
            event.stop()
            found = self.query(AppearanceList)
            if found:
                found.first().focus()

    def on_clip_chosen(self, message: ClipChosen) -> None:
        """Enter on an appearance in a clip: open that clip."""
        message.stop()
        self.app.open_clip(message.clip_id)
