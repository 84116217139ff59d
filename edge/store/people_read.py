"""Reading the character memory (migration m010): persons with their counts and first/last
seen, an identity's appearances, the people of given clips, and who spoke in a clip. The
API the answer loop, search and the chat ask (issue 43 item 5). A mixin of
:class:`edge.store.Memory` (uses ``self.db``); the writes are :mod:`edge.store.people`.

Times: ``t``/``t_end`` of an appearance are seconds into its source (as ``edge people show``
prints them); ``at``/``at_end``, ``first_seen``/``last_seen`` are timeline seconds
(:mod:`edge.timeline`: the source's start plus ``t``). A memory opened read-only before m010
was applied has no people: every reader returns nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from edge.store.records import id_marks


@dataclass(frozen=True)
class Person:
    """One identity as ``edge people`` lists it (a person node, PyraVid's character memory).

    ``name``: given by the user (``None`` while unnamed); ``suggested_name``: a name said
    while only this face was on screen in ``suggested_clips`` clips (shown, never applied);
    ``faces``/``voices``: its appearances of each kind (enrolled ones included),
    ``enrolled``: how many came from photos/recordings the user gave; ``clips``: clips it
    appears in; ``first_seen``/``last_seen``: timeline seconds of its first and last
    appearance in a clip (``None`` when only enrolled); ``thumbnail``: its best face crop,
    a path relative to the memory's frames folder (``None`` without a face)."""

    id: int
    name: str | None
    suggested_name: str | None
    suggested_clips: int
    faces: int
    voices: int
    enrolled: int
    clips: int
    first_seen: float | None
    last_seen: float | None
    thumbnail: str | None

    @property
    def label(self) -> str:
        """The name, else ``person ID``."""
        return self.name or f"person {self.id}"


@dataclass(frozen=True)
class Appearance:
    """A face or voice of identity ``identity_id`` (named ``name``, or ``None``).

    In a clip: ``source`` is the source file's path as the memory records it, ``clip_id``
    the clip, ``t``/``t_end`` seconds into the source (a face: its first and last sampled
    frame in the clip; a voice: the turn), ``at``/``at_end`` the same on the timeline,
    ``text`` a voice turn's words. Enrolled (``enrolled``): ``source`` is the photo or
    recording the user gave and the clip and times are ``None``. ``quality``: 0–1;
    ``crop``: a face crop JPEG relative to the frames folder (or ``None``)."""

    id: int
    identity_id: int
    name: str | None
    kind: str
    source: str | None
    source_id: int | None
    clip_id: int | None
    t: float | None
    t_end: float | None
    at: float | None
    at_end: float | None
    quality: float
    crop: str | None
    text: str
    enrolled: bool

    def as_dict(self) -> dict:
        """The appearance as ``edge people show --json`` prints it."""
        return {"id": self.id, "kind": self.kind, "source": self.source,
                "clip_id": self.clip_id, "t": _r(self.t), "t_end": _r(self.t_end),
                "at": _r(self.at), "quality": round(self.quality, 3), "crop": self.crop,
                "text": self.text, "enrolled": self.enrolled}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


_PERSON_SQL = """
    SELECT i.id, i.name, i.suggested_name, i.suggested_clips,
           coalesce(sum(a.kind = 'face'), 0), coalesce(sum(a.kind = 'voice'), 0),
           coalesce(sum(a.enrolled), 0), count(DISTINCT a.clip_id),
           min(s.t_start + a.t), max(s.t_start + coalesce(a.t_end, a.t)),
           (SELECT crop FROM appearances WHERE identity_id = i.id AND crop IS NOT NULL
            ORDER BY quality DESC, id LIMIT 1)
    FROM identities i LEFT JOIN appearances a ON a.identity_id = i.id
    LEFT JOIN sources s ON s.id = a.source_id
    """

_APPEARANCE_SQL = """
    SELECT a.id, a.identity_id, i.name, a.kind, coalesce(s.path, a.file), a.source_id,
           a.clip_id, a.t, a.t_end, s.t_start + a.t, s.t_start + coalesce(a.t_end, a.t),
           a.quality, a.crop, a.text, a.enrolled
    FROM appearances a JOIN identities i ON i.id = a.identity_id
    LEFT JOIN sources s ON s.id = a.source_id
    """


def _appearance(row) -> Appearance:
    return Appearance(*row[:-1], enrolled=bool(row[-1]))


@dataclass(frozen=True)
class ClipPerson:
    """An identity in a clip: ``kinds`` (``face``, ``voice`` or both), ``t``/``t_end``
    seconds into the source from its first to its last appearance there."""

    identity_id: int
    name: str | None
    kinds: tuple[str, ...]
    t: float
    t_end: float


class PeopleReader:
    """Persons, appearances, the people of clips, and who spoke."""

    def people_ready(self) -> bool:
        """Whether this memory has the character memory's tables (m010 applied)."""
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                               "name = 'identities'").fetchone() is not None

    def persons(self) -> list[Person]:
        """Every identity, in id order (oldest first)."""
        if not self.people_ready():
            return []
        return [Person(*r) for r in self.db.execute(_PERSON_SQL + " GROUP BY i.id ORDER BY i.id")]

    def person(self, identity_id: int) -> Person | None:
        """The identity ``identity_id``, or ``None``."""
        if not self.people_ready():
            return None
        row = self.db.execute(_PERSON_SQL + " WHERE i.id = ? GROUP BY i.id",
                              (int(identity_id),)).fetchone()
        return Person(*row) if row else None

    def identity_by_name(self, name: str) -> Person | None:
        """The identity the user named ``name`` (any case, surrounding spaces ignored), or
        ``None``."""
        if not self.people_ready():
            return None
        row = self.db.execute("SELECT id FROM identities WHERE name = ? COLLATE NOCASE",
                              (name.strip(),)).fetchone()
        return self.person(row[0]) if row else None

    def appearances(self, identity_id: int, kind: str | None = None) -> list[Appearance]:
        """The appearances of ``identity_id`` (of ``kind`` ``face``/``voice``, or both):
        enrolled ones first, then in timeline order."""
        if not self.people_ready():
            return []
        sql, args = _APPEARANCE_SQL + " WHERE a.identity_id = ?", [int(identity_id)]
        if kind is not None:
            sql += " AND a.kind = ?"
            args.append(kind)
        return [_appearance(r) for r in self.db.execute(
            sql + " ORDER BY a.enrolled DESC, s.t_start + a.t, a.id", args)]

    def appearances_in(self, clip_ids: Iterable[int]) -> list[Appearance]:
        """Every appearance in the clips ``clip_ids``, in timeline order."""
        ids, marks = id_marks(int(i) for i in clip_ids)
        if not ids or not self.people_ready():
            return []
        return [_appearance(r) for r in self.db.execute(
            _APPEARANCE_SQL + f" WHERE a.clip_id IN ({marks}) ORDER BY s.t_start + a.t, a.id",
            ids)]

    def people_in_clips(self, clip_ids: Iterable[int]) -> dict[int, list[ClipPerson]]:
        """``{clip_id: [ClipPerson, ...]}``: who was seen or heard in each clip (a clip
        without anyone maps to ``[]``), each identity once, by first appearance."""
        ids = list(dict.fromkeys(int(i) for i in clip_ids))
        out: dict[int, list[ClipPerson]] = {i: [] for i in ids}
        grouped: dict[tuple[int, int], list[Appearance]] = {}
        for a in self.appearances_in(ids):
            grouped.setdefault((a.clip_id, a.identity_id), []).append(a)
        for (clip_id, identity_id), found in grouped.items():
            kinds = tuple(k for k in ("face", "voice") if any(a.kind == k for a in found))
            out[clip_id].append(ClipPerson(
                identity_id, found[0].name, kinds, min(a.t for a in found),
                max(a.t_end if a.t_end is not None else a.t for a in found)))
        for people in out.values():
            people.sort(key=lambda p: (p.t, p.identity_id))
        return out

    def speakers_of(self, clip_id: int) -> list[Appearance]:
        """The voice turns of a clip in time order: each an :class:`Appearance` with the
        speaker's identity and name (``None`` while unnamed), its times and words
        (:func:`edge.people.transcript.speaker_lines` renders ``Alice: ...`` lines)."""
        return [a for a in self.appearances_in([clip_id]) if a.kind == "voice"]

    def person_clips(self, identity_id: int) -> list[int]:
        """The clips ``identity_id`` appears in, in timeline order (its person→clip links)."""
        if not self.people_ready():
            return []
        return [r[0] for r in self.db.execute(
            "SELECT l.dst_id FROM links l JOIN clips c ON c.id = l.dst_id WHERE "
            "l.src_kind = 'person' AND l.src_id = ? AND l.dst_kind = 'clip' "
            "ORDER BY c.t_start, c.id", (int(identity_id),))]

    def clips_by_identity(self, kind: str) -> dict[int, set[int]]:
        """``{identity: {clip ids}}`` of the clips each identity appears in as ``kind``
        (``face``/``voice``); identities without such an appearance in a clip are absent."""
        out: dict[int, set[int]] = {}
        if not self.people_ready():
            return out
        for ident, clip in self.db.execute(
                "SELECT DISTINCT identity_id, clip_id FROM appearances WHERE kind = ? AND "
                "clip_id IS NOT NULL", (kind,)):
            out.setdefault(ident, set()).add(clip)
        return out

    def spans_by_identity(self, kind: str) -> dict[int, dict[int, list[tuple[float, float]]]]:
        """``{identity: {clip id: [(t, t_end), ...]}}``: when each identity was seen (a face:
        its first and last sampled frame in the clip) or heard (a voice: each turn) as
        ``kind``, seconds into the source; enrolled appearances (no clip) are left out."""
        out: dict[int, dict[int, list[tuple[float, float]]]] = {}
        if not self.people_ready():
            return out
        for ident, clip, t, t_end in self.db.execute(
                "SELECT identity_id, clip_id, t, coalesce(t_end, t) FROM appearances WHERE "
                "kind = ? AND clip_id IS NOT NULL AND t IS NOT NULL ORDER BY t", (kind,)):
            out.setdefault(ident, {}).setdefault(clip, []).append((float(t), float(t_end)))
        return out

    def kinds_by_identity(self) -> dict[int, set[str]]:
        """``{identity: {'face', 'voice'}}``: the kinds of appearance each identity has
        (enrolled ones included); an identity without appearances maps to ``set()``."""
        out: dict[int, set[str]] = {}
        if not self.people_ready():
            return out
        for ident, kind in self.db.execute(
                "SELECT i.id, a.kind FROM identities i LEFT JOIN appearances a ON "
                "a.identity_id = i.id GROUP BY i.id, a.kind"):
            out.setdefault(ident, set())
            if kind:
                out[ident].add(kind)
        return out
