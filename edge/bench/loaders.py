"""Question sets of other long-video benchmarks, read into one item type (:class:`BenchItem`)
for ``edge bench videos``: one memory per video, each question asked of its video's memory.

Formats, as their public releases lay them out (a JSON list, a JSON object or JSONL):

- ``videomme`` — Video-MME (Fu et al. 2025): per video ``videoID`` (or ``video_id``),
  ``duration`` (``short``/``medium``/``long``), ``domain``, ``sub_category`` and
  ``questions``: ``{question_id, task_type, question, options: ["A. …", …], answer}``; or
  the flat layout of its Hugging Face parquet, one record per question with those fields
  beside ``video_id``/``videoID`` and ``duration``.
- ``lvbench`` — LVBench (Wang et al. 2025), ``video_info.meta.jsonl``: per video ``key``,
  ``type`` and ``qa``: ``{uid, question (with "(A) …" option lines), answer,
  question_type: [...], time_reference: "MM:SS-MM:SS" | "HH:MM:SS-HH:MM:SS"}``.
- ``m3bench`` — M3-Bench (Long et al. 2025), open-ended: ``{video id: {video_path,
  qa_list}}`` or a list of ``{id | video_id | video_path, qa_list}``; each QA ``{question,
  answer (free text), question_type | type, timestamp ("MM:SS", when it is asked),
  question_id}`` (``before_clip``, a 30 s clip index, stands in for a missing
  ``timestamp``).
- ``egolife`` — EgoLifeQA (:mod:`edge.bench.questions`); the video is the record's
  ``identity``, else the file's stem; times are on the EgoLife day clock.

:func:`load_items` reads any of them, telling the format from the content when it is not
given; a broken record raises :class:`BenchError` naming the file, the record, the question
and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from edge.errors import BenchError

from .items import CLIP_SECONDS, DURATIONS, BenchItem, parse_clock, parse_span
from .questions import parse_question

__all__ = ["FORMATS", "BenchItem", "detect_format", "load_items", "select_items",
           "split_options"]

FORMATS = ("videomme", "lvbench", "m3bench", "egolife")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


# ---- fields -----------------------------------------------------------------------------

def _has(r: dict, *names: str) -> bool:
    """Whether ``r`` holds one of ``names`` (not ``null``)."""
    return any(r.get(n) is not None for n in names)


def _text(r: dict, *names: str) -> str:
    """The first of ``names`` in ``r`` as a non-empty string (an int is read as one)."""
    name = next((n for n in names if r.get(n) is not None), None)
    if name is None:
        raise ValueError(f"{' or '.join(names)}: missing")
    value = r[name]
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name}: must be a non-empty string, got {value!r}")
    return value.strip()


def _list(r: dict, name: str) -> list:
    """A non-empty list field (a video's questions)."""
    value = r.get(name)
    if not isinstance(value, list) or not value:
        raise ValueError(f"{name}: missing" if value is None
                         else f"{name}: must be a non-empty list, got {type(value).__name__}")
    return value


def _types(r: dict, *names: str) -> tuple[str, ...]:
    """Question types: a string or a list of strings under the first of ``names``."""
    name = next((n for n in names if r.get(n) is not None), None)
    value = r.get(name) if name else None
    if value is None:
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{name}: must be a string or a list of strings, got {value!r}")
    return tuple(v.strip() for v in values if v.strip())


def _letter(r: dict, n: int) -> str:
    """``answer``: one of the first ``n`` letters (``"b"``, ``"(B)"``, ``"B."`` read as B)."""
    raw = str(_text(r, "answer")).strip().strip("().").strip().upper()
    if raw not in LETTERS[:n] or len(raw) != 1:
        raise ValueError(f"answer: {r['answer']!r} is not one of {', '.join(LETTERS[:n])}")
    return raw


_OPTION = re.compile(r"\s*\(?([A-Z])[.)：:]\s*(.*)", re.S)


def _options(value: object) -> tuple[str, ...]:
    """Video-MME's ``options`` (``["A. …", "B. …", …]``) → the option texts; the letter
    prefixes must run A, B, … when present."""
    if (not isinstance(value, list) or len(value) < 2
            or not all(isinstance(o, str) and o.strip() for o in value)):
        raise ValueError(f"options: must be a list of 2 or more option strings, got {value!r}")
    out = []
    for i, option in enumerate(value):
        m = _OPTION.fullmatch(option)
        if m and m.group(1) != LETTERS[i]:
            raise ValueError(f"options: option {i + 1} is lettered {m.group(1)}, "
                             f"expected {LETTERS[i]}")
        text = (m.group(2) if m else option).strip()
        if not text:
            raise ValueError(f"options: option {LETTERS[i]} is empty")
        out.append(text)
    return tuple(out)


_MARK = re.compile(r"(?:^|\n)[ \t]*\(([A-Z])\)[ \t]*")


def split_options(text: str) -> tuple[str, tuple[str, ...]]:
    """LVBench's question text → (the question, its option texts): the options are the
    lines ``(A) …``, ``(B) …`` after it. ``ValueError`` when there are fewer than two, or
    they are not lettered A, B, … in order."""
    marks = list(_MARK.finditer(text))
    if len(marks) < 2:
        raise ValueError("question: expected options on lines of their own, '(A) …' '(B) …'")
    letters = "".join(m.group(1) for m in marks)
    if letters != LETTERS[:len(marks)]:
        raise ValueError(f"question: options lettered {', '.join(letters)}, expected A, B, …")
    ends = [m.start() for m in marks[1:]] + [len(text)]
    choices = tuple(text[m.end():end].strip() for m, end in zip(marks, ends))
    question = text[:marks[0].start()].strip()
    if not question or not all(choices):
        raise ValueError("question: the question or one of its options is empty")
    return question, choices


def _duration(r: dict) -> str | None:
    """Video-MME's ``duration`` split, lower-cased; ``None`` when absent."""
    if r.get("duration") is None:
        return None
    value = str(r["duration"]).strip().lower()
    if value not in DURATIONS:
        raise ValueError(f"duration: {r['duration']!r} is not one of {', '.join(DURATIONS)}")
    return value


# ---- one record of each format ----------------------------------------------------------

def _each(qs: list, parse: Callable[[dict, int], BenchItem], key: str) -> list[BenchItem]:
    """``parse(q, j)`` for each question of a video; an error names the question."""
    out = []
    for j, q in enumerate(qs):
        try:
            if not isinstance(q, dict):
                raise ValueError("not a JSON object")
            out.append(parse(q, j))
        except (TypeError, ValueError) as e:
            name = f" ({q[key]})" if isinstance(q, dict) and q.get(key) is not None else ""
            raise ValueError(f"question {j}{name}: {e}") from None
    return out


def videomme_items(r: dict, key: str | None = None) -> list[BenchItem]:
    """One Video-MME record (a video with ``questions``, or one flat question) → items."""
    video = _text(r, "videoID", "video_id") if key is None else key
    duration = _duration(r)

    def item(q: dict, _j: int) -> BenchItem:
        choices = _options(q.get("options"))
        return BenchItem("videomme", _text(q, "question_id"), video, _text(q, "question"),
                         choices, _letter(q, len(choices)), _types(q, "task_type"),
                         duration)

    if "questions" in r:
        return _each(_list(r, "questions"), item, "question_id")
    return [item(r, 0)]


def lvbench_items(r: dict, key: str | None = None) -> list[BenchItem]:
    """One LVBench line (a video with its ``qa``) → items with target spans."""
    video = _text(r, "key", "video_id") if key is None else key

    def item(q: dict, _j: int) -> BenchItem:
        question, choices = split_options(_text(q, "question"))
        span = None
        if q.get("time_reference") not in (None, ""):
            try:
                span = parse_span(q["time_reference"])
            except ValueError as e:
                raise ValueError(f"time_reference: {e}") from None
        return BenchItem("lvbench", _text(q, "uid", "id"), video, question, choices,
                         _letter(q, len(choices)), _types(q, "question_type"), span=span)

    return _each(_list(r, "qa"), item, "uid")


def m3bench_items(r: dict, key: str | None = None) -> list[BenchItem]:
    """One M3-Bench video (its ``qa_list``) → open-ended items; ``at`` from ``timestamp``
    (else ``before_clip`` × 30 s)."""
    if key is not None:
        video = key
    elif _has(r, "id", "video_id"):
        video = _text(r, "id", "video_id")
    elif _has(r, "video_path"):
        video = Path(_text(r, "video_path")).stem
    else:
        raise ValueError("id, video_id or video_path: missing")

    def item(q: dict, j: int) -> BenchItem:
        at = None
        try:
            if q.get("timestamp") not in (None, ""):
                at = parse_clock(q["timestamp"])
            elif q.get("before_clip") is not None:
                at = int(q["before_clip"]) * CLIP_SECONDS
        except ValueError as e:
            raise ValueError(f"timestamp: {e}") from None
        qid = _text(q, "question_id", "id") if _has(q, "question_id", "id") else f"{video}-{j + 1}"
        return BenchItem("m3bench", qid, video, _text(q, "question"), (), _text(q, "answer"),
                         _types(q, "question_type", "type"), at=at, open_ended=True)

    return _each(_list(r, "qa_list"), item, "question_id")


def egolife_items(r: dict, key: str | None = None) -> list[BenchItem]:
    """One EgoLifeQA record (:func:`edge.bench.questions.parse_question`) → one item on the
    EgoLife day clock: asked at ``query_time``, the target a moment at ``target_time``."""
    q = parse_question(r)
    video = str(r.get("identity") or key or "")
    return [BenchItem("egolife", q.id, video, q.question, q.choices, q.answer, (q.type,),
                      span=(q.target_at, q.target_at), at=q.at, clock="dayclock")]


PARSERS: dict[str, Callable[[dict, str | None], list[BenchItem]]] = {
    "videomme": videomme_items, "lvbench": lvbench_items, "m3bench": m3bench_items,
    "egolife": egolife_items}


# ---- files ------------------------------------------------------------------------------

def _read(path: Path) -> object:
    """A JSON file, or JSONL (one JSON value a line) → a list of its lines' values."""
    try:
        text = Path(path).read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise BenchError(f"{path}: cannot read the question file ({e})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as whole:
        lines = [(n, s) for n, s in enumerate(text.splitlines(), start=1) if s.strip()]
        if len(lines) < 2:
            raise BenchError(f"{path}: not a JSON or JSONL file ({whole})") from None
        out = []
        for n, line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise BenchError(f"{path}: line {n} is not JSON ({e})") from None
        return out


def _records(data: object, path: Path) -> list[tuple[str | None, object]]:
    """The top level → ``(key, record)`` pairs: a list's records (no key), one video's
    record, or an object of records keyed by video id (M3-Bench's layout)."""
    if isinstance(data, dict) and not {"qa", "qa_list", "questions", "options"} & set(data):
        if data and all(isinstance(v, dict) for v in data.values()):
            return list(data.items())
        raise BenchError(f"{path}: expected a list of records or an object of them keyed by "
                         "video id")
    records = data if isinstance(data, list) else [data]
    if not records:
        raise BenchError(f"{path}: holds no records")
    return [(None, r) for r in records]


def detect_format(record: object, path: Path) -> str:
    """The format of a question file from its first record's fields (see the module doc).
    Raises :class:`BenchError` naming the fields when none fits."""
    fields = set(record) if isinstance(record, dict) else set()
    if "qa" in fields:
        return "lvbench"
    if "qa_list" in fields:
        return "m3bench"
    if "questions" in fields or "options" in fields:
        return "videomme"
    if {"query_time", "choice_a"} & fields:
        return "egolife"
    if {"caption", "text", "event_key", "event"} & fields:
        raise BenchError(f"{path}: this looks like a caption file, not questions; a MERIT "
                         "caption/key file becomes a memory (edge.bench.merit)")
    shown = ", ".join(sorted(fields)[:12]) or type(record).__name__
    raise BenchError(f"{path}: cannot tell the question format from record 0 (fields: "
                     f"{shown}); give --format {'|'.join(FORMATS)}")


def load_items(path: Path, fmt: str | None = None) -> list[BenchItem]:
    """Read a question file of ``fmt`` (one of :data:`FORMATS`; ``None``: told from the
    content, :func:`detect_format`) → its items, in file order.

    Raises:
        BenchError: an unknown ``fmt``, a file that is not JSON/JSONL, a format that cannot
            be told, a record with a missing or bad field (the message names the file, the
            record, its video and question, and the field), or a question id used twice.
    """
    path = Path(path)
    if fmt is not None and fmt not in PARSERS:
        raise BenchError(f"unknown question format {fmt!r}; one of {', '.join(FORMATS)}")
    records = _records(_read(path), path)
    fmt = fmt or detect_format(records[0][1], path)
    items: list[BenchItem] = []
    for i, (key, r) in enumerate(records):
        name = key or (next((str(r[n]) for n in ("videoID", "video_id", "key", "id", "ID")
                             if r.get(n) is not None), None) if isinstance(r, dict) else None)
        label = f"record {i}" + (f" ({name})" if name else "")
        try:
            if not isinstance(r, dict):
                raise ValueError("not a JSON object")
            items += PARSERS[fmt](r, key or (path.stem if fmt == "egolife" else None))
        except (TypeError, ValueError) as e:
            raise BenchError(f"{path}: {label}: {e}") from None
    seen: set[tuple[str, str]] = set()
    for item in items:
        if (item.video, item.id) in seen:
            raise BenchError(f"{path}: question id {item.id!r} of video {item.video!r} is "
                             "used twice")
        seen.add((item.video, item.id))
    return items


def select_items(items: list[BenchItem], duration: str | None = None,
                 sample: int | None = None) -> list[BenchItem]:
    """The items of a Video-MME ``duration`` split (all when ``None``), then ``sample`` of
    them spread evenly over the file (all when ``sample`` ≥ their count)."""
    if duration is not None:
        items = [i for i in items if i.duration == duration]
    if sample and sample < len(items):
        step = len(items) / sample
        items = [items[int(k * step)] for k in range(sample)]
    return items
