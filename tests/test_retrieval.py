"""Lexical retrieval (FTS5/BM25), rank fusion on hand-made lists, multi-query retrieval,
and the m001 → m002 migration of an existing memory."""

import numpy as np
import pytest

from edge.recall.retrieval import (
    ScoredClip,
    bm25_retrieve,
    expand_neighbors,
    fts_query,
    fuse,
    max_sim_retrieve,
    multi_query_retrieve,
)
from edge.store import INDEX_TYPES, Memory
from tests.factories import add_clips

CAPTIONS = [
    "I put the black power bank on the sofa next to the remote.",
    "Alice cooks pasta in the kitchen and asks for salt.",
    "Lucia uses the screwdriver to fix the shelf; the screwdriver slips.",
    "We talk about the power outage and the backup battery.",
    "Shure hands me a screwdriver and I tighten a screw.",
]


def _add(memory: Memory, captions: list[str]) -> list[int]:
    """Clips from 10:00, every 30 s, all with the same vector (so only BM25 tells them
    apart)."""
    return add_clips(memory, captions, vectors=np.eye(384, dtype=np.float32)[0])


def test_fts_query_drops_stopwords_and_quotes_words():
    assert fts_query("Who used the screwdriver first?") == '"used" OR "screwdriver" OR "first"'
    assert fts_query("who is it?") is None
    assert fts_query('a "quoted" AND-thing') == '"quoted" OR "thing"'


def test_bm25_ranks_by_rare_words_and_respects_the_time_scope(memory):
    _add(memory, CAPTIONS)
    got = bm25_retrieve(memory, "where is the power bank?", top_n=3)
    assert got[0].clip_id == 1 and got[0].score > 0 and got[0].key_type == "bm25"
    assert got[1].clip_id == 4  # "power" only
    screw = bm25_retrieve(memory, "screwdriver", top_n=5)
    assert [s.clip_id for s in screw] == [3, 5]  # two mentions rank first
    early = bm25_retrieve(memory, "screwdriver", top_n=5, before=36000 + 30 * 3)
    assert [s.clip_id for s in early] == [3]
    assert bm25_retrieve(memory, "the of", top_n=5) == []


def _lists():
    a = [ScoredClip(1, 0.9, "event"), ScoredClip(2, 0.8, "object"), ScoredClip(3, 0.1, "summary")]
    b = [ScoredClip(3, 0.95, "bm25"), ScoredClip(1, 0.5, "bm25")]
    return a, b


def test_rrf_adds_reciprocal_ranks():
    a, b = _lists()
    fused = fuse([a, b], method="rrf", k=60)
    expect = {1: 1 / 61 + 1 / 62, 2: 1 / 62, 3: 1 / 63 + 1 / 61}
    assert [s.clip_id for s in fused] == [1, 3, 2]
    for s in fused:
        assert s.score == pytest.approx(expect[s.clip_id])
    k10 = fuse([a, b], method="rrf", k=10, top_n=1)
    assert k10[0].clip_id == 1 and k10[0].score == pytest.approx(1 / 11 + 1 / 12)


def test_weighted_rrf_can_prefer_one_list():
    a, b = _lists()
    fused = fuse([a, b], method="wrrf", k=60, weights=[0.2, 1.0])
    assert fused[0].clip_id == 3  # 0.2/63 + 1/61 beats 0.2/61 + 1/62
    with pytest.raises(ValueError, match="one weight per"):
        fuse([a, b], method="wrrf", weights=[1.0])


def test_weighted_rrf_weights_each_rank_by_its_similarity():
    a, b = _lists()  # MARQUIS §3.1: Σ s(v, q_i) / (k + rank)
    fused = fuse([a, b], method="wrrf", k=60)
    expect = {1: 0.9 / 61 + 0.5 / 62, 2: 0.8 / 62, 3: 0.1 / 63 + 0.95 / 61}
    assert [s.clip_id for s in fused] == [1, 3, 2]
    for s in fused:
        assert s.score == pytest.approx(expect[s.clip_id])


@pytest.mark.parametrize("method, order, top", [
    ("max", [3, 1, 2], 0.95),
    ("sum", [1, 3, 2], 1.4),
    ("mean", [2, 1, 3], 0.8),   # 1: 0.7, 2: 0.8, 3: 0.525
])
def test_score_fusions(method, order, top):
    a, b = _lists()
    fused = fuse([a, b], method=method)
    assert [s.clip_id for s in fused] == order
    assert fused[0].score == pytest.approx(top)


def test_unknown_fusion_is_rejected():
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse([], method="borda")


def test_migration_from_the_first_schema_backfills_fts(tmp_path):
    import apsw
    import sqlite_vec

    from edge.store import MIGRATIONS

    path = tmp_path / "old.db"
    db = apsw.Connection(str(path))
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    db.execute("CREATE TABLE _migrations(name TEXT PRIMARY KEY, applied_at REAL)")
    name, first = MIGRATIONS[0]
    first(db)
    db.execute("INSERT INTO _migrations VALUES(?, 0)", (name,))
    db.execute("INSERT INTO sources VALUES(1,'p','h','captions','dayclock','file',0,30,1,"
               "'done',0,'{}')")
    db.execute("INSERT INTO clips(id, source_id, idx, t_start, t_end, day, day_start, caption)"
               " VALUES(1, 1, 0, 0, 30, 'DAY1', 0, 'a green kettle boils')")
    db.execute("INSERT INTO keys(clip_id, type, text, origin) VALUES(1, 'object', "
               "'kettle on the stove', 'file')")
    db.close()
    with Memory(path) as m:
        names = [r[0] for r in m.db.execute("SELECT name FROM _migrations ORDER BY name")]
        assert names == [n for n, _ in MIGRATIONS]
        assert [s.clip_id for s in bm25_retrieve(m, "stove", top_n=3)] == [1]
        assert [s.clip_id for s in bm25_retrieve(m, "green kettle", top_n=3)] == [1]
        _add(m, CAPTIONS[:1])  # new clips go into the FTS index too
        assert [s.clip_id for s in bm25_retrieve(m, "power bank", top_n=3)] == [2]


def test_max_sim_takes_each_clip_at_its_best_key_and_respects_the_time_scope(memory):
    basis = np.eye(384, dtype=np.float32)
    vecs = np.stack([basis[[0, 1, 2, 3, 4]], basis[[5, 5, 5, 5, 0]], basis[[6, 6, 6, 6, 6]]])
    ids = add_clips(memory, 3, vectors=vecs)  # (clips, INDEX_TYPES, 384)
    got = max_sim_retrieve(memory, basis[0], top_n=3, key_types=INDEX_TYPES)
    assert [(s.clip_id, s.key_type) for s in got[:2]] == [(ids[0], "event"), (ids[1], "caption")]
    assert [s.score for s in got] == pytest.approx([1.0, 1.0, 0.0])
    keys_only = max_sim_retrieve(memory, basis[0], top_n=2)  # the caption does not vote
    assert keys_only[0].clip_id == ids[0] and keys_only[1].score == pytest.approx(0.0)
    late = max_sim_retrieve(memory, basis[0], top_n=3, key_types=INDEX_TYPES,
                            after=36000 + 30)  # the first clip ends at 10:00:30
    assert [s.clip_id for s in late][:1] == [ids[1]] and ids[0] not in {s.clip_id for s in late}


def test_sub_query_lists_are_fused(memory):
    basis = np.eye(384, dtype=np.float32)
    ids = add_clips(memory, 3, vectors=basis[:3])
    one = multi_query_retrieve(memory, ["a"], [basis[0]], top_n=1, lexical=False)
    assert [s.clip_id for s in one] == [ids[0]]
    both = multi_query_retrieve(memory, ["a", "b"], [basis[0], basis[2]], top_n=2,
                                lexical=False, fusion="max")
    assert sorted(s.clip_id for s in both) == [ids[0], ids[2]]
    with pytest.raises(ValueError, match="one vector per query"):
        multi_query_retrieve(memory, ["a", "b"], [basis[0]], top_n=2)


def test_neighbors_are_the_delta_clips_around_an_anchor_and_end_by_the_query_time(memory):
    ids = add_clips(memory, 7)
    hood, = expand_neighbors(memory, [ScoredClip(ids[3], 0.5, "event")], delta=2)
    assert [c.id for c in hood.before] == [ids[2], ids[1]]  # nearest first
    assert [c.id for c in hood.after] == [ids[4], ids[5]]
    assert [c.id for c in hood.clips] == ids[1:6] and hood.score == 0.5
    cut, = expand_neighbors(memory, [ScoredClip(ids[3], 0.5, "event")], delta=2,
                            before=36000 + 30 * 5)  # ids[4] ends at 5 × 30 s
    assert [c.id for c in cut.after] == [ids[4]]
