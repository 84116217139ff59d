"""The pyramid above the clips, grown as clips are stored: relational links between fact
nodes (and the clip links they induce) and the global nodes (PyraVid App. B.3)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from edge.build.keys import clean_text
from edge.build.pyramid.clip_memory import ClipMemory
from edge.build.pyramid.options import ROLE_GLOBAL, ROLE_LINKS, PyramidCounts, PyramidOptions
from edge.prompts import GLOBAL_PROMPT, LINK_PROMPT, link_schema
from edge.store import Fact, Memory
from edge.timeline import format_moment
from models.llm import ContextOverflowError, LLMOutputError


class Pyramid:
    """Builds the pyramid into ``memory`` with ``hub``'s memory LLM.

    One instance per ingest run, handed to the memory writer
    (:func:`edge.ingest.memory_writer.write_clip`), which stores each clip with its fact nodes and
    clip node and then calls :meth:`after_store`; the run ends with :meth:`finalize`. Counts
    what it did in :attr:`counts`. Every model call is recorded by the hub's usage meter
    under the roles ``memory_llm`` (per-clip call), ``memory_llm.links`` and
    ``memory_llm.global``.
    """

    def __init__(self, memory: Memory, hub, options: PyramidOptions | None = None) -> None:
        self.memory = memory
        self.hub = hub
        self.options = options or PyramidOptions()
        self.counts = PyramidCounts()

    @contextmanager
    def timed(self, step: str) -> Iterator[None]:
        """Add the block's wall-clock seconds to ``counts.seconds[step]`` (kept rounded to
        milliseconds); nothing is added when the block raises."""
        t0 = time.perf_counter()
        yield
        s = self.counts.seconds
        s[step] = round(s.get(step, 0.0) + time.perf_counter() - t0, 3)

    def after_store(self, cm: ClipMemory, fact_vectors: np.ndarray, *, t_start: float,
                    day: str) -> None:
        """The pyramid's work once a clip is stored: count it, judge its relational links
        (with ``options.links``; ``fact_vectors``: ``(len(cm.facts), 384)`` float32, facts
        with their store ids) and update the day's global node when ``global_every`` clips
        are waiting. ``t_start``: the clip's start in timeline seconds."""
        self.counts.clips += 1
        self.counts.facts += len(cm.facts)
        self.counts.fallbacks += cm.origin == "extractive"
        if self.options.links:
            with self.timed("links"):
                self.link_facts(cm.facts, fact_vectors, before=t_start)
        pending = self.memory.clips_without_global(day)
        if len(pending) >= self.options.global_every:
            with self.timed("global"):
                self.update_global(day, pending)

    # -- relational links
    def candidates(self, facts: Sequence[Fact], vectors: np.ndarray,
                   before: float) -> list[tuple[Fact, Fact, float]]:
        """``(new fact, earlier fact, similarity)`` pairs: each new fact's top ``link_k``
        earlier facts (clips ending by ``before``, timeline seconds) above ``link_floor``
        cosine similarity, best ``max_candidates`` overall. ``vectors``: the new facts'
        ``(len(facts), 384)`` float32 vectors."""
        o = self.options
        found: dict[tuple[int, int], float] = {}
        for f, vec in zip(facts, vectors):
            for fid, sim in self.memory.knn_facts(vec, o.link_k, before=before):
                if sim >= o.link_floor:
                    found[(f.id, fid)] = max(sim, found.get((f.id, fid), -1.0))
        best = sorted(found.items(), key=lambda kv: -kv[1])[:o.max_candidates]
        if not best:
            return []
        old = self.memory.facts(fid for (_, fid), _ in best)
        new = {f.id: f for f in facts}
        return [(new[a], old[b], s) for (a, b), s in best]

    def link_facts(self, facts: Sequence[Fact], vectors: np.ndarray,
                   before: float) -> list[tuple[int, int, str]]:
        """Judge the candidates of one clip's stored new facts (:meth:`judge_links`) and
        store the accepted relations (and induced clip links). Returns the accepted
        ``(fact id, earlier fact id, relation)``."""
        out = [(a.id, b, r) for a, b, r in self.judge_links(facts, vectors, before)]
        self.memory.add_relational_links(out)
        return out

    def judge_links(self, facts: Sequence[Fact], vectors: np.ndarray,
                    before: float) -> list[tuple[Fact, int, str]]:
        """Judge the candidates of one clip's new facts in ONE call (role
        ``memory_llm.links``), storing nothing; the accepted ``(new fact, earlier fact id,
        relation)``. The new facts need distinct ``id`` s (stored ones, or temporary
        negative ones: :mod:`edge.build` stores the links with the clip). A broken reply
        after its retry accepts nothing and is counted in ``link_failures``."""
        pairs = self.candidates(facts, vectors, before)
        if not pairs:
            return []
        llm = self.hub.llm("memory_llm")
        lines = []
        for i, (a, b, _) in enumerate(pairs, 1):
            lines.append(f"{i}. NEW: {llm.truncate(a.text, 60)}\n   EARLIER "
                         f"({_when(self.memory, b)}): {llm.truncate(b.text, 60)}")
        self.counts.candidates_judged += len(pairs)
        self.counts.link_calls += 1
        try:
            obj = llm.chat_json(
                [{"role": "system", "content": LINK_PROMPT},
                 {"role": "user", "content": "\n".join(lines)}],
                role=ROLE_LINKS, schema=link_schema(len(pairs)),
                max_tokens=20 + 25 * len(pairs), keep_prefix=True)
        except (LLMOutputError, ContextOverflowError):
            self.counts.link_failures += 1
            return []
        accepted: dict[tuple[int, int], tuple[Fact, str]] = {}
        for j in obj["links"]:
            if 1 <= j["pair"] <= len(pairs):
                a, b, _ = pairs[j["pair"] - 1]
                accepted[(a.id, b.id)] = (a, clean_text(j["relation"]) or "related")
        self.counts.links_accepted += len(accepted)
        return [(a, b, r) for (_, b), (a, r) in accepted.items()]

    # -- global nodes
    def update_global(self, day: str, clips: Sequence | None = None) -> None:
        """Integrate ``clips`` (default: all waiting clips of ``day``) into the day's global
        node, ``global_every`` clips per call (role ``memory_llm.global``), each call a new
        version with a hierarchical clip→global link per integrated clip."""
        clips = list(clips if clips is not None else self.memory.clips_without_global(day))
        k = max(1, self.options.global_every)
        for lo in range(0, len(clips), k):
            batch = clips[lo:lo + k]
            nodes = self.memory.clip_nodes(c.id for c in batch)
            items = [f"[{format_moment(c.t_start, c.day, c.day_start)}] "
                     f"{nodes[c.id].summary if c.id in nodes else c.caption}" for c in batch]
            text, origin = self._summarize(day, items)
            self.memory.add_global_version(day=day, text=text, origin=origin,
                                           clip_ids=[c.id for c in batch],
                                           t_upto=max(c.t_end for c in batch))

    def _summarize(self, day: str, items: list[str]) -> tuple[str, str]:
        """``(text, origin)`` of the next version of ``day``'s global node (``''``: the
        overall node) from its previous text and ``items``: the previous text and the items
        as they are (``verbatim``, no call) for a day node while together they fit
        ``global_words`` — a summary of text already inside the budget costs a call (~300
        tokens read, ~50 written: 10–20 s of the LLM tier on 2 cores) and adds nothing
        (:meth:`finalize` applies the same rule to the overall node) — else the memory LLM's
        summary (``llm``); the marked fallback (previous text plus items, cut to the
        budget, ``extractive``) when the reply is unusable."""
        prev = self.memory.global_node(day)
        joined = "\n".join([prev.text, *items] if prev else items)
        if day and len(joined.split()) <= self.options.global_words:
            return joined, "verbatim"
        llm = self.hub.llm("memory_llm")
        what = f"the day {day}" if day else "all the days so far"
        per_item = 70 if day else max(70, 600 // max(1, len(items)))  # clip vs day summaries
        body = "\n".join(llm.truncate(i, per_item) for i in items)
        sections = f"NEW EVENTS:\n{body}\n\nUPDATED SUMMARY:"
        if prev:
            sections = f"SUMMARY SO FAR:\n{llm.truncate(prev.text, 400)}\n\n{sections}"
        self.counts.global_updates += 1
        try:
            res = llm.chat(
                [{"role": "system", "content": GLOBAL_PROMPT.format(
                    what=what, words=self.options.global_words)},
                 {"role": "user", "content": sections}],
                role=ROLE_GLOBAL, max_tokens=int(self.options.global_words * 2),
                keep_prefix=True)
            text = summary_text(res.text)
        except ContextOverflowError:
            text = ""
        if len(text) >= 20:
            return text, "llm"
        # marked fallback: the previous text plus the new summaries, cut to the budget
        self.counts.global_fallbacks += 1
        return joined[-self.options.global_words * 8:], "extractive"

    def finalize(self) -> None:
        """End of an ingest run: integrate every waiting clip into its day's global node,
        then refresh the overall node from the days whose node changed since: those with a
        version stored after the overall node's (by row id, not by the wall clock, which may
        step back or differ between machines), so a run that added nothing calls no model.
        While every day's node together fits ``global_words`` (one short day), the overall
        node is those texts as they are (``verbatim``, no call)."""
        with self.timed("global"):
            days = self.memory.days()
            for day in days:
                if self.memory.clips_without_global(day):
                    self.update_global(day)
            overall = self.memory.global_node("")
            nodes = [n for n in map(self.memory.global_node, days) if n is not None]
            fresh = [n for n in nodes if overall is None or n.id > overall.id]
            if fresh:
                text = "\n".join(f"{n.day}: {n.text}" for n in nodes)
                origin = "verbatim"  # every day's node as it is, while they fit the budget
                if len(text.split()) > self.options.global_words:
                    text, origin = self._summarize("", [f"{n.day}: {n.text}" for n in fresh])
                total = self.memory.count_clip_nodes()
                self.memory.add_global_version(day="", text=text, origin=origin,
                                               clip_ids=[], t_upto=max(n.t_upto for n in fresh),
                                               clip_count=total)


def summary_text(reply: str) -> str:
    """The summary in a global-node reply: section labels the small model echoes removed;
    ``''`` when it echoed the instructions instead of summarizing (measured on the 0.5B)."""
    text = re.sub(r"(?im)^\s*(UPDATED SUMMARY|SUMMARY SO FAR|NEW EVENTS)\s*:\s*", "", reply)
    text = text.replace("(nothing yet)", "").strip()
    return "" if "keep what still matters" in text.lower() else text


def _when(memory: Memory, fact: Fact) -> str:
    """When an earlier fact happened, as the link prompt shows it (``?`` if its clip is gone)."""
    clip = memory.clips([fact.clip_id]).get(fact.clip_id)
    return format_moment(fact.t_start, clip.day, clip.day_start) if clip else "?"
