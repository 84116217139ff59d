"""``edge backup``: a consistent copy of a memory that another process is writing (its last
clips still in the WAL), with the keyframes folder beside it."""

from __future__ import annotations

import shutil

import apsw
import pytest
from click.testing import CliRunner

from edge.cli import main
from edge.config import frames_dir
from edge.store import Memory
from tests.factories import add_clips


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _clips(path) -> int:
    with Memory(path, create=False) as m:
        return m.stats()["clips"]


def _integrity(path) -> str:
    db = apsw.Connection(str(path))
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()


@pytest.fixture()
def live(tmp_path):
    """A memory with 1 checkpointed clip and 2 more that sit in the WAL of a writer that is
    still open (a recorder mid-run), plus two keyframes in its ``.frames/`` folder."""
    mem = tmp_path / "live.db"
    with Memory(mem) as m:  # closing the last connection checkpoints: 1 clip in the .db
        add_clips(m, 1, source="first", finish=True)
    frames = frames_dir(mem) / "abc"
    frames.mkdir(parents=True)
    (frames / "0001.jpg").write_bytes(b"jpeg 1")
    (frames / "0002.jpg").write_bytes(b"jpeg 2")
    writer = Memory(mem)
    add_clips(writer, 2, source="second", t0=40000.0,
              keyframes=[["abc/0001.jpg"], ["abc/0002.jpg"]])
    assert (tmp_path / "live.db-wal").stat().st_size > 0
    yield mem
    writer.close()


def test_a_plain_copy_of_a_live_memory_loses_the_clips_in_the_wal(live, tmp_path):
    copy = tmp_path / "copied.db"
    shutil.copyfile(live, copy)
    assert _clips(copy) == 1  # the defect `edge backup` exists for


def test_backup_of_a_live_memory_keeps_every_clip_and_the_keyframes(live, tmp_path):
    dest = tmp_path / "out" / "backup.db"
    dest.parent.mkdir()
    r = _run("--memory", live, "backup", dest)
    assert r.exit_code == 0, r.output
    assert _integrity(dest) == "ok"
    assert _clips(dest) == 3
    assert dest.stat().st_mode == live.stat().st_mode  # not the 0600 of a temporary file
    assert (frames_dir(dest) / "abc" / "0002.jpg").read_bytes() == b"jpeg 2"
    assert sorted(p.name for p in dest.parent.iterdir()) == ["backup.db", "backup.db.frames"]
    lines = r.output.splitlines()
    assert lines[0].startswith(f"Backed up {live} to {dest}: 3 clips, ")
    assert lines[1] == f"Keyframes: 2 files, 12 bytes in {frames_dir(dest)}"


def test_backup_refuses_an_existing_dest_unless_forced(live, tmp_path):
    dest = tmp_path / "backup.db"
    dest.write_bytes(b"older backup")
    r = _run("--memory", live, "backup", dest)
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"Error: {dest} already exists; use --force to replace it"]
    assert dest.read_bytes() == b"older backup"
    stale = frames_dir(dest) / "old.jpg"
    stale.parent.mkdir()
    stale.write_bytes(b"x")
    r = _run("--memory", live, "backup", "--force", dest)
    assert r.exit_code == 0, r.output
    assert _clips(dest) == 3 and _integrity(dest) == "ok"
    assert not stale.exists() and (frames_dir(dest) / "abc" / "0001.jpg").exists()


def test_backup_refuses_the_memory_itself_and_a_missing_memory(live, tmp_path):
    r = _run("--memory", live, "backup", "--force", tmp_path / "." / "live.db")
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [
        f"Error: {tmp_path / '.' / 'live.db'} is the memory itself; back it up to another file"]
    missing = tmp_path / "nope.db"
    r = _run("--memory", missing, "backup", tmp_path / "b.db")
    assert r.exit_code == 1 and len(r.output.strip().splitlines()) == 1
    assert f"no memory at {missing}" in r.output
    assert not (tmp_path / "b.db").exists() and not missing.exists()


def test_a_failed_backup_leaves_no_dest(live, tmp_path, monkeypatch):
    def fail(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copytree", fail)
    dest = tmp_path / "b.db"
    r = _run("--memory", live, "backup", dest)
    assert r.exit_code == 1 and "No space left on device" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "live.db", "live.db-shm", "live.db-wal", "live.db.frames"]


def test_backup_to_a_missing_folder_is_a_store_error(live, tmp_path):
    from edge.errors import StoreError

    with Memory(live, create=False) as m, pytest.raises(StoreError, match="cannot back up"):
        m.backup_to(tmp_path / "no" / "such" / "folder.db")
