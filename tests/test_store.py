"""The store on real SQLite + sqlite-vec: migrations, one-transaction clips, KNN against a
numpy brute force, time scope inside the KNN, neighbors, max-sim retrieval."""

import numpy as np
import pytest

from edge.retrieval import ScoredClip, expand_neighbors, max_sim_retrieve
from edge.store import INDEX_TYPES, KEY_TYPES, Memory, StoreError


def _unit(rng, n):
    v = rng.normal(size=(n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _fill(memory: Memory, n_clips: int, seed: int = 0) -> np.ndarray:
    """n clips of 30 s on DAY1 with random unit vectors; returns (n, 5, 384)."""
    rng = np.random.default_rng(seed)
    sid = memory.add_source(path="synthetic", sha256=f"s{seed}", kind="captions",
                            clock="dayclock", start_from="file", t_start=0, duration=0,
                            n_clips=n_clips, info={})
    vecs = _unit(rng, n_clips * len(INDEX_TYPES)).reshape(n_clips, len(INDEX_TYPES), 384)
    for i in range(n_clips):
        memory.add_clip(source_id=sid, idx=i, t_start=36000 + 30 * i, t_end=36030 + 30 * i,
                        day="DAY1", day_start=0, caption=f"clip {i}", transcript="",
                        keyframes=[], signals={},
                        keys={k: (f"{k} {i}", "file") for k in INDEX_TYPES},
                        vectors={k: vecs[i, j] for j, k in enumerate(INDEX_TYPES)})
    return vecs


def test_migrations_apply_once_and_reopen(tmp_path):
    path = tmp_path / "m.db"
    with Memory(path) as m:
        from edge.store import MIGRATIONS

        applied = [r[0] for r in m.db.execute("SELECT name FROM _migrations ORDER BY name")]
        assert applied == [name for name, _ in MIGRATIONS]
        assert m.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with Memory(path) as m:
        assert m.migrate() == []


def test_missing_memory_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="edge ingest"):
        Memory(tmp_path / "nope.db", create=False)


def test_not_a_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable memory file"):
        Memory(bad)


def test_a_failed_clip_write_leaves_nothing_behind(memory):
    sid = memory.add_source(path="x", sha256="x", kind="video", clock="wall",
                            start_from="mtime", t_start=0, duration=30, n_clips=1, info={})
    good = np.ones(384, dtype=np.float32) / np.sqrt(384)
    with pytest.raises(ValueError, match="shape"):
        memory.add_clip(source_id=sid, idx=0, t_start=0, t_end=30, day="d", day_start=0,
                        caption="c", transcript="", keyframes=[], signals={},
                        keys={"event": ("e", "llm"), "object": ("o", "llm")},
                        vectors={"event": good, "object": np.ones(10, dtype=np.float32)})
    for table in ("clips", "keys", "key_vec"):
        assert memory.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


def test_knn_matches_numpy_brute_force(memory):
    vecs = _fill(memory, 300)
    q = _unit(np.random.default_rng(7), 1)[0]
    for j, ktype in enumerate(INDEX_TYPES):
        got = memory.knn_keys(q, ktype, 10)
        sims = vecs[:, j] @ q
        want = np.argsort(-sims)[:10]
        assert [cid - 1 for cid, _ in got] == list(want)  # clip ids are 1-based
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


def test_max_sim_retrieval_matches_numpy_reference(memory):
    vecs = _fill(memory, 250, seed=3)
    q = _unit(np.random.default_rng(11), 1)[0]
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


def test_a_second_writer_waits_for_the_lock_instead_of_failing(tmp_path):
    import threading
    import time

    path = tmp_path / "m.db"
    with Memory(path) as a, Memory(path) as b:
        _fill(a, 1)
        a.db.execute("BEGIN IMMEDIATE")  # another process is writing
        threading.Timer(0.5, lambda: a.db.execute("COMMIT")).start()
        t0 = time.perf_counter()
        sid = b.add_source(path="y", sha256="y", kind="video", clock="wall",
                           start_from="mtime", t_start=0, duration=1, n_clips=1, info={})
        assert sid and time.perf_counter() - t0 >= 0.4


def test_an_empty_file_is_not_silently_turned_into_a_memory(tmp_path):
    p = tmp_path / "zero.db"
    p.write_bytes(b"")
    with pytest.raises(StoreError, match="empty file"):
        Memory(p, create=False)
    assert p.stat().st_size == 0
