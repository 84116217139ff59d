"""The memory store: one SQLite file (WAL) with sqlite-vec for key vectors.

``apsw`` is used because this Python's ``sqlite3`` cannot load extensions (MODELS.md).
Schema changes are named, append-only migrations recorded in ``_migrations`` (simonw/llm
style): never edit a shipped step, add a new one. A clip, its keys and their vectors are
written in one transaction, so a killed process leaves either the whole clip or nothing.
m003 adds the PyraVid pyramid (§3.2): fact nodes (with vectors in ``fact_vec`` and text in
FTS), clip nodes, versioned global nodes and links, written with the clip (facts, clip node,
fact→clip links) or by :mod:`edge.pyramid` (relational links, global versions).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge.errors import StoreError  # noqa: F401 (re-exported)

KEY_TYPES: tuple[str, ...] = ("event", "dialogue", "object", "summary")
"""The four MERIT keys (MERIT Eq. 5)."""
INDEX_TYPES: tuple[str, ...] = (*KEY_TYPES, "caption")
"""Everything with a vector: the four keys plus the whole caption (for ablations)."""
EMBED_DIM = 384



@dataclass
class Clip:
    """A stored clip. Times are timeline seconds (see :mod:`edge.timeline`)."""

    id: int
    source_id: int
    idx: int
    t_start: float
    t_end: float
    day: str
    day_start: float
    caption: str
    transcript: str
    keyframes: list[str] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Source:
    """An ingested file: its content hash makes re-ingesting it a no-op."""

    id: int
    path: str
    sha256: str
    kind: str
    clock: str
    t_start: float
    duration: float
    n_clips: int
    status: str


@dataclass
class Fact:
    """A fact node (PyraVid §3.2): one fine-grained, timestamped event inside a clip.

    ``t_start``/``t_end`` are timeline seconds inside the clip; ``kind`` is action, speech,
    object, person or scene; ``origin`` is ``llm`` or ``extractive`` (cut from the caption when
    the memory LLM failed); ``keyframe`` is a path under ``<memory>.frames/`` or ``None``.
    ``id``/``clip_id`` are 0 until stored.
    """

    text: str
    kind: str
    t_start: float
    t_end: float
    origin: str
    names: list[str] = field(default_factory=list)
    keyframe: str | None = None
    id: int = 0
    clip_id: int = 0


@dataclass(frozen=True)
class ClipNode:
    """A clip node (PyraVid §3.2): the clip's summary and scene; ``origin`` llm|extractive."""

    clip_id: int
    summary: str
    scene: str
    origin: str


@dataclass(frozen=True)
class GlobalNode:
    """One version of a global node (PyraVid §3.2, App. B.3): the evolving summary of a day
    (``scope='day'``) or of everything (``scope='all'``, ``day=''``) after ``clip_count``
    clips, the last of them ending at ``t_upto`` (timeline seconds)."""

    id: int
    scope: str
    day: str
    version: int
    text: str
    clip_count: int
    t_upto: float
    origin: str
    updated: float


@dataclass(frozen=True)
class Link:
    """An edge of the memory graph (PyraVid §3.2 "Link Construction"): ``kind`` is
    ``hierarchical`` (fact→clip, clip→global) or ``relational`` (fact→earlier fact, and the
    clip→earlier clip links they induce, ``weight`` = number of fact links)."""

    src_kind: str
    src_id: int
    dst_kind: str
    dst_id: int
    kind: str
    weight: float
    relation: str


# ---- migrations -------------------------------------------------------------------------

def _m001_initial(db) -> None:
    db.execute(
        """
        CREATE TABLE sources(
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,               -- video | audio | captions
            clock TEXT NOT NULL,              -- wall | dayclock
            start_from TEXT NOT NULL,         -- metadata | --start | mtime | file
            t_start REAL NOT NULL,
            duration REAL NOT NULL,
            n_clips INTEGER NOT NULL,
            status TEXT NOT NULL,             -- ingesting | done
            added_at REAL NOT NULL,
            info TEXT NOT NULL DEFAULT '{}'
        );
        CREATE TABLE clips(
            id INTEGER PRIMARY KEY,
            source_id INTEGER NOT NULL REFERENCES sources(id),
            idx INTEGER NOT NULL,
            t_start REAL NOT NULL,
            t_end REAL NOT NULL,
            day TEXT NOT NULL,
            day_start REAL NOT NULL,
            caption TEXT NOT NULL,
            transcript TEXT NOT NULL DEFAULT '',
            keyframes TEXT NOT NULL DEFAULT '[]',
            signals TEXT NOT NULL DEFAULT '{}',
            UNIQUE(source_id, idx)
        );
        CREATE INDEX clips_by_time ON clips(t_start);
        CREATE INDEX clips_by_day ON clips(day, t_start);
        CREATE TABLE keys(
            id INTEGER PRIMARY KEY,
            clip_id INTEGER NOT NULL REFERENCES clips(id),
            type TEXT NOT NULL CHECK (type IN ('event','dialogue','object','summary','caption')),
            text TEXT NOT NULL,
            origin TEXT NOT NULL,             -- llm | extractive | file | caption
            UNIQUE(clip_id, type)
        );
        CREATE TABLE calls(
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            command TEXT NOT NULL,
            role TEXT NOT NULL,
            model TEXT NOT NULL,
            tokens_in INTEGER NOT NULL,
            tokens_out INTEGER NOT NULL,
            seconds REAL NOT NULL
        );
        """
    )
    db.execute(
        f"""
        CREATE VIRTUAL TABLE key_vec USING vec0(
            key_id INTEGER PRIMARY KEY,
            key_type TEXT PARTITION KEY,
            clip_end FLOAT,
            embedding FLOAT[{EMBED_DIM}] distance_metric=cosine
        )
        """
    )


def _m002_clip_text_fts(db) -> None:
    """FTS5 (BM25) over each clip's caption, transcript and key texts; backfills old clips."""
    db.execute(
        """
        CREATE VIRTUAL TABLE clip_text USING fts5(
            caption, transcript, keys,
            tokenize = 'unicode61 remove_diacritics 2'
        )
        """
    )
    db.execute(
        "INSERT INTO clip_text(rowid, caption, transcript, keys) "
        "SELECT c.id, c.caption, c.transcript, coalesce(group_concat(k.text, ' | '), '') "
        "FROM clips c LEFT JOIN keys k ON k.clip_id = c.id AND k.type != 'caption' "
        "GROUP BY c.id"
    )


def _m003_pyramid(db) -> None:
    """The PyraVid pyramid (PyraVid §3.2, App. B.3): fact nodes, clip nodes, versioned global
    nodes, hierarchical/relational links, fact vectors, and fact text in the FTS index."""
    db.execute(
        """
        CREATE TABLE facts(
            id INTEGER PRIMARY KEY,
            clip_id INTEGER NOT NULL REFERENCES clips(id),
            t_start REAL NOT NULL,            -- timeline seconds, inside the clip
            t_end REAL NOT NULL,
            text TEXT NOT NULL,
            kind TEXT NOT NULL,               -- action | speech | object | person | scene
            names TEXT NOT NULL DEFAULT '[]', -- names mentioned (JSON list)
            keyframe TEXT,                    -- path under <memory>.frames/, NULL without video
            origin TEXT NOT NULL              -- llm | extractive
        );
        CREATE INDEX facts_by_clip ON facts(clip_id);
        CREATE TABLE nodes_clip(
            clip_id INTEGER PRIMARY KEY REFERENCES clips(id),
            summary TEXT NOT NULL,
            scene TEXT NOT NULL,
            origin TEXT NOT NULL              -- llm | extractive
        );
        CREATE TABLE nodes_global(
            id INTEGER PRIMARY KEY,
            scope TEXT NOT NULL CHECK (scope IN ('day', 'all')),
            day TEXT NOT NULL,                -- the day label, or '' for scope 'all'
            version INTEGER NOT NULL,
            text TEXT NOT NULL,
            clip_count INTEGER NOT NULL,      -- clips integrated so far (this and older versions)
            t_upto REAL NOT NULL,             -- end of the last clip integrated (timeline s)
            origin TEXT NOT NULL,             -- llm | extractive
            updated REAL NOT NULL,            -- Unix time of this version
            UNIQUE(scope, day, version)
        );
        CREATE TABLE links(
            id INTEGER PRIMARY KEY,
            src_kind TEXT NOT NULL CHECK (src_kind IN ('fact', 'clip', 'global')),
            src_id INTEGER NOT NULL,
            dst_kind TEXT NOT NULL CHECK (dst_kind IN ('fact', 'clip', 'global')),
            dst_id INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('hierarchical', 'relational')),
            weight REAL NOT NULL DEFAULT 1,
            relation TEXT NOT NULL DEFAULT '',
            UNIQUE(src_kind, src_id, dst_kind, dst_id, kind)
        );
        CREATE INDEX links_by_dst ON links(dst_kind, dst_id);
        CREATE VIRTUAL TABLE fact_text USING fts5(
            text, tokenize = 'unicode61 remove_diacritics 2'
        );
        DROP TABLE clip_text;
        CREATE VIRTUAL TABLE clip_text USING fts5(
            caption, transcript, keys, facts,
            tokenize = 'unicode61 remove_diacritics 2'
        );
        """
    )
    db.execute(
        "INSERT INTO clip_text(rowid, caption, transcript, keys, facts) "
        "SELECT c.id, c.caption, c.transcript, coalesce(group_concat(k.text, ' | '), ''), '' "
        "FROM clips c LEFT JOIN keys k ON k.clip_id = c.id AND k.type != 'caption' "
        "GROUP BY c.id"
    )
    db.execute(
        f"""
        CREATE VIRTUAL TABLE fact_vec USING vec0(
            fact_id INTEGER PRIMARY KEY,
            day TEXT,
            clip_end FLOAT,
            embedding FLOAT[{EMBED_DIM}] distance_metric=cosine
        )
        """
    )


def _m004_runs(db) -> None:
    """Cost accounting per run (issue 3 item 6): wall seconds per ingest stage and the
    seconds of footage processed, so ``edge stats`` can report real-time factors; calls gain
    the run they belong to (NULL for calls stored before this migration)."""
    db.execute(
        """
        CREATE TABLE runs(
            id INTEGER PRIMARY KEY,
            command TEXT NOT NULL,
            started_at REAL NOT NULL,
            seconds REAL NOT NULL,            -- wall-clock seconds of the whole run
            media_seconds REAL NOT NULL,      -- footage processed (clips added), seconds
            clips_added INTEGER NOT NULL,
            sources INTEGER NOT NULL,         -- inputs seen (ingested, resumed, skipped, failed)
            status TEXT NOT NULL              -- done | interrupted | failed
        );
        CREATE TABLE run_stages(
            run_id INTEGER NOT NULL REFERENCES runs(id),
            stage TEXT NOT NULL,              -- load | decode | asr | caption | memory_llm | ...
            seconds REAL NOT NULL,
            PRIMARY KEY(run_id, stage)
        );
        ALTER TABLE calls ADD COLUMN run_id INTEGER;
        """
    )


MIGRATIONS: list[tuple[str, Callable]] = [
    ("m001_initial", _m001_initial),
    ("m002_clip_text_fts", _m002_clip_text_fts),
    ("m003_pyramid", _m003_pyramid),
    ("m004_runs", _m004_runs),
]


def _connect(path: Path):
    import apsw
    import sqlite_vec

    try:
        db = apsw.Connection(str(path))
    except apsw.Error as e:
        raise StoreError(f"cannot open memory {path}: {e}") from None
    db.set_busy_timeout(10_000)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    db.enable_load_extension(False)
    return db


def write_error(path: Path, e: Exception) -> StoreError:
    """A :class:`StoreError` for a failed write (disk full, read-only file, I/O error)."""
    return StoreError(
        f"could not write to the memory {path}: {e}. Check free disk space and that the file "
        "is writable; everything stored before this point is intact.")


class Memory:
    """An open memory file. Use as a context manager or call :meth:`close`.

    Raises :class:`StoreError` when the path cannot be created or opened, or when
    ``create=False`` and the file does not exist.
    """

    def __init__(self, path: Path, *, create: bool = True) -> None:
        import apsw

        self.path = Path(path)
        if not create and self.path.exists() and self.path.stat().st_size == 0:
            raise StoreError(f"{self.path} is an empty file, not a memory; build one with "
                             "`edge ingest VIDEO...` or `edge ingest-captions FILE`")
        if not self.path.exists():
            if not create:
                raise StoreError(
                    f"no memory at {self.path}; build one with `edge ingest VIDEO...` "
                    "or `edge ingest-captions FILE`"
                )
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create the folder for {self.path}: {e}") from None
        self.db = _connect(self.path)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.migrate()
        except apsw.Error as e:
            self.db.close()
            if isinstance(e, apsw.CantOpenError | apsw.ReadOnlyError) and not os.access(
                self.path.parent, os.W_OK
            ):
                raise StoreError(
                    f"cannot use the memory {self.path}: its folder is not writable (SQLite's "
                    "WAL mode writes -wal/-shm files beside it); copy it somewhere writable"
                ) from None
            raise StoreError(f"{self.path} is not a usable memory file: {e}") from None

    @contextmanager
    def _write(self):
        """A write transaction taken with BEGIN IMMEDIATE: a second writer (another ingest)
        waits up to the busy timeout for the lock instead of failing at its first write, as
        a deferred transaction upgraded from read to write would (SQLITE_BUSY)."""
        if self.db.in_transaction:
            with self.db:  # nested: a savepoint inside the outer transaction
                yield
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            # SQLite rolls back by itself after some errors (SQLITE_FULL, SQLITE_IOERR): a
            # second ROLLBACK would fail and hide the error that matters.
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- lifecycle
    def migrate(self) -> list[str]:
        """Apply pending migrations in order; returns the names applied."""
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations(name TEXT PRIMARY KEY, applied_at REAL)"
        )
        done = {r[0] for r in self.db.execute("SELECT name FROM _migrations")}
        applied = []
        for name, fn in MIGRATIONS:
            if name in done:
                continue
            with self._write():
                if self.db.execute("SELECT 1 FROM _migrations WHERE name = ?",
                                   (name,)).fetchone():
                    continue  # another process applied it while we waited for the lock
                fn(self.db)
                self.db.execute("INSERT INTO _migrations VALUES(?, ?)", (name, time.time()))
            applied.append(name)
        return applied

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- sources
    def source_by_hash(self, sha256: str) -> Source | None:
        row = self.db.execute(
            "SELECT id, path, sha256, kind, clock, t_start, duration, n_clips, status "
            "FROM sources WHERE sha256 = ?", (sha256,)).fetchone()
        return Source(*row) if row else None

    def add_source(self, *, path: str, sha256: str, kind: str, clock: str, start_from: str,
                   t_start: float, duration: float, n_clips: int, info: dict) -> int:
        """Register a source as ``ingesting``; returns its id."""
        with self._write():
            self.db.execute(
                "INSERT INTO sources(path, sha256, kind, clock, start_from, t_start, duration,"
                " n_clips, status, added_at, info) VALUES(?,?,?,?,?,?,?,?,'ingesting',?,?)",
                (path, sha256, kind, clock, start_from, t_start, duration, n_clips, time.time(),
                 json.dumps(info)),
            )
            return self.db.last_insert_rowid()

    def finish_source(self, source_id: int) -> None:
        with self._write():
            self.db.execute("UPDATE sources SET status = 'done' WHERE id = ?", (source_id,))

    def clip_indices(self, source_id: int) -> set[int]:
        """Indices of the clips of ``source_id`` already stored (for resuming)."""
        return {r[0] for r in self.db.execute("SELECT idx FROM clips WHERE source_id = ?",
                                              (source_id,))}

    def done_source_paths(self) -> set[str]:
        """Paths of the sources whose every clip is stored (status ``done``)."""
        return {r[0] for r in self.db.execute("SELECT path FROM sources WHERE status = 'done'")}

    def clip_index_map(self, source_id: int) -> dict[int, int]:
        """``{clip id: index of the clip within its source}`` for ``source_id``."""
        return dict(self.db.execute("SELECT id, idx FROM clips WHERE source_id = ?",
                                    (source_id,)))

    # -- clips
    def add_clip(
        self,
        *,
        source_id: int,
        idx: int,
        t_start: float,
        t_end: float,
        day: str,
        day_start: float,
        caption: str,
        transcript: str,
        keyframes: Sequence[str],
        signals: dict,
        keys: dict[str, tuple[str, str]],
        vectors: dict[str, np.ndarray],
        facts: Sequence[Fact] = (),
        fact_vectors: np.ndarray | None = None,
        clip_node: tuple[str, str, str] | None = None,
    ) -> int:
        """Store one clip with its keys and key vectors in ONE transaction; returns its id.

        ``keys`` maps a type in :data:`INDEX_TYPES` to ``(text, origin)``; ``vectors`` maps
        the same types to 384-d float32 unit vectors. A clip already stored under
        ``(source_id, idx)`` is left as it is and its id returned.

        PyraVid pyramid (§3.2), in the same transaction: ``facts`` with their
        ``(len(facts), 384)`` ``fact_vectors`` (fact rows, fact_vec, fact_text FTS, and a
        hierarchical fact→clip link each) and ``clip_node = (summary, scene, origin)``. Raises
        ``ValueError`` (nothing stored) when a vector has the wrong shape.
        """
        with self._write():
            row = self.db.execute("SELECT id FROM clips WHERE source_id = ? AND idx = ?",
                                  (source_id, idx)).fetchone()
            if row:
                return row[0]
            self.db.execute(
                "INSERT INTO clips(source_id, idx, t_start, t_end, day, day_start, caption,"
                " transcript, keyframes, signals) VALUES(?,?,?,?,?,?,?,?,?,?)",
                (source_id, idx, t_start, t_end, day, day_start, caption, transcript,
                 json.dumps(list(keyframes)), json.dumps(signals, ensure_ascii=False)),
            )
            clip_id = self.db.last_insert_rowid()
            for ktype, (text, origin) in keys.items():
                self.db.execute(
                    "INSERT INTO keys(clip_id, type, text, origin) VALUES(?,?,?,?)",
                    (clip_id, ktype, text, origin),
                )
                key_id = self.db.last_insert_rowid()
                vec = np.asarray(vectors[ktype], dtype=np.float32)
                if vec.shape != (EMBED_DIM,):
                    raise ValueError(f"vector for {ktype} has shape {vec.shape}, "
                                     f"expected ({EMBED_DIM},)")
                self.db.execute(
                    "INSERT INTO key_vec(key_id, key_type, clip_end, embedding) VALUES(?,?,?,?)",
                    (key_id, ktype, float(t_end), vec.tobytes()),
                )
            self._add_facts(clip_id, day, t_end, facts, fact_vectors)
            if clip_node is not None:
                self.db.execute("INSERT INTO nodes_clip(clip_id, summary, scene, origin) "
                                "VALUES(?,?,?,?)", (clip_id, *clip_node))
            self.db.execute(
                "INSERT INTO clip_text(rowid, caption, transcript, keys, facts)"
                " VALUES(?,?,?,?,?)",
                (clip_id, caption, transcript,
                 " | ".join(t for k, (t, _) in keys.items() if k != "caption"),
                 " | ".join(f.text for f in facts)),
            )
            return clip_id

    def _add_facts(self, clip_id: int, day: str, clip_end: float, facts: Sequence[Fact],
                   vectors: np.ndarray | None) -> None:
        if not facts:
            return
        vecs = np.asarray(vectors if vectors is not None else (), dtype=np.float32)
        if vecs.shape != (len(facts), EMBED_DIM):
            raise ValueError(f"fact vectors have shape {vecs.shape}, expected "
                             f"({len(facts)}, {EMBED_DIM})")
        for f, vec in zip(facts, vecs):
            self.db.execute(
                "INSERT INTO facts(clip_id, t_start, t_end, text, kind, names, keyframe, origin)"
                " VALUES(?,?,?,?,?,?,?,?)",
                (clip_id, float(f.t_start), float(f.t_end), f.text, f.kind,
                 json.dumps(list(f.names), ensure_ascii=False), f.keyframe, f.origin))
            fid = self.db.last_insert_rowid()
            f.id, f.clip_id = fid, clip_id
            self.db.execute("INSERT INTO fact_vec(fact_id, day, clip_end, embedding)"
                            " VALUES(?,?,?,?)", (fid, day, float(clip_end), vec.tobytes()))
            self.db.execute("INSERT INTO fact_text(rowid, text) VALUES(?,?)", (fid, f.text))
            self.db.execute(
                "INSERT INTO links(src_kind, src_id, dst_kind, dst_id, kind) "
                "VALUES('fact', ?, 'clip', ?, 'hierarchical')", (fid, clip_id))

    _CLIP_COLS = ("id, source_id, idx, t_start, t_end, day, day_start, caption, transcript,"
                  " keyframes")

    def _clip(self, row) -> Clip:
        c = Clip(*row[:9], keyframes=json.loads(row[9]))
        return c

    def clips(self, ids: Iterable[int], *, with_keys: bool = False) -> dict[int, Clip]:
        """Clips by id (missing ids are absent from the result)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        out = {
            r[0]: self._clip(r)
            for r in self.db.execute(
                f"SELECT {self._CLIP_COLS} FROM clips WHERE id IN ({marks})", ids)
        }
        if with_keys:
            for clip_id, ktype, text in self.db.execute(
                f"SELECT clip_id, type, text FROM keys WHERE clip_id IN ({marks})", ids
            ):
                out[clip_id].keys[ktype] = text
        return out

    def all_clips(self) -> list[Clip]:
        """Every clip in timeline order."""
        return [self._clip(r) for r in self.db.execute(
            f"SELECT {self._CLIP_COLS} FROM clips ORDER BY t_start, id")]

    def neighbors(self, clip: Clip, delta: int) -> tuple[list[Clip], list[Clip]]:
        """Up to ``delta`` clips before and after ``clip`` on the same day, nearest first
        (MERIT Eq. 8 window, on the timeline rather than within one file)."""
        if delta <= 0:
            return [], []
        before = [self._clip(r) for r in self.db.execute(
            f"SELECT {self._CLIP_COLS} FROM clips WHERE day = ? AND (t_start < ? OR "
            "(t_start = ? AND id < ?)) ORDER BY t_start DESC, id DESC LIMIT ?",
            (clip.day, clip.t_start, clip.t_start, clip.id, delta))]
        after = [self._clip(r) for r in self.db.execute(
            f"SELECT {self._CLIP_COLS} FROM clips WHERE day = ? AND (t_start > ? OR "
            "(t_start = ? AND id > ?)) ORDER BY t_start, id LIMIT ?",
            (clip.day, clip.t_start, clip.t_start, clip.id, delta))]
        return before, after

    # -- vectors
    def knn_keys(self, query: np.ndarray, key_type: str, k: int,
                 before: float | None = None, after: float | None = None
                 ) -> list[tuple[int, float]]:
        """Top-``k`` ``(clip_id, cosine similarity)`` for one key type, best first.

        The time scope (``after < clip_end <= before``, timeline seconds, either open) is
        applied inside the KNN as vec0 metadata constraints, so it never drops results after
        the top-k was cut. ``k`` is capped at 4096 (sqlite-vec's limit).
        """
        k = max(1, min(int(k), 4096))
        q = np.asarray(query, dtype=np.float32).tobytes()
        sql = ("SELECT v.key_id, v.distance FROM key_vec v WHERE v.embedding MATCH ? AND k = ?"
               " AND v.key_type = ?")
        args: list = [q, k, key_type]
        if before is not None:
            sql += " AND v.clip_end <= ?"
            args.append(float(before))
        if after is not None:
            sql += " AND v.clip_end > ?"
            args.append(float(after))
        hits = list(self.db.execute(sql, args))
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        owner = dict(self.db.execute(
            f"SELECT id, clip_id FROM keys WHERE id IN ({marks})", [h[0] for h in hits]))
        return [(owner[kid], 1.0 - float(dist)) for kid, dist in hits]

    def count_clips(self, before: float | None = None, after: float | None = None) -> int:
        """Clips that end in ``(after, before]`` (timeline seconds, either open)."""
        return self.db.execute(
            "SELECT count(*) FROM clips WHERE (? IS NULL OR t_end <= ?)"
            " AND (? IS NULL OR t_end > ?)",
            (before, before, after, after)).fetchone()[0]

    def find_clip(self, t_start: float, t_end: float, caption: str) -> int | None:
        """The id of a stored clip with exactly these times and caption, from any source."""
        row = self.db.execute(
            "SELECT id FROM clips WHERE t_start = ? AND t_end = ? AND caption = ? LIMIT 1",
            (t_start, t_end, caption)).fetchone()
        return row[0] if row else None

    def bm25(self, match: str, k: int, before: float | None = None,
             after: float | None = None) -> list[tuple[int, float]]:
        """Top-``k`` ``(clip_id, BM25 score)`` for an FTS5 ``match`` expression, best first
        (scores are positive; larger is better). The time scope (clips ending in
        ``(after, before]``) is part of the same query, so it applies before the top-k cut."""
        sql = ("SELECT t.rowid, -bm25(clip_text) AS score FROM clip_text t "
               "JOIN clips c ON c.id = t.rowid WHERE clip_text MATCH ?")
        args: list = [match]
        if before is not None:
            sql += " AND c.t_end <= ?"
            args.append(float(before))
        if after is not None:
            sql += " AND c.t_end > ?"
            args.append(float(after))
        sql += " ORDER BY score DESC, t.rowid LIMIT ?"
        args.append(int(k))
        return [(cid, float(score)) for cid, score in self.db.execute(sql, args)]

    # -- the PyraVid pyramid (facts, clip nodes, global nodes, links) ----------------------
    _FACT_COLS = "id, clip_id, t_start, t_end, text, kind, names, keyframe, origin"

    @staticmethod
    def _fact(row) -> Fact:
        fid, cid, t0, t1, text, kind, names, kf, origin = row
        return Fact(text, kind, t0, t1, origin, json.loads(names), kf, fid, cid)

    def facts(self, ids: Iterable[int]) -> dict[int, Fact]:
        """Fact nodes by id (missing ids are absent)."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {r[0]: self._fact(r) for r in self.db.execute(
            f"SELECT {self._FACT_COLS} FROM facts WHERE id IN ({marks})", ids)}

    def facts_of(self, clip_ids: Iterable[int]) -> dict[int, list[Fact]]:
        """The fact nodes of each clip in time order, ``{clip_id: [Fact, ...]}`` (a clip
        without facts maps to ``[]``). PyraVid B.4: a clip seed expands to all its facts."""
        ids = list(dict.fromkeys(clip_ids))
        out: dict[int, list[Fact]] = {i: [] for i in ids}
        if not ids:
            return out
        marks = ",".join("?" * len(ids))
        for r in self.db.execute(f"SELECT {self._FACT_COLS} FROM facts WHERE clip_id IN "
                                 f"({marks}) ORDER BY clip_id, t_start, id", ids):
            out[r[1]].append(self._fact(r))
        return out

    def knn_facts(self, query: np.ndarray, k: int, before: float | None = None,
                  day: str | None = None, after: float | None = None
                  ) -> list[tuple[int, float]]:
        """Top-``k`` ``(fact_id, cosine similarity)`` for a 384-d unit ``query``, best first.

        ``before``/``after`` (timeline seconds: facts of clips ending in ``(after, before]``)
        and ``day`` (a day label) are vec0 metadata constraints applied inside the KNN, so they
        never drop results after the top-k was cut (PyraVid B.3/B.4 seed retrieval,
        time-scoped). ``k`` ≤ 4096.
        """
        k = max(1, min(int(k), 4096))
        sql = "SELECT fact_id, distance FROM fact_vec WHERE embedding MATCH ? AND k = ?"
        args: list = [np.asarray(query, dtype=np.float32).tobytes(), k]
        if before is not None:
            sql += " AND clip_end <= ?"
            args.append(float(before))
        if after is not None:
            sql += " AND clip_end > ?"
            args.append(float(after))
        if day is not None:
            sql += " AND day = ?"
            args.append(day)
        return [(int(fid), 1.0 - float(d)) for fid, d in self.db.execute(sql, args)]

    def bm25_facts(self, match: str, k: int,
                   before: float | None = None) -> list[tuple[int, float]]:
        """Top-``k`` ``(fact_id, BM25 score)`` for an FTS5 ``match`` over fact texts, best
        first (larger is better); the time scope applies before the cut."""
        sql = ("SELECT t.rowid, -bm25(fact_text) AS score FROM fact_text t JOIN facts f "
               "ON f.id = t.rowid JOIN clips c ON c.id = f.clip_id WHERE fact_text MATCH ?")
        args: list = [match]
        if before is not None:
            sql += " AND c.t_end <= ?"
            args.append(float(before))
        sql += " ORDER BY score DESC, t.rowid LIMIT ?"
        args.append(int(k))
        return [(fid, float(score)) for fid, score in self.db.execute(sql, args)]

    def clip_nodes(self, clip_ids: Iterable[int]) -> dict[int, ClipNode]:
        """Clip nodes (summary, scene) by clip id; clips built without the pyramid are absent."""
        ids = list(dict.fromkeys(clip_ids))
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        return {r[0]: ClipNode(*r) for r in self.db.execute(
            f"SELECT clip_id, summary, scene, origin FROM nodes_clip WHERE clip_id IN ({marks})",
            ids)}

    def links_from(self, kind: str, ids: Iterable[int], *, link_kind: str | None = None,
                   both: bool = True) -> list[Link]:
        """Links touching the ``kind`` nodes (``fact``, ``clip`` or ``global``) ``ids``.

        With ``both`` (default) links where the nodes are the destination come back too
        (relational links are stored once, newer → older, but mean "related" both ways).
        ``link_kind`` keeps only ``hierarchical`` or ``relational`` links. PyraVid B.4
        expansion walks these.
        """
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        cond = f"(src_kind = ? AND src_id IN ({marks}))"
        args: list = [kind, *ids]
        if both:
            cond += f" OR (dst_kind = ? AND dst_id IN ({marks}))"
            args += [kind, *ids]
        sql = ("SELECT src_kind, src_id, dst_kind, dst_id, kind, weight, relation FROM links "
               f"WHERE ({cond})")
        if link_kind is not None:
            sql += " AND kind = ?"
            args.append(link_kind)
        return [Link(*r) for r in self.db.execute(sql + " ORDER BY id", args)]

    def add_relational_links(self, pairs: Sequence[tuple[int, int, str]]) -> None:
        """Store accepted fact→fact relations ``(fact_id, earlier_fact_id, relation)`` and the
        clip→clip links they induce (weight = number of fact links), in one transaction
        (PyraVid App. B.3 "Clip Memory Graph")."""
        if not pairs:
            return
        with self._write():
            for src, dst, relation in pairs:
                self.db.execute(
                    "INSERT OR IGNORE INTO links(src_kind, src_id, dst_kind, dst_id, kind,"
                    " relation) VALUES('fact', ?, 'fact', ?, 'relational', ?)",
                    (src, dst, relation))
                if self.db.changes() == 0:
                    continue
                a, b = (self.db.execute("SELECT clip_id FROM facts WHERE id = ?",
                                        (fid,)).fetchone()[0] for fid in (src, dst))
                if a == b:
                    continue
                self.db.execute(
                    "INSERT INTO links(src_kind, src_id, dst_kind, dst_id, kind, weight) "
                    "VALUES('clip', ?, 'clip', ?, 'relational', 1) "
                    "ON CONFLICT(src_kind, src_id, dst_kind, dst_id, kind) "
                    "DO UPDATE SET weight = weight + 1", (a, b))

    def global_node(self, day: str = "", before: float | None = None) -> GlobalNode | None:
        """The latest global node of ``day`` (a day label; ``''`` = the overall node), or the
        latest version that only integrates clips ending by ``before`` (timeline seconds), so a
        question asked at time t never sees a summary of later footage."""
        scope = "all" if not day else "day"
        sql = ("SELECT id, scope, day, version, text, clip_count, t_upto, origin, updated "
               "FROM nodes_global WHERE scope = ? AND day = ?")
        args: list = [scope, day]
        if before is not None:
            sql += " AND t_upto <= ?"
            args.append(float(before))
        row = self.db.execute(sql + " ORDER BY version DESC LIMIT 1", args).fetchone()
        return GlobalNode(*row) if row else None

    def clips_without_global(self, day: str) -> list[Clip]:
        """Clips of ``day`` that have a clip node but no clip→global link yet, in time order
        (those the next global update integrates)."""
        return [self._clip(r) for r in self.db.execute(
            f"SELECT {', '.join('c.' + c.strip() for c in self._CLIP_COLS.split(','))} "
            "FROM clips c JOIN nodes_clip n ON n.clip_id = c.id WHERE c.day = ? AND NOT EXISTS("
            "SELECT 1 FROM links l WHERE l.src_kind = 'clip' AND l.src_id = c.id AND "
            "l.dst_kind = 'global' AND l.kind = 'hierarchical') ORDER BY c.t_start, c.id",
            (day,))]

    def add_global_version(self, *, day: str, text: str, origin: str,
                           clip_ids: Sequence[int], t_upto: float,
                           clip_count: int | None = None) -> GlobalNode:
        """Store the next version of a global node (``day=''`` for the overall node) and the
        hierarchical clip→global links of the ``clip_ids`` it integrated, in one transaction.
        ``clip_count`` defaults to the previous version's count plus ``len(clip_ids)``."""
        scope = "all" if not day else "day"
        with self._write():
            prev = self.global_node(day)
            version = prev.version + 1 if prev else 1
            count = clip_count if clip_count is not None else (
                (prev.clip_count if prev else 0) + len(clip_ids))
            t_upto = max(float(t_upto), prev.t_upto if prev else float("-inf"))
            self.db.execute(
                "INSERT INTO nodes_global(scope, day, version, text, clip_count, t_upto, origin,"
                " updated) VALUES(?,?,?,?,?,?,?,?)",
                (scope, day, version, text, count, t_upto, origin, time.time()))
            gid = self.db.last_insert_rowid()
            if scope == "day":
                for cid in clip_ids:
                    self.db.execute(
                        "INSERT OR IGNORE INTO links(src_kind, src_id, dst_kind, dst_id, kind) "
                        "VALUES('clip', ?, 'global', ?, 'hierarchical')", (cid, gid))
            return self.global_node(day)

    def days(self) -> list[str]:
        """Day labels that hold clips, in timeline order (by each day's first clip)."""
        return [r[0] for r in self.db.execute(
            "SELECT day FROM clips GROUP BY day ORDER BY min(t_start)")]

    def count_clip_nodes(self) -> int:
        """How many clips have a PyraVid clip node."""
        return self.db.execute("SELECT count(*) FROM nodes_clip").fetchone()[0]

    def has_facts(self) -> bool:
        """Whether any clip has PyraVid fact nodes (the pyramid was built for some clips)."""
        return self.db.execute("SELECT 1 FROM facts LIMIT 1").fetchone() is not None

    def pyramid_stats(self) -> dict:
        """Pyramid counts: facts (and how many extractive), clip nodes, global nodes per day
        (versions and latest clip count), links by kind and node kinds."""
        q = self.db.execute
        links: dict[str, int] = {}
        for kind, sk, dk, n in q("SELECT kind, src_kind, dst_kind, count(*) FROM links "
                                 "GROUP BY kind, src_kind, dst_kind ORDER BY 1, 2, 3"):
            links[f"{kind} {sk}->{dk}"] = n
        globals_ = {}
        for day, versions, clips in q(
                "SELECT day, count(*), max(clip_count) FROM nodes_global GROUP BY day "
                "ORDER BY day"):
            globals_[day or "all"] = {"versions": versions, "clips": clips}
        return {
            "facts": q("SELECT count(*) FROM facts").fetchone()[0],
            "facts_extractive": q("SELECT count(*) FROM facts WHERE origin = 'extractive'"
                                  ).fetchone()[0],
            "clip_nodes": q("SELECT count(*) FROM nodes_clip").fetchone()[0],
            "global_nodes": globals_,
            "links": links,
        }

    # -- accounting and stats
    def record_calls(self, command: str, records: Iterable, run_id: int | None = None) -> None:
        """Persist model call records (``models.CallRecord``) under ``command`` (and the
        ``runs`` row they belong to, when known)."""
        now = time.time()
        with self._write():
            for r in records:
                self.db.execute(
                    "INSERT INTO calls(at, command, role, model, tokens_in, tokens_out, seconds,"
                    " run_id) VALUES(?,?,?,?,?,?,?,?)",
                    (now, command, r.role, r.model, r.tokens_in, r.tokens_out, r.seconds,
                     run_id))

    def call_totals(self) -> list[dict]:
        """Model calls so far per command and role: dicts with ``command``, ``role``,
        ``calls``, ``tokens_in``, ``tokens_out`` and ``seconds``, sorted by command, role."""
        rows = self.db.execute(
            "SELECT command, role, count(*), sum(tokens_in), sum(tokens_out), sum(seconds) "
            "FROM calls GROUP BY command, role ORDER BY command, role").fetchall()
        return [dict(zip(("command", "role", "calls", "tokens_in", "tokens_out", "seconds"),
                         row)) for row in rows]

    def add_run(self, *, command: str, started_at: float, seconds: float,
                media_seconds: float, clips_added: int, sources: int, status: str,
                stages: dict[str, float]) -> int:
        """Record one run (an ingest) and its wall seconds per stage in one transaction;
        returns the run id. ``started_at`` is Unix seconds; the rest are seconds."""
        with self._write():
            self.db.execute(
                "INSERT INTO runs(command, started_at, seconds, media_seconds, clips_added,"
                " sources, status) VALUES(?,?,?,?,?,?,?)",
                (command, started_at, seconds, media_seconds, clips_added, sources, status))
            run_id = self.db.last_insert_rowid()
            for stage, secs in stages.items():
                self.db.execute("INSERT INTO run_stages(run_id, stage, seconds) VALUES(?,?,?)",
                                (run_id, stage, float(secs)))
            return run_id

    def stage_costs(self, command: str = "ingest") -> dict:
        """Totals over every recorded run of ``command``: ``runs``, ``clips_added``,
        ``media_seconds``, ``hours`` and ``stages`` — per stage ``seconds``, ``rtf`` (stage
        seconds / footage seconds) and the calls and tokens of its model roles (calls linked
        to those runs). Empty ``stages`` when nothing was recorded."""
        from edge.stages import stage_report

        q = self.db.execute
        runs, clips, media = q(
            "SELECT count(*), coalesce(sum(clips_added), 0), coalesce(sum(media_seconds), 0)"
            " FROM runs WHERE command = ?", (command,)).fetchone()
        seconds = dict(q(
            "SELECT s.stage, sum(s.seconds) FROM run_stages s JOIN runs r ON r.id = s.run_id"
            " WHERE r.command = ? GROUP BY s.stage", (command,)))
        by_role = {
            role: {"calls": n, "tokens_in": tin or 0, "tokens_out": tout or 0}
            for role, n, tin, tout in q(
                "SELECT c.role, count(*), sum(c.tokens_in), sum(c.tokens_out) FROM calls c"
                " JOIN runs r ON r.id = c.run_id WHERE r.command = ? GROUP BY c.role",
                (command,))}
        return {"runs": runs, "clips_added": clips, "media_seconds": round(media, 3),
                "hours": round(media / 3600.0, 4),
                "stages": stage_report(seconds, media, by_role)}

    def stats(self) -> dict:
        """Counts: sources, clips, keys, hours covered, days, last ingest time."""
        q = self.db.execute
        n_clips, secs, first, last = q(
            "SELECT count(*), coalesce(sum(t_end - t_start), 0), min(t_start), max(t_end)"
            " FROM clips").fetchone()
        return {
            "sources": q("SELECT count(*) FROM sources").fetchone()[0],
            "clips": n_clips,
            "keys": q("SELECT count(*) FROM keys WHERE type != 'caption'").fetchone()[0],
            "hours": round(secs / 3600.0, 3),
            "days": [r[0] for r in q("SELECT DISTINCT day FROM clips ORDER BY day")],
            "first": first,
            "last": last,
            "last_ingest": q("SELECT max(added_at) FROM sources").fetchone()[0],
            "partial_sources": [r[0] for r in q(
                "SELECT path FROM sources WHERE status != 'done' ORDER BY id")],
            "pyramid": self.pyramid_stats(),
        }

    def activity_by_hour(self) -> list[tuple[str, float, int, int]]:
        """Clips per hour of each day, for browsing: ``(day, day_start, hour, clips)`` rows in
        timeline order, only hours that hold a clip. ``hour`` is the hour of day (0–23, or more
        for a clip past midnight on the EgoLife day clock) of each clip's start."""
        return [(day, day_start, int(hour), n) for day, day_start, hour, n in self.db.execute(
            "SELECT day, min(day_start), CAST((t_start - day_start) / 3600 AS INTEGER) AS h,"
            " count(*) FROM clips GROUP BY day, h ORDER BY min(t_start)")]

    def clips_between(self, start: float, end: float) -> list[Clip]:
        """Clips that start in ``[start, end)`` (timeline seconds), in timeline order."""
        return [self._clip(r) for r in self.db.execute(
            f"SELECT {self._CLIP_COLS} FROM clips WHERE t_start >= ? AND t_start < ? "
            "ORDER BY t_start, id", (float(start), float(end)))]
