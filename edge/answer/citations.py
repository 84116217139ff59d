"""Citations that hold: an answer's cited clips checked against the evidence text, by a
deterministic word rule (no model call), before the answer is returned (issue 10 item 1).

The rule, in order:

1. **The answer's terms.** Its *strong* terms are the strings it quotes (``"OPEN 9-5"``,
   ``“…”``, ``'…'``; a quoted ``'96'`` too: it is the screen text the answer relies on)
   and its unquoted numbers of 3+ digits (or of 1-2 digits that an evidence clip quotes
   whole, ``Visible text: "96"``); its *words* are the content words (3+
   characters, not a stopword, not a word of the question) compared by a crude stem
   (:func:`stem`), and its numbers of 1-2 digits. Clock times (``11:15:24``), dates
   (``2025-02-20``) and day labels (``DAY1``) are left out: the notes' headers carry them,
   no clip's text does. A term that more than half of the evidence clips hold (with 4 or
   more clips; e.g. ``30`` of ``Video, 30 s``) is not distinctive and is left out, unless
   that would leave no words at all.
2. **A clip's text** (:func:`clip_text`): its caption (with the visible text and speech
   the captioner wrote), transcript, what neighbor filtering kept from it, and its kept
   pyramid facts.
3. **Support.** Terms no evidence clip holds (the solver's own wording) are set aside.
   When some evidence clip holds a strong term, a clip supports the answer when it holds
   a strong term (the string the answer relies on is where it came from); otherwise when
   it holds at least ``min(2, words)`` of the answer's words and at least a third as many
   as the clip holding the most (so two boilerplate words such as ``scene changes`` do
   not make a clip support an answer another clip holds all of).
4. **The check.** A cited clip that does not support the answer is *dropped*. With strong
   terms an uncited evidence clip that holds one no citation holds yet is *added* (most
   new terms first, then the clips the answer read, then by priority; at most
   :data:`MAX_CITED` in all): the quoted string or long number is where the answer came
   from. With words alone nothing is added (issue 26 item 3): a clip that shares the
   answer's words is not support — asked at 13:00 "what did I eat for lunch?", the
   solver named a food and the clip that held the food's word had someone proposing it
   for the afternoon. When no cited clip supports the answer (whether or not another
   clip shares its words, which the summary then names), the solver's citations are kept
   and the check is *flagged*: the answer is unverified. An answer with no terms is not
   checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import NotRequired, TypedDict

import snowballstemmer

from edge.recall.retrieval import STOPWORDS
from models.repeats import norm_words as words

MAX_CITED = 6
"""The most citations an answer keeps (as many as the answer schema allows)."""

EXTRA_STOPWORDS = frozenset(
    "about after also been before but can could into its just not only other over said saw "
    "see seen some than that the their them then there these they this those through too "
    "very while will would yes".split()) | frozenset(
    # pronouns: "Her battery was too low" and "Your battery is too low" say the same
    "she he her his him hers herself himself we our ours us ourselves its itself myself "
    "yourself yourselves themselves".split()) | frozenset(
    # the solver's words about its prompt, not about the moment ("the notes clearly state…",
    # "note [9] mentions…"; "notes" would stem to "not"): found asking as a user
    "answer answers choice choices clearly mention mentioned mentions note noted notes option "
    "options question state stated states".split())
"""Words never counted as evidence on top of :data:`edge.recall.retrieval.STOPWORDS`: common
words, pronouns, and the solver's words about its notes and options."""

_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|(?<![\w])'([^']+)'(?![\w])")
_TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b|\b\d{4}-\d{2}-\d{2}\b|\bday\s*\d+\b",
                   re.IGNORECASE)
_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """``word`` lowercased and stemmed by the Snowball English (Porter2) stemmer:
    ``boiling``/``boils`` → ``boil``, ``drive``/``drives``/``driving`` → ``drive``,
    ``notes`` → ``note`` (never ``not``). A home-made suffix cut stemmed ``drives`` to
    ``driv`` beside ``drive`` (the citation check then said no clip held "drive" above a
    clip saying "hard drives": issue 42)."""
    return _STEMMER.stemWord(word.lower())


def quoted_strings(text: str) -> list[str]:
    """The strings ``text`` quotes (``"…"``, ``“…”``, ``'…'``), each as its lowercased words
    joined by spaces, in order."""
    return [" ".join(words(next(g for g in m.groups() if g is not None)))
            for m in _QUOTED.finditer(text)]


def content_stems(text: str, exclude: Iterable[str] = ()) -> list[str]:
    """The stems of ``text``'s content words, first occurrence order: 3+ characters, not
    a number, not a stopword, not in ``exclude`` (stems)."""
    skip = set(exclude)
    out = (stem(w) for w in words(text)
           if len(w) >= 3 and not w.isdigit() and w not in STOPWORDS and w not in EXTRA_STOPWORDS)
    return list(dict.fromkeys(s for s in out if s not in skip))


class Terms(TypedDict):
    """What an answer relies on: ``strong`` terms (quoted strings and numbers, as
    lowercased word sequences joined by spaces) and ``words`` (content-word stems)."""

    strong: list[str]
    words: list[str]


def answer_terms(answer: str, question: str = "") -> Terms:
    """The terms of ``answer`` by rule 1 of the module (before the distinctiveness cut)."""
    text = _TIME.sub(" ", answer)
    quoted = quoted_strings(text)
    numbers = [w for w in words(_QUOTED.sub(" ", text)) if w.isdigit()]
    strong = list(dict.fromkeys([*(q for q in quoted if q),
                                 *(n for n in numbers if not _short_number(n))]))
    small = list(dict.fromkeys(n for n in numbers if _short_number(n)))
    return Terms(strong=strong, words=[*content_stems(text, content_stems(question)), *small])


def _short_number(term: str) -> bool:
    """A number of 1 or 2 digits (``3 faces``, ``30 s``): too common to be a strong term."""
    return term.isdigit() and len(term) < 3


class ClipText:
    """A clip's evidence text prepared for matching: its word sequence and stems."""

    def __init__(self, text: str) -> None:
        self.seq = " " + " ".join(words(text)) + " "
        self.stems = {stem(w) for w in words(text)}
        self.quoted = set(quoted_strings(text))

    def holds(self, term: str, *, strong: bool) -> bool:
        """Whether the clip holds ``term``: a strong term as a whole-word sequence, a word
        stem as one of its stems."""
        return f" {term} " in self.seq if strong else term in self.stems


def clip_text(caption: str, transcript: str = "", kept: str = "",
              facts: Iterable[str] = ()) -> str:
    """The text a clip's citation is checked against (rule 2 of the module)."""
    return " ".join([caption, transcript, kept, *facts])


class CitationCheck(TypedDict):
    """What the check did (``Answer.citation_check``): the answer's ``terms``; the ``kept``,
    ``dropped`` and ``added`` clips with the terms each ``holds``; ``flagged`` when no cited
    clip holds the answer's terms; ``sharing``, when flagged, the uncited clips that hold
    them (named, never cited for that alone); ``checked`` is False when the answer had no
    terms; and ``summary``, the one line the CLI and the chat print. An open answer's
    check also has ``not_found`` (nothing held it: nothing cited, flagged) and, by
    ``AskOptions.open_check``, ``quotes`` and ``invented`` (the solver's quotes found in no
    clip; :func:`edge.answer.loop.check_held`) or ``support`` (cited clip id → the report
    checker's 0–1 judgement; :func:`edge.answer.loop.check_supported`)."""

    terms: list[str]
    checked: bool
    flagged: bool
    kept: list[dict]
    dropped: list[dict]
    added: list[dict]
    sharing: list[dict]
    summary: str
    support: NotRequired[dict[int, float]]
    not_found: NotRequired[bool]
    quotes: NotRequired[list[dict]]
    invented: NotRequired[list[str]]


def _distinctive(terms: Terms, texts: dict[int, ClipText]) -> tuple[list[str], list[str]]:
    """The strong terms and words of ``terms`` that at most half of ``texts`` hold (all
    of them with fewer than 4 clips); the words are all kept when none would be left."""
    n = len(texts)

    def rare(term: str, strong: bool) -> bool:
        return n < 4 or 2 * sum(c.holds(term, strong=strong) for c in texts.values()) <= n

    rare_words = [w for w in terms["words"] if rare(w, False)]
    return [t for t in terms["strong"] if rare(t, True)], rare_words or terms["words"]


def _fmt(terms: list[str], most: int = 4) -> str:
    shown = ", ".join(f'"{t}"' for t in terms[:most])
    return shown + (f" and {len(terms) - most} more" if len(terms) > most else "")


def check_citations(answer: str, question: str, cited: list[int],
                    evidence: list[tuple[int, str]]) -> tuple[list[int], CitationCheck]:
    """The checked citations of ``answer`` and what the check did (rules 1, 3 and 4 of
    the module).

    Args:
        cited: the clip ids the solver cited, in its order.
        evidence: every evidence clip as ``(clip id, text)`` (:func:`clip_text`), in the
            order an added citation is preferred (the clips the answer read first).
    Returns:
        the final clip ids (kept citations in the solver's order, then added ones) and the
        :class:`CitationCheck`.
    """
    texts = {cid: ClipText(t) for cid, t in evidence}
    terms = answer_terms(answer, question)
    # a 1-2 digit number that a clip quotes whole (Visible text: "96") is screen text
    quoted_small = [w for w in terms["words"]
                    if _short_number(w) and any(w in c.quoted for c in texts.values())]
    strong, ws = _distinctive(Terms(strong=[*terms["strong"], *quoted_small],
                                    words=terms["words"]), texts)
    strong = [t for t in strong if any(c.holds(t, strong=True) for c in texts.values())]
    ws = [w for w in ws if any(c.holds(w, strong=False) for c in texts.values())] or ws
    terms, is_strong = (strong, True) if strong else (ws, False)
    if not terms:
        return cited, _record([], cited, [], [], {}, checked=False, flagged=False)
    most = max((sum(c.holds(t, strong=False) for t in terms) for c in texts.values()),
               default=0)
    need = 1 if is_strong else max(min(2, len(terms)), -(-most // 3))

    def holds(cid: int) -> list[str]:
        c = texts.get(cid)
        return [t for t in terms if c is not None and c.holds(t, strong=is_strong)]

    held = {cid: holds(cid) for cid in dict.fromkeys([*cited, *texts])}
    kept = [cid for cid in cited if len(held[cid]) >= need]
    dropped = [cid for cid in cited if cid not in kept]
    added: list[int] = []
    uncited = [cid for cid in texts if cid not in cited and len(held[cid]) >= need]
    if is_strong:  # a quoted string or long number came from the clip holding it
        covered = {t for cid in kept for t in held[cid]}
        pool = list(uncited)
        while pool and len(kept) + len(added) < MAX_CITED:
            best = max(pool, key=lambda c: (len(set(held[c]) - covered), -pool.index(c)))
            if not set(held[best]) - covered:
                break
            added.append(best)
            covered.update(held[best])
            pool.remove(best)
    if not kept and not added:  # no citation holds the answer's terms: keep, but say so
        return cited, _record(terms, cited, [], [], held, checked=True, flagged=True,
                              need=need, sharing=uncited)
    return [*kept, *added], _record(terms, kept, dropped, added, held, checked=True,
                                    flagged=False)


def _record(terms: list[str], kept: list[int], dropped: list[int], added: list[int],
            held: dict[int, list[str]], *, checked: bool, flagged: bool,
            need: int = 1, sharing: list[int] | None = None) -> CitationCheck:
    """The :class:`CitationCheck` with its one-line ``summary``; ``sharing``: uncited
    clips that hold the answer's words although no citation does (named, not cited)."""
    def rows(ids: list[int]) -> list[dict]:
        return [{"clip_id": cid, "holds": held.get(cid, [])} for cid in ids]

    if not checked:
        summary = "citations not checked: the answer has no distinctive words"
    elif flagged:
        which = "" if need == 1 else f"{need} of "
        given = f"the solver's citations ({', '.join(map(str, kept)) or 'none'})"
        if sharing:
            clips = ", ".join(map(str, sharing[:3])) + (" …" if len(sharing) > 3 else "")
            summary = (f"unverified: no cited clip holds {which}{_fmt(terms)}; clip "
                       f"{clips} shares those words but is not cited for that alone (a "
                       f"shared word is not support); {given} are shown as given")
        else:
            summary = (f"unverified: no evidence clip holds {which}{_fmt(terms)}; {given} "
                       "are shown as given")
    else:
        parts = [f"kept clip {', '.join(map(str, kept))}" if kept else "kept none"]
        parts += [f"dropped clip {cid} (holds "
                  + (f"only {_fmt(held[cid], 2)})" if held.get(cid) else "none of them)")
                  for cid in dropped]
        parts += [f"added clip {cid} (holds {_fmt(held[cid], 2)})" for cid in added]
        summary = f"citations checked against {_fmt(terms)}: " + "; ".join(parts)
    return CitationCheck(terms=terms, checked=checked, flagged=flagged, kept=rows(kept),
                         dropped=rows(dropped), added=rows(added),
                         sharing=rows(sharing or []), summary=summary)
