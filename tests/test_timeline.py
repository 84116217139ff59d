import pytest

from edge.timeline import (
    TimeParseError,
    day_of,
    egolife_time,
    format_moment,
    guess_clock,
    parse_moment,
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
