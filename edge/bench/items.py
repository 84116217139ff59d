"""One benchmark question, normalised (:class:`BenchItem`), and the times of the video
benchmarks: ``MM:SS``/``HH:MM:SS`` clock readings (:func:`parse_clock`), LVBench's
``time_reference`` spans (:func:`parse_span`) and the 30 s clips a span covers
(:func:`span_clips`). The formats themselves are read by :mod:`edge.bench.loaders`."""

from __future__ import annotations

import re
from dataclasses import dataclass

DURATIONS = ("short", "medium", "long")
"""Video-MME's duration splits (under 2 min, 4–15 min, 30–60 min)."""
CLIP_SECONDS = 30.0
"""A memory clip's length: a moment at ``s`` seconds lies in clip ``floor(s / 30)``."""


@dataclass(frozen=True)
class BenchItem:
    """One question of any format, normalised.

    ``benchmark``: the format it came from; ``id``: the question's id in its set;
    ``video``: the id of its video (its memory is ``<video>.db``); ``choices``: the option
    texts lettered A, B, … (empty when ``open_ended``); ``answer``: the right letter, or
    the reference text of an open-ended question; ``types``: question types (Video-MME's
    ``task_type``, LVBench's ``question_type`` list, M3-Bench's types); ``duration``:
    Video-MME's split or ``None``; ``span``: the target moment ``(start, end)`` in
    seconds, or ``None``; ``at``: when the question is asked, in seconds (``None``: after
    the whole video). ``clock``: what ``span``/``at`` count from — ``video``: seconds from
    the start of the video (its memory's first clip); ``dayclock``: timeline seconds of the
    EgoLife day clock, the memory's own.
    """

    benchmark: str
    id: str
    video: str
    question: str
    choices: tuple[str, ...]
    answer: str
    types: tuple[str, ...] = ()
    duration: str | None = None
    span: tuple[float, float] | None = None
    at: float | None = None
    open_ended: bool = False
    clock: str = "video"

    @property
    def target_clips(self) -> tuple[int, ...]:
        """The 30 s clip indices the target span covers (:func:`span_clips`), ``()`` without
        a span."""
        return span_clips(self.span) if self.span is not None else ()


# ---- times ------------------------------------------------------------------------------

_CLOCK = re.compile(r"(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)")


def parse_clock(value: object) -> float:
    """``"MM:SS"``, ``"HH:MM:SS"`` (seconds may carry a fraction) or a number → seconds from
    the start of the video. ``ValueError`` for anything else (minutes or seconds ≥ 60 where
    a larger unit follows, a negative number)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{value!r} is negative")
        return float(value)
    m = _CLOCK.fullmatch(str(value).strip())
    if not m:
        raise ValueError(f"{value!r} is not MM:SS or HH:MM:SS")
    hours, minutes, seconds = m.group(1), int(m.group(2)), float(m.group(3))
    if seconds >= 60 or (hours is not None and minutes >= 60):
        raise ValueError(f"{value!r} is not MM:SS or HH:MM:SS (a field is 60 or more)")
    return int(hours or 0) * 3600 + minutes * 60 + seconds


def parse_span(text: object) -> tuple[float, float]:
    """LVBench's ``time_reference``: ``"MM:SS-MM:SS"`` or ``"HH:MM:SS-HH:MM:SS"`` (spaces
    and an en dash allowed; one time alone is a moment) → ``(start, end)`` seconds from the
    start of the video. ``ValueError`` when a side is no time or the span ends before it
    starts."""
    parts = re.split(r"\s*[-–—]\s*", str(text).strip())
    if len(parts) > 2:
        raise ValueError(f"{text!r} is not START-END")
    start, end = parse_clock(parts[0]), parse_clock(parts[-1])
    if end < start:
        raise ValueError(f"{text!r} ends before it starts")
    return start, end


def span_clips(span: tuple[float, float], clip_seconds: float = CLIP_SECONDS) -> tuple[int, ...]:
    """The indices of the clips (``clip_seconds`` long, from 0 s) a span of seconds covers:
    ``floor(start / 30)`` through the clip holding its end — a span that ends exactly on a
    boundary does not reach into the next clip. ``(214, 221)`` → ``(7,)``; ``(30, 60)`` →
    ``(1,)``; ``(29, 61)`` → ``(0, 1, 2)``."""
    start, end = span
    first, last = int(start // clip_seconds), int(end // clip_seconds)
    if end > start and end % clip_seconds == 0:
        last -= 1
    return tuple(range(first, max(first, last) + 1))
