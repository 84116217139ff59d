"""The PyraVid memory pyramid, built online clip by clip (PyraVid §3.2, Appendix B.1, B.3).

Per clip, ONE memory-LLM call (role ``memory_llm``) returns, validated against a JSON schema:
the four MERIT keys (MERIT Eq. 5; left out of the schema when the caption file provides
keys), the clip's **fact nodes** (fine-grained events in the order they happen) and its
**clip node** (summary + scene). The clip, keys, facts, clip node, hierarchical fact→clip
links, key and fact vectors and FTS rows are written in one transaction
(:meth:`edge.store.Memory.add_clip`).

Then, optionally and bounded (it costs calls): **relational links**. Each new fact's top-K
most similar earlier facts (fact vectors, KNN limited to earlier clips, above a similarity
floor) are candidates; ONE call per clip (role ``memory_llm.links``) judges all of the
clip's candidates, and only accepted pairs are stored, with the clip→clip links they induce
(PyraVid App. B.3 "Fact Memory Graph" / "Clip Memory Graph").

Less often: the **global node** of each day is updated every K clips (role
``memory_llm.global``) from its previous text and the new clip summaries, versioned, with a
hierarchical clip→global link per integrated clip; :meth:`Pyramid.finalize` integrates the
rest and updates the overall (``all``) node at the end of an ingest run. PyraVid updates the
global node on every clip (App. B.3); every K clips is our cost bound.

Output discipline: schema-constrained generation, one repair attempt
(:meth:`models.llm.LlamaCppLLM.chat_json`), then a marked fallback: extractive keys
(``origin='extractive'``) and facts cut from the caption's sentences (``origin='extractive'``)
— never a crash, never silently empty.

Timestamps: a caption has no times inside the clip, so facts (returned in the order they
happen) get consecutive equal shares of the clip's span; each fact gets the clip keyframe
nearest its midpoint. This is an approximation, documented as such.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from edge.keys import ClipKeys, extractive_keys
from edge.prompts import (
    CLIP_PROMPT,
    EXAMPLE_CLIP_KEYS,
    EXAMPLE_CLIP_REST,
    EXAMPLE_IN,
    GLOBAL_PROMPT,
    KEYS_HELP,
    LINK_PROMPT,
    clip_schema,
    link_schema,
)
from edge.store import INDEX_TYPES, KEY_TYPES, Fact, Memory
from edge.timeline import day_of, format_moment
from models.llm import ContextOverflowError, LLMOutputError

ROLE_CLIP = "memory_llm"
ROLE_LINKS = "memory_llm.links"
ROLE_GLOBAL = "memory_llm.global"

@dataclass
class PyramidOptions:
    """How much pyramid to build.

    ``max_facts``: facts per clip. ``links``: judge relational links (costs one call per clip
    with candidates). ``link_k``: similar earlier facts per new fact; ``link_floor``: cosine
    similarity a candidate needs; ``max_candidates``: pairs judged per clip (the highest
    similarities). ``global_every``: clips per global-node update (K). ``global_words``:
    length the global summary is asked to stay under. ``max_tokens``: reply budget of the
    per-clip call.
    """

    max_facts: int = 5
    links: bool = True
    link_k: int = 3
    link_floor: float = 0.45
    max_candidates: int = 6
    global_every: int = 20
    global_words: int = 150
    max_tokens: int = 700
    max_caption_tokens: int = 1500


@dataclass
class ClipMemory:
    """What the per-clip call (or its fallback) yields: keys, facts, clip summary, scene."""

    keys: ClipKeys
    facts: list[Fact]
    summary: str
    scene: str
    origin: str  # llm | extractive (of facts + clip node)


@dataclass
class PyramidCounts:
    """What a :class:`Pyramid` did in this process (for reports and the benchmark)."""

    clips: int = 0
    facts: int = 0
    fallbacks: int = 0
    candidates_judged: int = 0
    link_calls: int = 0
    links_accepted: int = 0
    link_failures: int = 0
    global_updates: int = 0
    global_fallbacks: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?。”\"])\s+", text) if len(s.strip()) > 2]


def _clean(text: str) -> str:
    return " ".join(str(text).replace("_", " ").split())


def _timed(facts: list[Fact], t_start: float, t_end: float,
           keyframes: Sequence[str]) -> list[Fact]:
    """Give facts (in order) consecutive equal shares of ``[t_start, t_end]`` and the keyframe
    nearest each share's midpoint (keyframes are spread evenly over the clip)."""
    n = len(facts)
    span = max(0.0, t_end - t_start)
    for i, f in enumerate(facts):
        f.t_start = t_start + span * i / n
        f.t_end = t_start + span * (i + 1) / n
        if keyframes:
            mid = (i + 0.5) / n
            f.keyframe = keyframes[round(mid * (len(keyframes) - 1))]
    return facts


def extractive_clip_memory(caption: str, *, t_start: float, t_end: float,
                           keyframes: Sequence[str] = (), file_keys: ClipKeys | None = None,
                           max_facts: int = 5) -> ClipMemory:
    """The marked fallback: facts are the caption's sentences (``origin='extractive'``),
    the summary its first sentence; keys from the file if given, else extractive keys."""
    sents = _sentences(caption) or [caption.strip() or "(empty clip)"]
    if len(sents) > max_facts:  # merge the tail so nothing is dropped
        sents = [*sents[:max_facts - 1], " ".join(sents[max_facts - 1:])]
    facts = [Fact(s[:300], "speech" if re.search(r"[\"“”]", s) else "action", 0.0, 0.0,
                  "extractive") for s in sents]
    summary = sents[0][:240]
    return ClipMemory(file_keys or extractive_keys(caption),
                      _timed(facts, t_start, t_end, keyframes), summary, "unknown",
                      "extractive")


def extract_clip_memory(llm, caption: str, *, t_start: float, t_end: float,
                        keyframes: Sequence[str] = (), file_keys: ClipKeys | None = None,
                        options: PyramidOptions | None = None) -> ClipMemory:
    """Keys, facts, clip summary and scene for one clip from ONE memory-LLM call
    (PyraVid App. B.1 extraction; MERIT Eq. 5 keys), validated against :func:`clip_schema`.

    With ``file_keys`` the keys are kept and the call asks only for facts, summary and scene.
    Falls back to :func:`extractive_clip_memory` (marked ``extractive``) when the reply is
    invalid after one repair or the caption does not fit the context. Never raises for bad
    model output.
    """
    o = options or PyramidOptions()
    with_keys = file_keys is None
    schema = clip_schema(with_keys=with_keys, max_facts=o.max_facts)
    system = CLIP_PROMPT.format(keys=KEYS_HELP if with_keys else "", max_facts=o.max_facts)
    example = "{" + (EXAMPLE_CLIP_KEYS if with_keys else "") + EXAMPLE_CLIP_REST
    try:
        text = llm.truncate(caption, o.max_caption_tokens)
        obj = llm.chat_json(
            [{"role": "system", "content": system},
             {"role": "user", "content": f"Description: {EXAMPLE_IN}"},
             {"role": "assistant", "content": example},
             {"role": "user", "content": f"Description: {text}"}],
            role=ROLE_CLIP, schema=schema, max_tokens=o.max_tokens)
    except (LLMOutputError, ContextOverflowError):
        return extractive_clip_memory(caption, t_start=t_start, t_end=t_end,
                                      keyframes=keyframes, file_keys=file_keys,
                                      max_facts=o.max_facts)
    keys = file_keys
    if keys is None:
        clean = {k: _clean(obj[k]) for k in KEY_TYPES}
        keys = ClipKeys(**clean, origin="llm") if all(clean.values()) else extractive_keys(
            caption)
    seen: set[str] = set()
    facts = []
    for f in obj["facts"]:
        t = _clean(f["text"])
        if t and t.lower() not in seen:
            seen.add(t.lower())
            names = list(dict.fromkeys(_clean(n) for n in f["names"] if _clean(n)))
            facts.append(Fact(t, f["kind"], 0.0, 0.0, "llm", names))
    summary, scene = _clean(obj["clip_summary"]), _clean(obj["scene"]) or "unknown"
    if not facts or not summary:
        fb = extractive_clip_memory(caption, t_start=t_start, t_end=t_end,
                                    keyframes=keyframes, file_keys=keys, max_facts=o.max_facts)
        return fb
    return ClipMemory(keys, _timed(facts, t_start, t_end, keyframes), summary, scene, "llm")


class Pyramid:
    """Builds the pyramid into ``memory`` with ``hub``'s memory LLM and embedder.

    One instance per ingest run: call :meth:`add_clip` per clip in timeline order, then
    :meth:`finalize`. Counts what it did in :attr:`counts`. Every model call is recorded by
    the hub's usage meter under the roles ``memory_llm`` (per-clip call),
    ``memory_llm.links`` and ``memory_llm.global``.
    """

    def __init__(self, memory: Memory, hub, options: PyramidOptions | None = None) -> None:
        self.memory = memory
        self.hub = hub
        self.options = options or PyramidOptions()
        self.counts = PyramidCounts()

    def _tick(self, stage: str, t0: float) -> None:
        import time

        s = self.counts.seconds
        s[stage] = round(s.get(stage, 0.0) + time.perf_counter() - t0, 3)

    def add_clip(self, *, source_id: int, idx: int, t_start: float, t_end: float, clock: str,
                 caption: str, transcript: str = "", keyframes: Sequence[str] = (),
                 signals: dict | None = None, file_keys: ClipKeys | None = None) -> int:
        """Extract, embed and store one clip with its keys, facts and clip node (one
        transaction), then judge its relational links and update the day's global node when K
        clips are waiting. Returns the clip id."""
        import time

        from edge.ingest import index_texts

        o = self.options
        t0 = time.perf_counter()
        cm = extract_clip_memory(self.hub.llm("memory_llm"), caption, t_start=t_start,
                                 t_end=t_end, keyframes=keyframes, file_keys=file_keys,
                                 options=o)
        self._tick("extract", t0)
        t0 = time.perf_counter()
        texts = index_texts(cm.keys, caption)
        vecs = self.hub.embedder.embed([*texts, *(f.text for f in cm.facts)])
        self._tick("embed", t0)
        t0 = time.perf_counter()
        day, day_start = day_of(t_start, clock)
        rows = {k: (getattr(cm.keys, k), cm.keys.origin) for k in KEY_TYPES}
        rows["caption"] = (caption, "caption")
        width = len(INDEX_TYPES)
        clip_id = self.memory.add_clip(
            source_id=source_id, idx=idx, t_start=t_start, t_end=t_end, day=day,
            day_start=day_start, caption=caption, transcript=transcript,
            keyframes=list(keyframes), signals=signals or {}, keys=rows,
            vectors={k: vecs[i] for i, k in enumerate(INDEX_TYPES)},
            facts=cm.facts, fact_vectors=vecs[width:],
            clip_node=(cm.summary, cm.scene, cm.origin))
        self._tick("store", t0)
        self.counts.clips += 1
        self.counts.facts += len(cm.facts)
        self.counts.fallbacks += cm.origin == "extractive"
        if o.links:
            t0 = time.perf_counter()
            self.link_facts(cm.facts, vecs[width:], before=t_start)
            self._tick("links", t0)
        pending = self.memory.clips_without_global(day)
        if len(pending) >= o.global_every:
            t0 = time.perf_counter()
            self.update_global(day, pending)
            self._tick("global", t0)
        return clip_id

    # -- relational links
    def candidates(self, facts: Sequence[Fact], vectors: np.ndarray,
                   before: float) -> list[tuple[Fact, Fact, float]]:
        """``(new fact, earlier fact, similarity)`` pairs: each new fact's top ``link_k``
        earlier facts (clips ending by ``before``) above ``link_floor``, best
        ``max_candidates`` overall."""
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
        """Judge the candidates of one clip's new facts in ONE call; store the accepted
        relations (and induced clip links). Returns the accepted ``(fact, earlier, relation)``.
        A broken reply after one repair stores nothing and is counted in ``link_failures``."""
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
                max_tokens=40 + 30 * len(pairs))
        except (LLMOutputError, ContextOverflowError):
            self.counts.link_failures += 1
            return []
        accepted = {}
        for j in obj["judgements"]:
            if j["related"] and 1 <= j["pair"] <= len(pairs):
                a, b, _ = pairs[j["pair"] - 1]
                accepted[(a.id, b.id)] = _clean(j["relation"]) or "related"
        out = [(a, b, r) for (a, b), r in accepted.items()]
        self.memory.add_relational_links(out)
        self.counts.links_accepted += len(out)
        return out

    # -- global nodes
    def update_global(self, day: str, clips: Sequence | None = None) -> None:
        """Integrate ``clips`` (default: all waiting clips of ``day``) into the day's global
        node, ``global_every`` clips per call, each call a new version."""
        clips = list(clips if clips is not None else self.memory.clips_without_global(day))
        k = max(1, self.options.global_every)
        for lo in range(0, len(clips), k):
            chunk = clips[lo:lo + k]
            nodes = self.memory.clip_nodes(c.id for c in chunk)
            items = [f"[{format_moment(c.t_start, c.day, c.day_start)}] "
                     f"{nodes[c.id].summary if c.id in nodes else c.caption}" for c in chunk]
            text, origin = self._summarize(day, items)
            self.memory.add_global_version(day=day, text=text, origin=origin,
                                           clip_ids=[c.id for c in chunk],
                                           t_upto=max(c.t_end for c in chunk))

    def _summarize(self, day: str, items: list[str]) -> tuple[str, str]:
        llm = self.hub.llm("memory_llm")
        prev = self.memory.global_node(day)
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
                role=ROLE_GLOBAL, max_tokens=int(self.options.global_words * 2))
            text = _summary_text(res.text)
        except ContextOverflowError:
            text = ""
        if len(text) >= 20:
            return text, "llm"
        # marked fallback: the previous text plus the new summaries, cut to the budget
        self.counts.global_fallbacks += 1
        joined = ((prev.text + "\n") if prev else "") + "\n".join(items)
        return joined[-self.options.global_words * 8:], "extractive"

    def finalize(self) -> None:
        """End of an ingest run: integrate every waiting clip into its day's global node,
        then refresh the overall node from the days whose node changed since."""
        import time

        t0 = time.perf_counter()
        days = self.memory.days()
        for day in days:
            if self.memory.clips_without_global(day):
                self.update_global(day)
        overall = self.memory.global_node("")
        fresh = []
        for day in days:
            node = self.memory.global_node(day)
            if node is not None and (overall is None or node.updated > overall.updated):
                fresh.append(node)
        if fresh:
            text, origin = self._summarize("", [f"{n.day}: {n.text}" for n in fresh])
            total = self.memory.count_clip_nodes()
            self.memory.add_global_version(day="", text=text, origin=origin, clip_ids=[],
                                           t_upto=max(n.t_upto for n in fresh),
                                           clip_count=total)
        self._tick("global", t0)


def _summary_text(reply: str) -> str:
    """The summary in a global-node reply: section labels the small model echoes removed;
    ``''`` when it echoed the instructions instead of summarizing (measured on the 0.5B)."""
    text = re.sub(r"(?im)^\s*(UPDATED SUMMARY|SUMMARY SO FAR|NEW EVENTS)\s*:\s*", "", reply)
    text = text.replace("(nothing yet)", "").strip()
    return "" if "keep what still matters" in text.lower() else text


def _when(memory: Memory, fact: Fact) -> str:
    clip = memory.clips([fact.clip_id]).get(fact.clip_id)
    return format_moment(fact.t_start, clip.day, clip.day_start) if clip else "?"
