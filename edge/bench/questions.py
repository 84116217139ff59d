"""Question files in the EgoLifeQA format, validated, and the named sets ``easy``/``hard``.

A question file is a JSON list of records (EgoLifeQA, Yang et al. 2025): ``ID``,
``query_time`` ``{date: "DAYn", time: "HHMMSSFF"}``, ``type``, ``question``,
``choice_a``..``choice_d``, ``answer`` (``A``–``D``), ``target_time`` (same form as
``query_time``) and ``keywords``; plus our optional fields ``target_clips`` (indices of the
records of the caption file that hold the evidence), ``tags`` (list of strings) and
``split`` (``dev``/``test``). Any other field (``evidence``…) is kept out of the way.

A question without ``target_clips`` can be answered but not scored for hits.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from edge.errors import BenchError
from edge.timeline import day_clock, egolife_time

ROOT = Path(__file__).resolve().parents[2]
"""The repository root when ``edge`` runs from a checkout (it then holds ``benchmarks/``)."""

LETTERS = "ABCD"
SPLITS = ("dev", "test")


@dataclass(frozen=True)
class NamedSet:
    """A question set known by name: its file in the repo's ``benchmarks/``, its caption
    file's name in ``egolife/`` of the shared data, and the memory file it is cached in."""

    questions: str
    captions: str
    memory: str


NAMED_SETS = {
    "easy": NamedSet("egolife_day1_questions.json", "A1_JAKE_day1_captions.json", "day1.db"),
    "hard": NamedSet("egolife_hard_questions.json", "A1_JAKE_days1-4_captions.json",
                     "days1-4.db"),
}
"""``--questions easy|hard``: the day-1 set and the four-day hard set."""


def in_repo() -> bool:
    """Whether ``edge`` runs from a checkout of the repository (``benchmarks/`` beside it)."""
    return (ROOT / "benchmarks").is_dir() and (ROOT / "pyproject.toml").is_file()


def shared_data() -> Path:
    """The shared data folder: ``$EDGE_SHARED_DATA`` or ``../shared/data`` of the repo."""
    env = os.environ.get("EDGE_SHARED_DATA")
    return Path(env).expanduser() if env else ROOT.parent / "shared" / "data"


def resolve_set(name_or_path: str) -> tuple[Path, Path | None, NamedSet | None]:
    """``--questions``: a named set (``easy``/``hard``) → its question file, its caption file
    and the set; anything else is a path (no caption file, no set). Raises
    :class:`BenchError` when a named set's question file is not there."""
    named = NAMED_SETS.get(name_or_path)
    if named is None:
        return Path(name_or_path), None, None
    path = ROOT / "benchmarks" / named.questions
    if not path.is_file():
        raise BenchError(
            f"the {name_or_path!r} question set is not at {path}; run from a checkout of the "
            "repository that has it, or give the file's path to --questions")
    return path, shared_data() / "egolife" / named.captions, named


@dataclass(frozen=True)
class QAQuestion:
    """One validated question. ``at``/``target_at``: timeline seconds (EgoLife day clock)
    of ``query_time``/``target_time``; ``day``: n of the query's DAYn; ``choices``: the four
    options A–D; ``target_clips``: caption record indices or ``None`` (not scorable)."""

    id: str
    type: str
    question: str
    choices: tuple[str, ...]
    answer: str
    at: float
    day: int
    target_at: float
    keywords: str
    target_clips: tuple[int, ...] | None
    tags: tuple[str, ...]
    split: str | None


def _moment(value, field: str) -> tuple[float, int]:
    """``{date: DAYn, time: HHMMSSFF}`` → (timeline seconds, n); ``ValueError`` naming
    ``field`` otherwise."""
    if not isinstance(value, dict) or "date" not in value or "time" not in value:
        raise ValueError(f"{field}: expected {{\"date\": \"DAYn\", \"time\": \"HHMMSSFF\"}}")
    m = re.fullmatch(r"DAY(\d+)", str(value["date"]).strip(), re.IGNORECASE)
    if not m or int(m.group(1)) < 1:
        raise ValueError(f"{field}: date {value['date']!r} is not DAYn with n ≥ 1")
    day = int(m.group(1))
    try:
        return day_clock(day, egolife_time(value["time"])), day
    except ValueError as e:
        raise ValueError(f"{field}: {e}") from None


def _text(r: dict, field: str, *, required: bool = True) -> str:
    """A non-empty string field (``""`` for an absent optional one)."""
    if field not in r:
        if required:
            raise ValueError(f"{field}: missing")
        return ""
    value = r[field]
    if isinstance(value, list) and not required:  # keywords as a list of words
        value = " ".join(map(str, value))
    if not isinstance(value, str) or (required and not value.strip()):
        raise ValueError(f"{field}: must be a non-empty string, got {value!r}")
    return value.strip()


def _targets(r: dict, n_captions: int | None) -> tuple[int, ...] | None:
    """``target_clips``: a non-empty list of record indices inside the caption file."""
    if r.get("target_clips") is None:
        return None
    t = r["target_clips"]
    if not isinstance(t, list) or not t or not all(type(i) is int for i in t):
        raise ValueError(f"target_clips: must be a non-empty list of record indices, got {t!r}")
    outside = [i for i in t if i < 0 or (n_captions is not None and i >= n_captions)]
    if outside:
        raise ValueError(f"target_clips: {outside} outside the caption file "
                         f"({n_captions} records, indices 0–{(n_captions or 1) - 1})")
    return tuple(t)


def _tags_split(r: dict) -> tuple[tuple[str, ...], str | None]:
    """``tags`` (list of non-empty strings, optional) and ``split`` (dev/test, optional)."""
    tags = r.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.strip() for t in tags):
        raise ValueError(f"tags: must be a list of strings, got {tags!r}")
    split = r.get("split")
    if split is not None and split not in SPLITS:
        raise ValueError(f"split: {split!r} is not one of {', '.join(SPLITS)}")
    return tuple(t.strip() for t in tags), split


def parse_question(r: dict, n_captions: int | None = None) -> QAQuestion:
    """One record → :class:`QAQuestion`; ``ValueError`` naming the bad field.
    ``n_captions``: records in the caption file (``target_clips`` must lie inside)."""
    if not isinstance(r, dict):
        raise ValueError("not a JSON object")
    qid = _text(r, "ID") if not isinstance(r.get("ID"), int) else str(r["ID"])
    at, day = _moment(r.get("query_time"), "query_time")
    target_at, _ = _moment(r.get("target_time"), "target_time")
    choices = tuple(_text(r, f"choice_{c.lower()}") for c in LETTERS)
    answer = str(r.get("answer", "")).strip().upper()
    if answer not in LETTERS:
        raise ValueError(f"answer: {r.get('answer')!r} is not one of A, B, C, D")
    tags, split = _tags_split(r)
    return QAQuestion(qid, _text(r, "type"), _text(r, "question"), choices, answer, at, day,
                      target_at, _text(r, "keywords", required=False),
                      _targets(r, n_captions), tags, split)


def load_questions(path: Path, n_captions: int | None = None) -> list[QAQuestion]:
    """Read and validate a question file (see the module doc), in file order.

    Raises:
        BenchError: not a readable JSON list, a record with a bad or missing field
            (the message names the record's position, its ID and the field), or a
            duplicate ID.
    """
    try:
        data = json.loads(Path(path).read_text("utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BenchError(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(data, list) or not data:
        raise BenchError(f"{path}: expected a non-empty JSON list of question records")
    out, seen = [], set()
    for i, r in enumerate(data):
        name = f"record {i}" + (f" ({r['ID']})" if isinstance(r, dict) and "ID" in r else "")
        try:
            q = parse_question(r, n_captions)
        except (TypeError, ValueError) as e:
            raise BenchError(f"{path}: {name}: {e}") from None
        if q.id in seen:
            raise BenchError(f"{path}: {name}: ID {q.id!r} is used twice")
        seen.add(q.id)
        out.append(q)
    return out


def select(questions: list[QAQuestion], split: str = "all",
           sample: int | None = None) -> list[QAQuestion]:
    """The questions of ``split`` (``dev``/``test``; ``all`` keeps every one), then
    ``sample`` of them spread evenly over the file (all when ``sample`` ≥ their count)."""
    if split != "all":
        questions = [q for q in questions if q.split == split]
    if sample and sample < len(questions):
        step = len(questions) / sample
        questions = [questions[int(i * step)] for i in range(sample)]
    return questions
