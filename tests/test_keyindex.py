"""Key search at scale (issue 13 item 3) on real SQLite + sqlite-vec + faiss: m008 (the day
partition of ``key_vec``) migrating an m007 memory, time-scoped search against a brute-force
reference, and the whole-history index beside SQLite (threshold lowered) — equal to exact
search, up to date with keys written since, never returning a deleted key."""

from __future__ import annotations

import math

import numpy as np
import pytest

from edge.store import INDEX_TYPES, MIGRATIONS, Memory, apply_migrations, connect, keyindex
from edge.store.keyindex import KeyIndex, index_path
from tests.factories import add_clips, unit_vectors

DAY = 86400.0
STEP = 3 * 3600.0  # clips every 3 h: 40 clips span five timeline days


def _reference(vecs: np.ndarray, ends: np.ndarray, q: np.ndarray, j: int, k: int,
               before=None, after=None) -> list[tuple[int, float]]:
    """Brute-force top-k (clip id, cosine) of key type ``j`` in ``(after, before]``."""
    ok = np.ones(len(ends), bool)
    if before is not None:
        ok &= ends <= before
    if after is not None:
        ok &= ends > after
    sims = vecs[:, j] @ q
    order = [i for i in np.argsort(-sims) if ok[i]][:k]
    return [(int(i) + 1, float(sims[i])) for i in order]


def _fill(m: Memory, n: int, seed: int = 0, t0: float = DAY - 6 * 3600
          ) -> tuple[np.ndarray, np.ndarray]:
    vecs = unit_vectors(n * len(INDEX_TYPES), seed).reshape(n, len(INDEX_TYPES), 384)
    ids = add_clips(m, n, vectors=vecs, t0=t0, step=STEP, source=f"s{seed}")
    assert ids == list(range(1, n + 1))
    return vecs, t0 + STEP * np.arange(1, n + 1)


def _same(got, want):
    assert [c for c, _ in got] == [c for c, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)


SCOPES = [(None, None), (DAY * 3, None), (None, DAY * 2), (DAY * 3 - 6 * 3600, DAY),
          (DAY + 6 * 3600, DAY + 6 * 3600 - STEP)]  # boundaries on a clip's end


# ---- m008 and the day partition ------------------------------------------------------------

def test_m008_migrates_an_m007_memory_and_keeps_every_vector_and_the_top_k(tmp_path):
    path = tmp_path / "old.db"
    db = connect(path)
    previous = MIGRATIONS[:[n for n, _ in MIGRATIONS].index("m007_build_queue") + 1]
    apply_migrations(db, previous)
    vecs = unit_vectors(30 * len(INDEX_TYPES), 3).reshape(30, len(INDEX_TYPES), 384)
    ends = DAY - 3600 + STEP * np.arange(1, 31)
    db.execute("INSERT INTO sources VALUES(1,'s','s','captions','dayclock','file',0,0,30,"
               "'done',0,'{}')")
    for i in range(30):
        db.execute("INSERT INTO clips(id, source_id, idx, t_start, t_end, day, day_start,"
                   " caption) VALUES(?,1,?,?,?,'DAY1',0,'c')", (i + 1, i, ends[i] - 30, ends[i]))
        for j, kt in enumerate(INDEX_TYPES):
            db.execute("INSERT INTO keys(clip_id, type, text, origin) VALUES(?,?,?,'file')",
                       (i + 1, kt, kt))
            db.execute("INSERT INTO key_vec(key_id, key_type, clip_end, embedding)"
                       " VALUES(?,?,?,?)", (db.last_insert_rowid(), kt, float(ends[i]),
                                            vecs[i, j].tobytes()))
    before = {kid: bytes(e) for kid, e in db.execute("SELECT key_id, embedding FROM key_vec")}
    db.close()
    with Memory(path) as m:
        names = [r[0] for r in m.db.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == [n for n, _ in MIGRATIONS] and "m008_key_vec_days" in names
        rows = list(m.db.execute("SELECT key_id, embedding, day, clip_end FROM key_vec"))
        assert {kid: bytes(e) for kid, e, _, _ in rows} == before
        assert all(day == math.floor(end / DAY) for _, _, day, end in rows)
        q = unit_vectors(1, 9)[0]
        for j, kt in enumerate(INDEX_TYPES):
            for b, a in SCOPES:
                _same(m.knn_keys(q, kt, 7, before=b, after=a),
                      _reference(vecs, ends, q, j, 7, b, a))
        assert m.migrate() == []


def test_keys_are_written_into_their_timeline_day(memory):
    _, ends = _fill(memory, 12)
    days = [d for (d,) in memory.db.execute("SELECT day FROM key_vec ORDER BY key_id")]
    assert days == [math.floor(e / DAY) for e in ends for _ in INDEX_TYPES]
    assert len(set(days)) == 3


def test_a_scoped_search_equals_the_exact_filtered_search(memory):
    vecs, ends = _fill(memory, 40)
    for seed in range(3):
        q = unit_vectors(1, 100 + seed)[0]
        for j, kt in enumerate(INDEX_TYPES):
            for b, a in SCOPES:
                _same(memory.knn_keys(q, kt, 5, before=b, after=a),
                      _reference(vecs, ends, q, j, 5, b, a))


# ---- the whole-history index ---------------------------------------------------------------

@pytest.fixture
def small_index(monkeypatch):
    """Index every memory with >= 1 key, every type with >= 20 keys, all lists probed (the
    benchmark measures recall at the shipped settings; here the plumbing must be exact)."""
    monkeypatch.setattr(Memory, "index_min_keys", 1)
    monkeypatch.setattr(KeyIndex, "MIN_PART", 20)
    monkeypatch.setattr(keyindex, "PROBE_SHARE", 1)


def test_the_whole_history_index_equals_exact_search(tmp_path, small_index):
    with Memory(tmp_path / "m.db") as m:
        vecs, ends = _fill(m, 120)
        for seed in range(3):
            q = unit_vectors(1, 200 + seed)[0]
            for j, kt in enumerate(INDEX_TYPES):
                for b, a in ((None, None), (DAY * 10, DAY * 2)):  # whole and a wide scope
                    _same(m.knn_keys(q, kt, 10, before=b, after=a),
                          _reference(vecs, ends, q, j, 10, b, a))
        assert m._key_index() is not None and index_path(m.path).exists()
        assert index_path(m.path).stat().st_mode == m.path.stat().st_mode
    with Memory(tmp_path / "m.db") as m:  # loaded from the file, not rebuilt
        ki = KeyIndex.load(index_path(m.path))
        assert ki is not None and ki.count == 120 * len(INDEX_TYPES)
        q = unit_vectors(1, 300)[0]
        _same(m.knn_keys(q, "event", 10), _reference(vecs, ends, q, INDEX_TYPES.index("event"), 10))


def test_the_index_takes_new_keys_at_once_and_never_returns_a_deleted_one(tmp_path,
                                                                          small_index):
    path = tmp_path / "m.db"
    with Memory(path) as m, Memory(path) as writer:
        vecs, ends = _fill(m, 60)
        q = unit_vectors(1, 400)[0]
        j = INDEX_TYPES.index("event")
        _same(m.knn_keys(q, "event", 10), _reference(vecs, ends, q, j, 10))
        built = m._key_index()
        # another connection (a recorder) stores a clip whose event key is the query itself
        new = np.repeat(q[None, None, :], len(INDEX_TYPES), axis=1)
        (cid,) = add_clips(writer, 1, vectors=new, t0=ends[-1], step=STEP, source=1,
                           first_idx=60)
        got = m.knn_keys(q, "event", 10)
        assert got[0][0] == cid and got[0][1] == pytest.approx(1.0)
        assert m._key_index() is built and built.count == 61 * len(INDEX_TYPES)
        # a deleted key (and clip) is never returned; the index is rebuilt
        top = got[1][0]
        m.db.execute("DELETE FROM key_vec WHERE key_id IN (SELECT id FROM keys "
                     "WHERE clip_id IN (?, ?))", (cid, top))
        m.db.execute("DELETE FROM keys WHERE clip_id IN (?, ?)", (cid, top))
        got = m.knn_keys(q, "event", 10)
        want = [(c, s) for c, s in _reference(vecs, ends, q, j, 11) if c != top][:10]
        _same(got, want)
        assert m._key_index() is not built


def test_a_damaged_index_file_is_rebuilt_not_trusted(tmp_path, small_index):
    path = tmp_path / "m.db"
    with Memory(path) as m:
        vecs, ends = _fill(m, 40)
    index_path(path).write_bytes(b"not an index")
    with Memory(path) as m:
        q = unit_vectors(1, 500)[0]
        want = _reference(vecs, ends, q, INDEX_TYPES.index("object"), 10)
        _same(m.knn_keys(q, "object", 10), want)
        assert KeyIndex.load(index_path(path)) is not None  # rewritten


def test_a_small_memory_keeps_to_exact_search_and_writes_no_index(memory):
    vecs, ends = _fill(memory, 20)
    q = unit_vectors(1, 600)[0]
    want = _reference(vecs, ends, q, INDEX_TYPES.index("dialogue"), 10)
    _same(memory.knn_keys(q, "dialogue", 10), want)
    assert memory._key_index() is None and not index_path(memory.path).exists()
