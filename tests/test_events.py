"""Time named by an event (issue 42 item 2): "after lunch" is after the lunch the memory
holds, not a clock window; a meal asked about before it happened is "not yet"."""

from __future__ import annotations

import json

import pytest

from edge.answer import AskOptions, ask
from edge.answer.events import eating, meal_episodes, parse_event
from edge.answer.search import first_round
from edge.store import Clip, Memory
from edge.timeline import egolife_time, parse_moment
from tests.conftest import EGOLIFE_DAY1, shared
from tests.factories import add_clips


@pytest.mark.parametrize("question, relation, event", [
    ("What did I do after lunch?", "after", "lunch"),
    ("What did I do before dinner yesterday?", "before", "dinner"),
    ("What did I eat for lunch?", "topic", "lunch"),
    ("Who was with me at lunch?", "around", "lunch"),
    ("What did we have for supper?", "topic", "dinner"),
    ("What did I do since we got back from the supermarket?", "after", "supermarket"),
    ("What did I do in the morning before the meeting?", "before", "meeting"),
    ("What did Shure say after the meeting ended?", "after", "meeting"),
])
def test_the_event_a_question_names_as_its_time(question, relation, event):
    ref = parse_event(question)
    assert (ref.relation, ref.event) == (relation, event)


@pytest.mark.parametrize("question", [
    "Did I wash the cups before or after Shure played the guitar?",  # an order question
    "What did we plan to eat for dinner?",  # a plan may be made at any time
    "Instead of a barbecue, what did we settle on for the event dinner?",
    "Who did I hand my phone to so they could pick dishes for lunch?",  # before lunch
    "What did I do before the day ended?",
    "Where did I leave the power bank?",
])
def test_questions_that_name_no_event_time(question):
    assert parse_event(question) is None


@pytest.fixture(scope="module")
def day1_clips() -> list[Clip]:
    """The real EgoLife day's records as clips on the day clock (id = position + 1)."""
    out = []
    for i, r in enumerate(json.loads(shared(EGOLIFE_DAY1).read_text()), start=1):
        day = int(r["date"][3:])
        start = (day - 1) * 86400 + egolife_time(r["start_time"])
        end = (day - 1) * 86400 + egolife_time(r["end_time"])
        out.append(Clip(i, 1, i, start, end, r["date"], (day - 1) * 86400.0, r["text"], ""))
    return out


def test_the_days_meals_are_found_from_what_the_captions_narrate(day1_clips):
    """DAY1: lunch is the KFC delivery eaten at 14:09–14:17 (talk about lunch at 11:53 —
    "do we provide lunch?" — is no lunch, nor is the "dining table"); dinner runs from
    ordering takeout at 19:12 to eating at 20:49. DAY2's 11:09 meal starts in breakfast's
    hours and is breakfast, not lunch."""
    day1 = [c for c in day1_clips if c.day == "DAY1"]
    meals = meal_episodes(day1)
    assert set(meals) == {"lunch", "dinner"}
    lunch, dinner = meals["lunch"], meals["dinner"]
    assert (lunch.clip_ids[0], lunch.clip_ids[-1]) == (361, 375)
    assert dinner.start == pytest.approx(parse_moment("DAY1 19:12:30"), abs=60)
    assert dinner.end == pytest.approx(parse_moment("DAY1 20:49:30"), abs=60)
    assert not eating(day1_clips[0])  # "facing the dining table"
    assert not any(eating(c) for c in day1_clips[80:95])  # lunch talked about, not eaten
    day2 = meal_episodes([c for c in day1_clips if c.day == "DAY2"])
    assert "lunch" not in day2 and "breakfast" in day2


@pytest.fixture
def day_memory(tmp_path, hub):
    """A factory day: talk of lunch at 11:50, lunch eaten at 13:00, a supermarket trip at
    15:00, home at 16:00; every key the caption, embedded by the real embedder."""
    spans = [
        ("DAY1 11:50", ["Katrina asks, “Do we provide lunch?” I say no need.",
                        "I assemble the shelf with Shure."]),
        ("DAY1 13:00", ["I pick up the takeout and set the food on the table.",
                        "We eat the fried chicken and I take a bite of a burger.",
                        "I eat the fries and chat with Lucia about the party."]),
        ("DAY1 15:00", ["We walk into the supermarket and take a cart.",
                        "At the supermarket I pick up milk and strawberries.",
                        "I pay at the supermarket checkout with Tasha."]),
        ("DAY1 16:00", ["I put the milk in the fridge at home.",
                        "I plug in the power bank and rest on the sofa."]),
    ]
    path = tmp_path / "day.db"
    with Memory(path) as m:
        for n, (start, caps) in enumerate(spans):
            add_clips(m, caps, vectors=hub.embedder.embed(caps), keys="caption",
                      t0=parse_moment(start), source=f"part{n}", finish=True)
    return path


def test_after_lunch_is_after_the_lunch_in_memory(day_memory, hub):
    with Memory(day_memory) as m:
        got = first_round(m, hub.embedder, "What did I do after lunch?",
                          AskOptions(at=parse_moment("DAY1 17:00")))
        assert got.scope.start == pytest.approx(parse_moment("DAY1 13:01:30"))
        assert got.scope.label.startswith("after lunch (DAY1 13:01)")
        clips = m.clips([a.clip_id for a in got.anchors])
        assert all(c.t_start >= parse_moment("DAY1 13:01:30") for c in clips.values())
        back = first_round(m, hub.embedder, "What did I do since we got back from the "
                           "supermarket?", AskOptions(at=parse_moment("DAY1 17:00")))
        assert back.scope.start == pytest.approx(parse_moment("DAY1 15:01:30"))


def test_a_meal_asked_about_before_it_happened_is_not_yet(day_memory, hub):
    """Asked at 12:30, the talk of lunch at 11:50 is no lunch: the answer says it has not
    happened yet, with no solver call and nothing cited."""
    with Memory(day_memory) as m:
        a = ask(m, hub, "What did I eat for lunch?", at=parse_moment("DAY1 12:30"))
        assert a.verdict == "not_yet" and a.moments == [] and a.rounds == []
        assert a.answer == "No lunch on DAY1 is in memory before 12:30: it has not happened yet."
        assert a.usage["llm"]["calls"] == 0
        assert a.as_dict()["verdict"] == "not_yet"
        later = first_round(m, hub.embedder, "What did I eat for lunch?",
                            AskOptions(at=parse_moment("DAY1 17:00")))
        assert later.scope.label.startswith("lunch (DAY1 13:00")
