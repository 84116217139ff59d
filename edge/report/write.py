"""Cited report generation from calibrated evidence (MARQUIS §5): three styles and citation
resolution (the citation checks are :func:`edge.report.calibrate.citation_checks`).

- **bullet**: the kept evidence as a dated, numbered list, each item citing its clip. No
  model call.
- **single**: one solver call writes the report from the best-supported evidence that fits a
  token budget (MARQUIS' CAG single-prompt baseline).
- **ginger** (GINGER, Łajewska & Balog 2025, as MARQUIS §5 uses it): the evidence is
  grouped into facets, one sentence of at most 40 words written per facet with its
  citations (one call each), then one fluency pass that may reorder and join sentences but
  must keep every citation and add none — else the draft stands. MARQUIS clusters and
  ranks facets with two more LLM prompts over claims from many videos; a report of one
  person's day is a sequence of episodes, so here a facet is a stretch of neighboring
  moments about one thing (:func:`facets`: the most similar neighboring groups of the
  claims' 384-d vectors merge until ``max_facets`` remain), in timeline order — no call,
  deterministic, every kept record in a facet.

The solver cites evidence by its id (``[E3]``): a small model copies an id more reliably
than a time. Citations are then rendered as the clip's time (``[DAY1 11:15]``); a citation
that names no evidence (an unknown id, or a time no evidence clip has) is removed and
counted (:func:`resolve`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from models.llm import ContextOverflowError, LLMOutputError

from .evidence import EvidenceRecord

EXAMPLE_IDS = ("E0", "E00")
"""The evidence ids the prompts' examples show: no record has them (ids start at E1), so a
small model that copies the example cites nothing false — the copy is removed and counted
(the tiny solver copied ``E3``/``E7`` from the first prompts, real ids in a longer report)."""

STYLES = ("bullet", "single", "ginger")
"""Report styles (MARQUIS §5: Bullet, the single-prompt CAG baseline, GINGER)."""

FACET_WORDS = 40
"""GINGER: the most words of a facet's sentence (citations not counted)."""

_CITE = re.compile(r"\[((?:E\d+|DAY\d+ \d{1,2}:\d{2}(?::\d{2})?|\d{4}-\d{2}-\d{2}[ T]"
                   r"\d{2}:\d{2}(?::\d{2})?)(?:\s*[,;]\s*(?:E\d+|DAY\d+ \d{1,2}:\d{2}"
                   r"(?::\d{2})?|\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?))*)\]")
_BRACKET = re.compile(r"\[[^\]\n]{1,40}\]")
_PAREN_IDS = re.compile(r"\(\s*(E\d+(?:\s*[,;]\s*E\d+)*)\s*\)")
"""Evidence ids in parentheses, ``(E2, E3)``: the fluency pass's input lists a sentence's
ids so, and a small model copies that into its text."""


def _bracket_ids(text: str) -> str:
    """``text`` with parenthesised evidence ids written as citations: ``(E2, E3)`` →
    ``[E2, E3]``."""
    return _PAREN_IDS.sub(r"[\1]", text)


@dataclass
class Sentence:
    """A sentence of a report: its ``text`` without citations and the ``clips`` it cites
    (clip ids, in order), with ``when`` their times as rendered (``DAY1 11:15``)."""

    text: str
    clips: list[int] = field(default_factory=list)
    when: list[str] = field(default_factory=list)

    def rendered(self) -> str:
        """The sentence with its citations, ``… drawer [DAY1 11:15] [DAY1 11:40].``"""
        cites = " ".join(f"[{w}]" for w in self.when)
        if not cites:
            return self.text
        body, end = (self.text[:-1], self.text[-1]) if self.text[-1:] in ".!?" else (
            self.text, ".")
        return f"{body} {cites}{end}"


@dataclass
class Resolved:
    """What :func:`resolve` made of a text: its ``sentences`` and how many citations were
    ``removed`` (they named no evidence)."""

    sentences: list[Sentence]
    removed: int = 0


def resolve(text: str, records: Sequence[EvidenceRecord]) -> Resolved:
    """Split ``text`` into sentences and resolve its citations to clips.

    A citation is ``[E3]`` (an evidence id), ``[DAY1 11:15]`` / ``[2025-02-20 19:31]`` (a
    time: the evidence clip starting at that second, else the first in that minute) or a
    list of them in one bracket. One that names no evidence is removed and counted; other
    bracketed text is left as it is.
    Citations after a sentence's final stop belong to that sentence; ids in parentheses,
    ``(E2, E3)``, are citations too."""
    by_id = {r.id: r for r in records}
    by_when = {}
    for r in records:  # a record's own time (to the second where its minute is shared) …
        by_when.setdefault(_clock(r.when, seconds=True), r)
    for r in records:  # … and its minute, for the minute's first clip
        by_when.setdefault(_clock(r.when), r)
    removed = 0

    def lookup(token: str) -> EvidenceRecord | None:
        token = token.strip()
        if token in by_id:
            return by_id[token]
        return by_when.get(_clock(token, seconds=True)) or by_when.get(_clock(token))

    # citations written after the stop move before it: "… drawer. [E3] Then" → "… drawer [E3]."
    # (a second stop after them, "… drawer. [E3].", goes)
    text = re.sub(r"([.!?])((?:\s*\[[^\]\n]{1,40}\])+)[.!?]?", r"\2\1",
                  " ".join(_bracket_ids(text).split()))
    out: list[Sentence] = []
    for piece in re.split(r"(?<=[.!?])\s+", text):
        clips: list[int] = []
        when: list[str] = []
        for m in _CITE.finditer(piece):
            for token in re.split(r"\s*[,;]\s*", m.group(1)):
                rec = lookup(token)
                if rec is None:
                    removed += 1
                elif rec.clip_id not in clips:
                    clips.append(rec.clip_id)
                    when.append(rec.when)
        bare = " ".join(_CITE.sub(" ", piece).split())
        bare = re.sub(r"\s+([.,;:!?])", r"\1", bare)
        if bare.strip(" .") or clips:
            out.append(Sentence(bare, clips, when))
    return Resolved(out, removed)


def _clock(token: str, *, seconds: bool = False) -> str:
    """A time as a lookup key: ``DAY1 9:05:12`` → ``DAY1 09:05`` (``DAY1 09:05:12`` with
    ``seconds``; a time without seconds stays to the minute); ``2025-02-20T19:31`` →
    ``2025-02-20 19:31``."""
    day, _, clock = token.replace("T", " ").partition(" ")
    parts = clock.split(":")
    if len(parts) < 2:
        return token
    hm = f"{day} {int(parts[0]):02d}:{parts[1]}"
    return f"{hm}:{parts[2]}" if seconds and len(parts) > 2 else hm


# ---- bullet ----------------------------------------------------------------------------

def bullet(records: Sequence[EvidenceRecord]) -> Resolved:
    """The records as a dated list (MARQUIS Bullet): one sentence per record, in timeline
    order, citing its clip. No model call."""
    return Resolved([Sentence(_sentence(r.text), [r.clip_id], [r.when])
                     for r in sorted(records, key=timeline_order)])


def timeline_order(r: EvidenceRecord) -> tuple[float, int]:
    """Sort key: by start time, then by id number (``E9`` before ``E10``)."""
    return r.t_start, int(r.id[1:])


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text[-1:] in ".!?" else text + "."


# ---- single ----------------------------------------------------------------------------

SINGLE_PROMPT = """You write a short factual report about {what} from evidence about a \
person's day ("I" is the person; write in the first person). Each line is one moment: its \
time, what the evidence says, then its evidence ids. Use only the evidence. Write one short \
sentence (at most 25 words) per moment, or one for two neighboring moments about the same \
thing, in time order, covering every moment; give each sentence the ids it rests on. Reply \
with a JSON object {{"sentences": [{{"text": "...", "cites": ["E0", "E00"]}}]}}."""


def moment_lines(records: Sequence[EvidenceRecord]) -> str:
    """The evidence grouped by moment, as :func:`single`'s solver reads it:
    ``DAY1 11:15: text / text [E3, E4]`` — one line per clip, in timeline order, the ids
    after the text as the reply puts them (with the ids first, the 1.5B cited each
    sentence with the next line's ids: citation precision 0.1 on the EgoLife day)."""
    by_clip: dict[int, list[EvidenceRecord]] = {}
    for r in sorted(records, key=timeline_order):
        by_clip.setdefault(r.clip_id, []).append(r)
    return "\n".join(f"{rs[0].when}: " + " / ".join(r.text for r in rs)
                     + f" [{', '.join(r.id for r in rs)}]" for rs in by_clip.values())


def single_schema(sentences: int) -> dict:
    """``{"sentences": [{"text": str ≤ 200 chars, "cites": ["E3", …] 1–4 ids}]}``, 1 to
    ``sentences`` items: the citations are a field, so a small model cannot forget them."""
    return {"type": "object", "properties": {"sentences": {
        "type": "array", "minItems": 1, "maxItems": sentences, "items": {
            "type": "object", "properties": {
                "text": {"type": "string", "minLength": 1, "maxLength": 200},
                "cites": {"type": "array", "minItems": 1, "maxItems": 4,
                          "items": {"type": "string", "pattern": "^E[0-9]+$"}}},
            "required": ["text", "cites"], "additionalProperties": False}}},
        "required": ["sentences"], "additionalProperties": False}


def single(llm, records: Sequence[EvidenceRecord], what: str, *, budget: int = 800,
           max_sentences: int = 12) -> tuple[Resolved, list[EvidenceRecord]]:
    """One solver call (MARQUIS' single-prompt baseline): the records with the highest
    support that fit ``budget`` tokens, grouped by moment in timeline order
    (:func:`moment_lines`) → one short sentence per moment (at most ``max_sentences``),
    each with the evidence ids it rests on (a JSON reply: the citations are a field, which
    a small model does not forget), resolved like any cited text. Returns the resolved
    report and the records it was shown; an empty report when the reply is unusable after
    the backend's retry."""
    shown = fit_budget(llm, records, budget)
    n = max(1, min(max_sentences, len({r.clip_id for r in shown})))
    messages = [{"role": "system", "content": SINGLE_PROMPT.format(what=what)},
                {"role": "user", "content": f"Evidence:\n{moment_lines(shown)}"}]
    try:
        reply = llm.chat_json(messages, role="solver", schema=single_schema(n),
                              max_tokens=60 * n)
    except LLMOutputError:
        return Resolved([]), shown
    text = " ".join(_sentence(f"{item['text'].strip().rstrip('.')} [{', '.join(item['cites'])}]")
                    for item in reply["sentences"] if item["text"].strip())
    return resolve(text, shown), shown


def fit_budget(llm, records: Sequence[EvidenceRecord], budget: int) -> list[EvidenceRecord]:
    """The records with the highest support (ties: earlier first) whose evidence lines fit
    ``budget`` tokens, back in timeline order."""
    ranked = sorted(records, key=lambda r: (-(r.support or 0.0), r.t_start))
    out, used = [], 0
    for r in ranked:
        cost = llm.count_tokens(f"[{r.id}] {r.when} ({r.modality}): {r.text}") + 1
        if used + cost > budget:
            continue
        out.append(r)
        used += cost
    return sorted(out, key=timeline_order)


# ---- ginger ----------------------------------------------------------------------------

@dataclass
class Facet:
    """A GINGER facet: its ``records`` (best support first) and ``score`` (summed
    support)."""

    records: list[EvidenceRecord]
    score: float


def facets(records: Sequence[EvidenceRecord], vectors: np.ndarray, *, max_facets: int = 6
           ) -> list[Facet]:
    """Group ``records`` (``vectors``: their ``(n, 384)`` unit vectors) into at most
    ``max_facets`` facets of a day: the records of one clip start as one group (one moment),
    groups in timeline order; while there are too many, the two *neighboring* groups whose
    mean vectors are most similar merge — so a facet is a stretch of the day about one thing
    (an episode), never two unrelated moments hours apart; a merge that would make a facet
    of more than ``ceil(moments / max_facets) + 1`` moments waits while another fits (one
    40-word sentence cannot carry half a day). Each facet lists its records best support
    first; ``score`` is their summed support. Returned in timeline order; every
    record is in one facet."""
    order = sorted(range(len(records)), key=lambda i: timeline_order(records[i]))
    groups: list[list[int]] = []
    for i in order:
        if groups and records[groups[-1][-1]].clip_id == records[i].clip_id:
            groups[-1].append(i)
        else:
            groups.append([i])
    sums = [vectors[g].sum(axis=0).astype(np.float32) for g in groups]
    moments = [1] * len(groups)
    cap = -(-len(groups) // max(1, max_facets)) + 1  # a facet's sentence has 40 words
    while len(groups) > max(1, max_facets):
        units = [s / (np.linalg.norm(s) or 1.0) for s in sums]
        pairs = range(len(units) - 1)
        fits = [k for k in pairs if moments[k] + moments[k + 1] <= cap] or [
            min(pairs, key=lambda k: moments[k] + moments[k + 1])]
        j = max(fits, key=lambda k: float(units[k] @ units[k + 1]))
        groups[j:j + 2] = [groups[j] + groups[j + 1]]
        sums[j:j + 2] = [sums[j] + sums[j + 1]]
        moments[j:j + 2] = [moments[j] + moments[j + 1]]
    out = []
    for g in groups:
        recs = sorted((records[i] for i in g), key=lambda r: (-(r.support or 0.0),
                                                               timeline_order(r)))
        out.append(Facet(recs, round(sum(r.support or 0.0 for r in recs), 4)))
    return out


FACET_PROMPT = """You summarize claims about a person's day ("I" is the person; write in the \
first person). Write ONE sentence of at most {words} words that captures the key \
information of all the claims. Cite every fact with the id of its claim in brackets, e.g. \
[E0] or [E0, E00]. Only information present in the claims. Reply with the sentence only."""

FLUENCY_PROMPT = """You are an editor. Below is a report about {what}, one sentence per \
line, each with the ids of the evidence it cites. Rewrite it into smooth, well-connected \
sentences: improve transitions, you may join or reorder sentences. Do NOT add any \
information, do NOT remove any, and keep every id: each rewritten sentence lists the ids of \
the sentences it comes from. Reply with a JSON object \
{{"sentences": [{{"text": "...", "cites": ["E0", "E00"]}}]}}."""


FACET_CITES = 4
"""The most evidence ids a facet's sentence is given when the model cited none itself."""


def facet_sentence(llm, facet: Facet) -> str:
    """One solver call: ``facet``'s claims → one sentence (cut to :data:`FACET_WORDS` words
    of text, its citations kept) citing them by id. The sentence is written from exactly
    the facet's claims, so when the model cites none (small models often drop them), the
    facet's best-supported ids (at most :data:`FACET_CITES`) are cited for it; the
    citation check then judges each against the sentence."""
    claims = "\n".join(f"[{r.id}] {r.text}" for r in facet.records)
    res = llm.chat([{"role": "system", "content": FACET_PROMPT.format(words=FACET_WORDS)},
                    {"role": "user", "content": f"Claims:\n{claims}\n\nSentence:"}],
                   role="solver", max_tokens=3 * FACET_WORDS)
    text = cut_words(res.text.strip().split("\n")[0], FACET_WORDS)
    if not cited_ids(text):
        ids = ", ".join(r.id for r in facet.records[:FACET_CITES])
        text = f"{text[:-1]} [{ids}]{text[-1]}"
    return text


def cut_words(text: str, words: int) -> str:
    """``text`` with at most ``words`` words outside citations (citations kept); a cut text
    ends at its last clause boundary (``,`` ``;`` ``:``) in the second half of the limit,
    else at the limit."""
    out, n, cut = [], 0, False
    for tok in re.split(r"(\[[^\]\n]{1,40}\])", text):
        if _BRACKET.fullmatch(tok):
            out.append(tok)
            continue
        ws = tok.split()
        take = ws[:max(0, words - n)]
        cut = cut or len(take) < len(ws)
        n += len(take)
        if take:
            out.append(" ".join(take))
    text = " ".join(out).strip()
    if cut:
        cites = " ".join(t for t in out if _BRACKET.fullmatch(t))
        bare = " ".join(t for t in out if not _BRACKET.fullmatch(t))
        stop = max(bare.rfind(","), bare.rfind(";"), bare.rfind(":"))
        if stop > len(bare) // 2:
            bare = bare[:stop]
        text = f"{bare} {cites}".strip()
    return text if text[-1:] in ".!?" else text.rstrip(",;:") + "."


def cited_ids(text: str) -> list[str]:
    """The evidence ids a text cites, in order, with repeats (``[E3, E7]`` or ``(E3, E7)``
    → E3, E7)."""
    return [t for m in _CITE.finditer(_bracket_ids(text))
            for t in re.split(r"\s*[,;]\s*", m.group(1)) if t.startswith("E")]


def ginger(llm, embedder, records: Sequence[EvidenceRecord], what: str, *,
           max_facets: int = 6, on_step: Callable[[str], None] | None = None
           ) -> tuple[Resolved, dict]:
    """GINGER over ``records``: facets (:func:`facets`), one sentence per facet
    (:func:`facet_sentence`), then the fluency pass, kept only when it cites exactly the
    draft's evidence ids and does not grow it by more than a quarter. Returns the resolved
    report and what happened: ``facets`` and ``fluency`` (``kept``, ``rejected: …`` or
    ``failed``)."""
    say = on_step or (lambda _s: None)
    vecs = np.asarray(embedder.embed([r.text for r in records]), dtype=np.float32)
    found = facets(records, vecs, max_facets=max_facets)
    draft = []
    for i, f in enumerate(found, 1):
        say(f"facet {i}/{len(found)}")
        draft.append(facet_sentence(llm, f))
    draft_text = " ".join(draft)
    say("fluency pass")
    info: dict = {"facets": len(found)}
    lines = "\n".join(f"{_bare(d)} ({', '.join(cited_ids(d))})" for d in draft)
    try:
        reply = llm.chat_json(
            [{"role": "system", "content": FLUENCY_PROMPT.format(what=what)},
             {"role": "user", "content": f"Report:\n{lines}"}],
            role="solver", schema=single_schema(len(draft)),
            max_tokens=min(900, 3 * llm.count_tokens(draft_text)))
    except (LLMOutputError, ContextOverflowError):
        info["fluency"] = "failed"
        return resolve(draft_text, records), info
    fluent = " ".join(_sentence(f"{i['text'].strip().rstrip('.')} [{', '.join(i['cites'])}]")
                      for i in reply["sentences"] if i["text"].strip())
    if set(cited_ids(fluent)) != set(cited_ids(draft_text)):
        info["fluency"] = "rejected: it changed the citations"
    elif len(_CITE.sub("", fluent).split()) > 1.25 * len(_CITE.sub("", draft_text).split()) + 5:
        info["fluency"] = "rejected: it grew the report"
    else:
        info["fluency"] = "kept"
        return resolve(fluent, records), info
    return resolve(draft_text, records), info


def _bare(text: str) -> str:
    """``text`` without its citations (spaces before punctuation closed up)."""
    return re.sub(r"\s+([.,;:!?])", r"\1",
                  " ".join(_CITE.sub(" ", _bracket_ids(text)).split()))
