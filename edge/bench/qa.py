"""Retrieval metrics of a question set against a memory built from its caption file.

Per question and mode (``question``: the question alone; ``choices``: the options searched
too, ``AskOptions.choice_queries``), round 1 exactly as :func:`edge.answer.ask` runs it
(:func:`edge.answer.search.first_round`, no LLM call unless ``decompose``):

- hit@Δ (MERIT hit rate) for Δ = 0, 1, 2: a target clip lies inside the top-N anchors
  widened by ±Δ clips (caption records in timeline order);
- all@Δ2: every target clip inside that window;
- R@10 and nDCG@10 of the top 10 against the target clips (``ir-measures``);
- milliseconds of the round (embedding + search), median and mean.

The top-N anchors and the top-10 list are two retrievals: hybrid search and fusion take
each list ``depth``×N deep, so the first N of a top-10 search may differ from a top-N one
(the summary counts the questions where they do). Totals sit beside breakdowns per
``type``, per tag and per part (``multi-day``: asked on a later day than a target).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from edge.answer.options import AskOptions
from edge.answer.search import first_round
from edge.ingest.captions import ingest_caption_file, read_caption_file
from edge.store import Memory
from edge.store.embedding import memory_embedder
from edge.timeline import day_clock, egolife_time

from .questions import QAQuestion

DELTAS = (0, 1, 2)
DEEP = 10
"""Depth of the ranked list R@10 and nDCG@10 are measured on."""
MODES = ("question", "choices")
HIT_KEYS = (*(f"hit@Δ{d}" for d in DELTAS), "all@Δ2", "R@10", "nDCG@10")


@dataclass(frozen=True)
class CaptionIndex:
    """A caption file's records mapped onto a memory. Record ``i`` (file order) sits at
    timeline position ``pos[i]``, on day ``days[i]``, as clip ``clip_ids[i]`` (``None``: not
    in the memory); ``index_of`` maps a clip id back to its record index."""

    path: Path
    days: list[int]
    pos: list[int]
    clip_ids: list[int | None]
    index_of: dict[int, int]

    @property
    def missing(self) -> int:
        """Records of the file that are not in the memory."""
        return sum(c is None for c in self.clip_ids)


def caption_index(memory: Memory, path: Path) -> CaptionIndex:
    """Map every record of the caption file ``path`` to its clip in ``memory`` (same times
    and caption, from any source). Raises ``CaptionFileError`` for a malformed file."""
    records = read_caption_file(path)  # validated, in timeline order (a stable sort)
    raw = json.loads(Path(path).read_text("utf-8-sig"))
    starts = [day_clock(int(re.sub(r"\D", "", str(r["date"]))), egolife_time(r["start_time"]))
              for r in raw]
    order = sorted(range(len(raw)), key=lambda i: starts[i])  # position → record index
    pos, clip_ids = [0] * len(raw), [None] * len(raw)
    for p, i in enumerate(order):
        rec = records[p]
        pos[i] = p
        clip_ids[i] = memory.find_clip(rec.t_start, rec.t_end, rec.text)
    days = [records[pos[i]].day for i in range(len(raw))]
    return CaptionIndex(Path(path), days, pos, clip_ids,
                        {c: i for i, c in enumerate(clip_ids) if c is not None})


def ensure_memory(memory: Memory, hub, captions: Path,
                  on_progress: Callable[[int], None] | None = None,
                  on_missing: Callable[[int, int], None] | None = None
                  ) -> tuple[CaptionIndex, int]:
    """The caption file's :class:`CaptionIndex` in ``memory``, after ingesting the file's
    records that are missing (their keys from the file, no pyramid; nothing is stored
    twice). Returns the index and the number of clips added. ``on_missing(missing,
    records)``: called once before any ingest, with the records missing and the file's
    records; ``on_progress(n)``: ``n`` more records gone through."""
    index = caption_index(memory, captions)
    if not index.missing:
        return index, 0
    if on_missing is not None:
        on_missing(index.missing, len(index.clip_ids))
    result = ingest_caption_file(memory, hub, captions, on_progress=on_progress)
    return caption_index(memory, captions), result.clips_added


def part_of(q: QAQuestion, index: CaptionIndex) -> str:
    """``multi-day`` when ``q`` is asked on a later day than one of its targets (the target
    clips' days, else ``target_time``'s), else ``one-day``."""
    days = ({index.days[t] for t in q.target_clips} if q.target_clips
            else {int(q.target_at // 86400) + 1})
    return "multi-day" if any(d < q.day for d in days) else "one-day"


def unscored_reason(q: QAQuestion, index: CaptionIndex) -> str | None:
    """Why ``q`` cannot be scored for hits: no ``target_clips``, or a target clip that is
    not in the memory; ``None`` when it can."""
    if q.target_clips is None:
        return "no target_clips"
    if any(index.clip_ids[t] is None for t in q.target_clips):
        return "a target clip is not in the memory"
    return None


def window_hits(anchors: Iterable[int], targets: set[int], delta: int) -> tuple[bool, bool]:
    """(a target, every target) inside the timeline positions ``anchors`` ± ``delta``."""
    window = {a + off for a in anchors for off in range(-delta, delta + 1)}
    return bool(targets & window), targets <= window


def mode_options(opts: AskOptions, q: QAQuestion, mode: str) -> AskOptions:
    """``opts`` for question ``q`` in ``mode``: its query time, and its options as choices
    searched too (``choices``) or no choices at all (``question``)."""
    if mode == "choices":
        return replace(opts, at=q.at, choices=list(q.choices), choice_queries=True)
    return replace(opts, at=q.at, choices=None)


def _doc(index: CaptionIndex, clip_id: int) -> str:
    """A clip as an ``ir-measures`` document: its record index, else ``clip<id>``."""
    return str(index.index_of[clip_id]) if clip_id in index.index_of else f"clip{clip_id}"


def retrieve_one(memory: Memory, hub, q: QAQuestion, opts: AskOptions, index: CaptionIndex,
                 top_n: int) -> dict:
    """Round 1 of ``q`` with ``opts``: the top-``top_n`` anchors (record indices, ``None``
    for a clip not from the caption file), the top-10 ``ranked`` (record index or
    ``clip<id>``, score), whether the anchors are the first N of that list, and ms."""
    subs: list[str] = []
    if opts.decompose:  # MARQUIS sub-queries, as ask's round 1 (one solver call)
        from edge.recall.decompose import decompose

        subs = decompose(hub.llm("solver"), q.question, choices=opts.choices,
                         style=opts.decompose_style)
    embedder = memory_embedder(memory, hub)
    r = first_round(memory, embedder, q.question, opts, sub_queries=subs, top_n=top_n)
    deep = first_round(memory, embedder, q.question, opts, sub_queries=subs,
                       top_n=max(DEEP, top_n))
    return {"anchors": [index.index_of.get(a.clip_id) for a in r.anchors],
            "ranked": [(_doc(index, a.clip_id), float(a.score)) for a in deep.anchors[:DEEP]],
            "head_equal": [a.clip_id for a in r.anchors]
                          == [a.clip_id for a in deep.anchors[:top_n]],
            "ms": r.ms, "queries": len(r.queries), "note": r.note}


def score_hits(res: dict, q: QAQuestion, index: CaptionIndex) -> dict:
    """hit@Δ0/1/2 and all@Δ2 of one retrieval of a scorable question."""
    anchors = [index.pos[i] for i in res["anchors"] if i is not None]
    targets = {index.pos[t] for t in q.target_clips}
    out = {}
    for d in DELTAS:
        hit, every = window_hits(anchors, targets, d)
        out[f"hit@Δ{d}"] = hit
        if d == 2:
            out["all@Δ2"] = every
    return out


def add_ranking_metrics(rows: list[dict], mode: str) -> None:
    """R@10 and nDCG@10 (``ir-measures``) into each scored row's ``mode`` result, on the
    anchors' rank order (the product's order: option slots and spreading do not follow the
    fused scores, so each is scored 1 / rank)."""
    import ir_measures
    from ir_measures import R, nDCG

    qrels, run = [], []
    for row in rows:
        res = row.get(mode)
        if res is None or not row["scored"]:
            continue
        qrels += [ir_measures.Qrel(row["id"], str(t), 1) for t in row["target_clips"]]
        run += [ir_measures.ScoredDoc(row["id"], d, 1.0 / rank)
                for rank, (d, _score) in enumerate(res["ranked"], start=1)]
    values: dict[tuple[str, str], float] = {}
    for m in ir_measures.iter_calc([R @ DEEP, nDCG @ DEEP], qrels, run):
        values[(m.query_id, str(m.measure))] = float(m.value)
    for row in rows:
        res = row.get(mode)
        if res is not None and row["scored"]:  # a query with an empty run scores 0
            res["R@10"] = values.get((row["id"], str(R @ DEEP)), 0.0)
            res["nDCG@10"] = values.get((row["id"], str(nDCG @ DEEP)), 0.0)


def question_row(q: QAQuestion, index: CaptionIndex) -> dict:
    """The per-question record of the result: what it is and whether it can be scored."""
    why = unscored_reason(q, index)
    return {"id": q.id, "type": q.type, "tags": list(q.tags), "part": part_of(q, index),
            "split": q.split, "target_clips": list(q.target_clips or []),
            "scored": why is None, "unscored": why}


def run_retrieval(memory: Memory, hub, questions: list[QAQuestion], index: CaptionIndex,
                  opts: AskOptions, modes: Iterable[str] = MODES,
                  on_question: Callable[[int], None] | None = None) -> list[dict]:
    """Round-1 retrieval of every question in each of ``modes``: one row per question
    (:func:`question_row`) with a result per mode (anchors, ranked top 10, ms and, when
    scored, the hit and ranking metrics). ``opts.top_n`` anchors (default 5)."""
    top_n = opts.top_n or 5
    # the model's load stays out of the first question's ms
    memory_embedder(memory, hub).embed_one("warm up", query=True)
    rows = [question_row(q, index) for q in questions]
    for n, (q, row) in enumerate(zip(questions, rows), start=1):
        for mode in modes:
            res = retrieve_one(memory, hub, q, mode_options(opts, q, mode), index, top_n)
            if row["scored"]:
                res.update(score_hits(res, q, index))
            row[mode] = res
        if on_question:
            on_question(n)
    for mode in modes:
        add_ranking_metrics(rows, mode)
    return rows


def summarize(rows: list[dict], mode: str) -> dict:
    """Mean hit/ranking metrics over the scored rows of ``mode`` (``None`` without any),
    ms median and mean over every row, and the counts."""
    results = [r[mode] for r in rows if mode in r]
    scored = [r[mode] for r in rows if mode in r and r["scored"]]
    out: dict = {"n": len(results), "scored": len(scored)}
    for key in HIT_KEYS:
        out[key] = round(statistics.mean(float(s[key]) for s in scored), 3) if scored else None
    ms = [s["ms"] for s in results]
    out["ms_median"] = round(statistics.median(ms), 1) if ms else None
    out["ms_mean"] = round(statistics.mean(ms), 1) if ms else None
    out["top_n_differs"] = sum(not s["head_equal"] for s in results)
    return out


def groups(rows: list[dict]) -> dict[str, dict[str, list[dict]]]:
    """The rows per ``type``, per tag (a row in each of its tags) and per part."""
    out: dict[str, dict[str, list[dict]]] = {"type": {}, "tag": {}, "part": {}}
    for r in rows:
        out["type"].setdefault(r["type"], []).append(r)
        out["part"].setdefault(r["part"], []).append(r)
        for t in r["tags"]:
            out["tag"].setdefault(t, []).append(r)
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def retrieval_summary(rows: list[dict], modes: Iterable[str] = MODES) -> dict:
    """Per mode: ``total`` and ``by_type``/``by_tag``/``by_part`` (:func:`summarize`)."""
    by = groups(rows)
    return {mode: {"total": summarize(rows, mode),
                   **{f"by_{k}": {name: summarize(g, mode) for name, g in v.items()}
                      for k, v in by.items()}}
            for mode in modes}
