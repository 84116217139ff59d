"""Evidence distilled to the sentences a question needs, before the solver reads it.

MERIT Eq. 9 neighbor filtering, done extractively: instead of asking an LLM which parts
of an anchor's neighborhood matter, every clip's text is split into sentences and the
sentences that best match the question are kept under a token budget (no LLM call).

1. **Sentences** (:func:`sentences`): :func:`edge.build.keys.split_sentences` with breaks after
   closing quotes, then a speaker is kept with their quote: a piece that continues the
   previous one (starts in lower case: ``then says, “Oh, OK.”``), that attributes the
   quote before it (``“We have four,” I say.``) or that follows an unclosed quote is
   joined to it.
2. **Scores** (:func:`score`): the best cosine of the sentence with the question and each
   relevance text (a multiple-choice question's options, search queries), plus
   ``lexical_weight`` × the IDF-weighted share of the query terms it holds (content-word
   stems, numbers — number words read as digits — and names), plus ``anchor_prior`` for
   an anchor clip's sentences. Only the ``embed_limit`` sentences best by the lexical
   part are embedded (one batched call), so the cost stays under a second on 2 cores;
   the others score by the lexical part alone.
3. **Choice** (:func:`choose`): the best sentence of every anchor clip first (when it
   fits), then greedily by score while the notes fit the budget, each note costing its
   tokens plus :data:`NOTE_OVERHEAD_TOKENS`.
4. **Notes**: per clip, the kept sentences in their original order, ``…`` where sentences
   were skipped between them; clips with nothing kept are left out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from edge.build.keys import split_sentences
from models.repeats import norm_words as words

from .citations import content_stems

DEFAULT_BUDGET = 800
"""Tokens of distilled notes a final answer reads (overhead included)."""

NOTE_OVERHEAD_TOKENS = 16
"""Tokens counted per note on top of its text (number, time, line break): by the notes
distilled here and by :meth:`Evidence.pack <edge.answer.evidence.Evidence.pack>`."""

GAP = " … "
"""Shown between two kept sentences of a clip where sentences were skipped."""

_SPEECH_VERBS = (
    "say|says|said|ask|asks|asked|add|adds|added|reply|replies|replied|answer|answers|"
    "answered|explain|explains|explained|clarify|clarifies|clarified|continue|continues|"
    "begin|begins|began|repeat|repeats|shout|shouts|whisper|whispers|mutter|mutters|"
    "exclaim|exclaims|joke|jokes|agree|agrees|note|notes|respond|responds|suggest|suggests|"
    "remark|remarks|murmur|murmurs|tell|tells|told|insist|insists|admit|admits|confirm|"
    "confirms|mention|mentions")
_ATTRIBUTION = re.compile(rf"^(?:\S+\s+){{1,2}}?(?:{_SPEECH_VERBS})\b[^.!?“\"]{{0,40}}[.!?]?$")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}


class Source(NamedTuple):
    """One clip's text for :func:`distill`: ``parts`` are split into sentences in order
    (caption, transcript — or kept facts, filtered text); ``anchor``: an anchor (or
    linked) clip rather than a neighbor."""

    clip_id: int
    parts: tuple[str, ...]
    anchor: bool


class Sentence(NamedTuple):
    """A sentence of a :class:`Source`: ``order`` its place in the clip (from 0),
    ``tokens`` its cost alone."""

    clip_id: int
    order: int
    text: str
    tokens: int
    anchor: bool


def sentences(text: str) -> list[str]:
    """``text`` as sentences, a speaker kept with their quote (rule 1 of the module).

    ``Lucia says, “Although…” I plug it in. “We have four,” I say.`` →
    ``['Lucia says, “Although…”', 'I plug it in.', '“We have four,” I say.']``."""
    out: list[str] = []
    for piece in split_sentences(text, after_quotes=True):
        if out and _joins(out[-1], piece):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _joins(previous: str, piece: str) -> bool:
    """Whether ``piece`` belongs to the sentence ``previous`` (see :func:`sentences`)."""
    if previous.count("“") > previous.count("”") or previous.count('"') % 2:
        return True  # inside a quote that spans sentences
    if piece[0].islower():
        return True  # "then says, ..."
    return previous[-1] in "”\"" and bool(_ATTRIBUTION.match(piece))


def split(sources: Sequence[Source], count_tokens: Callable[[str], int]) -> list[Sentence]:
    """The :func:`sentences` of every source's parts, in source order, each with its
    token count."""
    return [Sentence(src.clip_id, k, text, count_tokens(text), src.anchor)
            for src in sources
            for k, text in enumerate(s for part in src.parts for s in sentences(part))]


def query_terms(text: str) -> set[str]:
    """Content-word stems, numbers and number words (as digits) of ``text``: what a
    sentence and a query share lexically."""
    digits = {_NUMBER_WORDS.get(w, w) for w in words(text)
              if w.isdigit() or w in _NUMBER_WORDS}
    return {_NUMBER_WORDS.get(s, s) for s in content_stems(text)} | digits


def lexical(items: Sequence[Sentence], queries: Sequence[str]) -> np.ndarray:
    """Per sentence, the IDF-weighted share of the query terms it holds, in [0, 1]:
    Σ idf(shared terms) / Σ idf(query terms), idf = log(1 + n / df) over the ``n``
    sentences. Shape ``(len(items),)``."""
    terms = [query_terms(s.text) for s in items]
    wanted = set().union(*(query_terms(q) for q in queries)) if queries else set()
    df: dict[str, int] = {}
    for ts in terms:
        for t in ts & wanted:
            df[t] = df.get(t, 0) + 1
    n = max(len(items), 1)
    idf = {t: math.log(1 + n / df.get(t, 1)) for t in wanted}
    total = sum(idf.values()) or 1.0
    return np.array([sum(idf[t] for t in ts & wanted) / total for ts in terms],
                    dtype=np.float32)


def score(items: Sequence[Sentence], question: str, relevance: Sequence[str], embedder, *,
          lexical_weight: float = 1.0, anchor_prior: float = 0.05,
          embed_limit: int | None = 96) -> np.ndarray:
    """Each sentence's score (rule 2 of the module), shape ``(len(items),)``, float32.

    ``embedder.embed(list[str], query=...) -> (n, d)`` unit rows, called once for the
    queries (as queries: the model's query prompt) and once for the ``embed_limit``
    sentences best by the lexical part (all when ``None``; as documents); a sentence not
    embedded gets no cosine part."""
    queries = [question, *(r for r in relevance if r.strip())]
    lex = lexical(items, queries) * lexical_weight
    prior = np.array([anchor_prior if s.anchor else 0.0 for s in items], dtype=np.float32)
    base = lex + prior
    order = sorted(range(len(items)), key=lambda i: -base[i])  # stable: priority order
    embedded = order if embed_limit is None else order[:embed_limit]
    cos = np.zeros(len(items), dtype=np.float32)
    if embedded:
        qvecs = embedder.embed(queries, query=True)
        vectors = embedder.embed([items[i].text for i in embedded])
        sims = vectors @ qvecs.T  # (len(embedded), queries)
        cos[embedded] = np.clip(sims.max(axis=1), 0.0, None)
    return base + cos


def render(kept: Sequence[Sentence]) -> str:
    """One clip's note: its ``kept`` sentences in their order, :data:`GAP` where
    sentences were skipped between two of them."""
    kept = sorted(kept, key=lambda s: s.order)
    out = kept[0].text if kept else ""
    for a, b in zip(kept, kept[1:]):
        out += (" " if b.order == a.order + 1 else GAP) + b.text
    return out


def choose(items: Sequence[Sentence], scores: np.ndarray, count_tokens: Callable[[str], int],
           budget: int, overhead: int) -> dict[int, list[Sentence]]:
    """The sentences kept per clip id (rule 3 of the module): every note's
    ``count_tokens(render(...)) + overhead`` together stay within ``budget``.
    ``items`` are in priority order; ties in score keep that order."""
    kept: dict[int, list[Sentence]] = {}
    cost: dict[int, int] = {}
    used = 0

    def take(i: int) -> bool:
        nonlocal used
        s = items[i]
        if used + s.tokens + overhead - cost.get(s.clip_id, 0) > budget:
            return False  # a cheap bound before counting the joined note
        new = count_tokens(render([*kept.get(s.clip_id, []), s])) + overhead
        if used + new - cost.get(s.clip_id, 0) > budget:
            return False
        used += new - cost.get(s.clip_id, 0)
        kept.setdefault(s.clip_id, []).append(s)
        cost[s.clip_id] = new
        return True

    best: dict[int, int] = {}
    for i, s in enumerate(items):
        if s.anchor and (s.clip_id not in best or scores[i] > scores[best[s.clip_id]]):
            best[s.clip_id] = i
    taken = {i for i in best.values() if take(i)}
    for i in sorted(range(len(items)), key=lambda i: -scores[i]):
        if i not in taken:
            take(i)
    return kept


def distill(sources: Sequence[Source], question: str, *, embedder,
            count_tokens: Callable[[str], int], relevance: Sequence[str] = (),
            budget: int = DEFAULT_BUDGET, overhead: int | None = None,
            **scoring) -> dict[int, str]:
    """The distilled note of each clip that keeps something, by clip id, in the order of
    ``sources`` (priority order: anchors by round and rank, then neighbors by distance).

    ``count_tokens(str) -> int``: the solver's tokenizer; ``budget``: tokens of all the
    notes together, each note's ``overhead`` included (default
    :data:`NOTE_OVERHEAD_TOKENS`). ``relevance``: texts besides
    the question that say what matters (options, search queries). ``scoring``: keyword
    arguments of :func:`score`. Deterministic; one embedder call. Raises ``ValueError``
    for a negative budget."""
    if budget < 0:
        raise ValueError(f"budget must be >= 0 tokens, got {budget}")
    items = split(sources, count_tokens)
    if not items:
        return {}
    scores = score(items, question, relevance, embedder, **scoring)
    kept = choose(items, scores, count_tokens, budget,
                  NOTE_OVERHEAD_TOKENS if overhead is None else overhead)
    return {src.clip_id: render(kept[src.clip_id]) for src in sources if src.clip_id in kept}


@dataclass(frozen=True)
class Distiller:
    """:func:`distill` for one question, to hand to :meth:`Evidence.pack
    <edge.answer.evidence.Evidence.pack>`: ``embedder`` (``hub.embedder``), the
    ``question`` and its ``relevance`` texts (a multiple-choice question's options,
    search queries and rewrites); ``budget``: the most tokens of notes it packs."""

    embedder: object
    question: str
    relevance: tuple[str, ...] = ()
    budget: int = DEFAULT_BUDGET

    def __call__(self, sources: Sequence[Source], count_tokens: Callable[[str], int],
                 budget: int | None = None) -> dict[int, str]:
        """:func:`distill` of ``sources`` into ``min(budget, self.budget)`` tokens."""
        cap = self.budget if budget is None else min(budget, self.budget)
        return distill(sources, self.question, embedder=self.embedder,
                       count_tokens=count_tokens, relevance=self.relevance, budget=cap)
