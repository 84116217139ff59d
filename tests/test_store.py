"""The store on real SQLite + sqlite-vec: migrations (an m001 memory migrates to exactly the
fresh schema), one-transaction clips, KNN against a numpy brute force, the time scope inside
every KNN and BM25 query, neighbors, max-sim retrieval."""

import numpy as np
import pytest

from edge.recall.retrieval import ScoredClip, expand_neighbors, max_sim_retrieve
from edge.store import (
    INDEX_TYPES,
    KEY_TYPES,
    MIGRATIONS,
    Fact,
    Memory,
    StoreError,
    apply_migrations,
    connect,
    time_scope,
)
from tests.factories import add_clips, add_source, unit_vectors


def _fill(memory: Memory, n_clips: int, seed: int = 0) -> np.ndarray:
    """n clips of 30 s on DAY1 from 36000 s (ids 1..n) with random unit vectors; returns
    them, ``(n, len(INDEX_TYPES), 384)``."""
    vecs = unit_vectors(n_clips * len(INDEX_TYPES), seed).reshape(n_clips, len(INDEX_TYPES),
                                                                  384)
    ids = add_clips(memory, n_clips, vectors=vecs, source=f"s{seed}")
    assert ids == list(range(1, n_clips + 1))  # the tests below index clips by id - 1
    return vecs


# ---- migrations --------------------------------------------------------------------------

def test_migrations_apply_once_and_reopen(tmp_path):
    path = tmp_path / "m.db"
    with Memory(path) as m:
        applied = [r[0] for r in m.db.execute("SELECT name FROM _migrations ORDER BY name")]
        assert applied == [name for name, _ in MIGRATIONS]
        assert m.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with Memory(path) as m:
        assert m.migrate() == []


def _schema(path) -> tuple[list[tuple], list[str]]:
    """The sorted sqlite_master dump and the migrations applied, in order, of a memory."""
    with Memory(path, create=False) as m:
        master = sorted(m.db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"),
                        key=repr)
        names = [r[0] for r in m.db.execute("SELECT name FROM _migrations ORDER BY rowid")]
    return master, names


def test_a_memory_migrated_from_the_oldest_schema_equals_a_fresh_one(tmp_path):
    old = tmp_path / "old.db"
    db = connect(old)
    assert apply_migrations(db, MIGRATIONS[:1]) == ["m001_initial"]
    assert apply_migrations(db, MIGRATIONS[:1]) == []  # idempotent
    db.execute("INSERT INTO sources(path, sha256, kind, clock, start_from, t_start, duration, "
               "n_clips, status, added_at) VALUES('x', 'h', 'captions', 'dayclock', 'file', "
               "0, 30, 1, 'done', 0)")
    db.execute("INSERT INTO clips(source_id, idx, t_start, t_end, day, day_start, caption) "
               "VALUES(1, 0, 100, 130, 'DAY1', 0, 'a green kettle boils')")
    db.close()
    Memory(tmp_path / "fresh.db").close()

    old_master, old_names = _schema(old)  # opening applies m002..m004
    fresh_master, fresh_names = _schema(tmp_path / "fresh.db")
    assert old_names == fresh_names == [name for name, _ in MIGRATIONS]
    assert len(fresh_master) > 20  # tables, indexes, vec0 and FTS5 shadow tables
    assert old_master == fresh_master


def test_connect_loads_sqlite_vec(tmp_path):
    db = connect(tmp_path / "raw.db")
    assert db.execute("SELECT vec_length(vec_f32('[1, 2, 3]'))").fetchone()[0] == 3
    db.close()


# ---- opening errors ----------------------------------------------------------------------

def test_missing_memory_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="edge ingest"):
        Memory(tmp_path / "nope.db", create=False)
    assert not (tmp_path / "nope.db").exists()


def test_not_a_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable memory file"):
        Memory(bad)


def test_an_empty_file_is_not_silently_turned_into_a_memory(tmp_path):
    p = tmp_path / "zero.db"
    p.write_bytes(b"")
    with pytest.raises(StoreError, match="empty file"):
        Memory(p, create=False)
    assert p.stat().st_size == 0


# ---- writing clips -----------------------------------------------------------------------

_CLIP_TABLES = ("clips", "keys", "key_vec", "facts", "fact_vec", "fact_text", "nodes_clip",
                "links", "clip_text")


@pytest.mark.parametrize("bad", ["key vector", "fact vectors"])
def test_a_failed_clip_write_leaves_nothing_behind(memory, bad):
    sid = add_source(memory, "x", kind="video")
    good = np.ones(384, dtype=np.float32) / np.sqrt(384)
    vectors = {"event": good, "object": np.ones(10, dtype=np.float32) if bad == "key vector"
               else good}
    with pytest.raises(ValueError, match="shape"):
        memory.add_clip(source_id=sid, idx=0, t_start=0, t_end=30, day="d", day_start=0,
                        caption="c", transcript="", keyframes=[], signals={},
                        keys={"event": ("e", "llm"), "object": ("o", "llm")}, vectors=vectors,
                        facts=[Fact("f", "action", 0, 10, "llm")],
                        fact_vectors=np.ones((2, 384), dtype=np.float32),
                        clip_node=("s", "room", "llm"))
    for table in _CLIP_TABLES:
        assert memory.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_a_clip_stored_twice_is_kept_once(memory):
    first = add_clips(memory, ["a kettle"], source="x")
    again = add_clips(memory, ["a different caption"], source=1)
    assert first == again and [c.caption for c in memory.all_clips()] == ["a kettle"]


# ---- vectors and the time scope ----------------------------------------------------------

def test_knn_matches_numpy_brute_force(memory):
    vecs = _fill(memory, 300)
    q = unit_vectors(1, 7)[0]
    for j, ktype in enumerate(INDEX_TYPES):
        got = memory.knn_keys(q, ktype, 10)
        sims = vecs[:, j] @ q
        want = np.argsort(-sims)[:10]
        assert [cid - 1 for cid, _ in got] == list(want)
        np.testing.assert_allclose([s for _, s in got], sims[want], atol=1e-5)


def test_time_scope_is_applied_inside_the_knn(memory):
    vecs = _fill(memory, 200)
    q = vecs[150, 0]  # the best match is clip 150, which ends at 36000 + 30*151
    before = 36000 + 30 * 100  # only clips 0..99 end by then
    got = memory.knn_keys(q, "event", 10, before=before)
    assert len(got) == 10  # still k results, not k minus the ones filtered out afterwards
    assert all(cid - 1 < 100 for cid, _ in got)
    sims = vecs[:100, 0] @ q
    assert [cid - 1 for cid, _ in got] == list(np.argsort(-sims)[:10])


def test_a_time_window_is_applied_inside_the_knn(memory):
    vecs = _fill(memory, 200)
    q = vecs[150, 0]
    after, before = 36000 + 30 * 40, 36000 + 30 * 100  # clips 40..99 end in (after, before]
    got = memory.knn_keys(q, "event", 10, before=before, after=after)
    assert len(got) == 10 and all(40 <= cid - 1 < 100 for cid, _ in got)
    sims = vecs[40:100, 0] @ q
    assert [cid - 1 - 40 for cid, _ in got] == list(np.argsort(-sims)[:10])
    assert memory.count_clips(before=before, after=after) == 60


def test_time_scope_builds_the_half_open_window():
    assert time_scope("c.t_end") == ("", [])
    assert time_scope("clip_end", before=10) == (" AND clip_end <= ?", [10.0])
    assert time_scope("c.t_end", before=10, after=2) == (
        " AND c.t_end <= ? AND c.t_end > ?", [10.0, 2.0])


def test_every_knn_and_bm25_query_keeps_only_clips_ending_in_the_window(memory):
    """(after, before]: a clip ending exactly at ``after`` is out, one ending at ``before``
    is in, for key KNN, fact KNN, clip BM25 and fact BM25 alike."""
    ids = add_clips(memory, [f"a kettle on the stove {i}" for i in range(10)],
                    facts=[[f"kettle fact {i}"] for i in range(10)])
    ends = {c.id: c.t_end for c in memory.all_clips()}
    after, before = ends[ids[2]], ends[ids[6]]
    want = set(ids[3:7])
    clip_of = {f.id: f.clip_id for fs in memory.facts_of(ids).values() for f in fs}
    q = unit_vectors(1, 5)[0]
    scoped = {
        "knn_keys": {c for c, _ in memory.knn_keys(q, "event", 50, before=before, after=after)},
        "knn_facts": {clip_of[f] for f, _ in memory.knn_facts(q, 50, before=before,
                                                              after=after)},
        "bm25": {c for c, _ in memory.bm25("kettle", 50, before=before, after=after)},
        "bm25_facts": {clip_of[f] for f, _ in memory.bm25_facts("kettle", 50, before=before,
                                                                after=after)},
    }
    assert scoped == dict.fromkeys(scoped, want)
    assert {clip_of[f] for f, _ in memory.bm25_facts("kettle", 50)} == set(ids)
    assert {clip_of[f] for f, _ in memory.bm25_facts("kettle", 50, after=after)} == set(ids[3:])


# ---- retrieval on top of the store -------------------------------------------------------

def test_max_sim_retrieval_matches_numpy_reference(memory):
    vecs = _fill(memory, 250, seed=3)
    q = unit_vectors(1, 11)[0]
    got = max_sim_retrieve(memory, q, top_n=8)
    key_idx = [INDEX_TYPES.index(k) for k in KEY_TYPES]
    scores = (vecs[:, key_idx] @ q).max(axis=1)  # MERIT Eq. 6
    want = np.argsort(-scores)[:8]
    assert [s.clip_id - 1 for s in got] == list(want)
    np.testing.assert_allclose([s.score for s in got], scores[want], atol=1e-5)
    # a subset of key types is its own max
    only_obj = max_sim_retrieve(memory, q, top_n=5, key_types=("object",))
    obj_scores = vecs[:, INDEX_TYPES.index("object")] @ q
    assert [s.clip_id - 1 for s in only_obj] == list(np.argsort(-obj_scores)[:5])


def test_neighbors_stay_on_the_day_and_before_the_question(memory):
    _fill(memory, 20)
    hood = expand_neighbors(memory, [ScoredClip(5, 0.9, "event")], delta=2)[0]
    assert [c.id for c in hood.clips] == [3, 4, 5, 6, 7]
    first = expand_neighbors(memory, [ScoredClip(1, 0.9, "event")], delta=2)[0]
    assert [c.id for c in first.clips] == [1, 2, 3]
    clip10 = memory.clips([10])[10]
    before, after = memory.neighbors(clip10, 2)
    assert [c.id for c in before] == [9, 8] and [c.id for c in after] == [11, 12]
    cut = expand_neighbors(memory, [ScoredClip(10, 0.5, "event")], 2, before=clip10.t_end + 30)
    assert [c.id for c in cut[0].after] == [11]



def _window(memory: Memory, clip_id: int, delta: int = 2) -> list[int]:
    clip = memory.clips([clip_id])[clip_id]
    before, after = memory.neighbors(clip, delta)
    return [c.id for c in [*reversed(before), clip, *after]]


def test_neighbors_of_two_sources_that_start_at_the_same_second_stay_in_their_source(memory):
    """Two files given the same start (copies sharing an mtime, two cameras at once) have
    clips at the same seconds; each clip's ±Δ window is its own file's footage."""
    a = add_clips(memory, 5, source="camera a")
    b = add_clips(memory, 5, source="camera b", seed=1)
    assert [memory.clips([i])[i].t_start for i in (a[2], b[2])] == [36060.0, 36060.0]
    assert _window(memory, a[2]) == a
    assert _window(memory, b[2]) == b
    assert _window(memory, b[0]) == b[:3] and _window(memory, a[4]) == a[2:]
    hood, = expand_neighbors(memory, [ScoredClip(b[1], 0.9, "event")], delta=2)
    assert {c.source_id for c in hood.clips} == {memory.clips([b[0]])[b[0]].source_id}


def test_neighbors_never_cross_a_gap_in_the_footage(memory):
    """A source whose footage stops at 10:01 and goes on at 11:00 (or misses a clip) is two
    stretches of footage: the window ends at the break."""
    sid = add_source(memory, "gappy")
    first = add_clips(memory, 2, source=sid)  # 10:00:00–10:01:00
    later = add_clips(memory, 2, source=sid, t0=39600.0, first_idx=2)  # 11:00:00–11:01:00
    after_missing = add_clips(memory, 1, source=sid, t0=39690.0, first_idx=5)  # idx 4 missing
    assert _window(memory, first[1]) == first
    assert _window(memory, later[0]) == later
    assert _window(memory, after_missing[0]) == after_missing
    # a few seconds between caption records is the same footage (EgoLife)
    close = add_clips(memory, 2, source="close", t0=50000.0, step=33.0)
    nudged = add_clips(memory, 1, source=close and memory.source_by_hash("close").id,
                       t0=50070.0, first_idx=2)
    assert _window(memory, close[0]) == [*close, *nudged]


def test_neighbors_continue_into_the_next_file_of_one_recording_unless_two_could(memory):
    """Consecutive files (a camera's chapters, the recorder's 30 s files) connect; when two
    files both start where one ends, neither is its continuation."""
    a = add_clips(memory, 3, source="chapter 1")
    b = add_clips(memory, 3, source="chapter 2", t0=36090.0, seed=1)
    assert _window(memory, a[2]) == [*a, *b[:2]]
    assert _window(memory, b[0]) == [*a[1:], *b[:3]]
    add_clips(memory, 2, source="another camera", t0=36090.0, seed=2)
    assert _window(memory, a[2]) == a
    assert _window(memory, b[0]) == b[:3]


# ---- concurrency -------------------------------------------------------------------------

def test_a_second_writer_waits_for_the_lock_instead_of_failing(tmp_path):
    import threading
    import time

    path = tmp_path / "m.db"
    with Memory(path) as a, Memory(path) as b:
        add_clips(a, 1)
        a.db.execute("BEGIN IMMEDIATE")  # another process is writing
        threading.Timer(0.5, lambda: a.db.execute("COMMIT")).start()
        t0 = time.perf_counter()
        sid = add_source(b, "y", kind="video")
        assert sid == 2 and time.perf_counter() - t0 >= 0.4


def test_two_ingests_registering_one_file_at_once_get_one_source(tmp_path):
    """Both look the file up, find nothing and add it: the second must find the first's row
    (resume it), not fail on the unique hash or add a second source."""
    import threading

    from edge.ingest.memory_writer import NewSource, register_or_resume

    def describe() -> NewSource:
        return NewSource(path="clip.mp4", kind="video", clock="wall", start_from="mtime",
                         t_start=1.7e9, duration=90.0, n_clips=3, info={})

    path = tmp_path / "m.db"
    with Memory(path) as a, Memory(path) as b:
        second: dict = {}
        other = threading.Thread(
            target=lambda: second.update(state=register_or_resume(b, "same", describe)))

        def describe_while_the_other_registers() -> NewSource:
            other.start()
            other.join(timeout=1.0)  # it registers now, or waits for our transaction
            return describe()

        first = register_or_resume(a, "same", describe_while_the_other_registers)
        other.join()
        assert (first.status, second["state"].status) == ("ingested", "resumed")
        assert second["state"].source_id == first.source_id
        assert a.db.execute("SELECT count(*) FROM sources").fetchone()[0] == 1


def test_last_ingest_is_the_last_clip_stored_not_the_sources_first_registration(memory):
    """Issue 10 item 5: the rest of a source registered days ago (``ingest-captions
    --limit`` then the rest, a resumed run) is an ingest now, for the chat and `edge status`."""
    import time

    sid = add_source(memory, "old", n_clips=4, t_start=36000.0, duration=120.0)
    add_clips(memory, 2, source=sid)
    memory.db.execute("UPDATE sources SET added_at = ?", (time.time() - 3 * 86400,))
    before = time.time()
    add_clips(memory, 2, source=sid, t0=36060.0, first_idx=2)
    assert memory.stats()["last_ingest"] >= before
