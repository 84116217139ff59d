"""LLM-as-judge for open-ended answers (``edge bench qa --open``, M3-Bench's free answers).

M3-Bench and the MARQUIS evaluation score a free-text answer by asking a strong model
whether it matches the reference answer. Here the judge is the configured solver — local
(llama.cpp) or remote (any OpenAI-compatible server, e.g. a frontier model configured for
the ``solver`` role): asked "does the answer say what the reference says?", it replies
``{"correct": true|false}`` (one short JSON call, counted like every call). A reply that is
still broken after the backend's own retry is recorded as ``None`` (not judged) rather than
guessed. An answer that holds every content word and number of the reference is right
without a call (a 1.5B judge marked near-copies wrong: issue 42).
"""

from __future__ import annotations

from dataclasses import dataclass

from models.llm import ContextOverflowError, LLMOutputError

JUDGE_PROMPT = """You grade answers to questions about a person's day ("I" is the person). \
You are given the question, the reference answer and a candidate answer. The candidate is \
correct when it gives the same answer as the reference: other words for the same thing \
(a synonym, 6 for "six", "the yard table" for "the table out in the yard"), extra detail, \
less detail that still names the same thing, and a short explanation are all fine. It is \
wrong when it names a different person, thing, place, number or reason, when it gives only \
a vague category instead of the reference's specific answer ("some food" for "KFC"), or \
when it says it does not know. Reply with a JSON object {"correct": true} or \
{"correct": false}."""

JUDGE_SCHEMA = {"type": "object", "properties": {"correct": {"type": "boolean"}},
                "required": ["correct"], "additionalProperties": False}

ANSWER_TOKENS = 200
"""The most tokens of a candidate answer the judge reads (a longer one is cut)."""


@dataclass(frozen=True)
class Judgement:
    """One judged answer: ``correct`` (``None`` when the judge's reply was unusable, or the
    answer empty) and the judge's ``model`` name."""

    correct: bool | None
    model: str


_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


def _terms(text: str) -> set[str]:
    """Content-word stems and numbers of ``text`` (number words as digits)."""
    from edge.answer.citations import content_stems
    from models.repeats import norm_words

    numbers = {_NUMBER_WORDS.get(w, w) for w in norm_words(text)
               if w.isdigit() or w in _NUMBER_WORDS}
    return {_NUMBER_WORDS.get(s, s) for s in content_stems(text)} | numbers


def states_reference(reference: str, answer: str) -> bool:
    """Whether ``answer`` holds every content word (Snowball stem) and number of
    ``reference`` — "Six" in "There were 6 of them", "Tasha" in "Tasha said so" — so it
    states it without a judge; ``False`` for a reference with no such word."""
    ref = _terms(reference)
    return bool(ref) and ref <= _terms(answer)


def judge_answer(llm, question: str, reference: str, answer: str | None) -> Judgement:
    """Whether the free-text ``answer`` to ``question`` says what ``reference`` says, by
    ``llm`` (the solver: ``LlamaCppLLM`` or ``RemoteLLM``; one ``chat_json`` call under the
    ``solver`` role, at most two with the backend's retry). An empty answer is wrong without
    a call; one that holds every content word and number of the reference is right without
    a call (:func:`states_reference`; ``model`` "words"). Never raises for the judge's own
    failures: an unusable reply or a prompt too long for the judge's context gives
    ``correct=None``."""
    name = getattr(llm, "name", "solver")
    if not (answer or "").strip():
        return Judgement(False, name)
    if states_reference(reference, answer):
        return Judgement(True, "words")
    cut = llm.truncate(answer.strip(), ANSWER_TOKENS)
    messages = [{"role": "system", "content": JUDGE_PROMPT},
                {"role": "user", "content": f"Question: {question}\nReference answer: "
                 f"{reference}\nCandidate answer: {cut}\nIs the candidate correct?"}]
    try:
        reply = llm.chat_json(messages, role="solver", schema=JUDGE_SCHEMA, max_tokens=16)
    except (LLMOutputError, ContextOverflowError):
        return Judgement(None, name)
    return Judgement(bool(reply["correct"]), name)
