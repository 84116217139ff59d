"""LLM-as-judge for open-ended answers (``edge bench qa --open``, M3-Bench's free answers).

M3-Bench and the MARQUIS evaluation score a free-text answer by asking a strong model
whether it matches the reference answer. Here the judge is the configured solver — local
(llama.cpp) or remote (any OpenAI-compatible server, e.g. a frontier model configured for
the ``solver`` role): asked "does the answer say what the reference says?", it replies
``{"correct": true|false}`` (one short JSON call, counted like every call). A reply that is
still broken after the backend's own retry is recorded as ``None`` (not judged) rather than
guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.llm import ContextOverflowError, LLMOutputError

JUDGE_PROMPT = """You grade answers to questions about a person's day ("I" is the person). \
You are given the question, the reference answer and a candidate answer. The candidate is \
correct when it states what the reference states (other words, extra detail and a short \
explanation are fine); it is wrong when it names something else, is missing the reference's \
point, or says it does not know. Reply with a JSON object {"correct": true} or \
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


def judge_answer(llm, question: str, reference: str, answer: str | None) -> Judgement:
    """Whether the free-text ``answer`` to ``question`` says what ``reference`` says, by
    ``llm`` (the solver: ``LlamaCppLLM`` or ``RemoteLLM``; one ``chat_json`` call under the
    ``solver`` role, at most two with the backend's retry). An empty answer is wrong without
    a call. Never raises for the judge's own failures: an unusable reply or a prompt too
    long for the judge's context gives ``correct=None``."""
    name = getattr(llm, "name", "solver")
    if not (answer or "").strip():
        return Judgement(False, name)
    cut = llm.truncate(answer.strip(), ANSWER_TOKENS)
    messages = [{"role": "system", "content": JUDGE_PROMPT},
                {"role": "user", "content": f"Question: {question}\nReference answer: "
                 f"{reference}\nCandidate answer: {cut}\nIs the candidate correct?"}]
    try:
        reply = llm.chat_json(messages, role="solver", schema=JUDGE_SCHEMA, max_tokens=16)
    except (LLMOutputError, ContextOverflowError):
        return Judgement(None, name)
    return Judgement(bool(reply["correct"]), name)
