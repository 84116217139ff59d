"""Time named by an event (issue 42 item 2): "after lunch", "before dinner", "since we got
back from the supermarket", "the morning before the meeting", "what did I eat for lunch?".

A clock reading of such words fails the person who says them: "after lunch" read as the
afternoon's hours began at 11:30 on a day whose lunch was at 14:10. The episode is found in
the memory's own timeline instead, on the day asked about (the query time's day, or the day
the question names), before the query time:

- **A meal** (:func:`meal_episodes`, no model): clips whose *narration* — the caption
  without its quoted speech and ``Name: …`` lines — says that food is at hand (eat, food,
  takeout, chopsticks, a bite …; "dining table" is furniture, not a meal) are grouped when
  less than :data:`MEAL_GAP_SECONDS` apart; each group belongs to the meal whose hours
  (:data:`MEAL_HOURS`) its start lies in, and a meal is its groups' span. Talk about a meal
  ("do we provide lunch?") is not a meal.
- **Anything else** (:func:`find_episode`): the event's words searched inside the day (round
  1's hybrid retrieval); clips scoring at least half the best, grouped when less than
  :data:`EVENT_GAP_SECONDS` apart; the episode is the group with the most clips ("since we
  got back from …": the latest such group).

Then "after/since X" scopes the clips after the episode's end to the query time, "before /
until X" the day's clips before its start, and "at / around / during / for X" the episode
widened by :data:`AROUND_SECONDS` on each side (ordering lunch is part of lunch). A part of
day the question also names ("the morning before the meeting") is kept inside the event's
window. When no such episode is in memory
the scope says so — e.g. "no lunch on DAY2 is in memory before 12:07; DAY1's lunch was at
14:09" — and an answer about a meal not yet eaten is "not yet", with no model call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from edge.recall.retrieval import group_episodes
from edge.store import Clip, Memory
from edge.timeline import PARTS_OF_DAY, TimeWindow, day_of, format_moment, window_from_question

MEALS = ("breakfast", "lunch", "dinner")
"""The meals the timeline knows (``supper`` is dinner, ``brunch`` breakfast)."""

MEAL_HOURS = {"breakfast": (4.0, 11.5), "lunch": (11.5, 16.5), "dinner": (16.5, 28.0)}
"""Hours of day ``[from, to)`` a group of eating clips must *start* in to be that meal; one
group is one meal. (EgoLife's day 2 ate at 11:18 and called it breakfast.)"""

MEAL_GAP_SECONDS = 45 * 60.0
"""Eating clips less than this apart are one meal (ordering, fetching and eating)."""

EVENT_GAP_SECONDS = 10 * 60.0
"""Clips of an event less than this apart are one episode of it."""

AROUND_SECONDS = 45 * 60.0
"""How far "at / around / during lunch" reaches past the episode on each side."""

EVENT_DEPTH = 50
"""How many best clips of the day an event's episodes are built from."""

_FOOD = re.compile(
    r"\b(?:eat|eats|eating|ate|food|foods|takeout|take-out|meal|meals|bite|bites|chew|chews|"
    r"chewing|chopsticks|dine|dines|lunch|dinner|breakfast|supper|brunch|snack|snacks|"
    r"hot\s?pot|noodles|burgers?|pizza|dumplings?|sandwich(?:es)?)\b", re.I)
_FURNITURE = re.compile(r"\bdining\s+(?:table|chair|room|area)s?\b", re.I)
_QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")
_SPEAKER_LINE = re.compile(r"^\s*[A-Z][\w’']*:")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")

_MEAL_WORD = {"breakfast": "breakfast", "brunch": "breakfast", "lunch": "lunch",
              "dinner": "dinner", "supper": "dinner"}
_RELATION = {"after": "after", "since": "after", "before": "before", "until": "before",
             "till": "before", "at": "around", "around": "around", "during": "around",
             "over": "around", "for": "around", "by": "before"}
_MEAL_RE = re.compile(
    r"\b(after|since|before|until|till|at|around|during|over|for|by)?\s*"
    r"(?:(?:the|our|my|today's|yesterday's)\s+)?(breakfast|brunch|lunch|dinner|supper)\b", re.I)
_BACK_RE = re.compile(
    r"\b(after|since|before|until)\s+(?:we|i)\s+(?:got|came|went|get|come|were)\s+back\s+from\s+"
    r"(?:the\s+|our\s+|my\s+)?([a-z][\w-]*(?:\s+[a-z][\w-]*)?)", re.I)
_THE_RE = re.compile(
    r"\b(after|since|before|until|during)\s+(?:the|our|my)\s+([a-z][\w-]*(?:\s+[a-z][\w-]*)?)",
    re.I)
_NOT_EVENT = frozenset(
    "morning noon afternoon evening night day days week time moment end start beginning "
    "first second third last next other same one".split())
_STOP_TAIL = frozenset(
    "ended finished started began was were is are had did do when while and or to with "
    "i we you he she they it that this".split())
_EAT_RE = re.compile(r"\b(?:eat|eats|ate|eaten|eating|have|has|had|having|drink|drank|"
                     r"drinking|was|were)\b", re.I)
_PLAN_RE = re.compile(
    r"\b(?:plan\w*|decid\w*|want\w*|going\s+to|will|should|suggest\w*|propos\w*|talk\w*|"
    r"discuss\w*|say|said|settl\w*|agree\w*|choos\w*|chose|pick\w*|order\w*|buy|bought|"
    r"cook\w*|prepar\w*|make|made)\b", re.I)
"""Words of a question about a meal's plan, order or making (any time of day), not the meal."""
_ORDER_Q = re.compile(r"\b(?:before\s+or\s+after|after\s+or\s+before|earlier\s+or\s+later|"
                      r"which\s+came\s+first|first\s*[,:]|or\s+after|or\s+before)\b", re.I)


@dataclass(frozen=True)
class EventRef:
    """An event a question names as its time: ``relation`` (``after``, ``before``,
    ``around``; ``topic`` when a meal is what it asks about: "what did I eat for lunch?"),
    the ``event`` (a meal of :data:`MEALS` or the words naming it) and whether it is a
    ``meal``."""

    relation: str
    event: str
    meal: bool


@dataclass(frozen=True)
class Episode:
    """An episode of an event: ``start``/``end`` (timeline seconds), its ``day`` and clips."""

    start: float
    end: float
    day: str
    clip_ids: tuple[int, ...]


@dataclass(frozen=True)
class EventScope:
    """What :func:`event_scope` decided: the ``window`` to search (``None`` when no episode
    was found; its label names the event and its time) and the ``episode``; when the event
    is not in memory, ``missing`` — the sentence the answer is (e.g. "No lunch on DAY1 is in
    memory before 13:00: it has not happened yet."), with ``not_yet`` when the event may
    still come later that day."""

    ref: EventRef
    window: TimeWindow | None
    episode: Episode | None
    missing: str = ""
    not_yet: bool = False


def moment(t: float) -> str:
    """``DAY1 11:15`` (or ``2025-02-20 19:30``) for timeline second ``t``: minutes only."""
    return format_moment(t, *day_of(t))[:-3]


def parse_event(question: str) -> EventRef | None:
    """The event ``question`` names as its time, by rule; ``None`` when it names none, or
    asks for the order of two events ("before or after …": :mod:`edge.answer.hints`
    handles those)."""
    if _ORDER_Q.search(question):
        return None
    m = _BACK_RE.search(question)
    if m:
        return EventRef(_RELATION[m.group(1).lower()], _trim(m.group(2)), False)
    m = _MEAL_RE.search(question)
    if m:
        prep = (m.group(1) or "").lower()
        if prep in ("", "for"):  # "what did I eat for lunch?": the meal eaten is the topic
            if _PLAN_RE.search(question) or not _EAT_RE.search(question):
                return None  # picking dishes for lunch, a plan for dinner: any time of day
            return EventRef("topic", _MEAL_WORD[m.group(2).lower()], True)
        return EventRef(_RELATION[prep], _MEAL_WORD[m.group(2).lower()], True)
    for m in _THE_RE.finditer(question):
        event = _trim(m.group(2))
        if event and event.split()[0].lower() not in _NOT_EVENT:
            return EventRef(_RELATION[m.group(1).lower()], event, False)
    return None


def _trim(phrase: str) -> str:
    """``phrase`` up to the first word that ends a noun phrase ("meeting ended" →
    "meeting")."""
    out = []
    for w in phrase.split():
        if w.lower() in _STOP_TAIL:
            break
        out.append(w)
    return " ".join(out)


def narration(caption: str) -> list[str]:
    """The sentences of ``caption`` that narrate (no quoted speech, no ``Name: …`` line)."""
    text = _QUOTED.sub(" ", caption)
    return [s for s in _SENTENCE.split(text) if s.strip() and not _SPEAKER_LINE.match(s)]


def eating(clip: Clip) -> bool:
    """Whether ``clip``'s narration says food is at hand (module docstring)."""
    return any(_FOOD.search(_FURNITURE.sub(" ", s)) for s in narration(clip.caption))


def meal_of(clip: Clip) -> str | None:
    """The meal of :data:`MEAL_HOURS` whose hours ``clip`` starts in."""
    hour = (clip.t_start - clip.day_start) / 3600
    return next((m for m, (h0, h1) in MEAL_HOURS.items() if h0 <= hour < h1), None)


def meal_episodes(clips: list[Clip]) -> dict[str, Episode]:
    """The meals among ``clips`` (one day's, in timeline order): clips that :func:`eating`
    less than :data:`MEAL_GAP_SECONDS` apart are one group, of the meal whose hours its
    first clip starts in; a group of one clip counts only when it narrates the meal's name.
    Per meal, its largest group (a food stall passed while shopping is not dinner); a meal
    with none is absent."""
    groups: list[list[Clip]] = []
    for c in (c for c in clips if eating(c)):
        if groups and c.t_start - groups[-1][-1].t_end < MEAL_GAP_SECONDS:
            groups[-1].append(c)
        else:
            groups.append([c])
    best: dict[str, list[Clip]] = {}
    for g in groups:
        meal = meal_of(g[0])
        if meal is None:
            continue
        named = any(re.search(rf"\b{meal}\b", " ".join(narration(c.caption)), re.I) for c in g)
        if (len(g) >= 2 or named) and len(g) > len(best.get(meal, [])):
            best[meal] = g
    return {m: Episode(g[0].t_start, g[-1].t_end, g[0].day, tuple(c.id for c in g))
            for m, g in best.items()}


def find_episode(memory: Memory, search: Callable[[str, TimeWindow, int], list],
                 event: str, day: TimeWindow, *, latest: bool) -> Episode | None:
    """The episode of ``event`` inside ``day`` (a window ending by the query time):
    ``search(text, window, n)`` ranks clips (round 1's retrieval); the clips scoring at
    least half the best, grouped less than :data:`EVENT_GAP_SECONDS` apart; the group with
    the most clips, or with ``latest`` the last group of at least two clips (else the
    largest). ``None`` when nothing matches."""
    ranked = search(event, day, EVENT_DEPTH)
    groups = group_episodes(memory, ranked, rel=0.5, gap=EVENT_GAP_SECONDS)
    if not groups:
        return None
    if latest and any(len(g.clip_ids) >= 2 for g in groups):
        g = [g for g in groups if len(g.clip_ids) >= 2][-1]
    else:
        g = max(groups, key=lambda g: (len(g.clip_ids), g.best.score))
    return Episode(g.start, g.end, g.day, tuple(g.clip_ids))


def day_window(question: str, at: float) -> TimeWindow:
    """The day an event is looked for, ending by ``at``: the day the question names
    ("yesterday after lunch"), else the query time's day."""
    named = window_from_question(question, at, day_part="strict")
    t = named.start if named is not None and named.start is not None else at
    label, start = day_of(t)
    return TimeWindow(start, min(at, start + 86400.0), label)


def event_window(ref: EventRef, ep: Episode, day: TimeWindow, part: str | None) -> TimeWindow:
    """The window ``ref`` names around episode ``ep`` inside ``day`` (module docstring),
    kept inside the part of day ``part`` when the question names one."""
    name = "the " + ref.event if not ref.meal else ref.event
    if ref.relation == "after":
        w = TimeWindow(ep.end, day.end, f"after {name} ({moment(ep.end)})")
    elif ref.relation == "before":
        w = TimeWindow(day.start, ep.start, f"before {name} ({moment(ep.start)})")
    else:
        lo, hi = ep.start - AROUND_SECONDS, ep.end + AROUND_SECONDS
        w = TimeWindow(max(lo, day.start), min(hi, day.end),
                       f"{ref.event} ({moment(ep.start)}–{moment(ep.end)[-5:]})")
    if part:
        h0, h1 = PARTS_OF_DAY[part]
        lo, hi = max(w.start, day.start + h0 * 3600), min(w.end, day.start + h1 * 3600)
        if lo < hi:
            w = TimeWindow(lo, hi, f"{part} {w.label}")
    return w.until(day.end)


def event_scope(memory: Memory, question: str, at: float,
                search: Callable[[str, TimeWindow, int], list]) -> EventScope | None:
    """The time scope of a question that names an event (module docstring), or ``None`` when
    it names none. ``at``: the query time (timeline seconds); ``search(text, window, n)``:
    round 1's ranking of clips for ``text`` inside ``window``."""
    ref = parse_event(question)
    if ref is None:
        return None
    day = day_window(question, at)
    if ref.meal:
        ep = meal_episodes(memory.clips_ending_in(day.start, day.end)).get(ref.event)
    else:
        ep = find_episode(memory, search, ref.event, day, latest=ref.relation == "after")
    if ep is None:
        return missing_event(memory, ref, day, at)
    part = _part_named(question)
    window = event_window(ref, ep, day, part)
    if memory.count_clips(before=window.end, after=window.start) == 0:
        said = f"nothing in memory is {window.label} on {day.label} before {moment(at)[-5:]}"
        return EventScope(ref, None, ep, missing=said[0].upper() + said[1:] + ".",
                          not_yet=ref.relation == "after")
    return EventScope(ref, window, ep)


def missing_event(memory: Memory, ref: EventRef, day: TimeWindow, at: float) -> EventScope:
    """The scope of an event with no episode on the asked ``day``: the answer says so and
    names the latest earlier one (a meal: that meal on an earlier day)."""
    name = ref.event if ref.meal else f"the {ref.event}"
    said = f"No {name} on {day.label} is in memory before {moment(at)[-5:]}"
    earlier = None
    if ref.meal and day.start is not None:
        for back in range(1, 8):
            start = day.start - back * 86400.0
            clips = memory.clips_ending_in(start, start + 86400.0)
            if not clips:
                continue
            earlier = meal_episodes(clips).get(ref.event)
            if earlier is not None:
                break
    not_yet = ref.meal and _before_meal_end(ref.event, day, at)
    if not_yet:
        said += ": it has not happened yet"
    if earlier is not None:
        said += f"; {earlier.day}'s {name} was at {moment(earlier.start)[-5:]}"
    return EventScope(ref, None, None, missing=said + ".", not_yet=not_yet)


def _before_meal_end(meal: str, day: TimeWindow, at: float) -> bool:
    """Whether ``at`` lies before the end of ``meal``'s hours on ``day``."""
    return day.start is not None and at < day.start + MEAL_HOURS[meal][1] * 3600


def _part_named(question: str) -> str | None:
    """A part of day the question names besides the event ("the morning before …")."""
    m = re.search(r"\b(morning|afternoon|evening|night)\b", question, re.I)
    return m.group(1).lower() if m else None
