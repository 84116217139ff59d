"""Evidence records for a report (MARQUIS §4): what a report may say, each record tied to
one clip, with its time, modality and source text.

- **Query-agnostic notes** (§4.1), :func:`notes`: per selected clip, its PyraVid fact nodes
  where the pyramid is built, else the clip's MERIT event key (visual) and dialogue key
  (speech), else its caption's first sentences and the first one said; on-screen text the
  captioner wrote (``Visible text: "…"``) is its own ``text`` record. No model call.
- **Query-conditioned claims** (§4.2), :func:`claims`: with a topic, one solver call reads
  the selected clips and writes the claims that bear on the topic, each naming its clip.
- **QA evidence** (§4.3), :func:`qa_evidence`: with a topic and ``--qa N``, the topic is
  split into sub-queries (:func:`edge.recall.decompose.decompose`) and each is answered by
  ``ask`` inside the scope; the answer becomes a record tied to the clip it cites first.

Which clips a report covers, :func:`select_clips`: with a topic, ``ask``'s first round over
the scope (no LLM call); without one, the day is cut into equal spans of time and each span
gives its most representative clip (the medoid of its notes' 384-d vectors), so a report of
"the day" covers the whole day rather than its most repeated activity.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from edge.build.keys import split_sentences
from edge.errors import AskError
from edge.store import Clip, Memory
from edge.timeline import format_moment
from models.llm import ContextOverflowError, LLMOutputError

MODALITIES = ("visual", "speech", "text")
"""What a record's source is: what was seen, what was said, on-screen text."""

KINDS = ("note", "claim", "qa")
"""Query-agnostic note (§4.1), query-conditioned claim (§4.2) or QA evidence (§4.3)."""

_QUOTE = r'(?:"[^"\n]*"|“[^”\n]*”)'
_VISIBLE = re.compile(rf"Visible text:\s*({_QUOTE}(?:\s*;\s*{_QUOTE})*)", re.IGNORECASE)
"""The captioner's on-screen text (``Visible text: "A"; "B".``, models/captioner.py)."""
_NO_DIALOGUE = re.compile(r"^(none|no dialogue|no speech|n/?a|nothing)\b", re.IGNORECASE)
_SPEECH = re.compile(r'\s*Speech: "(.*)"\s*$', re.DOTALL)
"""The captioner's transcript, the caption's last part (models/captioner.py, vlm.py)."""
_SIGNAL_ONLY = re.compile(r"^(No speech heard|Up to \d+ faces? visible)\.?$")
"""Caption sentences that state no event (models/captioner.py), not evidence."""


@dataclass(frozen=True)
class EvidenceRecord:
    """One piece of evidence: ``id`` (``E1``, ``E2``, … stable within a report), the
    ``clip_id`` it comes from with the clip's ``t_start``/``t_end`` (timeline seconds) and
    ``when`` (``DAY1 11:15`` or ISO), ``modality`` (:data:`MODALITIES`), ``kind``
    (:data:`KINDS`), ``text`` (the claim, one sentence) and ``origin`` (``fact``, ``key``,
    ``caption``, ``ocr`` or ``solver``). ``support``: the calibrated probability, 0–1, that
    the clip supports ``text`` (:mod:`edge.report.calibrate`); ``None`` until scored."""

    id: str
    clip_id: int
    t_start: float
    t_end: float
    when: str
    modality: str
    kind: str
    text: str
    origin: str
    support: float | None = None

    def as_dict(self) -> dict:
        """The record as a plain dict (JSON output)."""
        return dict(self.__dict__)


def when_of(clip: Clip, *, seconds: bool = False) -> str:
    """A clip's start as a citation shows it: ``DAY1 11:15`` (minutes), or with ``seconds``
    ``DAY1 11:15:30`` (what records carry until :func:`renumber` shortens it)."""
    moment = format_moment(clip.t_start, clip.day, clip.day_start)
    return moment if seconds else moment[:-3]


_HAS_SECONDS = re.compile(r"\d:\d{2}:\d{2}$")


def _minutes(when: str) -> str:
    return when[:-3] if _HAS_SECONDS.search(when) else when


def clips_in_scope(memory: Memory, start: float | None, end: float | None) -> list[Clip]:
    """The clips that end in ``(start, end]`` (timeline seconds; ``None`` = open), in
    timeline order."""
    return memory.clips_ending_in(start, end)


def select_clips(memory: Memory, embedder, clips: Sequence[Clip], k: int, *,
                 topic: str | None = None, at: float | None = None) -> list[Clip]:
    """The ``k`` clips a report covers, in timeline order.

    With ``topic``: the anchors of ``ask``'s first round for it, restricted to ``clips``
    (:func:`edge.answer.search.first_round`, no LLM call). Without: ``clips`` cut into ``k``
    spans of equal time, each giving its medoid (the clip whose note vector is most similar
    to the span's mean; 384-d unit vectors from ``embedder.embed``). Returns all of
    ``clips`` when there are at most ``k``."""
    clips = list(clips)
    if len(clips) <= k:
        return clips
    if topic:
        from edge.answer import AskOptions
        from edge.answer.search import first_round
        from edge.timeline import TimeWindow

        window = TimeWindow(clips[0].t_end - 1e-6, clips[-1].t_end, "report scope")
        opts = AskOptions(at=at if at is not None else clips[-1].t_end, window=window,
                          auto_window=False)
        got = first_round(memory, embedder, topic, opts, top_n=k)
        ids = {a.clip_id for a in got.anchors}
        return [c for c in clips if c.id in ids]
    t0, t1 = clips[0].t_start, clips[-1].t_end
    span = (t1 - t0) / k
    groups: list[list[Clip]] = [[] for _ in range(k)]
    for c in clips:
        groups[min(k - 1, int((c.t_start - t0) / span))].append(c)
    groups = [g for g in groups if g]
    texts = [_note_text(c) for g in groups for c in g]
    vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
    out, i = [], 0
    for g in groups:
        v = vecs[i:i + len(g)]
        i += len(g)
        centre = v.mean(axis=0)
        out.append(g[int(np.argmax(v @ centre))])
    return out


def _note_text(clip: Clip) -> str:
    """The text a clip is represented by when spans are summarised: its event key, else its
    caption's first sentence."""
    event = (clip.keys or {}).get("event", "")
    if event:
        return event
    first = split_sentences(clip.caption)
    return first[0] if first else clip.caption[:200]


def notes(memory: Memory, clips: Sequence[Clip], *, max_per_clip: int = 3
          ) -> list[EvidenceRecord]:
    """Query-agnostic notes (MARQUIS §4.1) of ``clips``, at most ``max_per_clip`` each, in
    timeline order, numbered ``E1``…: the clip's fact nodes (``fact``; speech facts are
    ``speech``), else its event key (``visual``) and dialogue key (``speech``, unless it
    says there was none), else its caption's first sentences and the first one said
    (``caption``, :func:`_caption_items`); plus one ``text`` record per ``Visible text:
    "…"`` the captioner wrote (``ocr``). No model call.
    """
    with_keys = memory.clips([c.id for c in clips], with_keys=True)
    facts = memory.facts_of([c.id for c in clips])
    out: list[EvidenceRecord] = []
    for c in clips:
        clip = with_keys.get(c.id, c)
        items: list[tuple[str, str, str]] = []  # (modality, text, origin)
        for f in facts.get(c.id, []):
            items.append(("speech" if f.kind == "speech" else "visual", f.text, "fact"))
        if not items:
            keys = clip.keys or {}
            if keys.get("event"):
                items.append(("visual", keys["event"], "key"))
            dialogue = keys.get("dialogue", "").strip()
            if dialogue and not _NO_DIALOGUE.match(dialogue):
                items.append(("speech", dialogue, "key"))
        if not items:
            items += _caption_items(clip)
        items = items[:max_per_clip]
        items += [("text", f"On screen: {m.strip()}", "ocr")
                  for m in _VISIBLE.findall(clip.caption)[:1] if not _said(m, items)]
        for modality, text, origin in items:
            text = " ".join(text.split())
            if text:
                out.append(EvidenceRecord(f"E{len(out) + 1}", c.id, c.t_start, c.t_end,
                                          when_of(c, seconds=True), modality, "note", text, origin))
    return out


def _caption_items(clip: Clip) -> list[tuple[str, str, str]]:
    """A clip without keys or facts (the real-time tier): its caption's first two sentences
    (``visual``) and the first sentence of what was said (``speech``), as ``(modality,
    text, origin)``. The captioner's ``Speech: "…"`` (the transcript, last) and on-screen
    text (its own record) are left out of the sentences, as are its signal-only sentences.
    """
    body = _SPEECH.sub("", clip.caption)
    items = [("visual", s, "caption") for s in split_sentences(body)
             if not (_VISIBLE.search(s) or _SIGNAL_ONLY.match(s))][:2]
    said = _SPEECH.search(clip.caption)
    said = split_sentences(clip.transcript or (said.group(1) if said else ""))
    if said:
        items.append(("speech", f'Speech: "{said[0]}"', "caption"))
    return items


def _said(visible: str, items: list[tuple[str, str, str]]) -> bool:
    """Whether every quoted string of ``visible`` (``"A"; "B"``) is already in the text of
    one of ``items`` (e.g. a fact ``clideo.com``), case aside."""
    quoted = [a or b for a, b in re.findall(r'"([^"\n]*)"|“([^”\n]*)”', visible)]
    texts = [t.lower() for _, t, _ in items]
    return all(any(q.strip().lower() in t for t in texts) for q in quoted if q.strip())


CLAIMS_PROMPT = """You extract evidence for a report about a person's day from notes of \
numbered 30-second clips ("I" is the person). Topic: {topic}. Write up to {n} short claims \
that bear on the topic, each one plain sentence that the notes of ONE clip state directly, \
with that clip's number. No guesses, no claims from several clips. Reply with a JSON object \
{{"claims": [{{"clip": number, "text": "..."}}]}}; an empty list when nothing bears on the \
topic."""


def claims_schema(n_clips: int, n: int) -> dict:
    """``{"claims": [{"clip": 1…n_clips, "text": str ≤ 200 chars}]}``, at most ``n``."""
    return {"type": "object", "properties": {"claims": {
        "type": "array", "maxItems": n, "items": {
            "type": "object", "properties": {
                "clip": {"type": "integer", "minimum": 1, "maximum": n_clips},
                "text": {"type": "string", "minLength": 1, "maxLength": 200}},
            "required": ["clip", "text"], "additionalProperties": False}}},
        "required": ["claims"], "additionalProperties": False}


def claims(llm, topic: str, clips: Sequence[Clip], sources: dict[int, str], *, n: int = 8,
           first_id: int = 1) -> list[EvidenceRecord]:
    """Query-conditioned claims (MARQUIS §4.2): one solver call reads ``sources`` (the text
    of each clip, by clip id, e.g. distilled to the topic) and writes up to ``n`` claims that
    bear on ``topic``, each tied to one clip; numbered from ``E{first_id}``, modality
    ``visual`` (``speech`` when the claim reports words: a quote or a verb of saying).
    Returns ``[]`` when the reply is unusable after the backend's retry or the clips do
    not fit the context (the report then rests on the notes)."""
    from edge.build.pyramid.clip_memory import fact_kind

    listed = [c for c in clips if sources.get(c.id)]
    if not listed:
        return []
    body = "\n".join(f"[{i}] {when_of(c)}: {sources[c.id]}" for i, c in enumerate(listed, 1))
    messages = [{"role": "system", "content": CLAIMS_PROMPT.format(topic=topic, n=n)},
                {"role": "user", "content": f"Clips:\n{body}"}]
    try:
        reply = llm.chat_json(messages, role="solver", schema=claims_schema(len(listed), n),
                              max_tokens=60 * n)
    except (LLMOutputError, ContextOverflowError):
        return []
    out: list[EvidenceRecord] = []
    seen: set[str] = set()
    for item in reply["claims"]:
        text = " ".join(str(item["text"]).split())
        if not text or text.lower() in seen or not 1 <= item["clip"] <= len(listed):
            continue
        seen.add(text.lower())
        c = listed[item["clip"] - 1]
        modality = "speech" if fact_kind(text) == "speech" else "visual"
        out.append(EvidenceRecord(f"E{first_id + len(out)}", c.id, c.t_start, c.t_end,
                                  when_of(c, seconds=True), modality, "claim", text, "solver"))
    return out


def renumber(records: Sequence[EvidenceRecord]) -> list[EvidenceRecord]:
    """``records`` in timeline order (notes before claims of the same clip), numbered
    ``E1``… again, each ``when`` to the minute (``DAY1 11:15``) unless another clip starts
    in the same minute: then to the second (``DAY1 11:15:30``), so that a time citation
    names one clip."""
    ordered = sorted(records, key=lambda r: (r.t_start, r.clip_id, KINDS.index(r.kind)))
    clips_at: dict[str, set[int]] = {}
    for r in ordered:
        clips_at.setdefault(_minutes(r.when), set()).add(r.clip_id)
    return [replace(r, id=f"E{i}", when=_minutes(r.when) if len(clips_at[_minutes(r.when)]) == 1
                    else r.when) for i, r in enumerate(ordered, 1)]


def day_span(memory: Memory, day: str) -> tuple[float, float] | None:
    """``(start, end)`` such that the clips of ``day`` (a day label, ``DAY1`` or
    ``2025-02-20``) are those ending in ``(start, end]``; ``None`` when it holds no clip."""
    row = memory.db.execute("SELECT min(t_end), max(t_end) FROM clips WHERE day = ?",
                            (day,)).fetchone()
    return None if row is None or row[0] is None else (row[0] - 1e-3, row[1])


def qa_evidence(memory: Memory, hub, topic: str, *, start: float | None, end: float | None,
                n: int = 2, first_id: int = 1,
                on_progress: Callable[[str], None] | None = None) -> list[EvidenceRecord]:
    """QA evidence (MARQUIS §4.3): ``topic`` split into up to ``n`` sub-queries (one solver
    call), each answered by :func:`edge.answer.ask` inside ``(start, end]`` (one round, the
    ``single`` loop: one solver call each; no support check there, the record's support is
    judged by :func:`~edge.report.calibrate.calibrate` like every other record's); an
    answer that cites a clip becomes a record
    (kind ``qa``, origin ``solver``, text ``sub-query — answer``) tied to the first clip it
    cites. Sub-queries with no cited clip give nothing."""
    from edge.answer import ask
    from edge.recall.decompose import decompose
    from edge.timeline import TimeWindow

    subs = decompose(hub.llm("solver"), topic, max_queries=n) or [topic]
    window = TimeWindow(start, end, "report scope")
    out: list[EvidenceRecord] = []
    for i, sub in enumerate(subs[:n], 1):
        if on_progress is not None:
            on_progress(f"answering sub-question {i}/{min(n, len(subs))}: {sub!r}")
        try:
            res = ask(memory, hub, sub, at=end, window=window, auto_window=False,
                      max_rounds=1, loop="single", open_check="words")  # calibrate judges
        except AskError:
            continue
        cited = [m for m in res.moments if m.cited]
        answer = " ".join(str(res.answer).split())
        if not cited or not answer:
            continue
        m = cited[0]
        clip = memory.clips([m.clip_id])[m.clip_id]
        out.append(EvidenceRecord(f"E{first_id + len(out)}", clip.id, clip.t_start,
                                  clip.t_end, when_of(clip, seconds=True), "visual", "qa",
                                  f"{sub.rstrip('?')}: {answer}", "solver"))
    return out
