"""MERIT's per-video caption/key files as a memory.

MERIT (Choi et al.) releases, per video, its 30 s clips' dense captions and the four keys
extracted from them (event, dialogue, object, summary). A file is a JSON list of clip
records (in clip order, or each with its index) or an object keyed by clip index
(``{"0": {...}, "1": {...}}``); a record holds the caption (``caption``, ``dense_caption``,
``text`` or ``description``; a bare string is the caption alone), the keys as
``event_key``/``dialogue_key``/``object_key``/``sum_key`` or ``event``/``dialogue``/
``object``/``summary`` (``summary_key`` too), at the top or under ``keys``, an optional
index (``clip_idx``, ``clip_id``, ``idx``, ``index``) and optional ``start``/``end``
seconds (numbers or ``MM:SS``). :func:`read_merit_file` turns it into the
:class:`~edge.ingest.captions.CaptionRecord` list ``edge ingest-captions`` stores;
:func:`ingest_merit_file` stores it, with the file's keys (no memory-LLM call).
"""

from __future__ import annotations

import json
from pathlib import Path

from edge.errors import CaptionFileError
from edge.ingest.captions import CaptionRecord, ingest_caption_file
from edge.ingest.memory_writer import SourceResult
from edge.store import Memory

from .items import CLIP_SECONDS, parse_clock

CAPTION_FIELDS = ("caption", "dense_caption", "text", "description")
KEY_FIELDS = {"event": ("event_key", "event"), "dialogue": ("dialogue_key", "dialogue"),
              "object": ("object_key", "object"),
              "summary": ("sum_key", "summary_key", "summary")}
"""Key type → the fields of a MERIT record that may hold it (first found wins)."""
INDEX_FIELDS = ("clip_idx", "clip_id", "idx", "index")


def _first(r: dict, names: tuple[str, ...]) -> object:
    """The value of the first of ``names`` in ``r`` that is not ``null``."""
    return next((r[n] for n in names if r.get(n) is not None), None)


def _keys(r: dict) -> dict[str, str] | None:
    """The four keys of a record (top level or under ``keys``); ``None`` unless all four
    are non-empty strings (the memory LLM then extracts them, as for a caption file)."""
    where = r["keys"] if isinstance(r.get("keys"), dict) else r
    keys = {k: _first(where, names) for k, names in KEY_FIELDS.items()}
    if all(isinstance(v, str) and v.strip() for v in keys.values()):
        return {k: v.strip() for k, v in keys.items()}
    return None


def merit_record(r: object, idx: int, start: float = 0.0) -> CaptionRecord:
    """One clip record (its index ``idx`` in the video) → a caption record on day 1 of the
    day clock, ``start`` + ``idx`` × 30 s onward (or its own ``start``/``end`` seconds
    after ``start``). ``ValueError`` naming the field when it is not usable."""
    if isinstance(r, str):
        r = {"caption": r}
    if not isinstance(r, dict):
        raise ValueError("not a JSON object or a caption string")
    caption = _first(r, CAPTION_FIELDS)
    if not isinstance(caption, str) or not caption.strip():
        raise ValueError(f"{' or '.join(CAPTION_FIELDS)}: missing or empty")
    t0 = start + idx * CLIP_SECONDS
    t1 = t0 + CLIP_SECONDS
    if r.get("start") is not None:
        t0 = start + parse_clock(r["start"])
        t1 = start + parse_clock(r["end"]) if r.get("end") is not None else t0 + CLIP_SECONDS
        if t1 <= t0:
            raise ValueError(f"end {r.get('end')!r} is not after start {r['start']!r}")
    return CaptionRecord(1, t0, t1, caption.strip(), _keys(r))


def _index(r: object, key: str | None, position: int) -> int:
    """A record's clip index: the object's key, else its own index field, else its place."""
    value = key if key is not None else (_first(r, INDEX_FIELDS) if isinstance(r, dict)
                                         else None)
    if value is None:
        return position
    try:
        idx = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"clip index {value!r} is not a whole number") from None
    if idx < 0:
        raise ValueError(f"clip index {idx} is negative")
    return idx


def read_merit_file(path: Path, start: float = 0.0) -> list[CaptionRecord]:
    """Parse a MERIT caption/key file (see the module doc) → caption records in clip
    order, the video's first clip at ``start`` (timeline seconds; 0 = DAY1 00:00).

    Raises :class:`CaptionFileError` for a file that is not JSON, holds no records, a
    record without a caption or with a bad index or times, or a clip index used twice
    (the message names the record)."""
    try:
        data = json.loads(Path(path).read_text("utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CaptionFileError(f"{path}: not a readable JSON file ({e})") from None
    if isinstance(data, dict):
        pairs = [(str(k), v) for k, v in data.items()]
    elif isinstance(data, list):
        pairs = [(None, v) for v in data]
    else:
        raise CaptionFileError(f"{path}: expected a list of clip records or an object of "
                               "them keyed by clip index")
    if not pairs:
        raise CaptionFileError(f"{path}: holds no clip records; nothing to ingest")
    out: dict[int, CaptionRecord] = {}
    for i, (key, r) in enumerate(pairs):
        label = f"record {i}" + (f" (clip {key})" if key is not None else "")
        try:
            idx = _index(r, key, i)
            if idx in out:
                raise ValueError(f"clip index {idx} is used twice")
            out[idx] = merit_record(r, idx, start)
        except (TypeError, ValueError) as e:
            raise CaptionFileError(f"{path}: {label} is malformed: {e}") from None
    return sorted(out.values(), key=lambda c: c.t_start)


def ingest_merit_file(memory: Memory, hub, path: Path, start: float = 0.0,
                      **kwargs) -> SourceResult:
    """Store a MERIT caption/key file's clips in ``memory`` with their keys, the first at
    ``start`` (:func:`edge.ingest.captions.ingest_caption_file` on :func:`read_merit_file`'s
    records: nothing is stored twice, an interrupted run resumes; ``kwargs`` go to it).
    Raises :class:`CaptionFileError` for a malformed file and what that function raises."""
    return ingest_caption_file(memory, hub, Path(path),
                               records=read_merit_file(path, start), **kwargs)
