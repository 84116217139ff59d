""":class:`Memory`, the one object callers use: an open memory file (SQLite in WAL mode,
sqlite-vec for vectors). Its methods come from the mixins of this package, which share
``self.db`` (the apsw connection) and ``self._write()`` (the write transaction)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from edge.errors import StoreError
from edge.store.accounting import Accounting
from edge.store.clips import ClipStore
from edge.store.entities import EntityIndex
from edge.store.graph import Graph
from edge.store.migrations import MIGRATIONS
from edge.store.people import People
from edge.store.queue import BuildQueue
from edge.store.schema import apply_migrations, connect, write_transaction
from edge.store.spaces import VectorSpaces
from edge.store.text import TextIndex
from edge.store.vectors import VectorIndex

_NO_MEMORY_HINT = "build one with `edge ingest VIDEO...` or `edge ingest-captions FILE`"


class ReadOnlyMemoryError(StoreError):
    """The memory exists but cannot be opened for writing (a read-only file or folder, read-
    only media): reading commands open it with ``Memory(..., readonly=True)`` instead."""


def write_error(path: Path, e: Exception) -> StoreError:
    """A :class:`StoreError` for a failed write (disk full, read-only file, I/O error).
    sqlite-vec words a full database as "Could not insert a new vector chunk" (a day's first
    key needs a new chunk): the message then says what that most likely means."""
    why = str(e)
    if "new vector chunk" in why:
        why += " (the vector index needs room for a new chunk: the database or disk is full)"
    return StoreError(
        f"could not write to the memory {path}: {why}. Check free disk space and that the "
        "file is writable; everything stored before this point is intact.")


def writable(path: Path) -> bool:
    """Whether ``edge`` may write the file or folder ``path``: ``access()`` allows it (a
    read-only mount, an immutable file and, for anyone but root, the permission bits say
    no) and its mode has a write bit. Root passes ``access()`` whatever the bits say, so a
    memory made read-only with ``chmod a-w`` (or its folder) would still be written by a
    command run as root; reading the bits too makes it read-only for everyone. False when
    ``path`` does not exist."""
    try:
        mode = Path(path).stat().st_mode
    except OSError:
        return False
    return bool(mode & 0o222) and os.access(path, os.W_OK)


def same_file(a: Path, b: Path) -> bool:
    """Whether the paths ``a`` and ``b`` name one file (``./m.db`` and ``m.db``, links)."""
    a, b = Path(a), Path(b)
    if a.resolve() == b.resolve():
        return True
    return a.exists() and b.exists() and os.path.samefile(a, b)


class Memory(ClipStore, VectorIndex, VectorSpaces, TextIndex, Graph, EntityIndex, BuildQueue,
             Accounting, People):
    """An open memory file. Use as a context manager or call :meth:`close`.

    Opening applies pending migrations (:data:`~edge.store.MIGRATIONS`). Raises
    :class:`StoreError` when the path cannot be created or opened, when ``create=False`` and
    the file does not exist (or is empty), or when it is not a usable memory file, and
    :class:`ReadOnlyMemoryError` when the file or its folder may not be written
    (:func:`writable`; checked before SQLite touches it). ``readonly=True`` opens it for
    reading only (:meth:`_open_readonly`): nothing is migrated or written.

    Methods by module: sources and clips (:mod:`~edge.store.clips`), KNN over key and fact
    vectors (:mod:`~edge.store.vectors`), which embedder wrote them and re-embedding
    (:mod:`~edge.store.spaces`), BM25 (:mod:`~edge.store.text`), the PyraVid
    pyramid (:mod:`~edge.store.graph`), the entity-time index (:mod:`~edge.store.entities`),
    the deferred LLM tier's queue (:mod:`~edge.store.queue`), calls, runs and stats
    (:mod:`~edge.store.accounting`), the character memory's identities and appearances
    (:mod:`~edge.store.people`, :mod:`~edge.store.people_read`).
    """

    def __init__(self, path: Path, *, create: bool = True, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if readonly:
            self._check_path(create=False)
            self._open_readonly()
            return
        new = not self.path.exists()
        self._check_path(create)
        if not new and not (writable(self.path) and writable(self.path.parent)):
            raise self._not_writable()  # before SQLite writes anything into or beside it
        if new and not writable(self.path.parent):
            raise self._folder_not_writable()
        try:
            self.db = connect(self.path)
        except StoreError:
            if new:
                raise self._folder_not_writable() from None
            raise
        self._open()

    def _folder_not_writable(self) -> StoreError:
        """The error for a new memory in a folder that cannot be written."""
        return StoreError(
            f"cannot create the memory {self.path}: the folder {self.path.parent} is not "
            "writable; give --memory a path in a writable folder, or make this one writable")

    def _not_writable(self) -> ReadOnlyMemoryError:
        """The error for a memory whose file or folder cannot be written."""
        return ReadOnlyMemoryError(
            f"cannot write to the memory {self.path}: the file or its folder is not "
            "writable (SQLite's WAL mode writes -wal/-shm files beside it); only commands "
            "that read (ask, search, stats, chat, report, backup) can use it there: copy it "
            "somewhere writable to add to it")

    def _open_readonly(self) -> None:
        """Open for reading only: SQLite ``mode=ro``, else (no ``-shm`` can be made beside
        a WAL file on read-only media) ``immutable``. A memory that cannot be written
        (:func:`writable`) gets nothing beside it either: ``mode=ro`` makes the ``-wal`` and
        ``-shm`` files it lacks (and leaves them), so it is used only where both are there
        already (a writer's WAL, still to be read); else ``immutable``, which reads the
        file alone. A memory whose pending migrations would change what is read is refused
        (only m009, which adds the record of the embedder, is read without: MiniLM's, as
        before it; and m010, without which it simply knows no people)."""
        import apsw

        beside = [self.path.with_name(self.path.name + s) for s in ("-wal", "-shm")]
        may_write = writable(self.path) and writable(self.path.parent)
        ways = ("ro", "immutable") if may_write or all(p.exists() for p in beside) else (
            "immutable",)
        for how in ways:
            self.db = connect(self.path, readonly=how)
            try:
                done = {r[0] for r in self.db.execute("SELECT name FROM _migrations")}
                break
            except apsw.CantOpenError:
                self.db.close()
            except apsw.Error as e:
                self.db.close()
                raise StoreError(f"{self.path} is not a usable memory file: {e}") from None
        else:
            raise StoreError(f"cannot read the memory {self.path}: SQLite cannot open it even "
                             "read-only; copy it somewhere writable")
        pending = [n for n, _ in MIGRATIONS if n not in done]
        if set(pending) - {"m009_vector_spaces", "m010_people"}:
            self.db.close()
            names = ", ".join(pending)
            raise StoreError(
                f"{self.path} was made by an older edge and must be upgraded ({names}), "
                "which writes to it, but it is read-only here; copy it somewhere writable and "
                "use the copy")

    def _check_path(self, create: bool) -> None:
        """Refuse an empty file or, without ``create``, a missing one; make the folder."""
        if not create and self.path.exists() and self.path.stat().st_size == 0:
            raise StoreError(f"{self.path} is an empty file, not a memory; {_NO_MEMORY_HINT}")
        if not self.path.exists():
            if not create:
                raise StoreError(f"no memory at {self.path}; {_NO_MEMORY_HINT}")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise StoreError(f"cannot create the folder for {self.path}: {e}") from None

    def _open(self) -> None:
        """WAL, foreign keys, migrations; closes the connection and raises StoreError if any
        fails (an unwritable folder gets its own message: WAL writes -wal/-shm beside it)."""
        import apsw

        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.migrate()
        except apsw.Error as e:
            self.db.close()
            if isinstance(e, apsw.CantOpenError | apsw.ReadOnlyError):
                raise self._not_writable() from None
            raise StoreError(f"{self.path} is not a usable memory file: {e}") from None

    def _write(self):
        """The write transaction every write goes through (:func:`write_transaction`)."""
        return write_transaction(self.db)

    def migrate(self) -> list[str]:
        """Apply pending migrations in order; returns the names applied."""
        return apply_migrations(self.db)

    def backup_to(self, dest: Path) -> int:
        """Copy this memory, as it is at one moment, into the new file ``dest``; returns the
        number of clips in the copy.

        SQLite's online backup API copies every page in one step under one read transaction:
        the copy is consistent and includes what other processes committed that still sits
        in the WAL (a plain file copy loses it), and writers are not blocked meanwhile. The
        copy is written to a temporary file beside ``dest`` and renamed, so a failure leaves
        no ``dest``. The keyframes folder (``<memory>.frames/``) is not copied.

        Raises :class:`StoreError` when ``dest`` is this memory's own file, when ``dest``
        already exists, or when the copy cannot be written (no such folder, disk full, a
        read-only folder).
        """
        import apsw

        dest = Path(dest)
        if same_file(dest, self.path):
            raise StoreError(f"{dest} is the memory itself; back it up to another file")
        if dest.exists():
            raise StoreError(f"{dest} already exists; back up to a new file")
        tmp = None
        try:
            fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".partial",
                                        dir=dest.parent)
            os.close(fd)
            tmp = Path(name)
            clips = _copy_database(self.db, tmp)
            shutil.copymode(self.path, tmp)  # the memory's permissions, not mkstemp's 0600
            os.replace(tmp, dest)
        except (apsw.Error, OSError) as e:
            if tmp is not None:
                for leftover in (tmp, *(tmp.with_name(tmp.name + s) for s in ("-wal", "-shm"))):
                    leftover.unlink(missing_ok=True)
            raise StoreError(f"cannot back up the memory to {dest}: {e}") from None
        return clips

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _copy_database(source, path: Path) -> int:
    """Copy the ``main`` database of the apsw connection ``source`` into the file ``path``
    (all pages in one backup step); the number of clips in the copy."""
    import apsw

    copy = apsw.Connection(str(path))
    try:
        with copy.backup("main", source, "main") as b:
            b.step(-1)
        return copy.execute("SELECT count(*) FROM clips").fetchone()[0]
    finally:
        copy.close()
