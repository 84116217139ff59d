"""The timeline: EgoLife and wall-clock moments, parsing, and the time windows a question
names or ``--from/--to`` gives."""

import pytest

from edge.timeline import (
    TimeParseError,
    TimeWindow,
    clear_of,
    day_of,
    egolife_time,
    format_moment,
    guess_clock,
    parse_moment,
    start_note,
    window_from_question,
)


def test_egolife_hhmmssff_is_seconds_of_day_at_20_fps():
    assert egolife_time("11153000") == 11 * 3600 + 15 * 60 + 30
    assert egolife_time("11094310") == 11 * 3600 + 9 * 60 + 43 + 0.5


@pytest.mark.parametrize(
    "text, expected",
    [
        ("DAY1 11:21", 11 * 3600 + 21 * 60),
        ("DAY1 11:21:02", 11 * 3600 + 21 * 60 + 2),
        ("day2 09:05", 86400 + 9 * 3600 + 5 * 60),
        ("DAY1 112102", 11 * 3600 + 21 * 60 + 2),
        ("DAY3", 2 * 86400 + 86399),
    ],
)
def test_day_clock_moments(text, expected):
    assert parse_moment(text) == expected


def test_iso_moment_with_zone():
    assert parse_moment("2025-02-20T19:30:52+00:00") == 1740079852.0


@pytest.mark.parametrize("bad", ["yesterday-ish", "DAY0 10:00", "DAY1 25:00", ""])
def test_bad_moments_raise_a_clear_error(bad):
    with pytest.raises(TimeParseError):
        parse_moment(bad)


def test_format_round_trips_on_both_clocks():
    t = parse_moment("DAY1 11:15:24")
    assert guess_clock(t) == "dayclock"
    assert format_moment(t, *day_of(t)) == "DAY1 11:15:24"
    w = parse_moment("2025-02-20 19:30:52")
    assert guess_clock(w) == "wall"
    assert format_moment(w, *day_of(w)) == "2025-02-20 19:30:52"


@pytest.mark.parametrize("question, at, label, hours", [
    ("Last night, how many glasses did I carry?", "DAY2 10:50", "DAY1 night", (19, 24)),
    ("Yesterday evening, what did we decide?", "DAY2 12:05", "DAY1 evening", (17, 22)),
    ("What did Katrina plan yesterday?", "DAY2 11:10", "DAY1", (0, 24)),
    ("Who did I hand a cable to around noon?", "DAY1 12:30", "DAY1 noon", (11, 12.5)),
    ("What did I eat this morning?", "DAY3 15:00", "DAY3 morning", (5, 12)),
    ("What happened on DAY1 in the afternoon?", "DAY3 15:00", "DAY1 afternoon", (12, 18)),
])
def test_a_question_names_its_time_window(question, at, label, hours):
    t = parse_moment(at)
    w = window_from_question(question, t)
    day0 = (int(label.split()[0][3:]) - 1) * 86400.0
    assert w.label == label
    assert (w.start, w.end) == (day0 + hours[0] * 3600, day0 + hours[1] * 3600)


def test_no_window_without_a_time_phrase_or_after_the_question():
    t = parse_moment("DAY1 11:00")
    assert window_from_question("Who used the screwdriver first?", t) is None
    assert window_from_question("What did I do this evening?", t) is None


def test_wall_clock_yesterday_is_the_previous_local_date():
    from datetime import datetime, timedelta

    now = datetime(2026, 3, 10, 15, 0).astimezone()
    w = window_from_question("what did I cook yesterday afternoon?", now.timestamp())
    y = now - timedelta(days=1)
    assert w.label == f"{y.date().isoformat()} afternoon"
    assert w.start == y.replace(hour=12).timestamp() and w.end == y.replace(hour=18).timestamp()


def test_a_window_is_cut_at_the_query_time_until_it_ends_by_it():
    w = TimeWindow(100.0, 500.0, "DAY1 morning")
    assert w.until(300.0) == TimeWindow(100.0, 300.0, "DAY1 morning")
    assert w.until(600.0) is w and w.until(None) is w
    assert TimeWindow(None, None, "").until(42.0) == TimeWindow(None, 42.0, "")


def test_a_named_window_ends_at_the_query_time():
    t = parse_moment("DAY1 20:30")
    w = window_from_question("What did we do this evening?", t)
    assert (w.label, w.start, w.end) == ("DAY1 evening", parse_moment("DAY1 17:00"), t)


def test_a_guessed_start_is_moved_past_every_span_it_overlaps():
    spans = [("a.mp4", 100.0, 171.1), ("b.mp4", 171.1, 200.0), ("c.mp4", 500.0, 530.0)]

    def overlapping(start, end):
        return [s for s in spans if s[1] < end and s[2] > start]

    assert clear_of(100.0, 71.1, overlapping) == (200.0, "b.mp4")  # past a, then past b
    assert clear_of(90.0, 10.0, overlapping) == (90.0, "")  # ends where a starts: kept
    assert clear_of(480.0, 30.0, overlapping) == (530.0, "c.mp4")
    assert clear_of(300.0, 0.0, overlapping) == (300.0, "")


def test_a_start_note_says_where_the_start_came_from():
    t = parse_moment("2026-11-30 10:15:00")
    assert start_note(t, "mtime", "/footage/other.mp4") == (
        "start 2026-11-30 10:15:00 (file modification time; moved after other.mp4 to avoid "
        "overlap)")
    assert start_note(t, "metadata") == "start 2026-11-30 10:15:00 (container creation_time)"
    assert start_note(parse_moment("DAY1 11:00"), "--start") == "start DAY1 11:00:00 (--start)"


@pytest.mark.parametrize("question, at, label, hours", [
    ("What did we cook two days ago?", "DAY3 15:00", "DAY1", (0, 24)),
    ("What did I buy the day before yesterday?", "DAY4 09:00", "DAY2", (0, 24)),
    ("The day before yesterday in the evening, who sang?", "DAY3 09:00", "DAY1 evening",
     (17, 22)),
    ("On the second day, who cooked?", "DAY4 12:00", "DAY2", (0, 24)),
    ("What did we plan on day two?", "DAY4 12:00", "DAY2", (0, 24)),
    ("What did I see the first day in the afternoon?", "DAY3 12:00", "DAY1 afternoon",
     (12, 18)),
    ("Who was with me around lunch?", "DAY2 16:00", "DAY2 noon", (11, 14)),
    ("What did we play after dinner yesterday?", "DAY3 10:00", "DAY2 night", (19, 24)),
    ("Who sang two nights ago?", "DAY4 10:00", "DAY2 night", (19, 24)),
])
def test_more_day_phrases_and_meals_name_a_window(question, at, label, hours):
    t = parse_moment(at)
    w = window_from_question(question, t)
    day0 = (int(label.split()[0][3:]) - 1) * 86400.0
    assert w.label == label and w.prefer is None
    assert (w.start, w.end) == (day0 + hours[0] * 3600, day0 + hours[1] * 3600)


def test_a_part_of_day_is_widened_or_soft_and_a_named_day_stays_hard():
    t = parse_moment("DAY3 20:00")
    wide = window_from_question("what did I eat this morning?", t, day_part="wide")
    assert (wide.label, wide.start, wide.end) == (
        "DAY3 morning", parse_moment("DAY3 04:30"), parse_moment("DAY3 12:30"))
    soft = window_from_question("what did I eat this morning?", t, day_part="soft")
    assert (soft.label, soft.start, soft.end) == ("DAY3, morning first",
                                                  parse_moment("DAY3 00:00"), t)
    assert soft.prefer == (parse_moment("DAY3 04:30"), parse_moment("DAY3 12:30"))
    assert window_from_question("what will Shure do tomorrow morning?", t) is None  # a plan
    jobs = window_from_question("going over today's jobs last night, what did we need?", t)
    assert jobs.label == "DAY2 night"
    on = window_from_question("Tasha told us two days ago about it; when did I later ask?", t)
    assert (on.label, on.start, on.end) == ("DAY1 and later", 0.0, t)
    both = window_from_question("how much of what we ate last night did we buy on day one?",
                                t, day_part="soft")
    assert (both.label, both.start, both.end) == ("DAY1 to DAY2", 0.0, 2 * 86400.0)
    day = window_from_question("what did I eat yesterday?", t, day_part="soft")
    assert (day.label, day.start, day.prefer) == ("DAY2", parse_moment("DAY2 00:00"), None)
    with pytest.raises(ValueError, match="day_part"):
        window_from_question("this morning", t, day_part="loose")


def test_a_preferred_span_is_cut_at_the_query_time_or_dropped_after_it():
    w = TimeWindow(0.0, 1000.0, "DAY1, evening first", (400.0, 900.0))
    assert w.until(600.0).prefer == (400.0, 600.0)
    assert w.until(300.0).prefer is None and w.until(300.0).end == 300.0
