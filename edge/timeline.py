"""The absolute timeline clips live on, and how moments are written and parsed.

Every clip has ``t_start``/``t_end`` in seconds on one timeline, a ``day`` label and the
timeline second its day starts at. Two clocks share it:

- wall clock (footage with a start time): Unix seconds (UTC); the day label is the local
  date (``2025-02-20``) and moments print as ``2025-02-20 19:30:52``;
- EgoLife day clock (caption files that only say ``DAY1``): ``DAYn hh:mm:ss`` maps to
  ``(n-1)·86400 + seconds of day``; moments print as ``DAY1 11:15:24``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from datetime import time as dtime

from edge.errors import TimeParseError  # noqa: F401 (re-exported)

DAY_CLOCK_RE = re.compile(
    r"^\s*DAY\s*(\d+)(?:[\s_T]+(\d{1,2}):?(\d{2})(?::?(\d{2})(?:[.:]?(\d{1,2}))?)?)?\s*$",
    re.IGNORECASE,
)


def day_clock(day: int, seconds_of_day: float) -> float:
    """Timeline seconds of ``DAY<day>`` plus ``seconds_of_day`` (EgoLife day clock)."""
    return (day - 1) * 86400.0 + seconds_of_day


def egolife_time(hhmmssff: str, fps: int = 20) -> float:
    """Seconds of day from EgoLife's ``HHMMSSFF`` (FF = frame at 20 fps); raises
    ``ValueError`` for anything else."""
    s = str(hhmmssff).strip().zfill(8)
    if len(s) != 8 or not s.isdigit():
        raise ValueError(f"time {hhmmssff!r} is not HHMMSSFF")
    hh, mm, ss, ff = int(s[0:2]), int(s[2:4]), int(s[4:6]), int(s[6:8])
    if hh > 23 or mm > 59 or ss > 59 or ff >= fps:
        raise ValueError(f"time {hhmmssff!r} is out of range (HH<24, MM<60, SS<60, FF<{fps})")
    return hh * 3600 + mm * 60 + ss + ff / fps


def wall_day(t: float) -> tuple[str, float]:
    """Local-date label and the timeline second of that local midnight, for Unix time ``t``."""
    local = datetime.fromtimestamp(t).astimezone()
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return local.date().isoformat(), midnight.timestamp()


def guess_clock(t: float) -> str:
    """``dayclock`` for EgoLife-style times (well before 2001 as Unix seconds), else ``wall``."""
    return "dayclock" if t < 1e9 else "wall"


def day_of(t: float, clock: str | None = None) -> tuple[str, float]:
    """``(day label, day start)`` of timeline second ``t`` on ``clock`` (``wall``/``dayclock``;
    ``None`` guesses it from the magnitude of ``t``)."""
    if (clock or guess_clock(t)) == "dayclock":
        n = int(t // 86400)
        return f"DAY{n + 1}", n * 86400.0
    return wall_day(t)


def format_moment(t: float, day: str, day_start: float) -> str:
    """``DAY1 11:15:24`` or ``2025-02-20 19:30:52`` for a timeline second."""
    secs = max(0, int(round(t - day_start)))
    return f"{day} {secs // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


START_FROM = {
    "metadata": "container creation_time",
    "--start": "--start",
    "mtime": "file modification time",
    "file": "the caption file's times",
}
"""Where a source's start on the timeline came from, in words (``sources.start_from``)."""


def start_note(t: float, start_from: str, placed_after: str = "",
               clock: str | None = None) -> str:
    """A source's start and where it came from, e.g. ``start 2025-02-20 19:30:52 (file
    modification time; moved after a.mp4 to avoid overlap)``; ``placed_after``: the file
    (path or name) it was moved after, ``""`` when it was not moved."""
    why = START_FROM.get(start_from, start_from or "unknown")
    if placed_after:
        why += f"; moved after {placed_after.rsplit('/', 1)[-1]} to avoid overlap"
    return f"start {format_moment(t, *day_of(t, clock))} ({why})"


def clear_of(start: float, duration: float,
             overlapping: Callable[[float, float], list[tuple[str, float, float]]]
             ) -> tuple[float, str]:
    """Move a span ``[start, start + duration)`` (timeline seconds) later until it overlaps
    no span ``overlapping(start, end)`` returns as ``(name, start, end)``: each time to the
    end of the latest-ending overlapping span. Returns the new start and the name of the
    span it was put after (``""`` when it did not move). Used for files whose start is a
    guess (modification time), so two of them never share footage seconds."""
    after = ""
    while hits := overlapping(start, start + duration):
        name, _, end = max(hits, key=lambda h: h[2])
        if end <= start:  # a span that only touches ours is no overlap
            break
        start, after = end, name
    return start, after


def parse_moment(text: str, *, now: float | None = None) -> float:
    """Read a moment typed by a user into timeline seconds.

    Accepts ``DAY1 11:21``, ``DAY1 11:21:02``, ``DAY1 112102`` (EgoLife day clock),
    ISO dates/times (``2025-02-20 19:31``, ``2025-02-20T19:31:00+00:00``; naive = local
    time) and ``now``. Raises :class:`TimeParseError` otherwise.
    """
    text = text.strip()
    if text.lower() == "now":
        return now if now is not None else datetime.now().timestamp()
    m = DAY_CLOCK_RE.match(text)
    if m:
        day = int(m.group(1))
        if m.group(2) is None:  # a bare "DAY2" means the end of that day
            hh, mm, ss = 23, 59, 59
        else:
            hh, mm, ss = int(m.group(2)), int(m.group(3)), int(m.group(4) or 0)
        if day < 1 or hh > 23 or mm > 59 or ss > 59:
            raise TimeParseError(f"{text!r}: day must be ≥ 1 and the time a valid hh:mm[:ss]")
        return day_clock(day, hh * 3600 + mm * 60 + ss)
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise TimeParseError(
            f"cannot read the time {text!r}; use 'DAY1 11:21', '2025-02-20 19:31' or 'now'"
        ) from None
    if dt.tzinfo is None:
        dt = dt.astimezone()
    return dt.timestamp()


PARTS_OF_DAY = {
    "morning": (5, 12), "noon": (11, 14), "afternoon": (12, 18), "evening": (17, 22),
    "night": (19, 24),
}
"""Hours ``[from, to)`` of the parts of a day a question may name."""

DAY_PARTS = ("strict", "wide", "soft")
"""How a named part of day scopes a question (``AskOptions.day_part``): ``strict`` — only
its hours (:data:`PARTS_OF_DAY`); ``wide`` — its hours widened by
:data:`PART_MARGIN_HOURS` on each side; ``soft`` — the whole day, with the widened part
preferred (:attr:`TimeWindow.prefer`)."""

PART_MARGIN_HOURS = 0.5
"""How far people's coarse words ("this morning", "around lunch") reach past a part's
hours, on each side (``wide`` and ``soft``): on the hard dev questions 0.5 h ties the
strict hours, 1 h and 1.5 h lose (more clips compete)."""

_PART = r"(morning|noon|afternoon|evening|night)"
_MEAL_RE = re.compile(r"\b(before|after|around|at|during|over|by)\s+(breakfast|lunch|dinner)"
                      r"(?:\s*time)?\b", re.I)
_MEAL_PART = {"breakfast": "morning", "lunch": "noon", "dinner": "evening",
              "before lunch": "morning", "after lunch": "afternoon",
              "before dinner": "afternoon", "after dinner": "night"}
_LATER_RE = re.compile(r"\b(later|since\s+then|ever\s+since|after\s+that)\b", re.I)
_CARDINALS = "one two three four five six seven eight nine ten".split()
_ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth".split()
_NUMBERS = {w: i + 1 for words in (_CARDINALS, _ORDINALS) for i, w in enumerate(words)}
_NUM = rf"(\d+|{'|'.join(_CARDINALS)})"
_ORD = rf"({'|'.join(_ORDINALS)})"
_DAY_RES = [  # (pattern, "rel" offset | "ago" | "abs", part of day the phrase fixes)
    (re.compile(r"\blast\s+night\b", re.I), -1, "night"),
    (re.compile(r"\btonight\b", re.I), 0, "night"),
    (re.compile(r"\bthe\s+day\s+before\s+yesterday\b", re.I), -2, None),
    (re.compile(rf"\b{_NUM}\s+nights?\s+ago\b", re.I), "ago", "night"),
    (re.compile(rf"\b{_NUM}\s+days?\s+ago\b", re.I), "ago", None),
    (re.compile(r"\byesterday\b", re.I), -1, None),
    (re.compile(r"\btoday\b(?!'s)", re.I), 0, None),  # "today's jobs" is a plan
    (re.compile(rf"\bthe\s+{_ORD}\s+day\b", re.I), "abs", None),
    (re.compile(rf"\bday\s*{_NUM}\b", re.I), "abs", None),
]


@dataclass(frozen=True)
class TimeWindow:
    """A span of the timeline a question is about: clips that end in ``(start, end]``
    (timeline seconds; ``None`` = open). ``label`` says it in words, e.g. ``DAY1 afternoon``.
    ``prefer``: ``(start, end]`` inside it whose clips rank first without excluding the
    rest (a soft part of day), or ``None``."""

    start: float | None
    end: float | None
    label: str
    prefer: tuple[float, float] | None = None

    def until(self, at: float | None) -> TimeWindow:
        """This window cut at the query time ``at`` (timeline seconds; clips must end by
        then), ``prefer`` too (dropped when it starts after ``at``); unchanged when ``at`` is
        ``None`` or the window already ends by ``at``."""
        if at is None or (self.end is not None and self.end <= at):
            return self
        prefer = self.prefer
        if prefer is not None:
            prefer = (prefer[0], min(prefer[1], at)) if prefer[0] < at else None
        return TimeWindow(self.start, at, self.label, prefer)


def _day_bounds(t: float, offset: int, clock: str) -> tuple[str, float, float]:
    """Label, start and end (timeline seconds) of the day ``offset`` days from ``t``'s."""
    if clock == "dayclock":
        n = int(t // 86400) + offset
        return f"DAY{n + 1}", n * 86400.0, (n + 1) * 86400.0
    local = datetime.fromtimestamp(t).astimezone()
    date = local.date() + timedelta(days=offset)
    start = datetime.combine(date, dtime(0), local.tzinfo).astimezone()
    end = datetime.combine(date + timedelta(days=1), dtime(0), local.tzinfo).astimezone()
    return date.isoformat(), start.timestamp(), end.timestamp()


def _named_days(question: str, at: float, clock: str
                ) -> list[tuple[str, float, float, str | None]]:
    """Every day a question names, once each, in ``_DAY_RES`` order: (label, start, end,
    the part of day the phrase fixes). A phrase's words are used once ("the day before
    yesterday" is not also "yesterday"); ``DAYn`` / "the second day" only on the day
    clock."""
    text, out = question, []
    for pattern, kind, part in _DAY_RES:
        for m in pattern.finditer(text):
            text = text[:m.start()] + " " * (m.end() - m.start()) + text[m.end():]
            if kind == "abs" and clock != "dayclock":
                continue
            n = 0
            if m.groups():  # a count or ordinal: "two", "2", "second"
                n = _NUMBERS.get(m.group(1).lower()) or int(m.group(1))
            if kind == "abs":
                day = _day_bounds(day_clock(n, 0), 0, clock)
            else:
                day = _day_bounds(at, -n if kind == "ago" else kind, clock)
            if all(d[0] != day[0] for d in out):
                out.append((*day, part))
    return out


def _named_part(question: str) -> str | None:
    """The part of day a question names: a word of :data:`PARTS_OF_DAY`, or a meal with a
    time preposition ("around lunch" = noon, "after dinner" = night); else ``None``."""
    for m in re.finditer(rf"(\btomorrow\s+(?:in\s+the\s+)?)?\b{_PART}\b", question, re.I):
        if not m.group(1):  # "tomorrow morning" is a plan, not when it happened
            return m.group(2).lower()
    m = _MEAL_RE.search(question)
    if m:
        prep, meal = m.group(1).lower(), m.group(2).lower()
        return _MEAL_PART.get(f"{prep} {meal}", _MEAL_PART[meal])
    return None


def window_from_question(question: str, at: float, clock: str | None = None, *,
                         day_part: str = "strict") -> TimeWindow | None:
    """The day / part of day a question names, relative to the query time ``at``.

    Days: "today", "yesterday", "last night", "tonight", "the day before yesterday",
    "two days ago", "two nights ago", and on the EgoLife day clock "DAY2", "day two", "the
    second day"; a question naming several days ("last night … on the first day") scopes
    all of them, from the first to the last, without a part of day. Parts of day:
    "morning", "noon", "afternoon", "evening", "night" anywhere in the question
    (:data:`PARTS_OF_DAY`) but after "tomorrow" (a plan), or a meal with a time preposition
    ("around lunch", "after dinner"); a part without a day is the query time's day; "today's"
    (today's jobs) names no day; a named day followed by "later" / "since then" / "after
    that" reaches on to ``at``. A named
    day is always a hard scope; a part of day is scoped by ``day_part`` (:data:`DAY_PARTS`):
    ``strict`` its hours, ``wide`` its hours ± :data:`PART_MARGIN_HOURS`, ``soft`` the
    whole day with the widened part as :attr:`TimeWindow.prefer`. ``None`` when the
    question names no time or a time after ``at``. The window ends at ``at`` at the latest.
    Raises ``ValueError`` for an unknown ``day_part``.
    """
    if day_part not in DAY_PARTS:
        raise ValueError(f"unknown day_part {day_part!r}; use {', '.join(DAY_PARTS)}")
    clock = clock or guess_clock(at)
    days = _named_days(question, at, clock)
    if len(days) > 1:  # "last night … on the first day": all of them, no part of day
        label = f"{min(days, key=lambda d: d[1])[0]} to {max(days, key=lambda d: d[2])[0]}"
        start, end = min(d[1] for d in days), max(d[2] for d in days)
        return TimeWindow(start, end, label).until(at) if start < at else None
    day = days[0] if days else None
    part = (day[3] if day else None) or _named_part(question)
    if day is None and part is None:
        return None
    label, d0, d1, _ = day or (*_day_bounds(at, 0, clock), None)
    start, end, prefer = d0, d1, None
    if part:
        h0, h1 = PARTS_OF_DAY[part]
        if day_part != "strict":
            h0, h1 = max(0.0, h0 - PART_MARGIN_HOURS), min(24.0, h1 + PART_MARGIN_HOURS)
        p0, p1 = d0 + h0 * 3600, min(d1, d0 + h1 * 3600)
        if p0 >= at:
            return None  # a time after the question is no scope at all
        if day_part == "soft":
            prefer, label = (p0, p1), f"{label}, {part} first"
        else:
            start, end, label = p0, p1, f"{label} {part}"
    if start >= at:
        return None
    if day and _LATER_RE.search(question):  # "… two days ago … when I later asked"
        end, label = at, f"{label} and later"
    return TimeWindow(start, end, label, prefer).until(at)
