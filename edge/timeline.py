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
from datetime import datetime

DAY_CLOCK_RE = re.compile(
    r"^\s*DAY\s*(\d+)(?:[\s_T]+(\d{1,2}):?(\d{2})(?::?(\d{2})(?:[.:]?(\d{1,2}))?)?)?\s*$",
    re.IGNORECASE,
)


class TimeParseError(ValueError):
    """A moment the user typed that we cannot read; the message shows accepted forms."""


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
