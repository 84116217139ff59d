"""A memory an ingest creates, taken away again when the ingest stored no clip: a broken
file, a model that cannot run or Ctrl-C before the first clip leave no empty memory (nor its
``-wal``/``-shm``, keyframe folder or the folders made for it) where there was none. A memory
that existed before is never touched."""

from __future__ import annotations

import shutil
from pathlib import Path


class NewMemory:
    """What creating the memory at ``path`` would add to the disk — the database, its
    ``-wal``, ``-shm`` and ``-journal``, its keyframe folder, its build lock, and the
    folders made for it — noted before it is opened, so that an ingest that stores no clip
    can remove it all again (:meth:`note` before the memory closes, then
    :meth:`remove_if_empty`). ``new``: no memory was there."""

    def __init__(self, path: Path) -> None:
        from edge.build.lock import lock_path
        from edge.config import frames_dir

        self.path = Path(path)
        self.new = not self.path.exists()
        sidecars = [self._sidecar(s) for s in ("-wal", "-shm", "-journal")]
        self.absent = [p for p in (self.path, *sidecars, frames_dir(self.path),
                                   lock_path(self.path)) if not p.exists()]
        self.folders: list[Path] = []  # made for it, deepest first
        parent = self.path.parent
        while not parent.exists() and parent != parent.parent:
            self.folders.append(parent)
            parent = parent.parent
        self.empty = False

    def _sidecar(self, suffix: str) -> Path:
        return self.path.with_name(self.path.name + suffix)

    def note(self, memory) -> None:
        """Before ``memory`` (the one at this path) closes: whether this ingest created it
        and it holds no clip (a memory that cannot be read counts as not empty)."""
        import apsw

        try:
            self.empty = self.new and memory.count_clips() == 0
        except apsw.Error:
            self.empty = False

    def remove_if_empty(self) -> bool:
        """After the memory closed: remove what creating it added, when :meth:`note` found
        it new and empty and no other process has it open now (SQLite removes the ``-wal``
        when the last connection closes: one that is still there means another ingest or a
        reader uses the memory, which is then theirs). True when removed."""
        if not self.empty or self._sidecar("-wal").exists():
            return False
        for p in self.absent:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        for folder in self.folders:
            try:
                folder.rmdir()
            except OSError:  # something else was put there meanwhile: keep it
                break
        return True


__all__ = ["NewMemory"]
