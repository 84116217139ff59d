"""The memory file's connection: opening it with sqlite-vec loaded, the write transaction,
and applying the pending named migrations (:data:`edge.store.migrations.MIGRATIONS`), each
recorded in ``_migrations``. ``apsw`` is used because this Python's ``sqlite3`` cannot load
extensions (MODELS.md); sqlite-vec provides ``vec0``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from edge.errors import StoreError
from edge.store.migrations import MIGRATIONS


def connect(path: Path, *, readonly: str | None = None):
    """An apsw connection to the SQLite file ``path`` (created if missing) with sqlite-vec
    loaded and a 10 s busy timeout; no pragmas, no migrations (:class:`Memory` does those).
    ``readonly``: ``"ro"`` opens it read-only (SQLite ``mode=ro``: still reads what the
    ``-wal`` file holds, but needs its ``-shm`` to exist or be creatable), ``"immutable"``
    as a file nothing changes (read-only media: no ``-wal``/``-shm`` at all). Raises
    :class:`StoreError` when the file cannot be opened."""
    import apsw
    import sqlite_vec

    try:
        if readonly is None:
            db = apsw.Connection(str(path))
        else:
            from urllib.parse import quote

            query = "mode=ro" if readonly == "ro" else "immutable=1"
            db = apsw.Connection(f"file:{quote(str(Path(path).absolute()))}?{query}",
                                 flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except apsw.Error as e:
        raise StoreError(f"cannot open memory {path}: {e}") from None
    db.set_busy_timeout(10_000)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    db.enable_load_extension(False)
    return db


def sqlite_versions() -> tuple[str, str]:
    """``(sqlite-vec version, SQLite version)`` from a throwaway in-memory connection, for
    ``edge doctor``. Raises ``ImportError`` when apsw or sqlite-vec is missing and
    ``apsw.Error`` when the extension does not load."""
    import apsw
    import sqlite_vec

    db = apsw.Connection(":memory:")
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    vv, sv = db.execute("SELECT vec_version(), sqlite_version()").fetchone()
    db.close()
    return vv, sv


@contextmanager
def write_transaction(db) -> Iterator[None]:
    """A write transaction taken with BEGIN IMMEDIATE: a second writer (another ingest)
    waits up to the busy timeout for the lock instead of failing at its first write, as
    a deferred transaction upgraded from read to write would (SQLITE_BUSY). Inside an open
    transaction it is a savepoint. Rolls back and re-raises on any exception."""
    if db.in_transaction:
        with db:  # nested: a savepoint inside the outer transaction
            yield
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        # SQLite rolls back by itself after some errors (SQLITE_FULL, SQLITE_IOERR): a
        # second ROLLBACK would fail and hide the error that matters.
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def apply_migrations(db, migrations: Sequence[tuple[str, Callable]] | None = None
                     ) -> list[str]:
    """Apply the pending steps of ``migrations`` (default :data:`MIGRATIONS`) in order, each
    in its own write transaction with its ``_migrations`` row; returns the names applied.
    A step another process applied while we waited for the lock is skipped."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS _migrations(name TEXT PRIMARY KEY, applied_at REAL)"
    )
    done = {r[0] for r in db.execute("SELECT name FROM _migrations")}
    applied = []
    for name, fn in MIGRATIONS if migrations is None else migrations:
        if name in done:
            continue
        with write_transaction(db):
            if db.execute("SELECT 1 FROM _migrations WHERE name = ?", (name,)).fetchone():
                continue  # another process applied it while we waited for the lock
            fn(db)
            db.execute("INSERT INTO _migrations VALUES(?, ?)", (name, time.time()))
        applied.append(name)
    return applied
