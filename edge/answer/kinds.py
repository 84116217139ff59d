"""What kind of answer an open question asks for, and whether an answer gives it (issue 42
item 3): "how much were the konjac noodles?" wants an amount, "who …?" a person; an answer
that only says the question's own words back ("Konjac noodles", "strawberry planting kit")
gives nothing. No model call; :func:`edge.answer.steps.insist` asks the solver once more,
over the same notes, when an answer misses its kind."""

from __future__ import annotations

import re

from .quotes import own_terms

NUMBER_Q = re.compile(
    r"\bhow\s+(?:many|much|long|old|far|often|tall|big|high|heavy)\b|\bwhat\s+time\b|"
    r"\bwhat\s+(?:price|number|size)\b|\bcost\b", re.I)
"""A question whose answer is a number, an amount or a time."""

WHO_Q = re.compile(r"\b(?:who|whom|whose)\b", re.I)
"""A question whose answer is a person."""

WHERE_Q = re.compile(r"^\s*where\b|,\s*where\b|\bwhere\s+(?:did|do|does|was|were|is|are|had|"
                     r"have|will|would|should|could)\b", re.I)
"""A question whose answer is a place ("where did I brag I'd cut one before?"), not the
"where" of a clause ("the place where we ate")."""

_PRONOUNS = frozenset("i me we us you he she they him her them".split())


YES_NO_Q = re.compile(r"^\s*(?:did|do|does|was|were|is|are|can|could|should|will|would|have|"
                      r"has|had)\b", re.I)
"""A yes/no question: "yes" or "no" is an answer."""

_NUMBER_WORDS = re.compile(
    r"\d+(?:[.,]\d+)?|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve|twenty|thirty|forty|fifty|hundred|thousand|half|dozen|a few|several|once|"
    r"twice)\b", re.I)
_PERSON = re.compile(r"\b(?:I|me|myself|we|us|nobody|no one|everyone|everybody)\b|"
                     r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+\b|^[A-Z][a-z]+\b(?=[\s,.;:!]|$)")
NOT_STATED = re.compile(r"\bnot\s+stated\b|\bno\s+note\b|\bnot\s+(?:mentioned|say|said)\b",
                        re.I)
"""An answer that says the notes do not hold it."""


def only_people(answer: str, people: frozenset[str]) -> bool:
    """Whether ``answer`` names only people: pronouns or the known ``people``' names
    (lowercased), joined by commas or "and" ("Alice", "I", "Tasha and me")."""
    parts = [p for p in re.split(r"\s*(?:,|\band\b|&)\s*", answer.strip(" .!").lower()) if p]
    return bool(parts) and all(p in _PRONOUNS or p in people for p in parts)


def missing_kind(question: str, answer: str, people: frozenset[str] = frozenset()) -> str:
    """What ``answer`` fails to give that ``question`` asks for — ``"the number"``, ``"who
    it was"``, ``"where it was"`` (a place asked, only people named: pronouns or the known
    ``people``, lowercased names) or ``"the answer itself"`` (it only says the question's
    words back) — or ``""`` when it gives it (any answer to a yes/no question; an answer
    saying the notes do not hold it)."""
    text = answer.strip()
    if not text or NOT_STATED.search(text) or YES_NO_Q.search(question):
        return ""
    if NUMBER_Q.search(question) and not _numbers(text) - _numbers(question):
        return "the number"  # "One SGD can take the bus" repeats the question's number
    if WHO_Q.search(question) and not _PERSON.search(text):
        return "who it was"
    if WHERE_Q.search(question) and not WHO_Q.search(question) and only_people(text, people):
        return "where it was"  # "Alice" for "where did I say I'd cut one before?"
    if not own_terms(text, question) and not WHO_Q.search(question):
        return "the answer itself"
    return ""


def _numbers(text: str) -> set[str]:
    """The numbers and amount words of ``text``, lowercased."""
    return {m.group(0).lower() for m in _NUMBER_WORDS.finditer(text)}
