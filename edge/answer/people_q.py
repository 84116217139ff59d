"""Questions about people that the character memory answers from appearances (issue 43
item 5): "when did I last see Alice?", "who was with me at lunch?", "who said we should
leave at six?".

Pure parsing: :func:`person_question` reads the question against the names the memory's
identities carry; :mod:`edge.answer.people` answers it from the appearances (PyraVid's
character memory, M3-Agent's face/voice-grounded entities) instead of word overlap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Ask = Literal["last", "first", "did", "with", "said"]

_SEE = r"(?:see|seen|saw|meet|met|run\s+into|ran\s+into|bump\s+into|talk\s+(?:to|with)|" \
       r"speak\s+(?:to|with)|hear|heard|spot|spotted)"
_I_SAW = rf"(?:did|have|had|was)\s+(?:i|we)\s+(?:(?P<o1>last|first)\s+)?{_SEE}\s+(?P<name>.+?)"
"""…"did I (last) see NAME", the part "when"/"where" questions share."""
_WHEN_SEEN = re.compile(
    rf"^\s*when\s+{_I_SAW}(?:\s+(?P<o2>last|first)(?:\s+time)?|\s+for\s+the\s+"
    rf"(?P<o3>first|last)\s+time)?\s*[?.!]*\s*$", re.I)
_LAST_TIME = re.compile(
    rf"^\s*when\s+was\s+the\s+(?P<o1>last|first)\s+time\s+(?:that\s+)?(?:i|we)\s+{_SEE}\s+"
    rf"(?P<name>.+?)\s*[?.!]*\s*$", re.I)
_WHEN_WAS_HERE = re.compile(
    r"^\s*when\s+was\s+(?P<name>.+?)\s+(?P<o1>last|first)\s+(?:here|around|with\s+(?:me|us)|"
    r"seen|heard)\s*[?.!]*\s*$", re.I)
_SCOPE_TAIL = r"(?:\s+(?:today|tonight|yesterday|this\s+\w+|last\s+night|at\s+.+|on\s+.+|" \
              r"since\s+.+|after\s+.+|before\s+.+|during\s+.+|earlier))?"
_DID_SEE = re.compile(
    rf"^\s*(?:did|have|had)\s+(?:i|we)\s+(?:ever\s+|already\s+)?{_SEE}\s+(?P<name>.+?)"
    rf"{_SCOPE_TAIL}\s*[?.!]*\s*$", re.I)
_WHERE_SEEN = re.compile(
    rf"^\s*where\s+{_I_SAW}(?:\s+(?P<o2>last|first)(?:\s+time)?)?{_SCOPE_TAIL}\s*[?.!]*\s*$",
    re.I)
_WITH = re.compile(
    r"^\s*who\s+(?:(?:was|were)\s+(?:with\s+(?:me|us)|there|around|present)|"
    r"(?:did|have)\s+(?:i|we)\s+(?:see|seen|meet|met)|(?:was|were)\s+at)\b", re.I)
_SAID = re.compile(
    r"^\s*who\s+(?:said|says|asked|told\s+(?:me|us)|suggested|mentioned|proposed|"
    r"was\s+(?:saying|talking\s+about))\b\s*(?P<what>.*?)\s*[?.!]*\s*$", re.I)


@dataclass(frozen=True)
class PersonQuestion:
    """A question the character memory answers: ``ask`` is ``last``/``first`` (when or
    where was ``name`` seen or heard), ``did`` (was ``name`` seen or heard at all in the
    question's scope: "did I see Alice today?"), ``with`` (who appeared in the question's
    time scope) or ``said`` (whose voice said ``what``); ``name`` the identity's name as
    stored (for ``last``/``first``/``did``), ``what`` the words said (for ``said``)."""

    ask: Ask
    name: str = ""
    what: str = ""


def _norm(text: str) -> str:
    text = re.sub(r"['\u2019]s\b", "", text.lower())
    return " ".join(re.sub(r"[^\w\s-]", " ", text).split())


def match_name(text: str, names: Iterable[str]) -> str | None:
    """The stored name ``text`` refers to: the whole name (any case, ``'s`` and
    punctuation ignored), else the one name whose first or last word ``text`` is (so
    "Obama" finds "Barack Obama"; two names sharing the word match neither). ``None``
    when no stored name fits."""
    t = _norm(text)
    t = re.sub(r"^(?:the\s+|my\s+friend\s+|mr\.?\s+|ms\.?\s+|mrs\.?\s+|dr\.?\s+)", "", t)
    names = [n for n in names if n and n.strip()]
    whole = [n for n in names if _norm(n) == t]
    if whole:
        return whole[0]
    part = [n for n in names if t and t in {_norm(n).split()[0], _norm(n).split()[-1]}]
    return part[0] if len(part) == 1 else None


def person_question(question: str, names: Iterable[str]) -> PersonQuestion | None:
    """The :class:`PersonQuestion` ``question`` asks, or ``None`` when it is not one the
    character memory answers (then the ordinary loop does). ``names``: the names of the
    memory's identities; a "when did I last see X" whose X is none of them is ``None``
    (the word-based loop may still find X in captions)."""
    names = list(names)
    m = _DID_SEE.match(question)
    if m:
        name = match_name(m.group("name"), names)
        return PersonQuestion("did", name) if name else None
    for rx in (_WHEN_SEEN, _LAST_TIME, _WHEN_WAS_HERE, _WHERE_SEEN):
        m = rx.match(question)
        if m:
            gd = m.groupdict()
            order = next((gd[k] for k in ("o1", "o2", "o3") if gd.get(k)), "last").lower()
            name = match_name(m.group("name"), names)
            return PersonQuestion(order, name) if name else None  # type: ignore[arg-type]
    m = _SAID.match(question)
    if m and m.group("what"):
        return PersonQuestion("said", what=m.group("what"))
    if _WITH.match(question):
        return PersonQuestion("with")
    return None
