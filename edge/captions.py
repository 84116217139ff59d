"""Build a memory from a caption file instead of video (EgoLife / MERIT caption JSON).

Each record is one clip: ``date`` (``DAY1``), ``start_time``/``end_time`` (``HHMMSSFF``,
FF = frame at 20 fps), ``text`` (the dense caption) and optionally the four MERIT keys
(``event_key``, ``dialogue_key``, ``object_key``, ``sum_key``). Clips go on the EgoLife
day clock (see :mod:`edge.timeline`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from edge.ingest import SourceResult, file_sha256, index_texts, store_clip
from edge.keys import ClipKeys, extract_keys
from edge.store import INDEX_TYPES, Memory
from edge.timeline import day_clock, egolife_time

FILE_KEYS = {"event": "event_key", "dialogue": "dialogue_key", "object": "object_key",
             "summary": "sum_key"}


class CaptionFileError(ValueError):
    """The caption file is not in the expected format; the message names the record."""


@dataclass(frozen=True)
class CaptionRecord:
    day: int
    t_start: float
    t_end: float
    text: str
    keys: dict[str, str] | None


def read_caption_file(path: Path) -> list[CaptionRecord]:
    """Parse and validate a caption file; records come back in timeline order.

    Raises :class:`CaptionFileError` naming the first bad record.
    """
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CaptionFileError(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(data, list):
        raise CaptionFileError(f"{path}: expected a JSON list of clip records")
    out = []
    for i, r in enumerate(data):
        try:
            m = re.fullmatch(r"DAY(\d+)", str(r["date"]).strip(), re.IGNORECASE)
            if not m:
                raise ValueError(f"date {r['date']!r} is not DAYn")
            day = int(m.group(1))
            t0 = day_clock(day, egolife_time(r["start_time"]))
            t1 = day_clock(day, egolife_time(r["end_time"]))
            if t1 < t0:  # a clip running past midnight
                t1 += 86400.0
            text = str(r["text"]).strip()
            if not text:
                raise ValueError("empty text")
        except (KeyError, TypeError, ValueError) as e:
            raise CaptionFileError(f"{path}: record {i} is malformed ({e})") from None
        keys = None
        if all(isinstance(r.get(f), str) and r[f].strip() for f in FILE_KEYS.values()):
            keys = {k: r[f].strip() for k, f in FILE_KEYS.items()}
        out.append(CaptionRecord(day, t0, t1, text, keys))
    out.sort(key=lambda c: c.t_start)
    return out


def ingest_caption_file(
    memory: Memory,
    hub,
    path: Path,
    *,
    extract: bool = False,
    limit: int | None = None,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> SourceResult:
    """Add every record of a caption file as a clip with its four keys and their vectors.

    Keys come from the file when it has them (``origin="file"``); ``extract=True`` (or a
    record without keys) asks the memory LLM (MERIT key extraction). Re-ingesting the same
    file adds nothing; an interrupted run resumes where it stopped.
    """
    path = Path(path)
    records = read_caption_file(path)
    if limit is not None:
        records = records[:limit]
    digest = file_sha256(path) + (f":{limit}" if limit is not None else "")
    existing = memory.source_by_hash(digest)
    if existing is not None and existing.status == "done":
        return SourceResult(str(path), "skipped",
                            message=f"already in memory (same content as {existing.path})")
    if existing is None:
        source_id = memory.add_source(
            path=str(path.resolve()), sha256=digest, kind="captions", clock="dayclock",
            start_from="file", t_start=records[0].t_start if records else 0.0,
            duration=sum(r.t_end - r.t_start for r in records), n_clips=len(records),
            info={"keys": "extract" if extract else "file"})
        done: set[int] = set()
        result = SourceResult(str(path), "ingested")
    else:
        source_id = existing.id
        done = memory.clip_indices(source_id)
        result = SourceResult(str(path), "resumed")
    if on_total:
        on_total(len(records))
    embedder = hub.embedder
    batch = 64
    for lo in range(0, len(records), batch):
        todo = [(i, r) for i, r in enumerate(records[lo:lo + batch], start=lo) if i not in done]
        keys_list: list[ClipKeys] = []
        for _, r in todo:
            if r.keys is not None and not extract:
                keys_list.append(ClipKeys(**r.keys, origin="file"))
            else:
                keys_list.append(extract_keys(hub.llm("memory_llm"), r.text))
        texts = [t for (_, r), k in zip(todo, keys_list) for t in index_texts(k, r.text)]
        vecs = embedder.embed(texts)
        width = len(INDEX_TYPES)
        for j, ((i, r), k) in enumerate(zip(todo, keys_list)):
            store_clip(memory, vecs[j * width:(j + 1) * width], source_id=source_id, idx=i,
                       t_start=r.t_start, t_end=r.t_end, clock="dayclock", caption=r.text,
                       transcript="", keyframes=[], signals={}, keys=k)
            result.clips_added += 1
        if on_progress:
            on_progress(len(records[lo:lo + batch]))
    result.duration = sum(r.t_end - r.t_start for r in records)
    memory.finish_source(source_id)
    return result
