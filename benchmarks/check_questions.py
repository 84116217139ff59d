"""Check a hard question file against the rules of the recall issue, and split it.

A question file is a JSON list of EgoLifeQA records (``ID``, ``query_time{date,time}``,
``type``, ``question``, ``choice_a..d``, ``answer``, ``target_time{date,time}``,
``keywords``) plus ``target_clips`` (indices of the caption records that hold the
evidence, in the caption file given), ``evidence`` (what the targets say), ``tags`` and,
once split, ``split`` (``dev``/``test``).

Rules (each violation is printed; exit status 1 when there is one):

1. no five-word sequence of the question or of the right option is in a target caption
   (words lowercased, punctuation dropped);
2. no clock time in the question or the options (``11:15``, ``3 pm``, ``at 11``, ``o'clock``,
   ``HHMMSS`` stamps): coarse words only ("this morning", "yesterday evening");
3. the query time is after the end of every target clip, and ``target_time`` is the start of
   the first target clip (to the second);
4. every wrong option is real: most of its content words (≥ 60 %) occur together in one
   caption that is not a target (another person, the same kind of event another day);
   pure counts ("three times", "4") are exempt;
5. answer letters balanced: each of A–D within ±25 % of an even share (overall and per split);
6. ``tags`` non-empty, from :data:`TAGS`; ``type`` one of the EgoLifeQA types;
7. IDs unique; multi-day questions (asked on a later day than a target, DAY2–DAY4) counted.

    .venv/bin/python benchmarks/check_questions.py FILE [--captions CAPTIONS] [--min N]
    .venv/bin/python benchmarks/check_questions.py FILE --split   # (re)assign dev/test in place
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.timeline import day_clock, egolife_time  # noqa: E402

CAPTIONS = ROOT.parent / "shared/data/egolife/A1_JAKE_days1-4_captions.json"

TAGS = ("single-clip", "neighbors", "several-clips", "counting", "temporal-order")
TYPES = ("EntityLog", "EventRecall", "RelationMap", "TaskMaster", "HabitInsight")
_WORD = re.compile(r"[\w']+")
_CLOCK = re.compile(
    r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.)|o'clock|\b\d{6,8}\b"
    r"|\bat\s+\d{1,2}\b(?!\s*(?:times|people|clips|items|of|minutes|hours))", re.I)
_STOP = frozenset(
    "a an and are as at be by did do does for from had has have he her his how i in is it "
    "its me my of on or she that the their them they this to was we were what when where "
    "which who whom why with you your our us".split())
_COUNT = re.compile(r"^\s*(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|once|"
                    r"twice|none|zero)\b(?:\s+(?:times?|people|persons?|items?))?\s*$", re.I)


def words(text: str) -> list[str]:
    """Lowercased words (apostrophes kept, punctuation dropped)."""
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def grams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    """The ``n``-word sequences of ``text``."""
    w = words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def seconds(date: str, hhmmssff: str) -> float:
    """A day-clock moment: ``DAYn`` + ``HHMMSSFF`` (FF frames at 20 fps) → timeline seconds
    (:func:`edge.timeline.day_clock` of :func:`edge.timeline.egolife_time`)."""
    return day_clock(int(date.upper().replace("DAY", "")), egolife_time(hhmmssff))


def check(questions: list[dict], caps: list[dict]) -> tuple[list[str], dict]:
    """The violations (one line each) and a summary (counts per part, tag, type, letter)."""
    bad: list[str] = []
    seen: set[str] = set()
    texts = [c["text"] for c in caps]
    cap_words = [set(words(t)) for t in texts]
    summary: dict = {"n": len(questions), "part": Counter(), "tags": Counter(),
                     "types": Counter(), "letters": Counter(), "split": Counter()}
    for q in questions:
        qid = q.get("ID", "?")
        if qid in seen:
            bad.append(f"{qid}: duplicate ID")
        seen.add(qid)
        missing = [k for k in ("ID", "query_time", "type", "question", "choice_a", "choice_b",
                               "choice_c", "choice_d", "answer", "target_time",
                               "target_clips", "keywords", "tags") if k not in q]
        if missing:
            bad.append(f"{qid}: missing {', '.join(missing)}")
            continue
        targets = q["target_clips"]
        if not targets or any(not 0 <= t < len(caps) for t in targets):
            bad.append(f"{qid}: target_clips {targets} not in the caption file")
            continue
        opts = {ltr: q[f"choice_{ltr.lower()}"] for ltr in "ABCD"}
        right = opts.get(q["answer"])
        if right is None:
            bad.append(f"{qid}: answer {q['answer']!r} is not A-D")
            continue
        # 1. five-word runs
        for label, text in (("question", q["question"]), ("right option", right)):
            shared = set().union(*(grams(texts[t]) for t in targets)) & grams(text)
            if shared:
                bad.append(f"{qid}: {label} shares {' '.join(sorted(shared)[0])!r} "
                           "with a target caption")
        # 2. clock times
        for text in (q["question"], *opts.values()):
            if m := _CLOCK.search(text):
                bad.append(f"{qid}: clock time {m.group(0)!r} in {text!r}")
        # 3. query after targets
        asked = seconds(q["query_time"]["date"], q["query_time"]["time"])
        ends = [seconds(caps[t]["date"], caps[t]["end_time"]) for t in targets]
        if asked <= max(ends):
            bad.append(f"{qid}: query time is not after every target clip")
        first = min(targets, key=lambda t: seconds(caps[t]["date"], caps[t]["start_time"]))
        tt = q["target_time"]
        if abs(seconds(tt["date"], tt["time"])
               - seconds(caps[first]["date"], caps[first]["start_time"])) > 1:
            bad.append(f"{qid}: target_time is not the start of the first target clip")
        # 4. real wrong options
        tset = set(targets)
        for ltr, text in opts.items():
            if ltr == q["answer"] or _COUNT.match(text):
                continue
            content = [w for w in words(text) if w not in _STOP]
            if not content:
                continue
            best = max((sum(w in cw for w in content) for i, cw in enumerate(cap_words)
                        if i not in tset), default=0)
            if best < 0.6 * len(content):
                bad.append(f"{qid}: wrong option {ltr} {text!r} is not found in the footage")
        # 6. tags and type
        tags = q["tags"]
        if not tags or any(t not in TAGS for t in tags):
            bad.append(f"{qid}: tags {tags} (use {', '.join(TAGS)})")
        if q["type"] not in TYPES:
            bad.append(f"{qid}: type {q['type']!r} (use {', '.join(TYPES)})")
        part = part_of(q, caps)
        summary["part"][part] += 1
        summary["tags"].update(tags)
        summary["types"][q["type"]] += 1
        summary["letters"][q["answer"]] += 1
        summary["split"][q.get("split", "-")] += 1
    # 5. balance
    for name, group in (("all", questions),
                        *((s, [q for q in questions if q.get("split") == s])
                          for s in ("dev", "test"))):
        letters = Counter(q.get("answer") for q in group)
        if len(group) >= 20:
            even = len(group) / 4
            off = {ltr: letters[ltr] for ltr in "ABCD" if abs(letters[ltr] - even) > 0.25 * even}
            if off:
                bad.append(f"{name}: answer letters unbalanced {dict(sorted(letters.items()))}")
    return bad, summary


def part_of(q: dict, caps: list[dict]) -> str:
    """``multi-day`` when the question is asked on a later day than one of its targets,
    else ``one-day``."""
    qday = q["query_time"]["date"].upper()
    days = {caps[t]["date"].upper() for t in q["target_clips"]}
    return "multi-day" if any(d != qday for d in days) else "one-day"


def assign_split(questions: list[dict], caps: list[dict]) -> None:
    """``split`` = dev/test, alternating inside each part (one-day, multi-day) over its
    (first tag, ID) order, so both halves have the same mix and one part's split does not
    move when the other part grows."""
    for part in ("one-day", "multi-day"):
        group = [q for q in questions if part_of(q, caps) == part]
        group.sort(key=lambda q: (TAGS.index(q["tags"][0]) if q["tags"][0] in TAGS else 9,
                                  q["ID"]))
        for i, q in enumerate(group):
            q["split"] = ("dev", "test")[i % 2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--captions", type=Path, default=CAPTIONS)
    ap.add_argument("--min", type=int, default=0, help="fail below this many questions")
    ap.add_argument("--min-multi-day", type=int, default=0)
    ap.add_argument("--split", action="store_true", help="assign dev/test and rewrite FILE")
    args = ap.parse_args()
    questions = json.loads(args.file.read_text())
    caps = json.loads(args.captions.read_text())
    if args.split:
        assign_split(questions, caps)
        args.file.write_text(json.dumps(questions, indent=1, ensure_ascii=False) + "\n")
    bad, s = check(questions, caps)
    if len(questions) < args.min:
        bad.append(f"{len(questions)} questions, fewer than {args.min}")
    if s["part"]["multi-day"] < args.min_multi_day:
        bad.append(f"{s['part']['multi-day']} multi-day questions, fewer than "
                   f"{args.min_multi_day}")
    for line in bad:
        print(line)
    print(f"{s['n']} questions; parts {dict(s['part'])}; letters "
          f"{dict(sorted(s['letters'].items()))}; splits {dict(s['split'])}")
    print(f"tags {dict(s['tags'])}; types {dict(s['types'])}")
    print("OK" if not bad else f"{len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
