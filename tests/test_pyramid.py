"""The PyraVid pyramid (PyraVid §3.2, App. B.1/B.3) on real SQLite + sqlite-vec and the real
0.5B memory LLM: migration m003 from the m002 schema, facts/clip/global nodes and links from
EgoLife captions, fact KNN inside a time scope, and the marked fallback on cut-off JSON."""

from __future__ import annotations

import json
from contextlib import contextmanager

import numpy as np
import pytest

from edge.build.keys import ClipKeys, extractive_keys, split_sentences
from edge.build.pyramid import (
    ROLE_CLIP,
    ROLE_GLOBAL,
    ROLE_LINKS,
    Pyramid,
    PyramidOptions,
    extract_clip_memory,
    extractive_clip_memory,
    summary_text,
)
from edge.build.pyramid.clip_memory import _facts_of_reply, clip_summary, fact_kind
from edge.ingest.captions import ingest_caption_file, read_caption_file
from edge.store import MIGRATIONS, Memory, apply_migrations, connect
from tests.conftest import EGOLIFE_DAY1, shared
from tests.factories import add_clips, unit_vectors

N_CLIPS = 10
K = 4


# ---- store: migration and pyramid tables (no model) ---------------------------------------

def test_m003_migrates_an_m002_memory_and_keeps_its_clips(tmp_path):
    path = tmp_path / "old.db"
    db = connect(path)
    assert apply_migrations(db, MIGRATIONS[:2]) == ["m001_initial", "m002_clip_text_fts"]
    db.execute("INSERT INTO sources(path, sha256, kind, clock, start_from, t_start, duration, "
               "n_clips, status, added_at) VALUES('x', 'h', 'captions', 'dayclock', 'file', "
               "0, 30, 1, 'done', 0)")
    db.execute("INSERT INTO clips(source_id, idx, t_start, t_end, day, day_start, caption) "
               "VALUES(1, 0, 100, 130, 'DAY1', 0, 'Shure tightens a screwdriver')")
    db.execute("INSERT INTO keys(clip_id, type, text, origin) VALUES(1, 'event', "
               "'assembling a rack', 'file')")
    db.execute("INSERT INTO clip_text(rowid, caption, transcript, keys) VALUES(1, "
               "'Shure tightens a screwdriver', '', 'assembling a rack')")
    db.close()

    with Memory(path) as m:
        names = [r[0] for r in m.db.execute("SELECT name FROM _migrations ORDER BY name")]
        assert names == [n for n, _ in MIGRATIONS] and "m003_pyramid" in names
        assert m.bm25("screwdriver", 5) and m.bm25("rack", 5)  # backfilled into the new FTS
        cols = [r[1] for r in m.db.execute("PRAGMA table_info(clip_text)")]
        assert cols == ["caption", "transcript", "keys", "facts"]
        for table in ("facts", "nodes_clip", "nodes_global", "links", "fact_vec", "fact_text"):
            assert m.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
        assert m.pyramid_stats()["facts"] == 0
    with Memory(path) as m:  # reopening applies nothing
        assert m.migrate() == []


def _facts(clips: range, per_clip: int) -> list[list[str]]:
    return [[f"fact {i}.{j}" for j in range(per_clip)] for i in clips]


def test_fact_knn_matches_numpy_inside_time_and_day_scopes(memory):
    vecs = unit_vectors(40 * 3, seed=3).reshape(40, 3, 384)
    # 25 clips on DAY1, then 15 on DAY2 (fact ids follow: 3 per clip, 1-based, in order)
    add_clips(memory, 25, t0=36000, day="DAY1", source="day1", facts=_facts(range(25), 3),
              fact_vectors=vecs[:25])
    add_clips(memory, [f"clip {i}" for i in range(25, 40)], t0=86400 + 36000 + 30 * 25,
              day="DAY2", day_start=86400.0, source="day2", facts=_facts(range(25, 40), 3),
              fact_vectors=vecs[25:])
    ends = [("DAY1", 36000 + 30 * i + 30) if i < 25 else ("DAY2", 86400 + 36000 + 30 * i + 30)
            for i in range(40)]
    flat = vecs.reshape(-1, 384)
    q = unit_vectors(1, seed=4)[0]
    before = ends[14][1]
    for kwargs, keep in [
        ({}, lambda c: True),
        ({"before": before}, lambda c: ends[c][1] <= before),
        ({"day": "DAY2"}, lambda c: ends[c][0] == "DAY2"),
    ]:
        got = memory.knn_facts(q, 8, **kwargs)
        idx = [r for r in range(len(flat)) if keep(r // 3)]
        sims = flat[idx] @ q
        want = [idx[j] + 1 for j in np.argsort(-sims)[:8]]  # fact ids are 1-based, in order
        assert len(want) == 8 and [fid for fid, _ in got] == want
        np.testing.assert_allclose([s for _, s in got], np.sort(sims)[::-1][:8], atol=1e-5)
    # facts_of: in time order, with times inside the clip; hierarchical links fact→clip
    facts = memory.facts_of([1, 2])
    assert [f.text for f in facts[1]] == ["fact 0.0", "fact 0.1", "fact 0.2"]
    links = memory.links_from("clip", [1], link_kind="hierarchical")
    assert sorted(lk.src_id for lk in links if lk.src_kind == "fact") == [1, 2, 3]
    assert memory.bm25_facts('"0.1"', 3)[0][0] == 2
    assert memory.clip_nodes([1])[1].summary == "summary 0"


def test_relational_links_induce_weighted_clip_links_and_global_versions_are_scoped(memory):
    add_clips(memory, 3, t0=100, facts=_facts(range(3), 2), seed=5)
    # facts 5,6 (clip 3) relate to facts 1,2 (clip 1); fact 4 to fact 3 (same clip 2: no clip link)
    memory.add_relational_links([(5, 1, "same object"), (6, 2, "continues"), (4, 3, "cause")])
    memory.add_relational_links([(5, 1, "same object")])  # again: nothing changes
    rel = memory.links_from("clip", [3], link_kind="relational")
    assert [(lk.src_id, lk.dst_id, lk.weight) for lk in rel] == [(3, 1, 2.0)]
    assert {(lk.src_id, lk.dst_id) for lk in memory.links_from("fact", [1])
            if lk.kind == "relational"} == {(5, 1)}

    assert memory.global_node("DAY1") is None
    memory.add_global_version(day="DAY1", text="morning", origin="llm", clip_ids=[1, 2],
                              t_upto=160)
    memory.add_global_version(day="DAY1", text="morning and noon", origin="llm", clip_ids=[3],
                              t_upto=190)
    assert memory.global_node("DAY1").version == 2
    assert memory.global_node("DAY1").clip_count == 3
    assert memory.global_node("DAY1", before=170).text == "morning"
    assert memory.global_node("DAY1", before=150) is None
    assert memory.clips_without_global("DAY1") == []
    up = memory.links_from("global", [memory.global_node("DAY1").id], link_kind="hierarchical")
    assert [lk.src_id for lk in up] == [3]
    stats = memory.pyramid_stats()
    assert stats["links"]["relational clip->clip"] == 1
    assert stats["links"]["relational fact->fact"] == 3
    assert stats["global_nodes"]["DAY1"] == {"versions": 2, "clips": 3}


@pytest.mark.slow
def test_a_run_that_adds_nothing_makes_no_global_calls(memory, hub, monkeypatch):
    import time

    def global_calls() -> int:
        return hub.usage.summary(mark)["by_role"].get(ROLE_GLOBAL, {}).get("calls", 0)

    mark = hub.usage.mark()
    add_clips(memory, 3, source="day1", facts=_facts(range(3), 1), finish=True)
    add_clips(memory, 2, source="day2", day="DAY2", t0=90000.0, facts=_facts(range(2), 1),
              finish=True)
    # a budget the clip summaries ("[DAY1 10:00:00] summary 0", …) overflow: each node is
    # the memory LLM's summary, not the clips' words as they are
    options = PyramidOptions(global_every=4, global_words=5)
    Pyramid(memory, hub, options).finalize()
    assert global_calls() == 3  # DAY1, DAY2, then the overall node
    Pyramid(memory, hub, options).finalize()  # a re-run: nothing new
    assert global_calls() == 3
    # DAY2 gets a clip while the clock is ahead; the clock is then set back (NTP, or the
    # memory moves to a machine whose clock is behind) before the overall node is refreshed
    ahead = time.time() + 3600
    monkeypatch.setattr(time, "time", lambda: ahead)
    add_clips(memory, 1, source="late", day="DAY2", t0=95000.0, facts=[["late fact"]],
              finish=True)
    Pyramid(memory, hub, options).update_global("DAY2")
    monkeypatch.undo()
    Pyramid(memory, hub, options).finalize()
    assert global_calls() == 5 and memory.global_node("").clip_count == 6
    for _ in range(2):  # re-runs with nothing new: no call, whatever the clocks said
        Pyramid(memory, hub, options).finalize()
        assert global_calls() == 5


def test_a_short_day_s_global_nodes_are_its_clip_summaries_as_they_are_without_a_call(memory):
    """Text that already fits the global node's word budget is not summarized: the day node
    is the clip summaries with their times and the overall node the day nodes (``verbatim``).
    A version that would overflow the budget asks the memory LLM
    (``test_day_global_node_is_updated_every_k_clips_and_at_the_end``)."""
    add_clips(memory, 3, source="day1", facts=_facts(range(3), 1), finish=True)
    pyr = Pyramid(memory, None, PyramidOptions(global_every=20, global_words=40))
    pyr.finalize()
    day, overall = memory.global_node("DAY1"), memory.global_node("")
    assert (day.origin, day.clip_count, overall.origin) == ("verbatim", 3, "verbatim")
    assert day.text.splitlines() == ["[DAY1 10:00:00] summary 0", "[DAY1 10:00:30] summary 1",
                                     "[DAY1 10:01:00] summary 2"]
    assert overall.text == "DAY1: " + day.text
    assert pyr.counts.global_updates == 0  # no model was needed (there is none here)


def test_a_clip_with_bad_fact_vectors_stores_nothing(memory):
    with pytest.raises(ValueError, match="fact vectors"):
        add_clips(memory, 1, facts=[["a", "b"]], fact_vectors=[np.ones((2, 10), np.float32)])
    for table in ("clips", "keys", "key_vec", "facts", "fact_vec", "nodes_clip", "links",
                  "clip_text", "fact_text"):
        assert memory.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_echoed_prompt_sections_are_not_taken_for_a_summary():
    assert summary_text("UPDATED SUMMARY: At 11:10 I open the box.") == "At 11:10 I open the box."
    assert summary_text("(nothing yet)\n\nNEW EVENTS:\n[11:10] I open the box") == (
        "[11:10] I open the box")
    assert summary_text("keep what still matters, add the new events in time order") == ""


# ---- the marked extractive fallback (no model) ---------------------------------------------

QUOTED = 'Alice says "Pass me the screwdriver." Jake hands it over. Ok. Shure laughs!  It fits.'


def test_keys_and_facts_split_sentences_differently_and_both_are_kept():
    """One splitter, two historic settings: MERIT extractive keys end a sentence only at
    . ! ? 。 and keep every piece; PyraVid extractive facts also end one after a closing quote
    and drop pieces under 3 characters. The split each caller stores is pinned here."""
    assert split_sentences(QUOTED) == [
        'Alice says "Pass me the screwdriver." Jake hands it over.', "Ok.", "Shure laughs!",
        "It fits."]
    assert split_sentences(QUOTED, after_quotes=True, min_chars=3) == [
        'Alice says "Pass me the screwdriver."', "Jake hands it over.", "Ok.",
        "Shure laughs!", "It fits."]
    assert split_sentences("a b. c. ok") == ["a b.", "c.", "ok"]
    assert split_sentences("a b. c. ok", after_quotes=True, min_chars=3) == ["a b."]
    keys = extractive_keys(QUOTED)
    assert keys.origin == "extractive"
    assert keys.event == 'Alice says "Pass me the screwdriver." Jake hands it over.'
    cm = extractive_clip_memory(QUOTED, t_start=100.0, t_end=130.0, max_facts=3,
                                keyframes=["f/a.jpg", "f/b.jpg", "f/c.jpg"])
    assert [f.text for f in cm.facts] == [
        'Alice says "Pass me the screwdriver."', "Jake hands it over.",
        "Ok. Shure laughs! It fits."]  # the tail merged into the last fact: nothing dropped
    assert [f.kind for f in cm.facts] == ["speech", "action", "action"]
    assert [(f.t_start, f.t_end) for f in cm.facts] == [(100.0, 110.0), (110.0, 120.0),
                                                        (120.0, 130.0)]
    assert [f.keyframe for f in cm.facts] == ["f/a.jpg", "f/b.jpg", "f/c.jpg"]
    assert cm.summary == 'Alice says "Pass me the screwdriver."' and cm.origin == "extractive"
    assert cm.keys == keys


def test_a_reply_s_facts_get_their_kind_and_persons_and_the_clip_node_its_summary_by_rule():
    """The per-clip reply has plain fact sentences and no clip summary (issue 13: fewer
    generated tokens); kind, persons and the clip node's summary come from rules."""
    facts = _facts_of_reply(["Katrina asks Jake where the tape is", "I open the box.",
                             "i open the box.", 'Shure says "done"', "Lucia: ok"])
    assert [(f.text, f.kind, f.names) for f in facts] == [
        ("Katrina asks Jake where the tape is", "speech", ["Katrina"]),
        ("I open the box.", "action", []),  # the same fact twice is kept once
        ('Shure says "done"', "speech", ["Shure"]),
        ("Lucia: ok", "speech", ["Lucia"])]
    assert fact_kind("Alice mentioned the cake") == "speech"
    assert fact_kind("I pick up the cardboard box") == "action"
    keys = ClipKeys("I pick up the box.", "Alice asks where the tape is.", "box", "box tape",
                    "llm")
    assert clip_summary(keys) == "I pick up the box; Alice asks where the tape is"
    for silent in ("no speech", "No speech heard.", "none", ""):
        quiet = ClipKeys("The view moves past a sign", silent, "sign", "sign", "llm")
        assert clip_summary(quiet) == "The view moves past a sign"


# ---- the real memory LLM -----------------------------------------------------------------

@pytest.mark.slow
def test_cut_off_json_falls_back_to_marked_extractive_facts(hub):
    rec = read_caption_file(shared(EGOLIFE_DAY1))[3]
    mark = hub.usage.mark()
    cm = extract_clip_memory(hub.llm("memory_llm"), rec.text, t_start=rec.t_start,
                             t_end=rec.t_end, options=PyramidOptions(max_tokens=8))
    calls = hub.usage.records[mark:]
    assert [c.role for c in calls] == ["memory_llm", "memory_llm"]  # the call and one repair
    assert all(c.tokens_out <= 8 for c in calls)
    assert cm.origin == "extractive" and cm.keys.origin == "extractive"
    assert cm.facts and all(f.origin == "extractive" for f in cm.facts)
    assert all(f.text[:20] in rec.text for f in cm.facts)  # cut from the caption itself
    assert cm.summary and cm.summary in rec.text
    assert cm.facts[0].t_start == rec.t_start and cm.facts[-1].t_end == rec.t_end


@contextmanager
def json_calls(llm):
    """The ``(role, schema)`` of every ``chat_json`` call made through ``llm`` in the block:
    one per logical call, whose repair (if any) the usage meter counts as a second call."""
    made: list[tuple[str, dict]] = []
    real = llm.chat_json

    def spy(messages, **kwargs):
        made.append((kwargs["role"], kwargs.get("schema") or {}))
        return real(messages, **kwargs)

    llm.chat_json = spy
    try:
        yield made
    finally:
        del llm.chat_json


@pytest.fixture(scope="module")
def day_pyramid(hub, tmp_path_factory):
    """The first N_CLIPS EgoLife DAY1 clips through the full pyramid (file keys kept), and
    the memory LLM's JSON calls during it."""
    path = tmp_path_factory.mktemp("pyr") / "memory.db"
    memory = Memory(path)
    mark = hub.usage.mark()
    pyr = Pyramid(memory, hub, PyramidOptions(max_facts=3, global_every=K, link_floor=0.45,
                                              max_candidates=4))
    with json_calls(hub.llm("memory_llm")) as made:
        res = ingest_caption_file(memory, hub, shared(EGOLIFE_DAY1), limit=N_CLIPS,
                                  pyramid=pyr)
    memory.record_calls("ingest-captions", hub.usage.records[mark:])
    yield memory, pyr, res, made
    memory.close()


@pytest.mark.slow
def test_egolife_clips_build_facts_clip_nodes_and_keep_file_keys(day_pyramid):
    memory, pyr, res, made = day_pyramid
    assert res.clips_added == N_CLIPS and pyr.counts.clips == N_CLIPS
    # ONE per-clip call each, and with the file's keys it asks for no keys (and no separate
    # MERIT key extraction happens)
    per_clip = [schema for role, schema in made if role == ROLE_CLIP]
    assert len(per_clip) == N_CLIPS
    assert all("event" not in schema["properties"] for schema in per_clip)
    clips = memory.all_clips()
    facts = memory.facts_of(c.id for c in clips)
    nodes = memory.clip_nodes(c.id for c in clips)
    assert len(nodes) == N_CLIPS and all(n.summary and n.scene for n in nodes.values())
    for c in clips:
        assert 1 <= len(facts[c.id]) <= 3
        for f in facts[c.id]:
            assert c.t_start <= f.t_start < f.t_end <= c.t_end and f.text
    n_llm = sum(f.origin == "llm" for fs in facts.values() for f in fs)
    assert n_llm >= N_CLIPS // 2, "the 0.5B model should produce most clips' facts"
    origins = {r[0] for r in memory.db.execute("SELECT DISTINCT origin FROM keys "
                                               "WHERE type != 'caption'")}
    assert origins == {"file"}
    # every fact is linked to its clip, and every clip to a version of the DAY1 global node
    for c in clips:
        up = memory.links_from("clip", [c.id], link_kind="hierarchical")
        assert {lk.src_id for lk in up if lk.src_kind == "fact"} == {f.id for f in facts[c.id]}
        assert [lk.dst_kind for lk in up if lk.src_kind == "clip"] == ["global"]
    # fact text is searchable like keys: BM25 over the clip text and over facts
    word = next(w for w in facts[clips[0].id][0].text.split() if len(w) > 4).strip(".,“”\"'")
    assert clips[0].id in {cid for cid, _ in memory.bm25(f'"{word}"', 20)}
    assert memory.bm25_facts(f'"{word}"', 5)


@pytest.mark.slow
def test_day_global_node_is_updated_every_k_clips_and_at_the_end(day_pyramid):
    memory, pyr, _, _ = day_pyramid
    versions = list(memory.db.execute(
        "SELECT version, clip_count, origin, text FROM nodes_global WHERE scope = 'day' "
        "AND day = 'DAY1' ORDER BY version"))
    # K=4: after clips 4 and 8, then the rest at the end of the run
    assert [(v, n) for v, n, _, _ in versions] == [(1, 4), (2, 8), (3, N_CLIPS)]
    assert all(len(t) >= 20 for *_, t in versions)
    clips = memory.all_clips()
    assert memory.global_node("DAY1", before=clips[5].t_end).version == 1
    overall = memory.global_node("")
    assert overall is not None and overall.clip_count == N_CLIPS
    calls = dict(memory.db.execute("SELECT role, count(*) FROM calls GROUP BY role"))
    origins = [o for (o,) in memory.db.execute("SELECT origin FROM nodes_global")]
    assert len(origins) == 4  # three day versions + the overall node
    # one call per version, but none for text that already fits the budget (verbatim)
    assert calls.get("memory_llm.global", 0) == pyr.counts.global_updates == sum(
        o != "verbatim" for o in origins) >= 2  # 8 EgoLife clip summaries overflow 150 words
    assert N_CLIPS <= calls["memory_llm"] <= 2 * N_CLIPS  # each per-clip call may repair once


@pytest.mark.slow
def test_relational_candidates_are_judged_in_one_call_per_clip(day_pyramid, hub):
    memory, pyr, _, made = day_pyramid
    c = pyr.counts
    assert c.candidates_judged > 0 and c.link_calls > 0, "no similar earlier facts were found"
    assert c.link_calls <= N_CLIPS - 1  # at most one batched call per clip after the first
    calls = memory.db.execute("SELECT count(*), sum(tokens_out) FROM calls WHERE role = ?",
                              (ROLE_LINKS,)).fetchone()
    assert [role for role, _ in made].count(ROLE_LINKS) == c.link_calls
    # a failed judgement is a call and its repair; a good one may have needed the repair
    assert c.link_calls + c.link_failures <= calls[0] <= 2 * c.link_calls and calls[1] > 0
    fact_links = memory.links_from("fact", [r[0] for r in memory.db.execute(
        "SELECT id FROM facts")], link_kind="relational")
    assert len(fact_links) == c.links_accepted
    clip_of = dict(memory.db.execute("SELECT id, clip_id FROM facts"))
    for lk in fact_links:  # always to an earlier clip's fact
        assert clip_of[lk.dst_id] < clip_of[lk.src_id] and lk.relation
    cross = sum(clip_of[lk.src_id] != clip_of[lk.dst_id] for lk in fact_links)
    clip_links = memory.db.execute("SELECT coalesce(sum(weight), 0) FROM links WHERE "
                                   "src_kind = 'clip' AND dst_kind = 'clip'").fetchone()[0]
    assert clip_links == cross


@pytest.mark.slow
def test_fact_knn_with_real_embeddings_stays_inside_the_time_scope(day_pyramid, hub):
    memory, _, _, _ = day_pyramid
    clips = memory.all_clips()
    before = clips[4].t_end
    rows = list(memory.db.execute("SELECT f.id, f.text FROM facts f JOIN clips c ON "
                                  "c.id = f.clip_id WHERE c.t_end <= ? ORDER BY f.id",
                                  (before,)))
    q = hub.embedder.embed_one("taking apart the hard drives on the table")
    got = memory.knn_facts(q, 5, before=before, day="DAY1")
    vecs = hub.embedder.embed([t for _, t in rows])
    sims = vecs @ q
    want = [rows[j][0] for j in np.argsort(-sims)[:5]]
    assert [fid for fid, _ in got] == want
    assert memory.knn_facts(q, 5, before=clips[0].t_start) == []
    assert memory.knn_facts(q, 5, day="DAY2") == []


@pytest.mark.slow
def test_cli_ingest_captions_builds_a_pyramid_and_stats_shows_it(tmp_path):
    from click.testing import CliRunner

    from edge.cli import main

    mem = str(tmp_path / "cli.db")
    runner = CliRunner()
    r = runner.invoke(main, ["ingest-captions", str(shared(EGOLIFE_DAY1)), "--limit", "2",
                             "--memory", mem, "--no-links", "--global-every", "2", "--now"],
                      catch_exceptions=False)
    assert r.exit_code == 0, r.output
    r = runner.invoke(main, ["stats", "--memory", mem, "--json"], catch_exceptions=False)
    s = json.loads(r.output)
    assert s["pyramid"]["clip_nodes"] == 2 and s["pyramid"]["facts"] >= 2
    assert s["pyramid"]["global_nodes"]["DAY1"]["clips"] == 2
    assert {c["role"] for c in s["calls"]} >= {"memory_llm", "embedder"}
    r = runner.invoke(main, ["stats", "--memory", mem], catch_exceptions=False)
    assert "global node  DAY1" in r.output and "hierarchical fact->clip" in r.output


@pytest.mark.slow
def test_footage_ingest_builds_the_pyramid_with_keyframes(hub, tmp_path):
    from edge.config import frames_dir
    from edge.ingest.run import IngestOptions, ingest_paths
    from tests.conftest import FOOTAGE

    with Memory(tmp_path / "m.db") as memory:
        pyr = Pyramid(memory, hub, PyramidOptions(max_facts=3, links=False))
        report = ingest_paths(memory, hub, [shared(FOOTAGE / "everyday_reading.mp4")],
                              IngestOptions(), pyramid=pyr)
        assert report.clips_added == 1
        (clip,) = memory.all_clips()
        facts = memory.facts_of([clip.id])[clip.id]
        assert facts and all(clip.t_start <= f.t_start < f.t_end <= clip.t_end for f in facts)
        assert all(f.keyframe in clip.keyframes for f in facts)
        assert (frames_dir(memory.path) / facts[0].keyframe).is_file()
        assert memory.clip_nodes([clip.id])[clip.id].summary
        day = memory.global_node(clip.day)  # finalized at the end of the run
        assert day is not None and day.clip_count == 1 and memory.global_node("") is not None
