"""The chat's people screen (issue 43, item 4): ctrl+n opens it from the question box; it
lists the memory's people (a name, or ``person N`` with a suggested name marked as one),
shows the highlighted person's face crop and appearances, opens an appearance's clip, says
how to enrol someone when there is no one, never writes, and Esc closes it.

The people are stored through the store's own write API (identities, appearances with
random unit vectors of the real widths) on synthetic clips, with a real face crop cut from
a shared photo: the screen is tested, not face recognition (tests/test_people*.py)."""

from __future__ import annotations

import asyncio
import time

import pytest

from edge import config
from edge.store import Memory
from edge.store.people_schema import FACE_VEC_DIM, VOICE_VEC_DIM
from tests.conftest import SHARED, shared
from tests.factories import add_clips, add_source, unit_vectors

pytest.importorskip("textual")

from textual.widgets import Input, Static  # noqa: E402

from tui.app import EdgeApp  # noqa: E402
from tui.screens.chat import ChatScreen  # noqa: E402
from tui.screens.clip import ClipScreen  # noqa: E402
from tui.screens.help import HelpScreen, bindings_table  # noqa: E402
from tui.screens.people import PeopleScreen  # noqa: E402
from tui.widgets.people import (  # noqa: E402
    AppearanceList,
    AppearanceRow,
    FaceCrop,
    PersonRow,
    PersonView,
)

SIZE = (130, 40)
OBAMA = SHARED / "faces" / "obama_1.jpg"


def write_crop(frames, name: str) -> None:
    """A face crop as the ingest path keeps one: the middle of a real photo, as JPEG."""
    import cv2

    img = cv2.imread(str(shared(OBAMA)), cv2.IMREAD_COLOR)
    assert img is not None
    h, w = img.shape[:2]
    crop = cv2.resize(img[h // 4: 3 * h // 4, w // 4: 3 * w // 4], (96, 96))
    (frames / name).parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(frames / name), crop)


@pytest.fixture()
def people_memory(tmp_path):
    """``(path, clip ids, obama id, stranger id)``: three clips on DAY1 from 10:00; Barack
    Obama enrolled from a photo and seen in clips 1 and 3 (with crops); an unnamed voice in
    clip 2 with a suggested name."""
    path = tmp_path / "m.db"
    frames = config.frames_dir(path)
    write_crop(frames, "people/c1_0.jpg")
    write_crop(frames, "people/e1_0.jpg")
    faces, voices = unit_vectors(3, 1, FACE_VEC_DIM), unit_vectors(1, 2, VOICE_VEC_DIM)
    with Memory(path) as m:
        sid = add_source(m, "walk.mp4", n_clips=3, t_start=36000.0, duration=90.0,
                         kind="video")
        clips = add_clips(m, ["Obama waves", "someone talks", "Obama leaves"], keys="caption",
                          source=sid)
        obama = m.new_identity("Barack Obama")
        m.add_appearance(obama, "face", faces[0], quality=0.9, crop="people/e1_0.jpg",
                         enrolled=True, file=str(OBAMA))
        m.add_appearance(obama, "face", faces[1], quality=0.8, source_id=sid,
                         clip_id=clips[0], t=3.0, t_end=12.0, crop="people/c1_0.jpg")
        m.add_appearance(obama, "face", faces[2], quality=0.7, source_id=sid,
                         clip_id=clips[2], t=61.0, t_end=70.0)
        stranger = m.new_identity()
        m.add_appearance(stranger, "voice", voices[0], quality=0.6, source_id=sid,
                         clip_id=clips[1], t=31.0, t_end=35.5, text="we should leave at six")
        m.suggest_name(stranger, "Alice", 3)
    return path, clips, obama, stranger


async def until(pilot, cond, timeout: float, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.05)


async def open_people(pilot) -> PeopleScreen:
    """ctrl+n from the chat, typed while the question box has the focus."""
    assert isinstance(pilot.app.screen, ChatScreen)
    assert pilot.app.screen.query_one("#question", Input).has_focus
    await pilot.press("ctrl+n")
    await until(pilot, lambda: isinstance(pilot.app.screen, PeopleScreen), 5, "people")
    await pilot.pause()
    return pilot.app.screen


def shown_person(screen) -> int | None:
    view = screen.query_one(PersonView)
    return view.person.id if view.person is not None else None


def test_the_people_screen_lists_people_with_their_crops_and_opens_a_clip(people_memory,
                                                                          hub):
    path, clips, obama, stranger = people_memory
    frames = config.frames_dir(path)

    async def go():
        app = EdgeApp(path, hub)
        async with app.run_test(size=SIZE) as pilot:
            changes = app.memory.db.total_changes()
            screen = await open_people(pilot)
            rows = list(screen.query(PersonRow))
            assert [r.person.id for r in rows] == [obama, stranger]
            first, second = (str(r.query_one(".person-text", Static).render()) for r in rows)
            assert first.startswith("Barack Obama") and "3 faces · 0 voices · 2 clips" in first
            assert "1 enrolled" in first
            # the clips start at DAY1 10:00:00; seen 3 s into the first, until 70 s in
            assert "seen DAY1 10:00:03 – DAY1 10:01:10" in first, first
            assert second.startswith(f"person {stranger}"), second
            assert "suggested: Alice? (3 clips)" in second and "Barack" not in second

            # the highlighted person: their best crop (the enrolled photo's) and appearances
            await until(pilot, lambda: shown_person(screen) == obama, 5, "Obama shown")
            view = screen.query_one(PersonView)
            face = view.query_one(FaceCrop)
            assert face.path == frames / "people/e1_0.jpg" and face.path.is_file()
            assert face.children and not face.query(".placeholder")  # the image, drawn
            shown = [r.appearance for r in view.query(AppearanceRow)]
            assert [(a.kind, a.clip_id, a.enrolled) for a in shown] == [
                ("face", None, True), ("face", clips[0], False), ("face", clips[2], False)]
            said = [str(r.query_one(".appearance-text", Static).render())
                    for r in view.query(AppearanceRow)]
            assert said[0].startswith("enrolled  face") and OBAMA.name in said[0]
            assert said[1].startswith(f"DAY1 10:00:03  face  clip {clips[0]}"), said[1]
            assert "walk.mp4 @ 3.0 s" in said[1]
            crops = [r.query_one(FaceCrop).path for r in view.query(AppearanceRow)]
            assert crops[:2] == [frames / "people/e1_0.jpg", frames / "people/c1_0.jpg"]
            assert crops[2] is None  # a face kept without a crop says so

            # the next person: a voice only, no crop; their words and clip
            await pilot.press("down")
            await until(pilot, lambda: shown_person(screen) == stranger, 5, "the stranger")
            view = screen.query_one(PersonView)
            assert "no face" in str(view.query_one(FaceCrop).query_one(".placeholder").render())
            row = view.query_one(AppearanceRow)
            text = str(row.query_one(".appearance-text", Static).render())
            assert f"voice  clip {clips[1]}" in text and "we should leave at six" in text

            # Enter moves to the appearances; Enter on one opens its clip
            await pilot.press("enter")
            await pilot.pause()
            assert view.query_one(AppearanceList).has_focus
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ClipScreen), 5, "the clip")
            await pilot.pause()
            assert app.screen.clip_id == clips[1]
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, PeopleScreen), 5, "people")
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, ChatScreen), 5, "the chat")
            assert app.memory.db.total_changes() == changes  # read-only

    asyncio.run(go())


def test_a_memory_without_people_says_how_to_enrol_someone(tmp_path, hub):
    path = tmp_path / "m.db"
    with Memory(path) as m:
        add_clips(m, ["Jake tightens a screw"], keys="caption")

    async def go():
        app = EdgeApp(path, hub)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_people(pilot)
            said = str(screen.query_one("#people-empty", Static).render())
            assert "No people in this memory yet" in said
            assert f"edge --memory {path} people add NAME FILE..." in said, said
            assert not screen.query(PersonRow) and not screen.query(PersonView)
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, ChatScreen), 5, "the chat")

    asyncio.run(go())


def test_the_help_and_the_footer_name_the_people_key(tmp_path, hub):
    path = tmp_path / "m.db"
    with Memory(path) as m:
        add_clips(m, ["Jake tightens a screw"], keys="caption")

    async def go():
        app = EdgeApp(path, hub)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            keys = {k.key: k.description for k in app.screen.query("FooterKey")}
            assert keys.get("ctrl+n") == "People", keys
            await pilot.press("f1")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "help")
            rows = bindings_table(app.screen.sections).columns
            keys_col, does = list(rows[1].cells), [str(c) for c in rows[2].cells]
            assert "ctrl+n" in keys_col
            assert "people" in does[keys_col.index("ctrl+n")]
            assert "people" in [str(c) for c in rows[0].cells]

    asyncio.run(go())
