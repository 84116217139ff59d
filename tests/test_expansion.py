"""PyraVid expansion and pruning (PyraVid §3.3, App. B.4) over a small pyramid of factory
clips with real MiniLM vectors; pruning and the loop use the real 0.5B solver."""

import pytest

from edge.answer import ask
from edge.prompts import prune_schema
from edge.recall.expansion import Candidate, expand, prune
from tests.factories import add_clips

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
def pyramid_memory(memory, hub):
    """The six clips (keys = caption) with their facts, real MiniLM vectors, and one
    relational link: "where is the power bank" (clip 5) relates to putting it in the
    drawer (clip 1), which links the two clips too."""
    caps, facts = [c for c, _ in CLIPS], [fs for _, fs in CLIPS]
    ids = add_clips(memory, caps, vectors=hub.embedder.embed(caps), keys="caption",
                    facts=facts, fact_vectors=[hub.embedder.embed(fs) for fs in facts])
    fid = {f.text: f.id for fs in memory.facts_of(ids).values() for f in fs}
    memory.add_relational_links([(fid["Alice asks me where the power bank is."],
                                  fid["I put the black power bank into the desk drawer."],
                                  "asks about the object put away")])
    return memory, ids, fid


def _solver_calls(hub, mark) -> int:
    """Solver calls since ``mark``, not counting the retries of a reply that broke its JSON
    schema (:class:`models.usage.CallRecord`)."""
    s = hub.usage.summary(mark)["by_role"].get("solver", {})
    return s.get("calls", 0) - s.get("retries", 0)


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


def test_nothing_to_prune_makes_no_call():
    assert prune(None, "Where did I put the power bank?", []) == []


@pytest.mark.slow
def test_pruning_is_one_call_that_keeps_the_fact_the_question_needs(pyramid_memory, hub):
    m, ids, fid = pyramid_memory
    drawer = fid["I put the black power bank into the desk drawer."]
    cands = [Candidate(fid[t], 0, 36000, t, "seed", 0.5) for t in
             ("I put the black power bank into the desk drawer.", "Shure tunes the guitar.",
              "Katrina waters the flowers.")]
    mark = hub.usage.mark()
    kept = prune(hub.llm("solver"), "Where did I put the power bank?", cands)
    assert drawer in {c.fact_id for c in kept} <= {c.fact_id for c in cands}
    assert _solver_calls(hub, mark) == 1


@pytest.mark.slow
def test_the_loop_expands_over_the_pyramid_when_the_memory_has_one(pyramid_memory, hub):
    m, ids, fid = pyramid_memory
    mark = hub.usage.mark()
    res = ask(m, hub, "Where did I put the power bank?", max_rounds=1, top_n=2, delta=0,
              loop="merit", open_check="words")  # its judgements are counted elsewhere
    assert _solver_calls(hub, mark) == 3  # filter, prune, answer
    exp = res.rounds[0].expanded
    clip_of = {o["fact_id"]: o["clip_id"] for o in exp["offered"]}
    assert exp["kept"] and set(exp["kept"]) <= set(clip_of)
    anchors = {a["clip_id"] for a in res.rounds[0].anchors}
    linked = {mo.clip_id for mo in res.moments if mo.role == "linked"}
    assert linked == {clip_of[f] for f in exp["kept"]} - anchors  # kept facts' clips join
    assert res.final is not None and res.answer
    mark = hub.usage.mark()
    off = ask(m, hub, "Where did I put the power bank?", max_rounds=1, top_n=2, delta=0,
              pyramid=False, loop="merit", open_check="words")
    assert off.rounds[0].expanded == {} and _solver_calls(hub, mark) == 2
    assert all(mo.role == "anchor" for mo in off.moments)
