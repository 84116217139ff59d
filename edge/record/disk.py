"""A full disk, recognised in whichever layer's error says it, and the one line the recorder
stops with.

A disk fills under every writer at once: FFmpeg writing a clip (PyAV's ``av.error.OSError``
with ``ENOSPC``), the spool's ledger and status files (``OSError``), and SQLite writing the
memory (``apsw.FullError``, "database or disk is full"; sqlite-vec words it "Could not
insert a new vector chunk"; the ingest path wraps both in a
:class:`~edge.errors.StoreError`). The recorder cannot go on usefully, so it stops: capture
and ingestion end without a traceback, what is stored stays, and the same command resumes
once space is freed (:func:`stop_reason` gives the line).
"""

from __future__ import annotations

import errno
from pathlib import Path

_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_FULL_WORDS = ("database or disk is full", "new vector chunk", "No space left on device")


def is_disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` (or an error it was raised from) means the disk is full: an
    ``OSError`` with ``ENOSPC``/``EDQUOT`` (PyAV's included), ``apsw.FullError``, or an
    error whose text is SQLite's or sqlite-vec's for it."""
    import apsw

    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
            return True
        if isinstance(error, apsw.FullError) or any(w in str(error) for w in _FULL_WORDS):
            return True
        error = error.__cause__ or error.__context__
    return False


def disk_full_message(memory_path: Path) -> str:
    """The one line ``edge record`` stops with when the disk of the memory fills."""
    return (f"the memory {memory_path} cannot be written: its disk is full. Free some space "
            "there (or lower --raw-budget/--keep-raw), then run the same command again: "
            "everything stored so far is intact and the recording resumes where the memory "
            "ends")


def stop_reason(error: BaseException, memory_path: Path) -> str | None:
    """The one line a recording stops with for ``error`` that the user must fix (a full
    disk, a memory that cannot be written, another :class:`~edge.errors.EdgeError`), or
    ``None`` for an unexpected error (a bug: logged with its traceback)."""
    import apsw

    from edge.errors import EdgeError
    from edge.store import write_error

    if is_disk_full(error):
        return disk_full_message(memory_path)
    if isinstance(error, EdgeError):
        return str(error)
    if isinstance(error, apsw.Error):
        return str(write_error(memory_path, error))
    return None


__all__ = ["disk_full_message", "is_disk_full", "stop_reason"]
