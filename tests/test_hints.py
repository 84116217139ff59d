"""The timeline's hints before the notes (edge.answer.hints): a counting question gets its
matching episodes with their times, an order question the time of each event's and each
option's best match, earliest first — on a small caption memory with the real embedder."""

from __future__ import annotations

import json

import pytest

from edge.answer.hints import question_hints
from edge.answer.options import AskOptions
from edge.answer.scope import resolve_scope
from edge.ingest.captions import ingest_caption_file
from edge.store import Memory

SCENES = [  # DAY1 from 10:00, one 30 s clip each
    "I water the orange cactus on the balcony with the green watering can",
    "Lucia folds paper cranes at the desk", "Alice tunes the red guitar in the living room",
    "Shure fries dumplings in the kitchen pan", "Tasha assembles a wooden bookshelf",
    "Katrina paints a blue flower on a canvas", "Jake counts the plastic cups on the table",
    "Lucia reads a map of the subway", "I water the basil and mint herbs in the garden "
    "with the green watering can", "Shure plays chess with Tasha",
    "I wash the dirty dishes and bowls in the kitchen sink", "Katrina bakes chocolate cookies",
]


def _caption(i: int, text: str) -> dict:
    t = 36000 + 30 * i
    hms = lambda s: f"{s // 3600:02d}{s % 3600 // 60:02d}{s % 60:02d}00"  # noqa: E731
    return {"date": "DAY1", "start_time": hms(t), "end_time": hms(t + 30), "text": text + ".",
            "event_key": text, "dialogue_key": "no speech", "object_key": text.split(" ", 2)[-1],
            "sum_key": text.lower()}


@pytest.fixture(scope="module")
def memory(tmp_path_factory, hub):
    d = tmp_path_factory.mktemp("hints")
    (d / "caps.json").write_text(json.dumps([_caption(i, t) for i, t in enumerate(SCENES)]))
    with Memory(d / "m.db") as m:
        ingest_caption_file(m, hub, d / "caps.json")
        yield m


def hints(memory, hub, question: str, **kw) -> str:
    opts = AskOptions(**kw)
    scope, _ = resolve_scope(memory, question, opts.at, opts.window, opts.auto_window)
    return question_hints(memory, hub.embedder, question, opts, scope)


def test_a_counting_question_gets_its_episodes_in_timeline_order(memory, hub):
    text = hints(memory, hub, "How many times did I water the plants with the watering can?")
    assert "separate episode(s) match the question" in text and text.endswith("\n\n")
    first, second = text.index("DAY1 10:00"), text.index("DAY1 10:04")  # cactus, herbs
    assert first < second


def test_an_order_question_gets_each_events_best_match_earliest_first(memory, hub):
    text = hints(memory, hub, "Did I wash the dishes before or after Shure fried dumplings?")
    assert text.startswith("Timeline search, in time order: first ")
    assert text.index('first "Shure fried dumplings" at DAY1 10:01') < text.index(
        'last "Did I wash the dishes" at DAY1 10:05')


def test_an_order_question_with_options_dates_each_option(memory, hub):
    text = hints(memory, hub, "Which of these did I do last?",
                 choices=["Washing the dishes", "Watering the cactus", "Playing chess"])
    cactus, chess, dishes = (text.index(f"choice {c}") for c in "BCA")
    assert cactus < chess < dishes  # 10:00, 10:04:30, 10:05
    assert "last choice A (Washing the dishes) at DAY1 10:05" in text


def test_no_hint_for_other_questions_or_when_off(memory, hub):
    assert hints(memory, hub, "What color was the guitar Alice tuned?") == ""
    assert hints(memory, hub, "Did I wash the dishes before or after Shure fried dumplings?",
                 hints=False) == ""
