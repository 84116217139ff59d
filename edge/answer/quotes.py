"""Answers held by quotes (issue 42 item 1): an open answer is tied to the sentences of its
clips that state it, and the program — not a model — checks the tie.

The solver answers an open question with up to three quotes, each the words of one note
copied (:data:`edge.prompts.OPEN_INSTRUCTION`), then the answer taken from them. The rule,
in order:

1. **Locate** (:func:`locate`). A quote is found in an evidence clip's text (caption,
   transcript, what filtering kept, kept facts; :func:`~edge.answer.citations.clip_text`)
   as the same run of words (case, punctuation and quote marks ignored), first in the
   note it names, then in any evidence clip; else as the sentence (or two) of an evidence
   clip holding at least :data:`FUZZY_SHARE` of its words in order (``difflib``). A quote
   found nowhere is dropped: the solver invented it. A located quote stands for the whole
   sentences of the clip it lies in (:func:`~edge.answer.distill.sentences`: a speaker is
   kept with their words).
2. **Hold** (:func:`own_terms`). The answer's *own* terms — its quoted strings, numbers
   and content-word stems (Snowball) that are not the question's — must be in a located
   quote's sentences. A quote that holds only the question's words (its subject) holds
   nothing: "I write on the whiteboard" does not say who I talked to about it.
3. **Turned down** (:func:`rejects`). A term is turned down when the quote's sentence, or
   a later sentence of the same clip or of the next clip (≤ :data:`NEXT_CLIP_GAP` seconds
   on), holds it beside a rejection cue (:data:`REJECTION`: "too much", "troublesome",
   "skip", "instead", "don't want" …, not any negation): "BBQ is too much … ordering
   pizza might work" does not support "BBQ". People's names are never turned down (a
   person saying "no" is not rejected), and nothing is when the question or the answer
   itself is negative ("who said she didn't want a burger?").
4. **Found** (:func:`find_quotes`). When no quote of the solver holds the answer, the
   sentences of the clips the answer read are searched for one that holds its own terms
   *and* is about the question: it, or the sentence before or after it in the same clip,
   holds one of the question's content words other than its generic verbs (a stem, or
   one word the start of the other: "screwed" / "screwdriver"). A name and a topic word
   fifteen sentences apart in one clip are not an answer, nor is "I talk to Tasha" one
   about the whiteboard. A found quote holds at least half as many of the answer's terms as
   the best found.

An answer is *held* when at least one quote (the solver's or found) holds an own term
that is not turned down; its clips are the citations. An answer with no own terms at all
("Yes.", "I") is held by a quote that holds at least half of the question's content words
(its generic verbs aside). Numbers count as digits whether written "4" or "four"; a quote
copied across a note's "…" is located piece by piece.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import TypedDict

from edge.store.entity_extract import acting_names
from models.repeats import norm_words as words

from .citations import answer_terms, content_stems, stem
from .distill import sentences

FUZZY_SHARE = 0.8
"""The share of a quote's words a clip's sentence(s) must hold in order (``difflib``) to
locate a quote that is not copied word for word."""

NEXT_CLIP_GAP = 60.0
"""Seconds after a clip's end within which the next clip can still turn a quote down."""

MAX_QUOTES = 3
"""The most quotes of the solver an answer keeps (the reply schema allows two)."""

MAX_FOUND = 2
"""The most quotes the program finds for an answer none of the solver's quotes hold."""

REJECTION = re.compile(
    r"\b(?:too\s+(?:much|many|expensive|troublesome|tiring|far|late|hard|big|small)|"
    r"troublesome|tiring|skip|skipped|cancel|cancelled|canceled|instead|rather\s+than|"
    r"forget\s+(?:it|about)|no\s+need|not\s+really|give\s+up|gave\s+up|let['’]?s\s+not|"
    r"don['’]?t\s+want|doesn['’]?t\s+want|didn['’]?t\s+want|no\s+way)\b", re.I)
"""Words that turn down what a sentence names — a proposal set aside ("BBQ is too much",
"let's skip the BBQ", "I don't want a burger") — rather than any negation: "if I turn it
off, the data won't transfer" states a reason, it turns nothing down."""

_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_GAP = re.compile(r"\s*(?:…|\.\.\.)\s*")


class QuoteRow(TypedDict):
    """One quote as the check reports it: the ``clip_id`` it lies in, its ``text`` (the
    clip's whole sentences holding it), what the solver wrote (``given``; ``""`` for a
    quote the program found), the answer's own terms it ``holds`` and those a sentence
    ``turned_down``, and whether it ``supports`` the answer."""

    clip_id: int
    text: str
    given: str
    holds: list[str]
    turned_down: list[str]
    supports: bool


@dataclass
class ClipSentences:
    """One evidence clip's text as sentences, with each sentence's words and stems, and
    the stems of the people seen speaking or acting in it (``people``)."""

    clip_id: int
    t_start: float
    t_end: float
    sents: list[str]
    words: list[list[str]] = field(init=False)
    stems: list[set[str]] = field(init=False)
    people: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.words = [words(s) for s in self.sents]
        self.stems = [{_NUMBER_WORDS.get(w) or stem(w) for w in ws} for ws in self.words]
        self.people = {stem(w) for n in acting_names(" ".join(self.sents)) for w in n.split()}

    @classmethod
    def of(cls, clip_id: int, text: str, t_start: float = 0.0,
           t_end: float = 0.0) -> ClipSentences:
        """The sentences of ``text`` (:func:`~edge.answer.distill.sentences`)."""
        return cls(clip_id, t_start, t_end, sentences(" ".join(text.split())))


def locate(given: str, clips: Sequence[ClipSentences],
           prefer: int | None = None) -> tuple[int, int, int] | None:
    """Where the quote ``given`` lies: ``(index into clips, first sentence, last
    sentence)`` (rule 1 of the module), the clip ``prefer`` (a clip id: the note the
    solver named) tried first; ``None`` when no clip holds it."""
    q = words(given)
    if not q:
        return None
    order = sorted(range(len(clips)), key=lambda i: clips[i].clip_id != prefer)
    for i in order:
        span = _exact(q, clips[i])
        if span is not None:
            return (i, *span)
    best, where = (0.0, 0), None
    for i in order:
        for span, share, extra in _fuzzy(q, clips[i]):
            if (share, -extra) > best:  # the most of the quote in the fewest other words
                best, where = (share, -extra), (i, *span)
    return where if best[0] >= FUZZY_SHARE else None


def _exact(q: list[str], clip: ClipSentences) -> tuple[int, int] | None:
    """The sentences of ``clip`` that hold the word run ``q``, or ``None``."""
    flat = [(k, w) for k, ws in enumerate(clip.words) for w in ws]
    seq = [w for _, w in flat]
    n = len(q)
    for j in range(len(seq) - n + 1):
        if seq[j:j + n] == q:
            return flat[j][0], flat[j + n - 1][0]
    return None


def _fuzzy(q: list[str], clip: ClipSentences):
    """Each window of one or two consecutive sentences of ``clip`` with the share of the
    quote's words it holds in order and how many words it has besides."""
    for k in range(len(clip.sents)):
        for last in (k, k + 1):
            if last >= len(clip.sents):
                continue
            seq = [w for ws in clip.words[k:last + 1] for w in ws]
            m = SequenceMatcher(None, q, seq, autojunk=False)
            held = sum(b.size for b in m.get_matching_blocks())
            yield (k, last), held / len(q), len(seq) - held


def own_terms(answer: str, question: str) -> list[str]:
    """The answer's own terms (rule 2 of the module): its quoted strings and long numbers
    (as word sequences), then its content-word stems and short numbers that are not the
    question's."""
    terms = answer_terms(answer, question)
    q_stems = set(content_stems(question)) | set(numbers(question))
    words_ = [_NUMBER_WORDS.get(w, w) for w in terms["words"]] + numbers(answer)
    return list(dict.fromkeys([*terms["strong"], *(w for w in words_ if w not in q_stems)]))


def numbers(text: str) -> list[str]:
    """The numbers ``text`` writes in words ("four" → ``"4"``), as digits."""
    return [_NUMBER_WORDS[w] for w in words(text) if w in _NUMBER_WORDS]


def holds(clip: ClipSentences, first: int, last: int, term: str) -> bool:
    """Whether sentences ``first``…``last`` of ``clip`` hold ``term`` (a stem, or a word
    sequence for a quoted string or number)."""
    if " " in term:
        seq = " " + " ".join(w for ws in clip.words[first:last + 1] for w in ws) + " "
        return f" {term} " in seq
    return any(term in clip.stems[k] for k in range(first, last + 1))


def rejects(sentence: str, term: str) -> bool:
    """Whether ``sentence`` turns ``term`` down: it holds the term (stem) and a
    :data:`REJECTION` cue."""
    if term not in {stem(w) for w in words(sentence)} and f" {term} " not in \
            f" {' '.join(words(sentence))} ":
        return False
    return bool(REJECTION.search(sentence))


def negative(text: str) -> bool:
    """Whether ``text`` (a question or an answer) is itself about a refusal or absence."""
    return bool(REJECTION.search(text))


GENERIC_VERBS = frozenset(stem(w) for w in (
    "talk talking talked say said tell told ask asked speak spoke chat do did done doing go "
    "went going use used get got make made take took see saw look looked come came want "
    "wanted put have had give gave think know knew happen happened help helped start "
    "started finish finished try tried keep kept mention mentioned").split())
"""Verbs a question shares with any sentence ("who was I *talking* to about the
whiteboard?"): they never make a sentence about the question."""


def _related(q_stems: set[str], stems: set[str]) -> bool:
    """Whether a sentence's ``stems`` share one of the question's, its generic verbs aside
    (:data:`GENERIC_VERBS`): the same stem, or one the start of the other (5+ characters:
    "screw" / "screwdriv")."""
    q_stems = q_stems - GENERIC_VERBS
    if q_stems & stems:
        return True
    return any(len(a) >= 5 and len(b) >= 5 and (a.startswith(b) or b.startswith(a))
               for a in q_stems for b in stems)


@dataclass
class QuoteCheck:
    """What :func:`check_quotes` found: the quotes, the answer's own ``terms``, whether the
    answer is ``held``, the clip ids to cite (those of supporting quotes, in order) and the
    solver's quotes that were found nowhere (``invented``)."""

    terms: list[str]
    quotes: list[QuoteRow]
    held: bool
    cited: list[int]
    invented: list[str]

    def summary(self) -> str:
        """One line: which quote holds the answer, or why none does."""
        if self.held:
            q = next(q for q in self.quotes if q["supports"])
            text = q["text"] if len(q["text"]) <= 160 else q["text"][:157].rstrip() + "…"
            more = len([x for x in self.quotes if x["supports"]]) - 1
            also = f" (and {more} more quote{'s' * (more > 1)})" if more > 0 else ""
            return f"held by clip {q['clip_id']}: “{text}”{also}"
        why = []
        down = sorted({t for q in self.quotes for t in q["turned_down"]})
        if down:
            why.append(f"what the quotes name ({', '.join(down)}) is turned down there")
        elif self.quotes:
            why.append("no quote states the answer's own words "
                       f"({', '.join(self.terms[:4]) or 'none'})")
        else:
            why.append("no note was quoted for it")
        if self.invented:
            why.append(f"{len(self.invented)} quote(s) the solver gave are in no clip")
        return "not found in memory: " + "; ".join(why)


def check_quotes(answer: str, question: str, given: Sequence[tuple[int | None, str]],
                 clips: Sequence[ClipSentences], read: Sequence[int] = (),
                 people: frozenset[str] = frozenset()) -> QuoteCheck:
    """The quotes of an open ``answer`` checked against the evidence (the module's rules).

    Args:
        given: the solver's quotes as ``(clip id of the note it names or None, text)``.
        clips: every evidence clip's sentences, in timeline order.
        read: the clip ids whose notes the answer read (where quotes are found, rule 4;
            none searched when empty: the solver said no note states it).
        people: stems of people's names (never turned down), besides those seen speaking
            or acting in a quote's clip (:func:`~edge.store.entity_extract.acting_names`).
    Returns:
        the :class:`QuoteCheck`; ``cited`` holds at most :data:`MAX_QUOTES` clip ids.
    """
    terms = own_terms(answer, question)
    neg = negative(question) or negative(answer)
    rows, invented = [], []
    for clip_id, text in given[:MAX_QUOTES]:
        parts = [p for p in _GAP.split(text) if words(p)]  # a note's "…" joins its pieces
        spots = [locate(p, clips, clip_id) for p in parts]
        if not parts or any(w is None for w in spots):
            invented.append(text)
            continue
        rows += [_row(clips, where, p, terms, question, neg, people)
                 for p, where in zip(parts, spots)]
    if not any(r["supports"] for r in rows) and read:
        looked = {r["clip_id"] for r in rows} | {c for c, _ in given if c is not None}
        rows += find_quotes(answer, question, clips, read, terms, neg, people, looked)
    rows = _dedupe(rows)
    cited = list(dict.fromkeys(r["clip_id"] for r in rows if r["supports"]))[:MAX_QUOTES]
    return QuoteCheck(terms, rows, bool(cited), cited, invented)


def _row(clips: Sequence[ClipSentences], where: tuple[int, int, int], given: str,
         terms: list[str], question: str, neg: bool, people: frozenset[str]) -> QuoteRow:
    """A located quote as a :class:`QuoteRow` (rules 2 and 3)."""
    i, first, last = where
    clip = clips[i]
    if terms:
        held = [t for t in terms if holds(clip, first, last, t)]
    else:  # "Yes.": held by a quote that holds most of what the question asks about
        q_stems = set(content_stems(question)) - GENERIC_VERBS
        held = sorted(q_stems & set().union(*clip.stems[first:last + 1]))
        if 2 * len(held) < len(q_stems):
            held = []
    down = [] if neg or not terms else [t for t in held if t not in people | clip.people
                                        and _turned_down(clips, where, t)]
    return QuoteRow(clip_id=clip.clip_id, text=" ".join(clip.sents[first:last + 1]),
                    given=given, holds=held, turned_down=down,
                    supports=bool(set(held) - set(down)))


def _turned_down(clips: Sequence[ClipSentences], where: tuple[int, int, int],
                 term: str) -> bool:
    """Whether ``term`` is rejected in the quote's sentences, a later sentence of its clip
    or a sentence of the next clip (rule 3)."""
    i, first, _ = where
    clip = clips[i]
    later = clip.sents[first:]
    if i + 1 < len(clips) and 0 <= clips[i + 1].t_start - clip.t_end <= NEXT_CLIP_GAP:
        later = [*later, *clips[i + 1].sents]
    return any(rejects(s, term) for s in later)


def find_quotes(answer: str, question: str, clips: Sequence[ClipSentences],
                read: Sequence[int], terms: list[str], neg: bool,
                people: frozenset[str], looked: set[int] = frozenset()) -> list[QuoteRow]:
    """Sentences of the clips in ``read`` that hold the answer's own ``terms`` and are
    about the question (rule 4), as supporting or turned-down quotes: the sentences holding
    the most terms first, then those in or next to a clip the solver quoted or named
    (``looked``: where it read its answer from), at most :data:`MAX_FOUND`, each holding at
    least half as many as the best ("gives" alone does not find a second quote for "give …
    a daffodil bulb")."""
    if not terms:
        return []
    q_stems = set(content_stems(question))
    wanted = set(read)
    near_looked = {i + d for i, c in enumerate(clips) if c.clip_id in looked for d in (-1, 0, 1)}
    found = []
    for i, clip in enumerate(clips):
        if wanted and clip.clip_id not in wanted:
            continue
        for k in range(len(clip.sents)):
            n = sum(holds(clip, k, k, t) for t in terms)
            if not n:
                continue
            near = range(max(0, k - 1), min(len(clip.sents), k + 2))
            if not any(_related(q_stems, clip.stems[j]) for j in near):
                continue
            found.append((-n, i not in near_looked, i, k))
    most = -min(found)[0] if found else 0
    return [_row(clips, (i, k, k), "", terms, question, neg, people)
            for n, _, i, k in sorted(found)[:MAX_FOUND] if -n * 2 >= most]


def _dedupe(rows: list[QuoteRow]) -> list[QuoteRow]:
    """``rows`` with the same clip and text once (the first kept)."""
    seen, out = set(), []
    for r in rows:
        key = (r["clip_id"], r["text"])
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out
