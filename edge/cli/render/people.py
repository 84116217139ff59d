"""The lines of ``edge people`` and its subcommands."""

from __future__ import annotations

from pathlib import Path

from edge.timeline import day_of, format_moment


def moment(t: float | None) -> str | None:
    """A timeline second as ``DAY1 11:15:24`` / ``2025-02-20 19:30:52`` (``None`` → None)."""
    if t is None:
        return None
    day, start = day_of(t)
    return format_moment(t, day, start)


def person_dict(p, frames: Path) -> dict:
    """One person as ``edge people --json`` prints it: ``thumbnail`` is the crop's full
    path (``None`` without a face crop); ``suggested`` a name said while only this face was
    on screen (``None``), with ``suggested_clips`` — never applied without the user."""
    return {"id": p.id, "name": p.name, "suggested": p.suggested_name,
            "suggested_clips": p.suggested_clips, "faces": p.faces, "voices": p.voices,
            "enrolled": p.enrolled, "clips": p.clips,
            "first_seen": moment(p.first_seen), "last_seen": moment(p.last_seen),
            "first_seen_t": p.first_seen, "last_seen_t": p.last_seen,
            "thumbnail": str(frames / p.thumbnail) if p.thumbnail else None}


def people_lines(people: list, frames: Path, memory: Path, tier_on: bool) -> list[str]:
    """The table of ``edge people``: id, name (or a suggestion), faces, voices, clips, first
    and last seen, thumbnail."""
    if not people:
        hint = ("enrol someone with `edge people add NAME PHOTO_OR_RECORDING...`; faces and "
                "voices in ingested footage appear here" if tier_on else
                "the character tier is off in this profile (characters = false)")
        return [f"No people in {memory} yet: {hint}."]
    lines = [f"{'id':>4}  {'name':<24} {'faces':>5} {'voices':>6} {'clips':>5}  "
             f"{'first seen':<19}  {'last seen':<19}  thumbnail"]
    for p in people:
        name = p.name or (f"? (suggested: {p.suggested_name}, {p.suggested_clips} clips)"
                          if p.suggested_name else "?")
        lines.append(f"{p.id:>4}  {name:<24} {p.faces:>5} {p.voices:>6} {p.clips:>5}  "
                     f"{moment(p.first_seen) or '-':<19}  {moment(p.last_seen) or '-':<19}  "
                     f"{frames / p.thumbnail if p.thumbnail else '-'}")
    if not tier_on:
        lines.append("(the character tier is off in this profile: new footage adds no one)")
    return lines


def show_lines(p, appearances: list) -> list[str]:
    """``edge people show``: the person, then one line per appearance."""
    head = f"{p.label} (id {p.id}): {p.faces} face(s), {p.voices} voice(s), {p.clips} clip(s)"
    if p.suggested_name and not p.name:
        head += f"; suggested name {p.suggested_name} ({p.suggested_clips} clips)"
    lines = [head]
    for a in appearances:
        if a.enrolled:
            lines.append(f"  enrolled {a.kind:<5} from {a.source}")
            continue
        when = moment(a.at) or "?"
        said = f'  "{a.text}"' if a.text else ""
        lines.append(f"  {when}  {a.kind:<5} clip {a.clip_id}  {a.source} @ {a.t:.1f} s{said}")
    return lines


def enrol_line(report, memory: Path) -> str:
    """What ``edge people add`` stored."""
    what = ", ".join(f"{n} {k}" for n, k in ((report.faces, "face(s)"),
                                              (report.voices, "voice(s)")) if n) \
        or "nothing new"
    line = (f"{'Enrolled new person' if report.created else 'Added to'} {report.name} "
            f"(id {report.identity}): {what} in {memory}")
    if report.repeated:
        line += (f" ({report.repeated} file(s) skipped: the same face or voice is enrolled for "
                 f"{report.name} already)")
    if report.claimed:
        line += (f"; joined {len(report.claimed)} unnamed identit"
                 f"{'y' if len(report.claimed) == 1 else 'ies'} already seen "
                 f"({', '.join(map(str, report.claimed))})")
    for other, name in report.resembles:  # merge keeps the first id's name: the older one
        keep, drop = (other, report.identity) if report.created else (report.identity, other)
        line += (f"\nWarning: these look like {name} (id {other}), enrolled already; if they "
                 f"are one person, `edge people merge {keep} {drop}`")
    return line
