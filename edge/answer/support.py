"""The judge of support (MARQUIS §4.4, Appendix E): the probability, 0–1, that a clip
supports a claim, judged by the solver from the clip's caption and transcript — the report
checker's judge (:mod:`edge.report.calibrate` scores evidence records and checks a report's
citations with it), ``edge ask``'s check that an open answer's cited clips support it
(:func:`check_support`), and ``edge bench qa --open``'s judge of an answer's citations.

MARQUIS scores each extracted claim against its video with a calibrated uncertain-inference
model (CLUE). On the device the solver plays that part: asked "is the claim supported by the
clip's notes? yes or no", its probability of *yes* is read off the first reply token's
distribution (:meth:`models.llama_chat.LlamaCppLLM.yes_probability`: no token generated).
A backend that gives no token probabilities (a remote server) is asked for a verbalised
score 0–100 instead (:func:`verbalised_support`), one short JSON reply per claim.
"""

from __future__ import annotations

from collections.abc import Callable

from models.llm import ContextOverflowError, LLMOutputError

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


SUPPORT_THRESHOLD = 0.5
"""The support (0–1) a cited clip needs to stay cited: ``edge report``'s default
``--threshold``, the report checker's bar."""


def check_support(llm, answer: str, cited: list[int], clips: dict,
                  on_step: Callable[[int, int], None] | None = None) -> dict:
    """Judge each cited clip against ``answer`` as the report checker judges a citation
    (:func:`support` with the citation prompt: does the clip state or show part of it?).

    Args:
        cited: clip ids, in citation order. clips: clip id → an object with ``caption``
            and ``transcript`` (a :class:`~edge.store.Clip`).
        on_step: called ``(done, total)`` before each judgement (progress).
    Returns:
        ``{"support": {clip id: 0–1}, "supported": [ids ≥ SUPPORT_THRESHOLD, in citation
        order]}``; a clip whose notes do not fit the solver's context gets 0.0.
    """
    scores: dict[int, float] = {}
    for n, cid in enumerate(cited, 1):
        if on_step is not None:
            on_step(n, len(cited))
        try:
            scores[cid] = round(support(llm, clip_notes(clips[cid], llm), answer,
                                        citation=True), 4)
        except ContextOverflowError:
            scores[cid] = 0.0
    return {"support": scores,
            "supported": [cid for cid in cited if scores[cid] >= SUPPORT_THRESHOLD]}
