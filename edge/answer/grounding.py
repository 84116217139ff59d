"""Option grounding: which option of a multiple-choice question the evidence itself
supports, by the embedder, checked against the solver's letter (issue 26).

The hard questions' wrong options are things that really happened — elsewhere. A 1.5B
solver reading ~20 notes that name several options' people and things often picks one
of those; the embedder does not read, but it can tell *where* an option is said: next to
the moment the question is about, or in another one. Per option ``o`` the grounding is

    g(o) = max over evidence clips c of [ max_k cos(q, k_c) + max_k cos(o, k_c) ]

with ``k_c`` the clip's key vectors (event, dialogue, object, summary and caption keys:
MERIT's max-sim of Eq. 6, taken per clip), ``q`` the question's and ``o`` the option's
vector (each embedded as a query). A clip counts for an option as much as it is about the
question *and* says the option. No solver call; one batched embedding of the question
and options (~0.3 s on 2 cores with EmbeddingGemma) and a read of the evidence's vectors.

The solver's letter is kept unless another option's grounding exceeds its own by more
than :data:`GROUNDING_MARGIN`. Measured on the hard set's dev half (77 questions, the
small profile, EmbeddingGemma 512-d memory of days 1–4, ``edge bench qa --questions hard
--split dev --answer``): the solver's written letters 0.532, the grounding alone 0.675,
the rule **0.688** (one-day 0.675 → 0.750, multi-day 0.378 → 0.622; 28 letters replaced,
17 made right, 5 made wrong). Margins from 0 to 0.12 all gave 0.649–0.688 (offline, the
same notes): the rule is not balanced on its margin. On the test half, run once after
that: 0.584 → **0.597** (25 replaced, 9 made right, 8 made wrong; the grounding alone
0.584) — the dev gain was mostly that half's luck. It gains on who/what questions and
loses on order questions, whose options all happened near the moment asked about (on
dev those gained most). The options are compared where they are said, so a question
whose options are bare verdicts ("Yes"/"No") is left alone. Other forms measured on dev
only (the question's cosine weighted 0.5–3, the option's taken relative to the other
options', ten anchors' evidence): 0.610–0.740 with the solver's letter over 60 settings,
the steadiest 1–3 questions of 77 above this one — noise, so this form stays (docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .evidence import Packed
from .hints import moment
from .question import Run

CITED_NOTES = 2
"""Notes cited for a replaced letter: those whose clips ground its option best."""

GROUNDING_MARGIN = 0.06
"""How much more grounding (a sum of two cosines, so −2…2) another option needs than the
solver's own to replace it: chosen on the dev half (0.04–0.07 within one question of
each other), not on test."""


VERDICT_WORDS = frozenset({"yes", "no", "true", "false", "maybe", "unknown", "not sure",
                           "i don't know", "none of the above"})
"""Options that say nothing the evidence could show (a verdict, not a thing): a question
whose options are all such words is not grounded."""


def groundable(choices: list[str]) -> bool:
    """Whether the options name something a clip can say (at least one is not a bare
    verdict such as "Yes"/"No": :data:`VERDICT_WORDS`)."""
    return any(" ".join(str(c).lower().strip(" .!?").split()) not in VERDICT_WORDS
               for c in choices)


@dataclass(frozen=True)
class Grounding:
    """The options' grounding in the evidence: ``clip_ids`` (m,) the evidence clips that
    have key vectors, ascending; ``per_clip`` (m, options) float32, each clip's grounding
    of each option (the question's best key cosine plus the option's, −2…2)."""

    clip_ids: list[int]
    per_clip: np.ndarray

    @property
    def scores(self) -> list[float]:
        """Each option's grounding, the best clip's (rounded to 4 places), in order."""
        return [round(float(v), 4) for v in self.per_clip.max(axis=0)]

    def best_clips(self, option: int, k: int = 2) -> list[int]:
        """The ``k`` clip ids that ground option number ``option`` (from 0) best, best
        first."""
        order = np.argsort(-self.per_clip[:, option], kind="stable")[:k]
        return [self.clip_ids[int(i)] for i in order]


def option_grounding(memory, embedder, question: str, choices: list[str],
                     clip_ids: list[int]) -> Grounding | None:
    """The :class:`Grounding` of each option in the evidence clips ``clip_ids`` (module
    docstring; ``None`` when no clip has a key vector, or the options are only verdicts:
    :func:`groundable`). ``memory``: a :class:`~edge.store.Memory`; ``embedder`` the one
    that wrote its vectors (``ValueError`` for another width)."""
    if not choices or not groundable(choices):
        return None
    owners, keys = memory.clip_key_vectors(clip_ids)
    if not len(owners):
        return None
    vecs = np.asarray(embedder.embed([question, *[" ".join(str(c).split()) for c in choices]],
                                     query=True), np.float32)
    if vecs.shape[1] != keys.shape[1]:
        raise ValueError(f"{vecs.shape[1]}-d queries against {keys.shape[1]}-d key vectors: "
                         "embed with the memory's own embedder")
    sims = keys @ vecs.T  # (keys, 1 + options)
    clips, row_clip = np.unique(owners, return_inverse=True)
    best = np.full((len(clips), sims.shape[1]), -np.inf, np.float32)
    np.maximum.at(best, row_clip, sims)  # per clip, per query: the best key
    return Grounding([int(c) for c in clips], best[:, :1] + best[:, 1:])


def grounded_letter(letter: str, letters: list[str], grounding: list[float],
                    margin: float = GROUNDING_MARGIN) -> str:
    """The answer letter: ``letter`` (the solver's), unless another option's grounding
    exceeds its own by more than ``margin`` — then the best-grounded option's letter. A
    ``letter`` that is not an option, with grounding, becomes the best-grounded one;
    without grounding (``[]``) ``letter`` is returned as it is."""
    if not grounding or len(grounding) != len(letters):
        return letter
    best = letters[int(np.argmax(grounding))]
    if letter not in letters:
        return best
    return best if grounding[letters.index(best)] - grounding[letters.index(letter)] > margin \
        else letter


def ground_reply(run: Run, reply: dict, packed: list[Packed]) -> dict:
    """A multiple-choice reply (``answer`` a letter) checked by the evidence's grounding
    (:func:`option_grounding` over every evidence clip of ``run``; :func:`grounded_letter`):
    the reply with ``grounding`` (letter → score) added, and — when another option is
    better grounded by more than the margin — that option as its ``answer``, the solver's
    letter as ``solver_answer``, a ``reason`` that names the moment grounding it best
    ("DAY1 12:58 is the moment most about the question that names this option (grounding B
    1.26; C 1.16, the solver's choice)"), and as ``cited``/``cited_clips``
    the notes of ``packed`` whose clips ground that option best (up to
    :data:`CITED_NOTES`; no solver call). A grounding that cannot be computed leaves the
    reply as it is, with a remark."""
    o = run.opts
    try:
        g = option_grounding(run.memory, run.embedder, run.question, list(o.choices),
                             list(run.evidence.items))
    except ValueError as e:
        run.note.remark(f"the options were not checked against the evidence ({e})")
        return reply
    if g is None:
        return reply
    scores = g.scores
    solver = str(reply.get("answer", "")).strip()
    letter = grounded_letter(solver, o.letters, scores)
    out = {**reply, "grounding": dict(zip(o.letters, scores, strict=True))}
    if letter == solver:
        return out
    i = o.letters.index(letter)
    theirs = (f"{solver} {scores[o.letters.index(solver)]:.2f}, the solver's choice"
              if solver in o.letters else f"the solver's reply {solver!r} is not an option")
    note_of = {p.item.clip.id: n for n, p in enumerate(packed, 1)}
    shown = [c for c in g.best_clips(i, len(g.clip_ids)) if c in note_of][:CITED_NOTES]
    run.note.remark(f"the solver chose {solver or 'nothing'}; the evidence grounds {letter} "
                    "better, so the answer is " + letter)
    said = (f"{moment(run.evidence.items[shown[0]].clip.t_start)} is the moment most "
            "about the question that names this option" if shown
            else "the notes ground this option best")
    return {**out, "answer": letter, "solver_answer": solver,
            "cited": [note_of[c] for c in shown], "cited_clips": shown,
            "reason": f"{said} (grounding {letter} {scores[i]:.2f}; {theirs})"}
