"""Writing the character memory (migration m010, :mod:`edge.store.people_schema`):
identities, their face and voice appearances with one vector each (``face_vec`` 128-d
Euclidean, ``voice_vec`` 256-d cosine), the person→clip links of the pyramid, naming,
merging, moving appearances (re-clustering) and forgetting. Which identity a vector joins is
decided by :mod:`edge.people` (pure functions over what :meth:`People.nearest` returns); the
ingest path calls it inside the clip's own transaction, so a clip and its appearances are
stored together or not at all. A mixin of :class:`edge.store.Memory` (``self.db``,
``self._write``); the readers are :mod:`edge.store.people_read`.

Forgetting is complete (biometric data must be erasable): :meth:`People.forget_identity`
deletes the vectors, appearances, person links and the identity row, and returns the crop
files for the caller to delete once the transaction is committed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np

from edge.store.people_read import PeopleReader
from edge.store.people_schema import FACE_VEC_DIM, VOICE_VEC_DIM
from edge.store.records import id_marks

VEC_TABLES = {"face": ("face_vec", FACE_VEC_DIM), "voice": ("voice_vec", VOICE_VEC_DIM)}
"""Appearance kind → (its vec0 table, vector width)."""


def _vec_table(kind: str) -> tuple[str, int]:
    try:
        return VEC_TABLES[kind]
    except KeyError:
        raise ValueError(f"appearance kind {kind!r}: 'face' or 'voice'") from None


class People(PeopleReader):
    """Identities and appearances: adding, matching candidates, naming, merging, moving,
    forgetting."""

    def writing(self):
        """One write transaction around several of the methods below (each is a savepoint
        inside it): a re-clustering or an enrolment is stored whole or not at all."""
        return self._write()

    def new_identity(self, name: str | None = None) -> int:
        """A new identity (named ``name``, or unnamed); its id. ``ValueError`` when another
        identity already has that name (any case)."""
        with self._write():
            if name is not None:
                self._check_name_free(name, None)
            self.db.execute("INSERT INTO identities(name, created) VALUES(?, ?)",
                            (name.strip() if name else None, time.time()))
            return self.db.last_insert_rowid()

    def add_appearance(self, identity_id: int, kind: str, vector: np.ndarray, *,
                       quality: float, source_id: int | None = None,
                       clip_id: int | None = None, t: float | None = None,
                       t_end: float | None = None, crop: str | None = None, text: str = "",
                       enrolled: bool = False, file: str | None = None) -> int:
        """Store one appearance of ``identity_id`` with its ``vector`` (``(128,)`` for a
        face, ``(256,)`` for a voice, float32) and, in a clip, its person→clip link
        (weight +1); its id. ``t``/``t_end``: seconds into the source. ``ValueError`` (and
        nothing stored) for a vector of another width or an unknown kind."""
        table, dim = _vec_table(kind)
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vec.shape != (dim,) or not np.all(np.isfinite(vec)):
            raise ValueError(f"a {kind} vector must be {dim} finite float32 values, "
                             f"got shape {vec.shape}")
        with self._write():
            self.db.execute(
                "INSERT INTO appearances(identity_id, kind, source_id, clip_id, t, t_end, "
                "quality, crop, text, enrolled, file) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                (int(identity_id), kind, source_id, clip_id, _f(t), _f(t_end),
                 float(quality), crop, text, int(bool(enrolled)), file))
            aid = self.db.last_insert_rowid()
            self.db.execute(f"INSERT INTO {table}(appearance_id, embedding) VALUES(?, ?)",
                            (aid, vec.tobytes()))
            if clip_id is not None:
                self.db.execute(
                    "INSERT INTO links(src_kind, src_id, dst_kind, dst_id, kind, weight) "
                    "VALUES('person', ?, 'clip', ?, 'hierarchical', 1) "
                    "ON CONFLICT(src_kind, src_id, dst_kind, dst_id, kind) "
                    "DO UPDATE SET weight = weight + 1", (int(identity_id), int(clip_id)))
            return aid

    def nearest(self, kind: str, vector: np.ndarray, k: int = 16
                ) -> list[tuple[int, int, float]]:
        """The ``k`` stored ``kind`` vectors nearest to ``vector`` (sqlite-vec KNN), as
        ``(appearance_id, identity_id, distance)`` nearest first: Euclidean distance for
        faces, cosine distance (1 − cosine similarity) for voices."""
        table, dim = _vec_table(kind)
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vec.shape != (dim,):
            raise ValueError(f"a {kind} vector must have {dim} values, got {vec.shape}")
        rows = self.db.execute(
            f"SELECT v.appearance_id, a.identity_id, v.distance FROM {table} v "
            "JOIN appearances a ON a.id = v.appearance_id "
            "WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance",
            (vec.tobytes(), int(k))).fetchall()
        return [(a, i, float(d)) for a, i, d in rows]

    def identity_vectors(self, identity_id: int, kind: str, limit: int = 64
                         ) -> tuple[np.ndarray, np.ndarray]:
        """The ``kind`` vectors of ``identity_id`` — every enrolled one and the ``limit``
        most recent others (an identity's recent look and voice) — as ``(n, dim)`` float32
        and whether each was enrolled, ``(n,)`` bool."""
        table, dim = _vec_table(kind)
        rows = self.db.execute(
            f"SELECT v.embedding, a.enrolled FROM appearances a JOIN {table} v ON "
            "v.appearance_id = a.id WHERE a.identity_id = ? AND a.kind = ? AND "
            "(a.enrolled = 1 OR a.id IN (SELECT id FROM appearances WHERE identity_id = ? "
            "AND kind = ? AND enrolled = 0 ORDER BY id DESC LIMIT ?))",
            (int(identity_id), kind, int(identity_id), kind, int(limit))).fetchall()
        if not rows:
            return np.zeros((0, dim), np.float32), np.zeros(0, bool)
        return (np.stack([np.frombuffer(r[0], dtype=np.float32) for r in rows]),
                np.array([bool(r[1]) for r in rows]))

    def kind_vectors(self, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every ``kind`` appearance: ``(appearance ids, identity ids, enrolled flags,
        vectors)`` as arrays (``(n,)`` int64, ``(n,)`` int64, ``(n,)`` bool, ``(n, dim)``
        float32), in appearance order — what ``edge build`` re-clusters."""
        table, dim = _vec_table(kind)
        rows = self.db.execute(
            f"SELECT a.id, a.identity_id, a.enrolled, v.embedding FROM appearances a "
            f"JOIN {table} v ON v.appearance_id = a.id WHERE a.kind = ? ORDER BY a.id",
            (kind,)).fetchall()
        if not rows:
            return (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool),
                    np.zeros((0, dim), np.float32))
        return (np.array([r[0] for r in rows], np.int64), np.array([r[1] for r in rows], np.int64),
                np.array([bool(r[2]) for r in rows]),
                np.stack([np.frombuffer(r[3], dtype=np.float32) for r in rows]))

    def name_identity(self, identity_id: int, name: str | None) -> None:
        """Give ``identity_id`` the name ``name`` (``None``: unnamed again); a suggestion
        is cleared. ``ValueError`` when another identity has that name or there is no such
        identity."""
        with self._write():
            self._must_exist(identity_id)
            if name is not None:
                self._check_name_free(name, identity_id)
            self.db.execute("UPDATE identities SET name = ?, suggested_name = NULL, "
                            "suggested_clips = 0 WHERE id = ?",
                            (name.strip() if name else None, int(identity_id)))

    def suggest_name(self, identity_id: int, name: str | None, clips: int = 0) -> None:
        """Record (or clear, with ``None``) a suggested name resting on ``clips`` clips;
        the identity's ``name`` is left as it is."""
        with self._write():
            self.db.execute("UPDATE identities SET suggested_name = ?, suggested_clips = ? "
                            "WHERE id = ?", (name, int(clips) if name else 0, int(identity_id)))

    def merge_identities(self, keep: int, drop: int) -> int:
        """Move every appearance of ``drop`` to ``keep`` and delete ``drop``; ``keep``
        takes ``drop``'s name when it has none (a name of ``keep``'s is never replaced).
        Returns the appearances moved. ``ValueError`` for one id twice or a missing one."""
        if int(keep) == int(drop):
            raise ValueError(f"cannot merge identity {keep} with itself")
        with self._write():
            self._must_exist(keep)
            self._must_exist(drop)
            moved = self.move_appearances(
                [r[0] for r in self.db.execute("SELECT id FROM appearances WHERE "
                                               "identity_id = ?", (int(drop),))], keep)
            name = self.db.execute("SELECT name FROM identities WHERE id = ?",
                                   (int(drop),)).fetchone()[0]
            self._delete_identity(drop)
            if name and not self.db.execute("SELECT name FROM identities WHERE id = ?",
                                             (int(keep),)).fetchone()[0]:
                self.db.execute("UPDATE identities SET name = ?, suggested_name = NULL, "
                                "suggested_clips = 0 WHERE id = ?", (name, int(keep)))
            return moved

    def move_appearances(self, appearance_ids: Iterable[int], identity_id: int) -> int:
        """Give the appearances ``appearance_ids`` to ``identity_id`` and rebuild the
        person→clip links of every identity that lost or gained one; how many moved."""
        ids, marks = id_marks(int(i) for i in appearance_ids)
        if not ids:
            return 0
        with self._write():
            touched = {r[0] for r in self.db.execute(
                f"SELECT DISTINCT identity_id FROM appearances WHERE id IN ({marks})", ids)}
            self.db.execute(f"UPDATE appearances SET identity_id = ? WHERE id IN ({marks})",
                            (int(identity_id), *ids))
            self._relink(touched | {int(identity_id)})
        return len(ids)

    def drop_empty_identities(self) -> list[int]:
        """Delete the unnamed identities left without any appearance; their ids."""
        with self._write():
            empty = [r[0] for r in self.db.execute(
                "SELECT id FROM identities i WHERE name IS NULL AND NOT EXISTS("
                "SELECT 1 FROM appearances a WHERE a.identity_id = i.id)")]
            for iid in empty:
                self._delete_identity(iid)
        return empty

    def forget_identity(self, identity_id: int) -> list[str]:
        """Erase ``identity_id``: its face and voice vectors, appearances, person→clip
        links and the identity row, in one transaction. Returns the crop paths (relative
        to the frames folder) its appearances had, for the caller to delete from disk.
        ``ValueError`` when there is no such identity.

        Biometric data must be erasable, not merely unlinked: the deletion runs under
        SQLite's ``secure_delete`` (freed pages are overwritten with zeros, so the name,
        crop paths and vectors are not left in the file's free pages) and the write-ahead
        log is checkpointed and truncated afterwards (it held the old pages too)."""
        self.db.execute("PRAGMA secure_delete = ON")
        try:
            crops = self._forget(identity_id)
        finally:
            self.db.execute("PRAGMA secure_delete = OFF")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return crops

    def _forget(self, identity_id: int) -> list[str]:
        with self._write():
            self._must_exist(identity_id)
            rows = self.db.execute("SELECT id, kind, crop FROM appearances WHERE "
                                   "identity_id = ?", (int(identity_id),)).fetchall()
            for kind in VEC_TABLES:
                ids, marks = id_marks(r[0] for r in rows if r[1] == kind)
                if ids:
                    self.db.execute(f"DELETE FROM {VEC_TABLES[kind][0]} WHERE appearance_id "
                                    f"IN ({marks})", ids)
            self.db.execute("DELETE FROM appearances WHERE identity_id = ?", (int(identity_id),))
            self._delete_identity(identity_id)
        return [r[2] for r in rows if r[2]]

    # -- package-internal
    def _delete_identity(self, identity_id: int) -> None:
        """The identity row and its person links (its appearances must be gone)."""
        self.db.execute("DELETE FROM links WHERE (src_kind = 'person' AND src_id = ?) OR "
                        "(dst_kind = 'person' AND dst_id = ?)",
                        (int(identity_id), int(identity_id)))
        self.db.execute("DELETE FROM identities WHERE id = ?", (int(identity_id),))

    def _relink(self, identity_ids: Iterable[int]) -> None:
        """Rebuild the person→clip links of ``identity_ids`` from their appearances."""
        for iid in identity_ids:
            self.db.execute("DELETE FROM links WHERE src_kind = 'person' AND src_id = ? AND "
                            "dst_kind = 'clip'", (iid,))
            self.db.execute(
                "INSERT INTO links(src_kind, src_id, dst_kind, dst_id, kind, weight) "
                "SELECT 'person', identity_id, 'clip', clip_id, 'hierarchical', count(*) "
                "FROM appearances WHERE identity_id = ? AND clip_id IS NOT NULL "
                "GROUP BY clip_id", (iid,))

    def _must_exist(self, identity_id: int) -> None:
        if not self.db.execute("SELECT 1 FROM identities WHERE id = ?",
                               (int(identity_id),)).fetchone():
            raise ValueError(f"no identity {identity_id}; `edge people` lists them")

    def _check_name_free(self, name: str, identity_id: int | None) -> None:
        """``ValueError`` for an empty name or one another identity has."""
        if not name.strip():
            raise ValueError("a name cannot be empty")
        row = self.db.execute("SELECT id FROM identities WHERE name = ? COLLATE NOCASE",
                              (name.strip(),)).fetchone()
        if row and row[0] != identity_id:
            raise ValueError(f"{name.strip()!r} is already identity {row[0]}; to make them "
                             f"one person: `edge people merge {row[0]} {identity_id or 'ID'}`")


def _f(x: float | None) -> float | None:
    return None if x is None else float(x)
