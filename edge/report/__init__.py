"""Cited reports from memory (MARQUIS stages 2–3): evidence records, calibrated support, and
a report in one of three styles whose every citation resolves to a clip.

:func:`make_report` runs, for a scope (a day, or ``--from``/``--to``) and an optional
topic:

1. select the clips the report covers (:func:`edge.report.evidence.select_clips`);
2. evidence: query-agnostic notes per clip, plus query-conditioned claims (and, with
   ``qa``, QA evidence) when a topic is given (:mod:`edge.report.evidence`);
3. calibration: each record's support, 0–1 (:mod:`edge.report.calibrate`); records below
   ``threshold`` are dropped before writing, their scores kept in the result;
4. writing: ``bullet``, ``single`` or ``ginger`` (:mod:`edge.report.write`), citations
   resolved to clips (a citation that names no evidence is removed and counted);
5. checks: citation precision (each cited clip judged against its sentence) and recall
   (the share of the kept evidence cited), with the calls, tokens and seconds it all cost.

Model calls (solver role), bounded: claims 1 (with a topic); QA evidence 1 + 1 per
sub-question (``qa``, with a topic); calibration 1 per record
(the clip's notes read once per clip, KV cache); ``single`` 1; ``ginger`` 1 per facet
(≤ ``max_facets``) + 1; checks 1 per citation not already judged.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from edge.answer.support import clip_notes, support
from edge.errors import EdgeError
from edge.store import Memory
from edge.store.embedding import memory_embedder

from .calibrate import calibrate, citation_checks, kept
from .evidence import (
    EvidenceRecord,
    claims,
    clips_in_scope,
    notes,
    qa_evidence,
    renumber,
    select_clips,
)
from .write import STYLES, Resolved, Sentence, bullet, ginger, single

__all__ = ["STYLES", "EvidenceRecord", "Report", "ReportError", "Sentence", "make_report",
           "parse_request"]


class ReportError(EdgeError):
    """A report that cannot be made: an unknown style, a threshold outside 0–1, or no clip
    in the scope."""


@dataclass
class Report:
    """A made report.

    ``scope``: what it covers in words (``DAY1``) with ``start``/``end`` (timeline seconds);
    ``topic``; ``style``; ``sentences`` (text + cited clips); ``evidence``: every record
    with its ``support`` (0–1) and ``threshold``: the records below it were dropped before
    writing (``dropped``); ``citations_removed``: citations that named no evidence;
    ``checks``: :func:`edge.report.calibrate.citation_checks`; ``info``: style details
    (GINGER facets, fluency pass); ``usage``: calls/tokens/seconds by role; ``seconds``."""

    scope: str
    start: float | None
    end: float | None
    topic: str | None
    style: str
    sentences: list[Sentence]
    evidence: list[EvidenceRecord]
    threshold: float
    dropped: int
    citations_removed: int
    checks: dict
    info: dict = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def cited_clips(self) -> list[int]:
        """The clip ids the report cites, in the order it first cites them."""
        return list(dict.fromkeys(cid for s in self.sentences for cid in s.clips))

    @property
    def text(self) -> str:
        """The report with its citations rendered (``[DAY1 11:15]``); a bullet report is a
        numbered list, one item per line."""
        if self.style == "bullet":
            return "\n".join(f"{i}. {s.rendered()}" for i, s in enumerate(self.sentences, 1))
        return " ".join(s.rendered() for s in self.sentences)

    def checks_line(self) -> str:
        """One line: citation precision and recall, what was dropped or removed, the cost
        (LLM calls, prompt tokens evaluated, tokens written) and the seconds."""
        c, llm = self.checks, self.usage.get("llm", {})

        def two(x: float | None) -> str:
            return "-" if x is None else f"{x:.2f}"

        if c.get("skipped"):
            return (f"citations: not checked (--no-check), {c['citations']} cited; evidence "
                    f"{len(self.evidence)}, none judged for support; "
                    f"{self.citations_removed} citation(s) removed (no such evidence); "
                    f"{llm.get('calls', 0)} LLM calls, {self.seconds:.0f} s")
        return (f"citations: precision {two(c['precision'])} ({c['precise']}/"
                f"{c['citations']} supported), recall {two(c['recall'])}; evidence "
                f"{len(self.evidence)}, {self.dropped} below support {self.threshold:.2f}; "
                f"{self.citations_removed} citation(s) removed (no such evidence); "
                f"{llm.get('calls', 0)} LLM calls, {llm.get('tokens_evaluated', 0)} tokens "
                f"read, {llm.get('tokens_out', 0)} written, {self.seconds:.0f} s")

    def as_dict(self) -> dict:
        """The report as plain JSON-ready data."""
        return {"scope": {"label": self.scope, "start": self.start, "end": self.end},
                "topic": self.topic, "style": self.style, "text": self.text,
                "sentences": [{"text": s.text, "clips": s.clips, "cited": s.when}
                              for s in self.sentences],
                "evidence": [r.as_dict() for r in self.evidence],
                "threshold": self.threshold, "dropped": self.dropped,
                "citations_removed": self.citations_removed, "checks": self.checks,
                "info": self.info, "usage": self.usage, "seconds": self.seconds}


def make_report(memory: Memory, hub, *, start: float | None, end: float | None, label: str,
                topic: str | None = None, style: str = "ginger", threshold: float = 0.5,
                max_clips: int = 12, max_facets: int = 6, qa: int = 0,
                at: float | None = None, check: bool = True,
                on_progress: Callable[[str], None] | None = None) -> Report:
    """A cited report of the clips ending in ``(start, end]`` (timeline seconds; ``label``
    names that span, e.g. ``DAY1``), about ``topic`` when given, in ``style``
    (:data:`edge.report.write.STYLES`). ``threshold``: the support (0–1) a record needs
    to be written from; ``max_clips``: clips covered; ``max_facets``: GINGER facets;
    ``qa``: with a topic, that many sub-questions answered by ``ask`` as QA evidence;
    ``check=False``: no support judgement (one solver call per record) and no citation
    checks: every record is written from, and a ``bullet`` report of no topic makes no
    model call at all; ``on_progress(line)``: what runs, with an ETA while records are
    judged.

    Raises :class:`ReportError` (bad style or threshold, no clip in scope) before any model
    call, and what the solver's backend raises (e.g. a remote server that is down)."""
    if style not in STYLES:
        raise ReportError(f"unknown style {style!r}; use {', '.join(STYLES)}")
    if not 0.0 <= threshold <= 1.0:
        raise ReportError(f"threshold {threshold} is not a probability (0–1)")
    in_scope = clips_in_scope(memory, start, end)
    if not in_scope:
        raise ReportError(f"no clip in {label}; `edge stats` lists the days this memory holds")
    say = on_progress or (lambda _line: None)
    t0 = time.perf_counter()
    mark = hub.usage.mark()
    needs_llm = check or style != "bullet" or topic
    llm = hub.llm("solver") if needs_llm else None
    records, clips = _evidence(memory, hub, in_scope, label, topic, max_clips, qa, at, say)
    if check:
        records = calibrate(llm, records, clips, on_step=_eta(say, "judging evidence"))
        keep = kept(records, threshold)
    else:
        keep = list(records)
    what = f"{topic} ({label})" if topic else label
    info: dict = {}
    if not keep:
        resolved = Resolved([])
    elif style == "bullet":
        resolved = bullet(keep)
    elif style == "single":
        say("writing the report")
        resolved, shown = single(llm, keep, what)
        info["shown"] = len(shown)
    else:
        resolved, info = ginger(llm, memory_embedder(memory, hub), keep, what,
                                max_facets=max_facets, on_step=lambda s: say(f"writing: {s}"))
    checks = (_checks(llm, resolved.sentences, records, keep, clips, threshold, say) if check
              else {"precision": None, "recall": None, "citations": sum(
                  len(s.clips) for s in resolved.sentences), "precise": 0,
                  "uncited_sentences": sum(1 for s in resolved.sentences if not s.clips),
                  "judged": [], "skipped": True})
    return Report(scope=label, start=start, end=end, topic=topic, style=style,
                  sentences=resolved.sentences, evidence=records, threshold=threshold,
                  dropped=len(records) - len(keep), citations_removed=resolved.removed,
                  checks=checks, info=info, usage=hub.usage.summary(mark),
                  seconds=round(time.perf_counter() - t0, 2))


def _evidence(memory: Memory, hub, in_scope: list, label: str, topic: str | None,
              max_clips: int, qa: int, at: float | None, say: Callable[[str], None]
              ) -> tuple[list[EvidenceRecord], dict]:
    """The report's evidence records, numbered in timeline order, and their clips by id:
    notes of the selected clips, plus claims and QA evidence about ``topic``."""
    chosen = select_clips(memory, memory_embedder(memory, hub), in_scope, max_clips,
                          topic=topic, at=at)
    say(f"{len(chosen)} of {len(in_scope)} clips in {label}"
        + (f" about {topic!r}" if topic else ""))
    records = notes(memory, chosen)
    if topic:
        llm = hub.llm("solver")
        say("extracting claims about the topic")
        records += claims(llm, topic, chosen, {c.id: clip_notes(c, llm) for c in chosen},
                          first_id=len(records) + 1)
        if qa:
            start, end = in_scope[0].t_end - 1e-3, in_scope[-1].t_end
            records += qa_evidence(memory, hub, topic, start=start, end=end, n=qa,
                                   first_id=len(records) + 1, on_progress=say)
    records = renumber(records)
    return records, memory.clips({r.clip_id for r in records})  # QA may cite others


def _checks(llm, sentences: list[Sentence], records: list[EvidenceRecord],
            keep: list[EvidenceRecord], clips: dict, threshold: float,
            say: Callable[[str], None]) -> dict:
    """:func:`edge.report.calibrate.citation_checks` with the solver as judge: a sentence that
    is a record's own text reuses that record's support; any other is judged against the
    cited clip's notes (does the clip support part of it?)."""
    scored = {(r.clip_id, r.text.rstrip(".")): r.support for r in records}
    n_cites = sum(len(s.clips) for s in sentences)
    step = _eta(say, "checking citations")
    done = [0]

    def judge(clip_id: int, sentence: str) -> float:
        done[0] += 1
        known = scored.get((clip_id, sentence.rstrip(".")))
        value = known if known is not None else support(
            llm, clip_notes(clips[clip_id], llm), sentence, citation=True)
        step(done[0], n_cites)
        return value

    return citation_checks(sentences, keep, judge, threshold=threshold)


def _eta(say: Callable[[str], None], what: str) -> Callable[[int, int], None]:
    """``on_step(done, total)`` that says ``what done/total (ETA n s)``."""
    t0 = time.perf_counter()

    def step(done: int, total: int) -> None:
        spent = time.perf_counter() - t0
        left = spent / done * (total - done) if done else 0.0
        say(f"{what} {done}/{total}" + (f" (ETA {left:.0f} s)" if done < total else ""))

    return step


_DAY_LABEL = re.compile(r"^(day\d+|\d{4}-\d{2}-\d{2})$", re.IGNORECASE)
"""A word that names a day (``DAY3``, ``2025-02-20``; edge.timeline's labels)."""


def parse_request(text: str, days: list[str]) -> dict:
    """The chat's ``/report [DAY] [STYLE] [TOPIC…]`` as ``{"day", "style", "topic"}``: a word
    naming one of ``days`` (any case) is the day (default: the last of ``days``), a word
    naming a style before the topic's first word is the style (default ``ginger``), the
    remaining words are the topic (``None`` when there are none). Raises
    :class:`ReportError` when ``days`` is empty or a word names a day not in ``days``."""
    if not days:
        raise ReportError("the memory holds no clip yet")
    words = text.split()
    if words and words[0].lower() == "/report":
        words = words[1:]
    by_name = {d.lower(): d for d in days}
    day, style, rest = days[-1], "ginger", []
    for w in words:
        if w.lower() in by_name:
            day = by_name[w.lower()]
        elif _DAY_LABEL.match(w):
            raise ReportError(f"no clip on {w}; the memory holds {', '.join(days)}")
        elif w.lower() in STYLES and not rest:  # "the ginger tea": a topic's word
            style = w.lower()
        else:
            rest.append(w)
    return {"day": day, "style": style, "topic": " ".join(rest) or None}
