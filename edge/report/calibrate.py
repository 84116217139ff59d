"""Calibrated support (MARQUIS §4.4, Appendix E) of a report's evidence: each record scored
0–1 against its own clip, and the records below a threshold dropped before writing.

MARQUIS scores each extracted claim against its video with a calibrated uncertain-inference
model (CLUE). On the device the solver plays that part (:mod:`edge.answer.support`: its
probability of *yes* to "is the claim supported by the clip's notes?", or a verbalised
0–100 score from a backend without token probabilities), the records of one clip judged one
after another so that its notes are a KV-cached prefix.

The judge (:func:`edge.answer.support.support`, one module down so that ``edge bench`` can
judge an answer's citations with it too) also checks a report's citations
(:func:`citation_checks`): precision (does each cited clip support part of its sentence?)
and recall (how much of the kept evidence is cited).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from edge.answer.support import clip_notes, support
from models.llm import ContextOverflowError

from .evidence import EvidenceRecord
from .write import Sentence


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
