"""The evidence a question gathers across rounds, and how it is packed into a prompt.

Each clip is evidence once, with the role and :class:`Priority` it first earned (a clip
found again as an anchor clip is promoted from neighbor to anchor). :meth:`Evidence.pack`
chooses evidence by priority until the token budget is used — anchors first, by round and
rank, then neighbors by distance — so no prompt overflows the solver's context; the notes
are then shown in timeline order, numbered ``[1]``, ``[2]``, … for citation.

Neighbor filtering answers per neighborhood (an anchor with its ±Δ neighbors), so what it
keeps may come from a neighbor: :meth:`Evidence.kept` gives each kept sentence to the clip
whose text it came from, and that clip — not the anchor — carries it as a note, a
``kept:`` line and a citation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from edge.build.keys import split_sentences
from edge.recall.expansion import Candidate
from edge.recall.retrieval import Neighborhood, ScoredClip
from edge.store import Clip
from edge.timeline import format_moment
from models.vlm import image_parts

from .citations import clip_text, content_stems, stem, words
from .distill import NOTE_OVERHEAD_TOKENS, Distiller, Source
from .records import Moment, Role


class Priority(NamedTuple):
    """Packing order of a piece of evidence, smallest first (compared as a tuple).

    ``tier``: 0 for anchor clips and linked clips, 1 for neighbors; ``distance``: a
    neighbor's distance in clips from its anchor (1…Δ), 0 otherwise; ``round``: the round
    that found it; ``rank``: its anchor's rank within that round (from 0; linked clips
    come after every anchor: top-N + their rank among the kept facts).
    """

    tier: int
    distance: int
    round: int
    rank: int

    @classmethod
    def anchor(cls, round_no: int, rank: int) -> Priority:
        """An anchor clip: tier 0, ``rank`` its place in round ``round_no``'s top-N."""
        return cls(0, 0, round_no, rank)

    @classmethod
    def neighbor(cls, round_no: int, rank: int, distance: int) -> Priority:
        """A neighbor in the window Δ of the anchor ranked ``rank``: tier 1, ``distance``
        clips (1…Δ) from it."""
        return cls(1, distance, round_no, rank)

    @classmethod
    def linked(cls, round_no: int, rank: int) -> Priority:
        """A linked clip (reached through a fact node's link): tier 0 like an anchor;
        ``rank`` is top-N + its rank among the kept facts."""
        return cls(0, 0, round_no, rank)


@dataclass
class Item:
    """One clip of evidence: its ``role``, ``score`` (as retrieval or pruning gave it;
    ``None`` for neighbors), the ``round`` that found it, its priority and, for anchors
    and linked clips, what ranked it (``matched``: a key type, ``bm25`` or a fact's
    ``via``)."""

    clip: Clip
    role: Role
    score: float | None
    round: int
    priority: Priority
    matched: str = ""


class Packed(NamedTuple):
    """An item chosen for a prompt and its text, cut to its token cap."""

    item: Item
    text: str


def frame_budget(round_no: int, rank: int) -> int:
    """Frames of an anchor clip shown to a VLM solver in the final answer (MERIT
    Appendix 0.A): 6 per clip for round-1 anchors, 6 for the top 5 of round 2 (0 for the
    rest), 1 per clip from round 3 on. ``rank`` counts from 0 within the round."""
    if round_no == 1:
        return 6
    if round_no == 2:
        return 6 if rank < 5 else 0
    return 1


@dataclass
class Evidence:
    """Everything a question has found so far, by clip id, in the order first found.

    ``filtered``: what neighbor filtering (MERIT Eq. 9) kept per anchor clip id (``""``:
    nothing relevant); ``facts``: per clip id, the fact texts PyraVid pruning kept;
    ``offered``: fact ids already offered to pruning; ``anchors_by_round``: the anchor
    clip ids of each round, by rank; ``windows``: per anchor clip id, the clip ids of its
    neighborhood in timeline order.
    """

    items: dict[int, Item] = field(default_factory=dict)
    filtered: dict[int, str] = field(default_factory=dict)
    facts: dict[int, list[str]] = field(default_factory=dict)
    offered: set[int] = field(default_factory=set)
    anchors_by_round: list[list[int]] = field(default_factory=list)
    windows: dict[int, list[int]] = field(default_factory=dict)

    def add_neighborhoods(self, round_no: int, anchors: list[ScoredClip],
                          hoods: list[Neighborhood]) -> None:
        """A round's anchor clips (``hoods[i]`` is ``anchors[i]`` with its ±Δ neighbors):
        each anchor is added (or promoted from neighbor), then its unseen neighbors."""
        self.anchors_by_round.append([a.clip_id for a in anchors])
        for rank, h in enumerate(hoods):
            self.windows[h.anchor.id] = [c.id for c in h.clips]
            old = self.items.get(h.anchor.id)
            if old is None or old.role != "anchor":
                self.items[h.anchor.id] = Item(h.anchor, "anchor", h.score, round_no,
                                               Priority.anchor(round_no, rank),
                                               matched=anchors[rank].key_type)
            for dist, c in [*((i + 1, c) for i, c in enumerate(h.before)),
                            *((i + 1, c) for i, c in enumerate(h.after))]:
                if c.id not in self.items:
                    self.items[c.id] = Item(c, "neighbor", None, round_no,
                                            Priority.neighbor(round_no, rank, dist))

    def add_facts(self, round_no: int, kept: list[Candidate], clips: dict[int, Clip],
                  first_rank: int) -> None:
        """Facts PyraVid pruning kept: their text joins their clip's evidence, and a clip
        not yet evidence becomes a linked clip ranked ``first_rank`` + its fact's rank.
        ``clips``: at least the clips of ``kept`` not yet evidence, by id."""
        for i, c in enumerate(kept):
            self.facts.setdefault(c.clip_id, []).append(" ".join(c.text.split()))
            if c.clip_id not in self.items:
                self.items[c.clip_id] = Item(clips[c.clip_id], "linked", c.score, round_no,
                                             Priority.linked(round_no, first_rank + i),
                                             matched=c.via)

    def pack(self, llm, budget: int, *, anchor_tokens: int, neighbor_tokens: int,
             view: str = "all", distiller: Distiller | None = None) -> list[Packed]:
        """Evidence chosen by :class:`Priority` until ``budget`` tokens are used, each text
        cut to ``anchor_tokens`` (anchor clips) or ``neighbor_tokens`` (the others) plus
        :data:`~edge.answer.distill.NOTE_OVERHEAD_TOKENS`; returned in timeline order.
        ``llm`` counts and cuts tokens (``count_tokens``, ``truncate``).

        ``view``: ``all`` — every clip, a clip with kept facts read as its facts; ``filtered``
        — only the clips filtering kept something from (as that text, :meth:`kept`; cut
        like anchors) and linked clips; ``raw`` — every clip as its caption. Raises
        ``ValueError`` for another ``view``.

        ``distiller`` (:class:`~edge.answer.distill.Distiller`): instead of cutting each
        text, keep the sentences of the view's texts that the question needs (a clip
        without facts or kept text reads as its caption and transcript) within
        ``min(budget, distiller.budget)`` tokens, overhead included; the token caps are
        then unused and clips with nothing kept are left out.
        """
        items, texts, kept = self._view(view)
        items = sorted(items, key=lambda i: i.priority)
        if distiller is not None:
            chosen = self._distilled(items, texts, kept, distiller, llm, budget)
        else:
            chosen, used = [], 0
            for it in items:
                anchor = it.role == "anchor" or it.clip.id in kept
                cap = anchor_tokens if anchor else neighbor_tokens
                text = llm.truncate(" ".join(texts.get(it.clip.id, it.clip.caption).split()), cap)
                cost = llm.count_tokens(text) + NOTE_OVERHEAD_TOKENS
                if used + cost > budget:
                    continue
                chosen.append(Packed(it, text))
                used += cost
        chosen.sort(key=lambda p: (p.item.clip.t_start, p.item.clip.id))
        return chosen

    def _view(self, view: str) -> tuple[list[Item], dict[int, str], dict[int, str]]:
        """The items of ``view`` (see :meth:`pack`), the texts replacing their captions
        and what filtering kept, by clip id."""
        if view not in ("all", "filtered", "raw"):
            raise ValueError(f"unknown view {view!r}; use all, filtered or raw")
        items, texts, kept = list(self.items.values()), {}, {}
        if view != "raw":
            texts = {cid: "; ".join(fs) for cid, fs in self.facts.items()}
        if view == "filtered":  # each kept sentence is a note of the clip it came from
            kept = self.kept()
            texts.update(kept)
            items = [it for cid, it in self.items.items() if cid in kept or it.role == "linked"]
        return items, texts, kept

    def _distilled(self, items: list[Item], texts: dict[int, str], kept: dict[int, str],
                   distiller: Distiller, llm, budget: int) -> list[Packed]:
        """:meth:`pack` with a ``distiller``: ``items`` in priority order, each read as
        its kept text, else (when the view reads them) its facts, one part each, else its
        caption and transcript."""
        def parts(it: Item) -> tuple[str, ...]:
            cid = it.clip.id
            if cid in kept:
                return (kept[cid],)
            if cid in texts:
                return tuple(f if f[-1:] in ".!?…”\"" else f"{f}." for f in self.facts[cid])
            return (it.clip.caption, it.clip.transcript)

        sources = [Source(it.clip.id, parts(it), it.role != "neighbor") for it in items]
        notes = distiller(sources, llm.count_tokens, budget)
        return [Packed(it, notes[it.clip.id]) for it in items if it.clip.id in notes]

    def frame_parts(self, folder: Path) -> list[dict]:
        """Image parts for the anchor clips' keyframes (paths relative to ``folder``) by
        :func:`frame_budget`, each clip once, in round order; missing files are skipped."""
        parts, seen = [], set()
        for r, ids in enumerate(self.anchors_by_round, start=1):
            for rank, cid in enumerate(ids):
                if cid in seen:
                    continue
                seen.add(cid)
                frames = self.items[cid].clip.keyframes[: frame_budget(r, rank)]
                paths = [folder / p for p in frames]
                parts += image_parts([p for p in paths if p.is_file()])
        return parts

    def kept(self) -> dict[int, str]:
        """What neighbor filtering kept, by the clip it came from: each sentence of an
        anchor's kept text goes to the evidence clip whose caption and transcript share
        the most of its content words and numbers (ties: the anchor's own window, then
        the clip nearest the anchor); a sentence that shares none stays with its anchor.
        Clips in first-found order; their sentences, each once, joined by spaces (two
        anchors' windows overlap, so the same sentence may be kept twice)."""
        vocab = {cid: {stem(w) for w in words(f"{it.clip.caption} {it.clip.transcript}")}
                 for cid, it in self.items.items()}
        out: dict[int, list[str]] = {}
        for anchor, text in self.filtered.items():
            window = self.windows.get(anchor, [anchor])
            for sentence in split_sentences(text):
                out.setdefault(self._source(sentence, anchor, window, vocab), []).append(
                    sentence)
        return {cid: " ".join(dict.fromkeys(out[cid])) for cid in self.items if cid in out}

    @staticmethod
    def _source(sentence: str, anchor: int, window: list[int],
                vocab: dict[int, set[str]]) -> int:
        """The clip id :meth:`kept` gives ``sentence`` to."""
        terms = set(content_stems(sentence)) | {w for w in words(sentence) if w.isdigit()}
        centre = window.index(anchor) if anchor in window else 0

        def rank(cid: int) -> tuple[int, bool, int]:
            near = -abs(window.index(cid) - centre) if cid in window else -len(window)
            return len(terms & vocab[cid]), cid in window, near

        best = max(vocab, key=rank, default=anchor)
        return best if vocab and rank(best)[0] > 0 else anchor

    def check_texts(self, read: list[int]) -> list[tuple[int, str]]:
        """Every evidence clip as ``(clip id, text)`` for
        :func:`~edge.answer.citations.check_citations` (caption, transcript, kept text,
        kept facts): the clips of ``read`` (ids the answer read) first, then by priority."""
        kept, first = self.kept(), set(read)
        order = sorted(self.items.values(), key=lambda i: (i.clip.id not in first, i.priority))
        return [(it.clip.id, clip_text(it.clip.caption, it.clip.transcript,
                                       kept.get(it.clip.id, ""), self.facts.get(it.clip.id, ())))
                for it in order]

    def moments(self, cited: list[int]) -> list[Moment]:
        """The ``cited`` clips (ids, in citation order), then the other anchor and linked
        clips and the neighbors filtering kept something from, by priority."""
        kept = self.kept()
        ranked = [it.clip.id for it in sorted(self.items.values(), key=lambda i: i.priority)
                  if it.role in ("anchor", "linked") or it.clip.id in kept]
        return ([self._moment(self.items[cid], kept, cited=True) for cid in cited]
                + [self._moment(self.items[cid], kept) for cid in ranked if cid not in cited])

    def _moment(self, it: Item, kept: dict[int, str], cited: bool = False) -> Moment:
        c = it.clip
        return Moment(c.id, format_moment(c.t_start, c.day, c.day_start), c.t_start, c.t_end,
                      c.caption, c.transcript, c.keyframes, it.role,
                      None if it.score is None else round(it.score, 4), it.round, cited,
                      it.matched, kept.get(c.id, ""))


def numbered_notes(packed: list[Packed]) -> str:
    """The packed evidence as prompt lines ``[n] DAY1 11:15:24: text``, numbered from 1."""
    return "\n".join(
        f"[{n}] {format_moment(p.item.clip.t_start, p.item.clip.day, p.item.clip.day_start)}: "
        f"{p.text}" for n, p in enumerate(packed, start=1))


def cited_clips(reply: dict, packed: list[Packed]) -> list[int]:
    """The clip ids of the notes a solver reply cites (``reply["cited"]``, numbered from 1;
    numbers outside the notes are dropped)."""
    return [packed[n - 1].item.clip.id for n in reply["cited"] if 1 <= n <= len(packed)]
