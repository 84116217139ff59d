"""A disk that fills, for tests: from the moment :meth:`FullDisk.fill` is called, every write
under one folder fails the way a full disk makes it fail, at the layer where it fails in
production; :meth:`FullDisk.free` gives the space back.

- SQLite (apsw): the pages a write adds past the end of the database or its WAL file are
  refused with ``SQLITE_FULL`` from the VFS's write call (an apsw VFS over the default
  one), so SQLite itself says "database or disk is full" and sqlite-vec "Could not insert
  a new vector chunk", as on a full disk; pages already on disk can still be rewritten.
- Python files (``open``, ``Path.write_text``, ``os.open``): a file opened for writing
  under the folder raises ``OSError(ENOSPC)``.
- FFmpeg (PyAV): an output opened under the folder is created empty and written to
  ``/dev/full``, so FFmpeg's own write fails with ``ENOSPC`` (PyAV's ``av.error.OSError``).

Reads are never affected; nothing outside the folder is either.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path

import apsw
import pytest

VFS_NAME = "edge-test-fulldisk"
_FULL_ROOTS: set[str] = set()  # folders whose disk is full now (the VFS is process-wide)


def _under(path, roots) -> bool:
    try:
        p = os.path.abspath(os.fspath(path))
    except TypeError:
        return False  # a file descriptor
    return any(p == r or p.startswith(r + os.sep) for r in roots)


class _File(apsw.VFSFile):
    """A file of the default VFS whose writes past its end fail while its disk is full."""

    def __init__(self, name, flags) -> None:
        super().__init__("", name, flags)
        path = name.filename() if hasattr(name, "filename") else name
        self._path = path or ""

    def xWrite(self, data, offset) -> None:  # noqa: N802 (the VFS method's name)
        if self._path and _under(self._path, _FULL_ROOTS) \
                and offset + len(data) > self.xFileSize():
            raise apsw.FullError("database or disk is full")
        super().xWrite(data, offset)


class _VFS(apsw.VFS):
    def __init__(self) -> None:
        super().__init__(VFS_NAME, "")

    def xOpen(self, name, flags):  # noqa: N802
        return _File(name, flags)


_vfs: _VFS | None = None


class FullDisk:
    """The disk of ``root`` (its files, SQLite's included) fills on :meth:`fill` and has
    room again after :meth:`free`. Made by the :func:`full_disk` fixture."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        global _vfs
        self.root = os.path.abspath(root)
        self.full = False
        self._real_os_open = os.open
        if _vfs is None:
            _vfs = _VFS()
        real_connection = apsw.Connection

        class Connection(real_connection):
            def __init__(conn, filename, *args, **kwargs):  # noqa: N805
                if "vfs" not in kwargs and _under(filename, [self.root]):
                    kwargs["vfs"] = VFS_NAME
                super().__init__(filename, *args, **kwargs)

        monkeypatch.setattr(apsw, "Connection", Connection)
        self._patch_files(monkeypatch)
        self._patch_av(monkeypatch)

    def fill(self) -> None:
        """From now on every write under the folder fails with a full disk."""
        self.full = True
        _FULL_ROOTS.add(self.root)

    def free(self) -> None:
        """Space is freed: writes succeed again."""
        self.full = False
        _FULL_ROOTS.discard(self.root)

    def _refuse(self, path) -> bool:
        return self.full and _under(path, [self.root])

    def _patch_files(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_open, real_os_open = builtins.open, self._real_os_open

        def open_(file, mode="r", *args, **kwargs):
            if any(c in mode for c in "wax+") and self._refuse(file):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
            return real_open(file, mode, *args, **kwargs)

        def os_open(path, flags, *args, **kwargs):
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and self._refuse(path):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            return real_os_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", open_)
        monkeypatch.setattr(io, "open", open_)
        monkeypatch.setattr(os, "open", os_open)

    def _patch_av(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import av

        real_av_open = av.open

        def av_open(file, mode="r", *args, **kwargs):
            if mode == "w" and isinstance(file, str | Path) and self._refuse(file):
                os.close(self._real_os_open(file, os.O_WRONLY | os.O_CREAT, 0o644))  # the
                # new file's entry fits on the disk; its bytes do not
                return real_av_open("/dev/full", mode, *args, **kwargs)
            return real_av_open(file, mode, *args, **kwargs)

        monkeypatch.setattr(av, "open", av_open)


@pytest.fixture()
def full_disk(tmp_path, monkeypatch):
    """A :class:`FullDisk` over ``tmp_path`` (not full yet)."""
    disk = FullDisk(tmp_path, monkeypatch)
    yield disk
    disk.free()
