"""``edge backup DEST``: a consistent copy of the memory, even while a recorder or an ingest
is writing it, with its keyframes folder copied beside it as ``DEST.frames/``."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import click

from edge.cli import render
from edge.cli.options import State, memory_options, open_memory
from edge.cli.render.status import backup_lines
from edge.config import frames_dir
from edge.errors import StoreError


@click.command(short_help="Copy the memory to DEST, safely while it is written.")
@memory_options
@click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True,
              help="Replace DEST (and DEST.frames/) when they exist.")
@click.pass_obj
def backup(state: State, dest: Path, force: bool) -> None:
    """Copy the memory to the file DEST, safely while it is being written.

    \b
    The keyframes are copied to DEST.frames/ beside it. To restore, copy both
    back in place of the memory, or use the copy as it is: --memory DEST.
    """
    from edge.store import same_file

    with open_memory(state, create=False, reading=True) as memory:
        if same_file(dest, memory.path):
            raise StoreError(f"{dest} is the memory itself; back it up to another file")
        if dest.exists() and not force:
            raise StoreError(f"{dest} already exists; use --force to replace it")
        clips, frames = _backup(memory, dest)
    render.echo(backup_lines(state.memory_path, dest, clips, frames))


def _backup(memory, dest: Path) -> tuple[int, tuple[int, int] | None]:
    """Write the database, then the keyframes (those of every clip in the copy: a clip's
    keyframes are on disk before it is committed), into a temporary folder beside ``dest``,
    then move both into place. The clips copied, and the keyframes' ``(files, bytes)`` (None
    when the memory has no keyframes folder). Nothing is left at ``dest`` on failure."""
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".partial",
                                        dir=dest.parent))
    except OSError as e:
        raise StoreError(f"cannot write the backup {dest}: {e}") from None
    try:
        copy = staging / dest.name
        clips = memory.backup_to(copy)
        frames = None
        if frames_dir(memory.path).is_dir():
            shutil.copytree(frames_dir(memory.path), frames_dir(copy))
            files = [p for p in frames_dir(copy).rglob("*") if p.is_file()]
            frames = (len(files), sum(p.stat().st_size for p in files))
        _move_into_place(copy, dest)
    except OSError as e:
        raise StoreError(f"cannot write the backup {dest}: {e}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return clips, frames


def _move_into_place(copy: Path, dest: Path) -> None:
    """Replace ``dest`` (with the ``-wal``/``-shm`` files and keyframes of the file it
    replaces, which would not belong to the copy) by ``copy`` and its keyframes."""
    for stale in (dest.with_name(dest.name + "-wal"), dest.with_name(dest.name + "-shm")):
        stale.unlink(missing_ok=True)
    if frames_dir(dest).is_dir():
        shutil.rmtree(frames_dir(dest))
    os.replace(copy, dest)
    if frames_dir(copy).is_dir():
        os.replace(frames_dir(copy), frames_dir(dest))
