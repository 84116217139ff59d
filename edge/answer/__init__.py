"""Answering a question from memory: the bounded agent loop (MERIT §3.2, Appendix 0.A).

Before round 1 the question's time scope is fixed (:func:`resolve_scope`). With
``decompose`` one solver call splits the question into atomic sub-queries (MARQUIS §3.1)
searched next to the question and fused.

``loop="merit"`` (default), round r ≤ R (:func:`ask` reads as these steps, one function
each in :mod:`edge.answer.steps`):
  1. retrieve the top-N anchor clips for the round's queries (max-sim over keys, MERIT
     Eq. 6–7, fused by RRF with BM25 when ``retrieval="hybrid"``), add the ±Δ neighbors
     (Eq. 8);
  2. neighbor filtering (Eq. 9): ONE batched solver call keeps, per new anchor, only what
     the question needs;
  3. with a pyramid, PyraVid §3.3 expansion and one pruning call;
  4. sufficiency: one solver call reads the filtered evidence so far and says whether it
     suffices, else writes the next search query (skipped in the last round, whose
     evidence goes to the answer anyway).
  Then one final answer call cites the evidence; frames of the anchors go with it only to a
  solver that takes images and is allowed them (adaptive budget, MERIT Appendix 0.A).
  Calls: 2 per round (1 in the last) + 1, plus 1 for decomposition.

``loop="single"``: one call per round answers and decides together over the raw captions
(``neighbor_filter`` optionally adds the filter call) — the cheapest loop for slow CPUs.

The answer's citations are then checked: against the evidence text by a word rule
(:mod:`~edge.answer.citations`), and for an open question each cited clip against the
answer by the report checker's support judge (:mod:`~edge.answer.support`, MARQUIS §4.4):
a clip under its bar is no longer cited, and with none left the answer is "not found in
memory".

Evidence accumulates across rounds without duplicates and is packed into a token budget
(anchors first, by rank: :class:`Evidence`) so no prompt ever overflows the solver's
context.

Modules: :mod:`~edge.answer.options` (:class:`AskOptions`), :mod:`~edge.answer.records`
(what is returned), :mod:`~edge.answer.evidence` (accumulating and packing evidence),
:mod:`~edge.answer.scope` (checks and time scope before any model),
:mod:`~edge.answer.question` (prompt frame, the run's state), :mod:`~edge.answer.steps`
(one function per step), :mod:`~edge.answer.loop` (:func:`ask`),
:mod:`~edge.answer.citations` and :mod:`~edge.answer.support` (the citation checks).
"""

from edge.errors import AskError

from .evidence import Evidence, Item, Packed, Priority, frame_budget
from .loop import ask
from .options import LOOPS, AskOptions
from .records import Answer, Moment, Round
from .scope import resolve_scope

__all__ = [
    "LOOPS",
    "Answer",
    "AskError",
    "AskOptions",
    "Evidence",
    "Item",
    "Moment",
    "Packed",
    "Priority",
    "Round",
    "ask",
    "frame_budget",
    "resolve_scope",
]
