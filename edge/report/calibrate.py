"""Calibrated support (MARQUIS §4.4, Appendix E): the probability, 0–1, that a clip supports
a claim, judged by the solver from the clip's caption and transcript.

MARQUIS scores each extracted claim against its video with a calibrated uncertain-inference
model (CLUE) and drops claims below a threshold before writing. On the device the solver
plays that part: asked "is the claim supported by the clip's notes? yes or no", its
probability of *yes* is read off the first reply token's distribution
(:meth:`models.llama_chat.LlamaCppLLM.yes_probability`: no token generated, the clip's notes shared
as a KV-cached prefix by all the claims of one clip). A backend that gives no token
probabilities (a remote server) is asked for a verbalised score 0–100 instead
(:func:`verbalised_support`), one short JSON reply per claim.

The same judge checks a report's citations (:func:`citation_checks`): precision (does
each cited clip support part of its sentence?) and recall (how much of the kept evidence
is cited).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from models.llm import ContextOverflowError, LLMOutputError

from .evidence import EvidenceRecord
from .write import Sentence

JUDGE_PROMPT = """You check claims against notes of a 30-second clip of a person's day \
("I" is the person). A claim is supported when the notes state it or directly show it; \
it is not supported when the notes do not mention it or say otherwise. Answer with one \
word: yes or no."""

CITATION_PROMPT = """You check a citation in a report about a person's day ("I" is the \
person). A report sentence may combine several moments; it cites this 30-second clip. The \
citation is right when the clip's notes state or directly show at least one thing the \
sentence says; it is wrong when nothing the sentence says is in the notes. Answer with one \
word: yes or no."""

SCORE_PROMPT = """You check claims against notes of a 30-second clip of a person's day \
("I" is the person). Rate how well the notes support the claim, from 0 (not mentioned or \
contradicted) to 100 (stated directly). Reply with a JSON object {"support": number}."""

SCORE_SCHEMA = {"type": "object",
                "properties": {"support": {"type": "integer", "minimum": 0, "maximum": 100}},
                "required": ["support"], "additionalProperties": False}

CONTEXT_TOKENS = 400
"""The most tokens of a clip's notes a judgement reads (the caption is cut to fit)."""


def clip_notes(clip, llm) -> str:
    """A clip's caption and transcript as the judge reads them, cut to
    :data:`CONTEXT_TOKENS` tokens of ``llm``'s tokenizer."""
    text = clip.caption.strip()
    if clip.transcript.strip():
        text += f"\nSpeech: {clip.transcript.strip()}"
    return llm.truncate(text, CONTEXT_TOKENS)


def _messages(prompt: str, notes: str, claim: str, question: str) -> list[dict]:
    return [{"role": "system", "content": prompt},
            {"role": "user", "content": f"Clip notes:\n{notes}\n\nClaim: {claim}\n{question}"}]


def support(llm, notes: str, claim: str, *, citation: bool = False) -> float:
    """P(the clip whose ``notes`` are given supports ``claim``), 0–1: the solver's token
    probability of *yes* where the backend gives it, else its verbalised score / 100.
    ``citation``: ``claim`` is a report sentence that may combine several moments, and the
    question is whether the clip supports *part* of it (citation precision, as ALCE judges
    a citation) rather than all of it. Raises :class:`~models.llm.ContextOverflowError`
    when the notes do not fit."""
    if hasattr(llm, "yes_probability"):
        prompt, ask = ((CITATION_PROMPT, "Does the clip support part of the sentence? yes or no")
                       if citation else (JUDGE_PROMPT, "Is the claim supported? yes or no"))
        try:
            return llm.yes_probability(_messages(prompt, notes, claim, ask), role="solver")
        except NotImplementedError:
            pass
    return verbalised_support(llm, notes, claim)


def verbalised_support(llm, notes: str, claim: str) -> float:
    """The solver's own 0–100 rating of how well ``notes`` support ``claim``, as 0–1; 0.5
    (undecided) when the reply is unusable after the backend's retry."""
    try:
        reply = llm.chat_json(_messages(SCORE_PROMPT, notes, claim, "Rate the support."),
                              role="solver", schema=SCORE_SCHEMA, max_tokens=16)
    except LLMOutputError:
        return 0.5
    return max(0, min(100, int(reply["support"]))) / 100.0


def calibrate(llm, records: Sequence[EvidenceRecord], clips: dict, *,
              on_step: Callable[[int, int], None] | None = None) -> list[EvidenceRecord]:
    """``records`` with their ``support`` (0–1) filled, in the same order: each judged
    against its own clip's notes (``clips``: clip id → :class:`~edge.store.Clip`), the
    records of one clip one after another so that its notes are read once (KV cache).
    ``on_step(done, total)`` after each judgement. A record whose clip's notes do not fit
    the context gets ``0.0``."""
    order = sorted(range(len(records)), key=lambda i: (records[i].clip_id, i))
    scores: dict[int, float] = {}
    notes_of: dict[int, str] = {}
    for done, i in enumerate(order, 1):
        rec = records[i]
        if rec.clip_id not in notes_of:
            notes_of[rec.clip_id] = clip_notes(clips[rec.clip_id], llm)
        try:
            scores[i] = round(support(llm, notes_of[rec.clip_id], rec.text), 4)
        except ContextOverflowError:
            scores[i] = 0.0
        if on_step is not None:
            on_step(done, len(records))
    return [replace(r, support=scores[i]) for i, r in enumerate(records)]


def kept(records: Sequence[EvidenceRecord], threshold: float) -> list[EvidenceRecord]:
    """The records whose ``support`` is at least ``threshold`` (0–1), in order."""
    return [r for r in records if r.support is not None and r.support >= threshold]


def citation_checks(sentences: Sequence[Sentence], kept: Sequence[EvidenceRecord],
                    judge: Callable[[int, str], float], *, threshold: float = 0.5) -> dict:
    """Citation precision and recall of a report.

    ``judge(clip_id, sentence) -> float`` is the support (0–1) the clip gives the sentence
    (:func:`support`); a citation is *precise* when it is at least
    ``threshold``. Precision: precise citations / citations (``None`` without any).
    Recall: the share of the ``kept`` evidence records whose clip the report cites.
    Returns ``{"precision", "recall", "citations", "precise", "uncited_sentences",
    "judged": [{"clip_id", "sentence", "support"}]}``."""
    judged = []
    for s in sentences:
        for cid in s.clips:
            judged.append({"clip_id": cid, "sentence": s.text,
                           "support": round(judge(cid, s.text), 4)})
    precise = sum(j["support"] >= threshold for j in judged)
    cited = {cid for s in sentences for cid in s.clips}
    return {"precision": round(precise / len(judged), 3) if judged else None,
            "recall": round(sum(r.clip_id in cited for r in kept) / len(kept), 3)
            if kept else None,
            "citations": len(judged), "precise": precise,
            "uncited_sentences": sum(1 for s in sentences if not s.clips),
            "judged": judged}
