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

from edge.build.keys import ClipKeys
from edge.build.pyramid import Pyramid
from edge.errors import CaptionFileError  # noqa: F401 (re-exported)
from edge.ingest.media import shown
from edge.ingest.memory_writer import (
    Deferred,
    NewClip,
    NewSource,
    SourceResult,
    file_sha256,
    register_or_resume,
    write_clip,
    write_clips,
    write_clips_realtime,
)
from edge.store import Memory
from edge.timeline import day_clock, egolife_time

FILE_KEYS = {"event": "event_key", "dialogue": "dialogue_key", "object": "object_key",
             "summary": "sum_key"}
"""Key type → the field of a caption record that holds it."""

BATCH = 64
"""Records checked, embedded (one embedder call without a pyramid) and stored per batch."""

@dataclass(frozen=True)
class CaptionRecord:
    """One record of a caption file: ``day`` (n of DAYn), ``t_start``/``t_end`` on the
    EgoLife day clock (seconds), the caption ``text`` and the file's four keys (``None``
    unless the record has all four)."""

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
        data = json.loads(Path(path).read_text("utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CaptionFileError(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(data, list):
        raise CaptionFileError(f"{path}: expected a JSON list of clip records")
    if not data:
        raise CaptionFileError(f"{path}: the list holds no clip records; nothing to ingest")
    out = []
    for i, r in enumerate(data):
        try:
            if not isinstance(r, dict):
                raise ValueError("not a JSON object")
            missing = [f for f in ("date", "start_time", "end_time", "text") if f not in r]
            if missing:
                raise ValueError(f"missing field(s) {', '.join(missing)}")
            m = re.fullmatch(r"DAY(\d+)", str(r["date"]).strip(), re.IGNORECASE)
            if not m or int(m.group(1)) < 1:
                raise ValueError(f"date {r['date']!r} is not DAYn with n ≥ 1")
            day = int(m.group(1))
            t0 = day_clock(day, egolife_time(r["start_time"]))
            t1 = day_clock(day, egolife_time(r["end_time"]))
            if t1 < t0:  # a clip running past midnight
                t1 += 86400.0
            if not isinstance(r["text"], str) or not r["text"].strip():
                raise ValueError("'text' must be a non-empty string")
            text = r["text"].strip()
        except (TypeError, ValueError) as e:
            raise CaptionFileError(f"{path}: record {i} is malformed: {e}") from None
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
    records: list[CaptionRecord] | None = None,
    extract: bool = False,
    limit: int | None = None,
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    pyramid: Pyramid | None = None,
    deferred: Deferred | None = None,
) -> SourceResult:
    """Add the records of a caption file as clips with their four keys and vectors.

    Keys come from the file when it has them (``origin="file"``); ``extract=True`` (or a
    record without keys) asks the memory LLM (MERIT key extraction). ``limit`` takes only the
    first N records; a later run without it adds the rest. Nothing is stored twice: the file
    is known by its hash (an interrupted run resumes), and a record whose times and caption
    are already stored — from this file or another, e.g. a multi-day file that contains the
    day file — is skipped. ``records`` may be passed when the caller already parsed the file.
    ``on_total(n)``: records to go through, once; ``on_progress(n)``: records done. Raises
    :class:`CaptionFileError` (malformed file), ``StoreError`` and model setup errors.

    With ``pyramid`` (:class:`edge.build.pyramid.Pyramid`) each clip also gets its PyraVid fact
    nodes, clip node and relational links from one memory-LLM call per clip (the file's keys
    are kept unless ``extract``), and the global nodes are updated every K clips and at the
    end (:meth:`~edge.build.pyramid.Pyramid.finalize`). With ``deferred`` only the real-time tier
    runs (captions and the file's keys embedded in batches, no memory-LLM call) and the
    LLM work is queued for :mod:`edge.build`; ``pyramid`` is then unused.
    """
    path = Path(path)
    records = read_caption_file(path) if records is None else records
    wanted = records if limit is None else records[:limit]
    state = register_or_resume(memory, file_sha256(path),
                               lambda: _new_source(path, records, extract))
    if state.status == "skipped":
        return SourceResult(shown(path), "skipped", message=state.skipped_message)
    result = SourceResult(shown(path), state.status)
    if on_total:
        on_total(len(wanted))
    duplicates = 0
    for lo in range(0, len(wanted), BATCH):
        batch = wanted[lo:lo + BATCH]
        pending, stored_elsewhere = _unstored(memory, batch, lo, state.done)
        duplicates += stored_elsewhere
        clips = [_new_clip(state.source_id, i, r, extract) for i, r in pending]
        result.clips_added += _write_batch(memory, hub, clips, len(batch), pyramid, deferred,
                                           on_progress)
    if pyramid is not None and deferred is None:
        pyramid.finalize()
    _conclude(memory, state.source_id, result, wanted, records, duplicates)
    return result


def _write_batch(memory: Memory, hub, clips: list[NewClip], seen: int,
                 pyramid: Pyramid | None, deferred: Deferred | None,
                 on_progress: Callable[[int], None] | None) -> int:
    """Store one batch's new ``clips`` (of ``seen`` records): the real-time tier with
    ``deferred``, else in one embedder call without ``pyramid``, else clip by clip with it
    (each costs calls, so progress moves per clip). The clips this call added."""
    if deferred is not None or pyramid is None:
        stored = (write_clips_realtime(memory, hub, clips, deferred) if deferred is not None
                  else write_clips(memory, hub, clips))
        if on_progress:
            on_progress(seen)
        return sum(s.added for s in stored)
    if on_progress and seen > len(clips):
        on_progress(seen - len(clips))
    added = 0
    for clip in clips:
        added += write_clip(memory, hub, clip, pyramid=pyramid).added
        if on_progress:
            on_progress(1)
    return added


def _unstored(memory: Memory, batch: list[CaptionRecord], first: int,
              done: set[int]) -> tuple[list[tuple[int, CaptionRecord]], int]:
    """The ``(index, record)`` pairs of a batch (indices from ``first``) still to store, and
    how many were skipped as stored from another source (same times and caption)."""
    todo, duplicates = [], 0
    for i, r in enumerate(batch, start=first):
        if i in done:
            continue
        if memory.find_clip(r.t_start, r.t_end, r.text) is not None:
            duplicates += 1
            continue
        todo.append((i, r))
    return todo, duplicates


def _new_source(path: Path, records: list[CaptionRecord], extract: bool) -> NewSource:
    """The source row of a caption file: on the day clock from its first record."""
    return NewSource(
        path=shown(path.resolve()), kind="captions", clock="dayclock", start_from="file",
        t_start=records[0].t_start if records else 0.0,
        duration=sum(r.t_end - r.t_start for r in records), n_clips=len(records),
        info={"keys": "extract" if extract else "file"})


def _new_clip(source_id: int, idx: int, r: CaptionRecord, extract: bool) -> NewClip:
    """A record as a clip for the memory writer, with the file's keys unless ``extract``."""
    keys = ClipKeys(**r.keys, origin="file") if r.keys is not None and not extract else None
    return NewClip(source_id=source_id, idx=idx, t_start=r.t_start, t_end=r.t_end,
                   clock="dayclock", caption=r.text, keys=keys)


def _conclude(memory: Memory, source_id: int, result: SourceResult,
              wanted: list[CaptionRecord], records: list[CaptionRecord],
              duplicates: int) -> None:
    """Mark the source finished unless ``--limit`` left records out; say what was skipped."""
    result.duration = sum(r.t_end - r.t_start for r in wanted)
    notes = []
    if duplicates:
        notes.append(f"{duplicates} record(s) already in memory from another source were skipped")
    if len(wanted) < len(records):
        notes.append(f"first {len(wanted)} of {len(records)} records; run again without "
                     "--limit to add the rest")
    else:
        memory.finish_source(source_id)
    if result.clips_added == 0:
        result.status = "skipped"
        notes.insert(0, "already in memory")
    result.message = "; ".join(notes)
