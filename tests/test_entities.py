"""The entity-time index on real SQLite: rule extraction (people, names, objects, places),
rows written with each clip, m006 filling an older memory, the who / first / last / how
often queries, entity_retrieve — and the real EgoLife day file."""

from __future__ import annotations

import re

import pytest

from edge.ingest.captions import read_caption_file
from edge.recall.entities import (
    clips_with,
    entity_retrieve,
    episodes,
    first_seen,
    last_seen,
    people,
    people_around,
    question_entities,
)
from edge.store import INDEX_TYPES, MIGRATIONS, Memory, apply_migrations, connect
from edge.store.entity_extract import extract_entities
from edge.timeline import day_of
from tests.conftest import EGOLIFE_DAY1, shared
from tests.factories import add_clips, add_source, unit_vectors


def _kinds(mentions) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m in mentions:
        out.setdefault(m.kind, set()).add(m.entity)
    return out


# ---- extraction --------------------------------------------------------------------------

def test_extraction_finds_people_objects_places_and_never_the_wearer():
    caption = ("I hand the phone to Katrina in the living room. Katrina passes it to Alice. "
               "“Okay, Tasha?” I say. Shure asks, “Mark it?” I open WeChat. Then I go "
               "upstairs. Phone is passed around.")
    got = _kinds(extract_entities(caption, "", {"object": "Small tripod and USB drives are "
                                                          "picked up"}))
    assert got["person"] == {"katrina", "shure"}  # acting: a verb follows
    assert got["name"] == {"alice", "tasha", "wechat", "usb"}  # named, not acting here
    assert got["object"] == {"tripod", "usb drive"}
    assert got["place"] == {"living room", "second floor"}
    everything = set().union(*got.values())
    assert not {"i", "okay", "then", "phone", "mark"} & everything


def test_names_from_the_memory_llm_are_people_and_counts_add_up():
    got = extract_entities("Lucia says hi. Lucia laughs.", "Okay Lucia, come here", {},
                           names=["Violet", "I"])
    assert {(m.entity, m.kind, m.count) for m in got} == {("lucia", "person", 3),
                                                          ("violet", "person", 1)}


# ---- the index, written with each clip ----------------------------------------------------

def _store_records(memory: Memory, records) -> list[int]:
    """Caption records stored through the store's one clip write (as ingest does), with
    their real day-clock times and the file's keys; random vectors (no embedder)."""
    sid = add_source(memory, "day1", n_clips=len(records))
    vecs = unit_vectors(len(records) * len(INDEX_TYPES)).reshape(len(records), -1, 384)
    ids = []
    for i, r in enumerate(records):
        day, day_start = day_of(r.t_start, "dayclock")
        keys = {k: (r.keys[k], "file") for k in r.keys} | {"caption": (r.text, "caption")}
        ids.append(memory.add_clip(
            source_id=sid, idx=i, t_start=r.t_start, t_end=r.t_end, day=day,
            day_start=day_start, caption=r.text, transcript="", keyframes=[], signals={},
            keys=keys, vectors={k: vecs[i, j] for j, k in enumerate(INDEX_TYPES)}))
    return ids


def test_the_egolife_day_file_indexes_its_people_at_their_clip_times(memory):
    records = read_caption_file(shared(EGOLIFE_DAY1))[:100]
    ids = _store_records(memory, records)
    by_id = dict(zip(ids, records))
    for name in ("Alice", "Katrina"):
        named = [cid for cid, r in by_id.items()
                 if re.search(rf"\b{name}\b", " ".join([r.text, *r.keys.values()]))]
        rows = clips_with(memory, name)
        assert len(named) >= 5
        assert {row.clip_id for row in rows} <= set(named)  # never a clip not naming them
        assert len({row.clip_id for row in rows}) >= 0.9 * len(named)
        assert all((row.t_start, row.t_end) == (by_id[row.clip_id].t_start,
                                                by_id[row.clip_id].t_end) for row in rows)
        assert first_seen(memory, name).clip_id == named[0]
        assert last_seen(memory, name.upper()).clip_id == named[-1]  # any case
    who = dict(people(memory))
    assert {"alice", "katrina", "shure", "tasha", "lucia"} <= who.keys()
    vocabulary = memory.entity_vocabulary()
    assert "i" not in vocabulary and "jake" not in vocabulary  # the wearer is "I", no one
    assert "phone" in vocabulary and "object" in vocabulary["phone"]


def test_m006_fills_the_index_of_an_older_memory_and_keeps_its_data(tmp_path):
    path = tmp_path / "old.db"
    db = connect(path)
    previous = MIGRATIONS[:[name for name, _ in MIGRATIONS].index("m006_entities")]
    assert apply_migrations(db, previous) == [name for name, _ in previous]
    db.execute("INSERT INTO sources(path, sha256, kind, clock, start_from, t_start, duration, "
               "n_clips, status, added_at) VALUES('x', 'h', 'captions', 'dayclock', 'file', "
               "36000, 60, 2, 'done', 0)")
    for i, caption in enumerate(["Tasha says hi in the kitchen.", "I wave at Tasha."]):
        db.execute("INSERT INTO clips(source_id, idx, t_start, t_end, day, day_start, "
                   "caption) VALUES(1, ?, ?, ?, 'DAY1', 0, ?)",
                   (i, 36000 + 30 * i, 36030 + 30 * i, caption))
    db.execute("INSERT INTO keys(clip_id, type, text, origin) VALUES(2, 'object', "
               "'Kettle is boiling', 'file')")
    db.close()
    with Memory(path) as m:
        assert "m006_entities" in [r[0] for r in m.db.execute(
            "SELECT name FROM _migrations ORDER BY rowid")]
        assert m.count_clips() == 2 and m.clips([2])[2].caption == "I wave at Tasha."
        assert [(r.clip_id, r.kind, r.t_start) for r in clips_with(m, "tasha")] == [
            (1, "person", 36000.0), (2, "name", 36030.0)]
        assert [r.clip_id for r in clips_with(m, "kettle", kinds=["object"])] == [2]
        assert [r.clip_id for r in clips_with(m, "kitchen")] == [1]
        assert m.reindex_entities() == 4  # tasha ×2, kitchen, kettle
        assert m.migrate() == []


# ---- queries -----------------------------------------------------------------------------

CAPTIONS = [
    "Tasha says we need eggs.",           # 0  episode 1 of tasha
    "I crack eggs. Tasha laughs.",        # 1
    "I wash a bowl.",                     # 2  one clip without her: bridged
    "Tasha asks for the whisk.",          # 3
    "I walk to the yard alone.",          # 4
    "I sit down.",                        # 5
    "Lucia says the cake is done.",       # 6
    "Tasha and I eat cake with Lucia.",   # 7  episode 2 of tasha
]


def test_first_last_how_often_and_who_was_there(memory):
    ids = add_clips(memory, CAPTIONS)
    assert [r.clip_id for r in clips_with(memory, "Tasha")] == [ids[i] for i in (0, 1, 3, 7)]
    assert first_seen(memory, "tasha").clip_id == ids[0]
    assert last_seen(memory, "tasha").clip_id == ids[7]
    clip3 = memory.clips([ids[3]])[ids[3]]
    assert last_seen(memory, "tasha", before=clip3.t_end).clip_id == ids[3]
    assert first_seen(memory, "tasha", after=clip3.t_end).clip_id == ids[7]
    eps = episodes(memory, "tasha")
    assert [e.clip_ids for e in eps] == [(ids[0], ids[1], ids[3]), (ids[7],)]
    assert eps[0].t_end == clip3.t_end
    assert len(episodes(memory, "tasha", bridge=0)) == 3
    assert people(memory) == [("tasha", 4)]  # Lucia acts in one clip only
    assert people(memory, min_clips=1) == [("tasha", 4), ("lucia", 2)]
    assert people_around(memory, [ids[6]], delta=1) == [("lucia", 2), ("tasha", 1)]
    assert people_around(memory, [ids[4]], delta=1) == [("tasha", 1)]
    with pytest.raises(ValueError):
        episodes(memory, "tasha", bridge=-1)


def test_entity_retrieve_ranks_clips_holding_the_questions_entities(memory):
    ids = add_clips(memory, CAPTIONS)
    assert question_entities(memory, "When did Tasha's and Lucia's cake come?") == [
        "tasha", "lucia"]
    ranked = entity_retrieve(memory, "What did I eat with Tasha and Lucia?", top_n=3)
    assert ranked[0].clip_id == ids[7] and ranked[0].key_type == "entity"
    assert len(ranked) == 3 and ranked[0].score > ranked[1].score
    assert {r.clip_id for r in ranked[1:]} <= {ids[i] for i in (0, 1, 3, 6)}
    clip3 = memory.clips([ids[3]])[ids[3]]
    scoped = entity_retrieve(memory, "Where was Lucia?", top_n=5, before=clip3.t_end)
    assert scoped == []  # Lucia first appears later
    assert entity_retrieve(memory, "What did I do this morning?", top_n=5) == []
