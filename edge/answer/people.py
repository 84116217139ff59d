"""Answers from the character memory (issue 43 item 5; PyraVid's character memory,
M3-Agent's face- and voice-grounded entities): "when did I last see Barack Obama?", "who
was with me at lunch?", "who said we should leave at six?" are answered from the
appearances the ingest stored (:mod:`edge.store.people_read`), not from word overlap.

No model call: the answer is a sentence built from the appearances, each cited clip is one
the person was seen or heard in, and the verdict is ``found``. A question these cannot
answer (no named identity, nobody in scope, no voice turn that says it) returns ``None``
and the ordinary loop answers it from the captions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from edge.store import Memory
from edge.store.people_read import Appearance
from edge.timeline import format_moment

from .citations import content_stems
from .people_q import PersonQuestion, person_question
from .people_search import in_scope
from .question import Run
from .records import Answer, Moment

SAID_MIN_OVERLAP = 0.6
"""The least share of the said words' content terms a voice turn must hold to be the one
"who said …" asks about (stemmed, :func:`~edge.answer.citations.content_stems`)."""

MAX_WITH = 8
"""The most people one "who was with me" answer names."""


def people_answer(run: Run) -> Answer | None:
    """The :class:`Answer` to ``run.question`` from the character memory, or ``None`` when
    it is not a person question (:func:`~edge.answer.people_q.person_question`) or the
    appearances do not answer it. Appearances count inside ``run.scope`` (the question's
    time scope, ending at the question time)."""
    memory = run.memory
    if not memory.people_ready():
        return None
    names = [p.name for p in memory.persons() if p.name]
    pq = person_question(run.question, names)
    if pq is None:
        return None
    if pq.ask in ("last", "first", "did"):
        return _seen(run, pq)
    if pq.ask == "with":
        return _with(run)
    return _said(run, pq)


def _seen(run: Run, pq: PersonQuestion) -> Answer:
    person = run.memory.identity_by_name(pq.name)
    apps = [a for a in run.memory.appearances(person.id) if in_scope(a, run.scope)]
    if not apps:
        until = f" before {_when(run.memory, run.scope.end)}" if run.scope.end else ""
        where = f" {run.scope.label}" if run.scope.label else until
        no = "No: " if pq.ask == "did" else ""
        return _answer(run, f"{no}{pq.name} has not been seen or heard in memory{where}.", [],
                       "not_found")
    apps.sort(key=lambda a: a.at)
    a = apps[0] if pq.ask == "first" else apps[-1]
    how = "saw" if a.kind == "face" else "heard"
    word = "first" if pq.ask == "first" else "last"
    text = (f"You {word} {how} {pq.name} at {_when(run.memory, a.at)} "
            f"({_where(a)}; {_clips(len({x.clip_id for x in apps}))} with {pq.name} in all).")
    if pq.ask == "did":
        text = f"Yes. {text}"
    return _answer(run, text, [a.clip_id], "found", matched=a.kind)


def _clips(n: int) -> str:
    """``1 clip``, ``3 clips``."""
    return f"{n} clip{'' if n == 1 else 's'}"


def _with(run: Run) -> Answer | None:
    clips = run.memory.clips_ending_in(run.scope.start, run.scope.end)
    people = run.memory.people_in_clips(c.id for c in clips)
    seen: dict[int, list[int]] = {}
    label: dict[int, str] = {}
    kinds: dict[int, set[str]] = {}
    for clip_id, found in people.items():
        for p in found:
            seen.setdefault(p.identity_id, []).append(clip_id)
            label[p.identity_id] = p.name or f"person {p.identity_id}"
            kinds.setdefault(p.identity_id, set()).update(p.kinds)
    if not seen:
        return None  # nobody in the character memory: the captions may still say
    order = sorted(seen, key=lambda i: (-len(seen[i]), i))[:MAX_WITH]
    how = {"face": "seen", "voice": "heard"}
    parts = [f"{label[i]} ({' and '.join(how[k] for k in sorted(kinds[i]))}, "
             f"{len(seen[i])} clip{'s' if len(seen[i]) != 1 else ''})" for i in order]
    where = f" {run.scope.label}" if run.scope.label else ""
    text = f"With you{where}: " + ", ".join(parts) + "."
    return _answer(run, text, [seen[i][0] for i in order], "found", matched="face")


def _said(run: Run, pq: PersonQuestion) -> Answer | None:
    want = set(content_stems(pq.what))
    if not want:
        return None
    clips = run.memory.clips_ending_in(run.scope.start, run.scope.end)
    best, best_share = None, 0.0
    for a in run.memory.appearances_in(c.id for c in clips):
        if a.kind != "voice" or not a.text:
            continue
        share = len(want & set(content_stems(a.text))) / len(want)
        if share > best_share:
            best, best_share = a, share
    if best is None or best_share < SAID_MIN_OVERLAP:
        return None
    who = best.name or f"person {best.identity_id} (not named yet: `edge people name "\
                        f"{best.identity_id} NAME`)"
    text = f"{who} said it at {_when(run.memory, best.at)}: \u201c{best.text.strip()}\u201d"
    return _answer(run, text, [best.clip_id], "found", matched="voice")


def _when(memory: Memory, t: float | None) -> str:
    if t is None:
        return "an unknown time"
    clips = memory.clips_between(t - 1, t + 1) or memory.clips_ending_in(t - 60, t + 60)
    if clips:
        c = clips[0]
        return format_moment(t, c.day, c.day_start)
    return f"{t:.0f} s"


def _where(a: Appearance) -> str:
    src = (a.source or "").rsplit("/", 1)[-1]
    secs = int(a.t or 0)
    return f"{'face' if a.kind == 'face' else 'voice'} in {src} at {secs // 60}:{secs % 60:02d}"


def _answer(run: Run, text: str, cited: Sequence[int], verdict: str, *,
            matched: str = "") -> Answer:
    clips = run.memory.clips(cited)
    moments = [Moment(c.id, format_moment(c.t_start, c.day, c.day_start), c.t_start, c.t_end,
                      c.caption, c.transcript, c.keyframes, "anchor", None, 1, True, matched)
               for c in (clips[i] for i in cited if i in clips)]
    return Answer(
        question=run.question, asked_at=run.asked_at, answer=text, sufficient=bool(moments),
        moments=moments, rounds=[], usage=run.usage.summary(run.usage_mark),
        seconds=round(time.perf_counter() - run.started, 2),
        scope={"label": run.scope.label, "start": run.scope.start, "end": run.scope.end},
        citation_check={"method": "appearances", "summary": "answered from the character "
                        "memory's appearances (faces and voices)"},
        verdict=verdict)  # type: ignore[arg-type]
