"""The chat screen without a model (issue 42, item 5): the evidence pane goes with its
question (Ctrl+L clears both; a new question clears the last one's evidence until its own
arrives), and the question box's hint, the footer's F1 and quit keys and the help's way out
fit an 80×24 terminal. The answers come from a stand-in for :meth:`EdgeApp.run_ask`, so the
screen is tested, not the answer loop (tests/test_tui.py drives the real one)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from edge.store import Memory
from tests.factories import add_clips

pytest.importorskip("textual")

from rich.text import Text  # noqa: E402
from textual.widgets import Input  # noqa: E402

from edge.answer.records import Answer, Moment  # noqa: E402
from tui.app import EdgeApp  # noqa: E402
from tui.screens.help import HelpScreen  # noqa: E402
from tui.widgets.conversation import Bubble  # noqa: E402
from tui.widgets.entries import EntryList, EntryRow  # noqa: E402

SMALL = (80, 24)


@pytest.fixture()
def memory_file(tmp_path):
    path = tmp_path / "m.db"
    with Memory(path) as m:
        add_clips(m, ["Jake tightens a screw", "Lucia waters the flowers", "Alice bakes"],
                  keys="caption")
    return path


def answer_of(question: str, clip_ids: list[int]) -> Answer:
    """An answer citing ``clip_ids`` (as the answer loop would return it)."""
    moments = [Moment(i, f"DAY1 10:0{i}:00", 36000.0 + 30 * i, 36030.0 + 30 * i,
                      f"caption of clip {i}", "", [], "anchor", 0.5, 1, cited=True)
               for i in clip_ids]
    return Answer(question, "now", f"the answer to {question}", True, moments, [],
                  {"llm": {"calls": 1, "tokens_in": 10, "tokens_out": 5}}, 0.1)


class Answers:
    """Stands in for :meth:`EdgeApp.run_ask`: each question gets the next clip ids, once
    ``release`` is set for it (so a test sees the screen while a question runs)."""

    def __init__(self, *clip_ids: list[int]) -> None:
        self.clip_ids = list(clip_ids)
        self.release = [threading.Event() for _ in clip_ids]
        self.asked = 0

    def __call__(self, question: str, on_progress, on_token=None) -> Answer:
        n = self.asked
        self.asked += 1
        self.release[n].wait(30)
        return answer_of(question, self.clip_ids[n])


async def until(pilot, cond, timeout: float, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.05)


async def ask(pilot, question: str) -> None:
    pilot.app.screen.query_one("#question", Input).value = question
    await pilot.press("enter")


def evidence(app) -> list[int]:
    return [row.entry.clip_id for row in app.screen.query_one(EntryList).query(EntryRow)]


def test_ctrl_l_clears_the_evidence_with_the_conversation(memory_file, hub):
    answers = Answers([1, 2])
    answers.release[0].set()

    async def go():
        app = EdgeApp(memory_file, hub)
        app.run_ask = answers
        async with app.run_test(size=(120, 40)) as pilot:
            chat = app.screen
            await ask(pilot, "where is the screwdriver?")
            await until(pilot, lambda: evidence(app) == [1, 2], 10, "the evidence")
            await pilot.press("ctrl+l")
            await pilot.pause()
            assert not chat.query(Bubble) and evidence(app) == []

    asyncio.run(go())


def test_a_new_question_clears_the_last_one_s_evidence_until_its_own_arrives(memory_file,
                                                                            hub):
    answers = Answers([1, 2], [3])
    answers.release[0].set()

    async def go():
        app = EdgeApp(memory_file, hub)
        app.run_ask = answers
        async with app.run_test(size=(120, 40)) as pilot:
            chat = app.screen
            await ask(pilot, "where is the screwdriver?")
            await until(pilot, lambda: evidence(app) == [1, 2], 10, "the first evidence")
            await ask(pilot, "who bakes?")
            await pilot.pause()
            assert chat.asking and evidence(app) == []  # not the first question's
            answers.release[1].set()
            await until(pilot, lambda: evidence(app) == [3], 10, "the second evidence")

    asyncio.run(go())


def test_the_hint_the_footer_keys_and_the_help_s_way_out_fit_80_columns(memory_file, hub):
    async def go():
        app = EdgeApp(memory_file, hub)
        async with app.run_test(size=SMALL) as pilot:
            await pilot.pause()
            box = app.screen.query_one("#question", Input)
            hint = Text.from_markup(str(box.placeholder)).cell_len
            assert hint <= box.content_region.width, (box.placeholder,
                                                      box.content_region.width)
            shown = {}
            for key in app.screen.query("FooterKey"):
                r = key.region
                if r.width and r.x >= 0 and r.right <= SMALL[0] and r.y < SMALL[1]:
                    shown[key.key] = r
            assert {"f1", "ctrl+q"} <= set(shown), sorted(shown)
            await pilot.press("f1")
            await pilot.pause()
            help_screen = app.screen
            assert isinstance(help_screen, HelpScreen)
            way_out = help_screen.query_one("#help-close")
            said = str(way_out.render())
            assert "Esc" in said and "close" in said, said
            r = way_out.region
            assert r.width and r.y + r.height <= SMALL[1] and r.right <= SMALL[0]
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)
            await pilot.resize_terminal(100, 30)  # the narrowest chat beside the evidence
            await pilot.pause()
            assert app.screen.has_class("-wide") and hint <= box.content_region.width

    asyncio.run(go())


def test_the_chat_says_the_verdict_the_cli_says():
    """Issue 42 item 4: one verdict everywhere — a not-found guess and a not-yet answer
    read the same in the chat's bubble as on `edge ask`'s answer line."""
    from edge.answer.records import VERDICT_SAID
    from edge.cli.render.ask import answer_lines
    from tui.widgets.conversation import Conversation

    usage = {"llm": {"calls": 1, "tokens_in": 10, "tokens_out": 5}}
    check = {"terms": ["pizza"], "checked": True, "flagged": True, "not_found": True,
             "kept": [], "dropped": [], "added": [], "sharing": [],
             "summary": "not found in memory: no quote states the answer's own words (pizza)"}
    guess = Answer("What did I eat?", "now", "I ate pizza.", True, [], [], usage, 0.1,
                   citation_check=check)
    later = Answer("What did I eat for lunch?", "DAY1 13:00", "No lunch on DAY1 is in memory "
                   "before 13:00: it has not happened yet.", False, [], [], usage, 0.0,
                   verdict="not_yet")
    assert (guess.verdict, later.verdict) == ("not_found", "not_yet")
    for a in (guess, later):
        said = VERDICT_SAID[a.verdict]
        bubble = Conversation().answer_text(a).plain
        assert bubble.lower().startswith(said.lower()) and a.answer in bubble
        assert answer_lines(a)[0] == f"Answer ({said}): {a.answer}"
        assert a.as_dict()["verdict"] == a.verdict
