"""A memory the commands must not write (issue 42, item 5): a file with no write permission
(``chmod 444``) or in a folder without it (``chmod 555``) — also for root, whom permission
bits do not stop, so ``edge`` decides from the mode bits and ``access()``, not from a
failed open. The commands that read open it read-only and say so once; nothing is written
into it or beside it: no model-call rows, no ``-wal``/``-shm`` left, no migration, the
file's bytes and the folder's and file's times unchanged. The commands that write refuse
it, naming the reason."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from edge.store import MIGRATIONS, Memory, apply_migrations, connect
from tests.factories import add_clips

CAPTIONS = ["Jake tightens the screws of the shelf with a screwdriver",
            "Lucia waters the flowers on the balcony",
            "Katrina and Alice bake a cake in the kitchen"]

READING = {
    "stats": ["stats", "--json"],
    "search": ["search", "who used the screwdriver?", "--json"],
    "ask": ["ask", "who used the screwdriver?", "--choices", "Jake|Lucia|Katrina",
            "--choice-scoring", "likelihood", "--rounds", "1", "--json"],
    "report": ["report", "--style", "bullet", "--no-check", "--json"],
    "backup": ["backup", "{tmp}/copy.db"],
}


@pytest.fixture()
def memory_file(tmp_path, hub):
    """A memory of three clips in its own folder, checkpointed (no ``-wal`` beside it)."""
    path = tmp_path / "media" / "day.db"
    with Memory(path) as m:
        vecs = hub.embedder.embed([c for c in CAPTIONS for _ in range(5)])
        add_clips(m, CAPTIONS, vectors=vecs.reshape(3, 5, 384), keys="caption")
    assert sorted(p.name for p in path.parent.iterdir()) == ["day.db"]
    return path


def make_unwritable(path: Path, how: str) -> None:
    """``how``: ``file`` (the file 0444) or ``folder`` (its folder 0555)."""
    if how == "file":
        path.chmod(0o444)
    else:
        path.parent.chmod(0o555)


def restore(path: Path) -> None:
    path.parent.chmod(0o755)
    if path.exists():
        path.chmod(0o644)


def snapshot(path: Path) -> dict:
    """What a write would change: the folder's listing and times, each file's bytes, times
    and mode."""
    folder = path.parent
    files = {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns,
                      p.stat().st_ctime_ns, stat.S_IMODE(p.stat().st_mode))
             for p in sorted(folder.iterdir())}
    return {"folder": (folder.stat().st_mtime_ns, folder.stat().st_ctime_ns), "files": files}


@pytest.mark.parametrize("how", ["file", "folder"])
@pytest.mark.parametrize("command", list(READING))
def test_reading_commands_write_nothing_into_a_memory_they_cannot_write(
        run, memory_file, tmp_path, how, command):
    args = [a.replace("{tmp}", str(tmp_path)) for a in READING[command]]
    make_unwritable(memory_file, how)
    try:
        before = snapshot(memory_file)
        r = run("--memory", memory_file, *args)
        after = snapshot(memory_file)
    finally:
        restore(memory_file)
    assert r.exit_code == 0, r.output
    assert r.stderr.count("opened read-only") == 1, r.stderr
    assert after == before
    with Memory(memory_file, create=False) as m:
        assert m.call_totals() == []  # no model-call rows
    if command == "backup":
        # the copy keeps the memory's mode (0444 for a read-only file)
        with Memory(tmp_path / "copy.db", create=False, readonly=True) as copy:
            assert copy.count_clips() == 3


@pytest.mark.parametrize("how", ["file", "folder"])
def test_the_chat_opens_a_memory_it_cannot_write_read_only(memory_file, hub, how):
    import asyncio

    pytest.importorskip("textual")
    from tui.app import EdgeApp

    async def go():
        app = EdgeApp(memory_file, hub)
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            with app._connect() as memory:  # a question's own connection
                assert memory.readonly and memory.count_clips() == 3
            return app.readonly, [n.message for n in app._notifications]

    make_unwritable(memory_file, how)
    try:
        before = snapshot(memory_file)
        readonly, notes = asyncio.run(go())
        after = snapshot(memory_file)
    finally:
        restore(memory_file)
    assert readonly and sum("opened read-only" in n for n in notes) == 1, notes
    assert after == before


@pytest.mark.parametrize("how", ["file", "folder"])
def test_a_command_that_writes_refuses_a_memory_it_cannot_write(run, memory_file, tmp_path,
                                                                how):
    caps = tmp_path / "caps.json"
    caps.write_text('[{"date": "DAY1", "start_time": "12000000", "end_time": "12003000", '
                    '"text": "Jake reads a book"}]')
    make_unwritable(memory_file, how)
    try:
        before = snapshot(memory_file)
        r = run("--memory", memory_file, "ingest-captions", caps)
        after = snapshot(memory_file)
    finally:
        restore(memory_file)
    assert r.exit_code == 1 and "not writable" in r.output, r.output
    assert "copy it somewhere writable" in r.output and "Traceback" not in r.output
    assert after == before


def test_an_old_memory_that_cannot_be_written_is_not_migrated(run, tmp_path):
    """An upgrade (m006 fills the entity index from every clip) writes: a read-only old
    memory is refused with the reason, not upgraded in place."""
    path = tmp_path / "media" / "old.db"
    path.parent.mkdir()
    db = connect(path)
    apply_migrations(db, MIGRATIONS[:[n for n, _ in MIGRATIONS].index("m006_entities")])
    db.execute("INSERT INTO sources(path, sha256, kind, clock, start_from, t_start, duration, "
               "n_clips, status, added_at) VALUES('earlier', 'earlier', 'captions', "
               "'dayclock', 'file', 36000, 30, 1, 'done', 0)")
    db.execute("INSERT INTO clips(source_id, idx, t_start, t_end, day, day_start, caption)"
               " VALUES(1, 0, 36000, 36030, 'DAY1', 0, 'Alice reads a book')")
    db.close()
    path.chmod(0o444)
    try:
        before = snapshot(path)
        r = run("--memory", path, "stats")
        after = snapshot(path)
    finally:
        restore(path)
    assert r.exit_code == 1 and "must be upgraded" in r.output, r.output
    assert after == before


def test_root_is_treated_like_anyone_else(tmp_path):
    """The rule itself: a file or folder without any write bit is not written, whoever runs
    (``access()`` says yes to root for a 0444 file)."""
    from edge.store import writable

    f = tmp_path / "m.db"
    f.write_bytes(b"")
    assert writable(f) and writable(tmp_path)
    f.chmod(0o444)
    assert not writable(f)
    if os.geteuid() == 0:
        assert os.access(f, os.W_OK)  # why the mode bits must be read too
    tmp_path.chmod(0o555)
    try:
        assert not writable(tmp_path)
    finally:
        tmp_path.chmod(0o755)


def test_a_writer_s_wal_is_read_and_nothing_is_added_beside_it(run, memory_file):
    """A memory left with its ``-wal`` and ``-shm`` (a writer still open, or killed): the
    clips still in the WAL are read (SQLite ``mode=ro`` over the files that are there), and
    no file is added or removed."""
    import json

    with Memory(memory_file) as writer:
        add_clips(writer, ["Shure plays the guitar"], t0=40000.0, source="later")
        files = sorted(p.name for p in memory_file.parent.iterdir())
        assert files == ["day.db", "day.db-shm", "day.db-wal"]
        data = memory_file.read_bytes()
        assert b"Shure plays the guitar" not in data  # not checkpointed yet
        make_unwritable(memory_file, "file")
        try:
            r = run("--memory", memory_file, "stats", "--json")
        finally:
            restore(memory_file)
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["clips"] == 4  # the fourth is in the WAL only
        assert sorted(p.name for p in memory_file.parent.iterdir()) == files
        assert memory_file.read_bytes() == data
