"""Benchmarks behind ``edge bench``: measure retrieval and answering on a question set.

``edge bench qa`` (:func:`~edge.bench.run.run_qa`) takes any question file in the EgoLifeQA
format (:mod:`~edge.bench.questions`: loader, validation, the named sets ``easy``/``hard``),
builds or reuses a memory of its caption file, and reports round-1 retrieval exactly as
``edge ask`` runs it (:mod:`~edge.bench.qa`: MERIT hit rate@Δ, all-targets, R@10, nDCG@10,
ms) and, with ``--answer``, the answer loop (:mod:`~edge.bench.answering`), each as totals
and per type, tag and part. :mod:`~edge.bench.levers` reads ``--set`` (any
:class:`~edge.answer.options.AskOptions` field); :mod:`~edge.bench.report` prints Markdown.
"""

from .questions import NAMED_SETS, QAQuestion, load_questions, select
from .run import Plan, plan, run_qa

__all__ = ["NAMED_SETS", "Plan", "QAQuestion", "load_questions", "plan", "run_qa", "select"]
