"""``edge bench videos``: a question set of a video benchmark (:mod:`edge.bench.loaders`:
Video-MME, LVBench, M3-Bench, EgoLifeQA) asked of one memory per video.

Each video's memory is ``<memories>/<video id>.db``, opened read-only. A video without one
is skipped, said once with the command that builds it, and the run goes on (with a folder of
MERIT caption/key files the missing memory is first built from ``<video id>.json``,
:mod:`edge.bench.merit`). Per item: round 1 of ``ask`` (no LLM call) → its anchors as 30 s
clip indices from the video's start and, when the item has a target span, hit@Δ0/1/2; with
``answer``, the same answer loop as ``edge bench qa --answer`` (:func:`edge.answer.ask`, the
options as choices): a multiple-choice answer is scored by letter, an open-ended one is kept
for a judge (``judge``, none by default) — plus rounds, calls, tokens, seconds and hit@Δ2 over
every round's anchors. The result JSON is rewritten after every item (an interrupted run
keeps what it did), with totals and breakdowns per question type and duration split.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from edge.answer import AskError, ask
from edge.answer.options import AskOptions
from edge.answer.search import first_round
from edge.errors import StoreError
from edge.store import Memory
from edge.store.embedding import memory_embedder

from .answering import mean_or_none
from .items import CLIP_SECONDS, BenchItem
from .qa import DELTAS, window_hits
from .run import options_json, write_result

Asker = Callable[..., object]
"""``ask(memory, hub, question, options)`` → an :class:`edge.answer.Answer`."""
Judge = Callable[[BenchItem, str], "bool | float | None"]
"""``judge(item, answer_text)`` → right (``True``/1.0) or wrong, or ``None`` (no verdict)."""


def memory_path(memories: Path, video: str) -> Path:
    """Where the memory of ``video`` is: ``<memories>/<video>.db``."""
    return Path(memories) / f"{video}.db"


def open_video_memory(memories: Path, video: str, hub=None,
                      captions: Path | None = None) -> tuple[Memory | None, str]:
    """The memory of ``video`` opened read-only, or ``None`` and why not (no file, a file
    that is no usable memory, no clips). With ``captions`` (a folder of MERIT caption/key
    files) a missing memory is first built from ``<captions>/<video>.json``."""
    from .merit import ingest_merit_file

    path = memory_path(memories, video)
    source = Path(captions) / f"{video}.json" if captions is not None else None
    note = ""
    if not path.exists() and source is not None and source.is_file():
        with Memory(path) as m:
            added = ingest_merit_file(m, hub, source).clips_added
        note = f"built {path} from {source} ({added} clips)"
    if not path.exists():
        return None, (f"no memory at {path} — ingest it with `edge ingest VIDEO --memory "
                      f"{path}`")
    try:
        memory = Memory(path, create=False, readonly=True)
    except StoreError as e:
        return None, str(e)
    if not memory.count_clips():
        memory.close()
        return None, f"the memory {path} holds no clips"
    return memory, note


def item_row(item: BenchItem) -> dict:
    """The per-item record of the result: what the item is and whether hits are scored."""
    return {"id": item.id, "video": item.video, "benchmark": item.benchmark,
            "types": list(item.types), "duration": item.duration, "question": item.question,
            "open_ended": item.open_ended, "truth": item.answer,
            "span": list(item.span) if item.span else None,
            "target_clips": list(item.target_clips), "scored": item.span is not None}


def origin(item: BenchItem, base: float) -> float:
    """The timeline seconds ``item``'s times count from: ``base`` (the video's first clip)
    on the video clock, 0 on the EgoLife day clock."""
    return base if item.clock == "video" else 0.0


def item_options(opts: AskOptions, item: BenchItem, zero: float) -> AskOptions:
    """``opts`` for ``item``: its options as choices and its query time on the memory's
    timeline (``zero`` + its seconds; ``None``: after the whole video)."""
    at = None if item.at is None else zero + item.at
    return replace(opts, at=at, choices=list(item.choices) or None)


def positions(memory: Memory, clip_ids: Iterable[int], base: float) -> list[int]:
    """Clips as 30 s clip indices counted from ``base`` (their midpoints)."""
    ids = list(clip_ids)
    clips = memory.clips(ids)
    return [int(((clips[i].t_start + clips[i].t_end) / 2 - base) // CLIP_SECONDS)
            for i in ids if i in clips]


def retrieve_item(memory: Memory, embedder, item: BenchItem, opts: AskOptions,
                  zero: float) -> dict:
    """Round 1 of ``ask`` for ``item`` (``opts`` already the item's): its anchors as clip
    indices counted from ``zero`` (:func:`origin`), ms, and hit@Δ0/1/2 against the target
    clips when the item has a span."""
    r = first_round(memory, embedder, item.question, opts)
    anchors = positions(memory, [a.clip_id for a in r.anchors], zero)
    out: dict = {"anchors": anchors, "ms": r.ms}
    if item.span is not None:
        for d in DELTAS:
            out[f"hit@Δ{d}"] = window_hits(anchors, set(item.target_clips), d)[0]
    return out


def answer_item(memory: Memory, hub, item: BenchItem, opts: AskOptions, zero: float,
                asker: Asker = ask, judge: Judge | None = None) -> dict:
    """Ask ``item`` (``opts`` already the item's) and measure it: the answer, ``correct``
    (the letter for multiple choice; ``judge``'s verdict or ``None`` when open-ended),
    rounds, LLM calls and tokens, seconds and, with a span, hit@Δ2 over every round's
    anchors (clip indices from ``zero``)."""
    res = asker(memory, hub, item.question, opts)
    llm = (res.usage or {}).get("llm", {})
    row: dict = {"answer": res.answer, "rounds": len(res.rounds),
                 "calls": llm.get("calls", 0), "tokens_in": llm.get("tokens_in", 0),
                 "tokens_out": llm.get("tokens_out", 0), "seconds": round(res.seconds, 2),
                 "sufficient": res.sufficient, "note": res.note}
    if item.open_ended:
        row["correct"] = judge(item, res.answer) if judge is not None else None
    else:
        row["correct"] = res.answer.strip().upper() == item.answer
    if item.span is not None:
        seen = positions(memory, [a["clip_id"] for r in res.rounds for a in r.anchors], zero)
        row["hit@Δ2"] = window_hits(seen, set(item.target_clips), 2)[0]
    return row


def measure_item(memory: Memory, hub, item: BenchItem, opts: AskOptions, base: float, *,
                 answer: bool, asker: Asker = ask, judge: Judge | None = None) -> dict:
    """:func:`item_row` with round 1 (``round1``) and, with ``answer``, the answer loop
    (``answering``). A question ``ask`` refuses (asked before the memory's first clip
    ends…) keeps the reason in ``error``; answered, it counts as wrong."""
    row = item_row(item)
    zero = origin(item, base)
    o = item_options(opts, item, zero)
    try:
        row["round1"] = retrieve_item(memory, memory_embedder(memory, hub), item, o, zero)
        if answer:
            row["answering"] = answer_item(memory, hub, item, o, zero, asker, judge)
    except AskError as e:
        row["error"] = str(e)
        if answer and "answering" not in row:
            row["answering"] = {"answer": None, "correct": None if item.open_ended else False}
    return row


def summarize_items(rows: list[dict]) -> dict:
    """Counts, round-1 hit@Δ (items with a span), ms p50, and over the answered items the
    accuracy (multiple choice and judged open-ended), how many open-ended answers await a
    judge, hit@Δ2 over every round, rounds, calls and seconds p50."""
    r1 = [r["round1"] for r in rows if "round1" in r]
    hit = [r["round1"] for r in rows if "round1" in r and r["scored"]]
    ans = [r["answering"] for r in rows if "answering" in r]
    judged = [a for a in ans if a.get("correct") is not None]
    out: dict = {"n": len(rows), "errors": sum("error" in r for r in rows),
                 "scored": len(hit)}
    for d in DELTAS:
        out[f"hit@Δ{d}"] = mean_or_none([float(x[f"hit@Δ{d}"]) for x in hit])
    out["ms_p50"] = round(statistics.median([x["ms"] for x in r1]), 1) if r1 else None
    out.update({"answered": len(ans),
                "accuracy": mean_or_none([float(a["correct"]) for a in judged]),
                "to_judge": len(ans) - len(judged),
                "loop_hit@Δ2": mean_or_none([float(a["hit@Δ2"]) for a in ans if "hit@Δ2" in a]),
                "rounds_mean": mean_or_none([a["rounds"] for a in ans if "rounds" in a]),
                "calls_mean": mean_or_none([a["calls"] for a in ans if "calls" in a]),
                "seconds_p50": round(statistics.median(s), 1) if (s := [
                    a["seconds"] for a in ans if "seconds" in a]) else None})
    return out


def video_summary(rows: list[dict]) -> dict:
    """``total`` and ``by_type`` (an item in each of its types) / ``by_duration``."""
    by_type: dict[str, list[dict]] = {}
    by_duration: dict[str, list[dict]] = {}
    for r in rows:
        for t in r["types"] or ["(none)"]:
            by_type.setdefault(t, []).append(r)
        if r["duration"]:
            by_duration.setdefault(r["duration"], []).append(r)
    return {"total": summarize_items(rows),
            "by_type": {k: summarize_items(v) for k, v in sorted(by_type.items())},
            "by_duration": {k: summarize_items(v) for k, v in sorted(by_duration.items())}}


def _by_video(items: list[BenchItem]) -> dict[str, list[BenchItem]]:
    """The items per video, videos in the order they first appear."""
    out: dict[str, list[BenchItem]] = {}
    for item in items:
        out.setdefault(item.video, []).append(item)
    return out


def run_videos(items: list[BenchItem], memories: Path, hub, opts: AskOptions, out: Path, *,
               answer: bool = False, judge: Judge | None = None, asker: Asker = ask,
               captions: Path | None = None, info: dict | None = None,
               say: Callable[[str], None] = lambda _line: None) -> dict:
    """Measure ``items`` over the memories in ``memories`` (see the module doc) and write
    the result to ``out`` after every item; returns it. ``info``: fields to record (the
    question file, format, profile). ``say``: progress lines, and one per skipped video."""
    result: dict = {**(info or {}), "memories": str(memories), "out": str(out),
                    "items": len(items), "videos": 0, "skipped": [], "skipped_items": 0,
                    "answer": answer, "options": options_json(opts), "summary": None,
                    "per_item": []}
    rows: list[dict] = result["per_item"]
    for video, group in _by_video(items).items():
        memory, why = open_video_memory(memories, video, hub, captions)
        if memory is None:
            result["skipped"].append({"video": video, "items": len(group), "reason": why})
            result["skipped_items"] += len(group)
            say(f"skipped {len(group)} items of video {video}: {why}")
            write_result(result, out)
            continue
        if why:
            say(why)
        result["videos"] += 1
        with memory:
            base = memory.all_clips()[0].t_start
            for item in group:
                rows.append(measure_item(memory, hub, item, opts, base, answer=answer,
                                         asker=asker, judge=judge))
                result["summary"] = video_summary(rows)
                write_result(result, out)
                say(_progress(rows[-1]))
    result["summary"] = video_summary(rows)
    write_result(result, out)
    return result


def _progress(row: dict) -> str:
    """One line per item: its id, hit or not, and its answer against the truth."""
    r1 = row.get("round1") or {}
    hit = f" hit@Δ2 {r1['hit@Δ2']}" if "hit@Δ2" in r1 else ""
    a = row.get("answering")
    ans = (f" answer {str(a['answer'])[:60]!r} (truth {row['truth'][:60]!r})" if a else "")
    return f"{row['video']} {row['id']}:{hit}{ans}" + (f" error: {row['error']}"
                                                       if "error" in row else "")


_COLS = ("n", "scored", "hit@Δ0", "hit@Δ2", "ms_p50", "answered", "accuracy", "to_judge",
         "loop_hit@Δ2", "rounds_mean", "calls_mean", "seconds_p50")


def markdown_videos(result: dict) -> str:
    """The result as Markdown: one table (total, per type, per duration) and the skipped
    videos."""
    s = result["summary"]
    lines = [f"| group | {' | '.join(_COLS)} |", "|---" * (len(_COLS) + 1) + "|"]
    groups = [("**all**", s["total"])] + [(f"{by}: {k}", v) for by in ("type", "duration")
                                          for k, v in s[f"by_{by}"].items()]
    for label, g in groups:
        lines.append(f"| {label} | " + " | ".join("–" if g.get(c) is None else str(g[c])
                                                    for c in _COLS) + " |")
    for sk in result["skipped"]:
        lines.append(f"\nskipped {sk['items']} items of video {sk['video']}: {sk['reason']}")
    return "\n".join(lines)
