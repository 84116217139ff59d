"""One builder per memory: the lock that keeps two processes from building the same
memory's deferred LLM tier (:mod:`edge.build`) at once.

Without it two ``edge build`` runs (or a build beside a recorder) both read the same queue,
both run the memory LLM for every clip — one of them for nothing — and both integrate the
day into the global nodes, which then counts each clip twice. The lock is an OS file lock
(``filelock``, ``flock`` on POSIX) on ``<memory>.build.lock`` beside the memory file: the
kernel releases it when its process ends, so a killed build never leaves it stale.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from edge.errors import BuildBusyError


def lock_path(memory_path: Path) -> Path:
    """The lock file of the memory at ``memory_path``: ``<memory>.build.lock``."""
    memory_path = Path(memory_path)
    return memory_path.with_name(memory_path.name + ".build.lock")


@contextmanager
def build_lock(memory_path: Path, *, wait: float = 0.0) -> Iterator[None]:
    """Hold the build lock of the memory at ``memory_path`` for the ``with`` block.

    ``wait``: seconds to wait for another holder (0: fail at once). Raises
    :class:`~edge.errors.BuildBusyError` when another process (or another lock object of
    this one) still holds it after ``wait``.
    """
    lock = FileLock(str(lock_path(memory_path)))
    try:
        lock.acquire(timeout=wait)
    except Timeout:
        raise BuildBusyError(
            f"another process (edge build, an ingest or edge record) is building the LLM "
            f"tier of {memory_path}; let it finish or stop it, then run `edge build` — the "
            "clips stay queued") from None
    try:
        yield
    finally:
        lock.release()


__all__ = ["build_lock", "lock_path"]
