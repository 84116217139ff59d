"""PyraVid expansion and pruning (PyraVid §3.3, App. B.4) over a small hand-built pyramid
with real MiniLM vectors; pruning and the loop use the real 0.5B solver."""

import pytest

from edge.answer import ask
from edge.expansion import Candidate, expand, prune, prune_schema
from edge.store import INDEX_TYPES, Fact, Memory

CLIPS = [  # (caption, [facts])
    ("I walk into the bedroom and open the desk drawer.",
     ["I put the black power bank into the desk drawer.", "I close the drawer and leave."]),
    ("Katrina waters the flowers on the windowsill.", ["Katrina waters the flowers."]),
    ("Shure tunes his guitar in the living room.", ["Shure tunes the guitar."]),
    ("Alice cooks pasta and asks for salt.", ["Alice asks for the salt."]),
    ("Alice looks around the living room for something.",
     ["Alice asks me where the power bank is."]),
    ("Lucia fixes the shelf with a screwdriver.", ["Lucia fixes the shelf."]),
]


@pytest.fixture()
def pyramid_memory(tmp_path, hub):
    with Memory(tmp_path / "p.db") as m:
        sid = m.add_source(path="p", sha256="p", kind="captions", clock="dayclock",
                           start_from="file", t_start=36000, duration=180, n_clips=6, info={})
        ids = []
        for i, (cap, facts) in enumerate(CLIPS):
            t0 = 36000 + 30 * i
            vecs = hub.embedder.embed([cap] * len(INDEX_TYPES) + facts)
            ids.append(m.add_clip(
                source_id=sid, idx=i, t_start=t0, t_end=t0 + 30, day="DAY1", day_start=0,
                caption=cap, transcript="", keyframes=[], signals={},
                keys={k: (cap, "file") for k in INDEX_TYPES},
                vectors=dict(zip(INDEX_TYPES, vecs)),
                facts=[Fact(f, "action", t0 + 5 * j, t0 + 5 * j + 5, "llm")
                       for j, f in enumerate(facts)],
                fact_vectors=vecs[len(INDEX_TYPES):], clip_node=(cap, "home", "llm")))
        fid = {f.text: f.id for fs in m.facts_of(ids).values() for f in fs}
        # "where is the power bank" (clip 5) relates to putting it in the drawer (clip 1)
        m.add_relational_links([(fid["Alice asks me where the power bank is."],
                                 fid["I put the black power bank into the desk drawer."],
                                 "asks about the object put away")])
        yield m, ids, fid


def test_expansion_follows_seeds_relations_and_linked_clips(pyramid_memory, hub):
    m, ids, fid = pyramid_memory
    q = hub.embedder.embed_one("where is the power bank?")
    pool = expand(m, q, [ids[4]], seeds=2)
    by_fact = {c.fact_id: c for c in pool}
    drawer = fid["I put the black power bank into the desk drawer."]
    assert by_fact[drawer].via == "seed"  # similar to the query, not in an anchor
    # the other fact of the clip linked clip↔clip to the anchor comes through the link
    assert by_fact[fid["I close the drawer and leave."]].via == "linked-clip"
    assert fid["Alice asks me where the power bank is."] not in by_fact  # the anchor's own
    assert len(expand(m, q, [ids[4]], seeds=2, max_nodes=1)) == 1
    assert not expand(m, q, [ids[4]], seeds=2, exclude_facts=set(by_fact))
    # the time scope: only facts of clips ending by `before`
    early = expand(m, q, [], before=36000 + 60, seeds=6)
    assert early and all(c.clip_id in ids[:2] for c in early)
    late = expand(m, q, [], after=36000 + 90, seeds=6)  # the lower bound, inside the KNN
    assert late and all(c.clip_id in ids[3:] for c in late)


def test_prune_schema_bounds_the_numbers():
    s = prune_schema(3)["properties"]["keep"]
    assert s["maxItems"] == 3 and s["items"]["maximum"] == 3


@pytest.mark.slow
def test_pruning_is_one_call_that_keeps_a_subset(pyramid_memory, hub):
    m, ids, fid = pyramid_memory
    cands = [Candidate(fid[t], 0, 36000, t, "seed", 0.5) for t in
             ("I put the black power bank into the desk drawer.", "Shure tunes the guitar.",
              "Katrina waters the flowers.")]
    mark = hub.usage.mark()
    kept = prune(hub.llm("solver"), "Where did I put the power bank?", cands)
    assert set(c.fact_id for c in kept) <= {c.fact_id for c in cands}
    assert 1 <= hub.usage.summary(mark)["by_role"]["solver"]["calls"] <= 2
    assert prune(hub.llm("solver"), "q", []) == []


@pytest.mark.slow
def test_the_loop_expands_over_the_pyramid_when_the_memory_has_one(pyramid_memory, hub):
    m, ids, fid = pyramid_memory
    res = ask(m, hub, "Where did I put the power bank?", max_rounds=1, top_n=2, delta=0)
    exp = res.rounds[0].expanded
    assert exp["offered"] and set(exp["kept"]) <= {o["fact_id"] for o in exp["offered"]}
    assert res.final is not None and res.answer
    off = ask(m, hub, "Where did I put the power bank?", max_rounds=1, top_n=2, delta=0,
              pyramid=False)
    assert off.rounds[0].expanded == {}
