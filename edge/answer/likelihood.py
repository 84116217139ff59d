"""Answering a multiple-choice question from the solver's token probabilities instead of a
written reply (``AskOptions.choice_scoring="likelihood"``, issue 12).

A small solver reading ~1,000 tokens of notes spends a third of its time writing a JSON
reply (letter, reason, cited notes: ~60 tokens at ~7 tokens/s on 2 cores) whose letter is
all the question needs. Here nothing is generated:

1. **letter**: the notes, the question and its options, then "reply with the letter" —
   one forward pass gives P(letter) for every option (``choice_probabilities``);
2. **verification**: per option, the same notes then "Proposed answer: … is it right?" —
   P(yes) from the first token (``yes_probability``; MARQUIS §4.4's calibrated support
   read off the model). These prompts share the notes with the letter call, so llama.cpp
   evaluates only each option's ~30-token tail.

The option with the highest ``log P(letter) + log P(yes)`` is the answer. On the hard
set's dev half (40 questions, the same notes) the letter alone and the written reply both
answered 0.600, the verification alone 0.500, their product 0.650; on the test half (77)
the product answered 0.481 against the written reply's 0.532 — not more accurate, only
faster (nothing written: 1,045 prompt tokens evaluated, 28.5 s p50 on 2 cores). The
cited notes are the two closest to the question and the chosen option by the embedder
(no call).
"""

from __future__ import annotations

import math

import numpy as np

from .evidence import Packed, numbered_notes
from .question import Run
from .records import Decision

LETTER_INSTRUCTION = "\n\nReply with the letter of the one best choice only."
"""The letter call's instruction (after the question and its options)."""

PROPOSAL = ('Question: {question}\nProposed answer: "{choice}"\nAccording to the notes, '
            'is the proposed answer right? Reply yes or no.')
"""The verification of one option (after the notes and hints, instead of the question)."""

CITED_NOTES = 2
"""Notes cited for a likelihood answer: the closest to the question and the answer."""


def supports_likelihood(solver: object) -> bool:
    """Whether ``solver`` reads token probabilities (a local llama.cpp model with its own
    chat template; a remote one does not)."""
    return callable(getattr(solver, "choice_probabilities", None))


def choice_scores(run: Run, packed: list[Packed]) -> dict[str, dict[str, float]]:
    """Per option letter: ``letter`` P(letter) (0–1, summing to 1 over the options),
    ``yes`` P(yes) of its verification (0–1) and ``score``, the normalised product
    (0–1, summing to 1). ``1 + len(choices)`` solver calls, none generating; raises as
    :meth:`models.llama_chat.LlamaCppLLM.choice_probabilities`."""
    notes = numbered_notes(packed) or "(none)"
    letters, choices = run.opts.letters, run.opts.choices or []
    p = run.prompt
    letter = run.solver.choice_probabilities(
        p.messages(notes, LETTER_INSTRUCTION), {L: (L,) for L in letters}, role="solver")
    yes = {}
    for L, choice in zip(letters, choices, strict=True):
        msgs = p.after_notes(notes, PROPOSAL.format(question=p.question,
                                                    choice=" ".join(str(choice).split())))
        yes[L] = run.solver.yes_probability(msgs, role="solver")
    logs = {L: math.log(max(letter[L], 1e-12)) + math.log(max(yes[L], 1e-12)) for L in letters}
    top = max(logs.values())
    total = sum(math.exp(v - top) for v in logs.values())
    return {L: {"letter": letter[L], "yes": yes[L], "score": math.exp(logs[L] - top) / total}
            for L in letters}


def cite_notes(run: Run, packed: list[Packed], text: str, k: int = CITED_NOTES) -> list[int]:
    """The numbers (from 1) of the ``k`` notes whose text is closest to ``text`` by cosine
    of the embedder's vectors (``text`` as a query), best first (``[]`` without notes)."""
    if not packed:
        return []
    sims = run.embedder.embed([pk.text for pk in packed]) @ run.embedder.embed_one(
        text, query=True)
    return [int(i) + 1 for i in np.argsort(-sims)[:k]]


def likelihood_decision(run: Run, packed: list[Packed]) -> Decision:
    """The answer of a multiple-choice question from :func:`choice_scores` as a decision
    of the adaptive loop: the best-scoring letter, its option as the ``reason`` (streamed
    to ``run.on_token`` when asked), :data:`CITED_NOTES` cited notes, ``sufficient``
    (no second round: the model does not write a next query), and ``scores`` per letter
    (rounded to 4 places). Raises as :func:`choice_scores`."""
    scores = choice_scores(run, packed)
    best = max(scores, key=lambda L: scores[L]["score"])
    choice = " ".join(str(run.opts.choices[run.opts.letters.index(best)]).split())
    if run.on_token is not None:
        run.on_token(choice)
    cited = cite_notes(run, packed, f"{run.question} {choice}")
    return {"answer": best, "reason": choice, "cited": cited, "sufficient": True,
            "search": "", "scores": {L: {k: round(v, 4) for k, v in s.items()}
                                     for L, s in scores.items()}}
