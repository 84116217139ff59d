"""Round-1 levers (AskOptions ``choice_slots``, ``spread``, ``split_events``, ``aggregate``,
``day_part``) on
synthetic clips through the real store: what each changes in the anchors, and that it
changes nothing when off."""

import numpy as np
import pytest

from edge.answer.options import AskOptions
from edge.answer.scope import resolve_scope
from edge.answer.search import (
    episodes,
    event_phrases,
    is_counting,
    option_query_count,
    round_anchors,
    round_queries,
)
from edge.recall.retrieval import (
    ScoredClip,
    episode_anchors,
    group_episodes,
    slot_anchors,
    spread_anchors,
)
from edge.timeline import TimeWindow, parse_moment
from tests.factories import add_clips

E0 = np.eye(384, dtype=np.float32)[0]
EVERYTHING = TimeWindow(None, None, "")


def graded(sims: list[float]) -> np.ndarray:
    """One unit vector per clip whose cosine with :data:`E0` is ``sims[i]`` (the rest of
    each vector on its own axis, so clips differ only by that similarity)."""
    out = np.zeros((len(sims), 384), dtype=np.float32)
    for i, s in enumerate(sims):
        out[i, 0], out[i, i + 1] = s, np.sqrt(1 - s * s)
    return out


def keys_opts(**kw) -> AskOptions:
    """Max-sim over keys with every round-1 lever off unless ``kw`` turns it on."""
    return AskOptions(**{"retrieval": "keys", "spread": 0, "split_events": False,
                         "day_part": "strict", **kw})


# ---- spread -----------------------------------------------------------------------------

def test_spread_skips_candidates_inside_a_better_anchors_neighborhood(memory):
    ids = add_clips(memory, 12)
    ranked = [ScoredClip(ids[i], 1 - i / 100, "event") for i in (3, 4, 2, 8, 5, 11, 9)]
    got = spread_anchors(memory, ranked, 3, 2)
    assert [s.clip_id for s in got] == [ids[3], ids[8], ids[11]]  # 4, 2, 5, 9 covered
    assert spread_anchors(memory, ranked, 3, 0) == ranked[:3]
    # too few spread apart: the skipped ones fill up, in rank order
    assert [s.clip_id for s in spread_anchors(memory, ranked, 5, 2)] == [ids[3], ids[8],
                                                                       ids[11], ids[4], ids[2]]


def test_spread_never_covers_another_cameras_clip_at_the_same_time(memory):
    a = add_clips(memory, 5, source="cam-a")
    b = add_clips(memory, 5, source="cam-b")  # the same seconds, another source
    ranked = [ScoredClip(a[2], 0.9, "event"), ScoredClip(a[3], 0.8, "event"),
              ScoredClip(b[2], 0.7, "event")]
    assert [s.clip_id for s in spread_anchors(memory, ranked, 2, 2)] == [a[2], b[2]]


def test_spread_option_spreads_round_anchors(memory):
    ids = add_clips(memory, 20, vectors=graded([0.1] * 3 + [0.9, 0.95, 0.85] + [0.1] * 8
                                               + [0.8] + [0.1] * 5))
    plain = round_anchors(memory, ["q"], [E0], keys_opts(), EVERYTHING, 2)
    assert [a.clip_id for a in plain] == [ids[4], ids[3]]
    spread = round_anchors(memory, ["q"], [E0], keys_opts(spread=2), EVERYTHING, 2)
    assert [a.clip_id for a in spread] == [ids[4], ids[14]]


# ---- choice slots --------------------------------------------------------------------------

def test_slot_anchors_take_each_lists_quota_then_fill_skipping_covered_clips(memory):
    ids = add_clips(memory, 20)
    head = [ScoredClip(ids[i], 1 - i / 100, "event") for i in (3, 4, 10)]
    opt_a = [ScoredClip(ids[i], 0.5, "event") for i in (4, 15)]  # 4 lies next to 3
    opt_b = [ScoredClip(ids[i], 0.4, "event") for i in (18,)]
    fill = [ScoredClip(ids[i], 0.3, "rrf") for i in (3, 4, 2, 10, 15, 18, 7)]
    got = slot_anchors(memory, [head, opt_a, opt_b], [2, 1, 1], fill, 5, spread=2)
    # head: 3, then 4 is covered by 3 → 10; option a: 4 covered → 15; b: 18; fill: 7
    assert [a.clip_id for a in got] == [ids[3], ids[10], ids[15], ids[18], ids[7]]
    no_spread = slot_anchors(memory, [head, opt_a, opt_b], [2, 1, 1], fill, 5)
    assert [a.clip_id for a in no_spread] == [ids[3], ids[4], ids[15], ids[18], ids[2]]
    # slots stop at top_n; too few spread-apart clips: the skipped ones fill up in order
    assert [a.clip_id for a in slot_anchors(memory, [head], [5], fill, 2, spread=2)] == [
        ids[3], ids[10]]
    assert len(slot_anchors(memory, [head], [1], fill, 7, spread=9)) == 7


def test_option_queries_are_counted_from_the_end():
    opts = keys_opts(choices=["Tasha", "Alice"])
    qs = round_queries("Who cut the cake", opts)
    assert qs == ["Who cut the cake", "Who cut the cake Tasha", "Who cut the cake Alice"]
    assert option_query_count(qs, opts) == 2
    assert option_query_count(qs[:2] + ["an event phrase"], opts) == 0
    assert option_query_count(qs, keys_opts(choices=["Tasha", "Alice"],
                                            choice_queries=False)) == 0
    assert option_query_count(["Who cut the cake"], keys_opts()) == 0


def test_each_option_gets_an_anchor_slot_only_with_choice_slots(memory):
    axis = np.eye(384, dtype=np.float32)
    vecs = graded([0.95, 0.9, 0.85, 0.8, 0.75] + [0.1] * 15)
    vecs[12], vecs[17] = axis[300], axis[301]  # each option's evidence, far from the question
    ids = add_clips(memory, 20, vectors=vecs)
    q = "what did I buy"
    choices = ["milk", "tofu"]
    slots = keys_opts(choices=choices, choice_slots=True)
    queries = round_queries(q, slots)
    qvecs = [E0, axis[300], axis[301]]
    on = round_anchors(memory, queries, qvecs, slots, EVERYTHING, 3)
    assert [a.clip_id for a in on] == [ids[0], ids[12], ids[17]]
    five = round_anchors(memory, queries, qvecs, slots, EVERYTHING, 5)
    assert [a.clip_id for a in five][:3] == [ids[0], ids[1], ids[2]]  # 5 − 2 for the question
    assert {ids[12], ids[17]} <= {a.clip_id for a in five}
    off = round_anchors(memory, queries, qvecs, keys_opts(choices=choices), EVERYTHING, 3)
    assert AskOptions().choice_slots is False  # the default: answers read better without
    fused = round_anchors(memory, queries, qvecs, keys_opts(), EVERYTHING, 3)
    assert off == fused  # off: one fused ranking, as without options' slots


# ---- aggregate ----------------------------------------------------------------------------

def test_episodes_group_close_clips_above_the_threshold_in_timeline_order(memory):
    ids = add_clips(memory, 30)
    ids += add_clips(memory, 2, source="day2", t0=86400 + 36000, day="DAY2",
                     day_start=86400.0)
    scores = {ids[2]: 0.9, ids[3]: 0.5, ids[7]: 0.6,  # 10:01:30 / 10:03:30: 90 s apart
              ids[20]: 0.8, ids[25]: 0.2,  # 0.2 < half of 0.9: dropped
              ids[29]: 0.7, ids[30]: 0.75}  # end of DAY1 and start of DAY2: two episodes
    ranked = [ScoredClip(cid, s, "rrf") for cid, s in scores.items()]
    eps = group_episodes(memory, ranked, rel=0.5)
    assert [e.clip_ids for e in eps] == [[ids[2], ids[3], ids[7]], [ids[20]], [ids[29]],
                                         [ids[30]]]
    assert eps[0].best.clip_id == ids[2] and eps[0].score == 0.9
    assert (eps[0].start, eps[0].end) == (36000 + 60, 36000 + 8 * 30)
    assert [e.day for e in eps] == ["DAY1", "DAY1", "DAY1", "DAY2"]
    assert [a.clip_id for a in episode_anchors(eps, 2)] == [ids[2], ids[20]]
    assert group_episodes(memory, []) == []


def test_a_counting_question_takes_one_anchor_per_episode_only_with_aggregate(memory):
    sims = [0.1] * 40
    sims[5:8] = [0.95, 0.9, 0.92]  # one long occurrence
    sims[20], sims[33] = 0.8, 0.7  # two shorter ones
    ids = add_clips(memory, 40, vectors=graded(sims))
    q = "how often did I water the plants"
    off = round_anchors(memory, [q], [E0], keys_opts(), EVERYTHING, 3)
    assert [a.clip_id for a in off] == [ids[5], ids[7], ids[6]]
    on = round_anchors(memory, [q], [E0], keys_opts(aggregate=True), EVERYTHING, 3)
    assert [a.clip_id for a in on] == [ids[5], ids[20], ids[33]]
    other = round_anchors(memory, ["where are the plants"], [E0], keys_opts(aggregate=True),
                          EVERYTHING, 3)
    assert other == off  # not a counting question: untouched


def test_episodes_of_a_question_are_dated_runs_of_matching_clips(memory, hub):
    caps = ["I chat with Alice about the weather."] * 30
    for i in (4, 5, 17, 26):
        caps[i] = "I water the potted plants on the balcony with a green watering can."
    ids = add_clips(memory, caps, vectors=hub.embedder.embed(caps), keys="caption")
    eps = episodes(memory, hub.embedder, "How many times did I water the plants?",
                   AskOptions(at=parse_moment("DAY1 23:00")))
    assert [e.clip_ids for e in eps] == [[ids[4], ids[5]], [ids[17]], [ids[26]]]
    assert eps[0].start == 36000 + 4 * 30 and eps[0].end == 36000 + 6 * 30


@pytest.mark.parametrize("question, counting", [
    ("How many times did I go to the kitchen?", True),
    ("How often do we order takeout?", True),
    ("How many separate times did I wave the board?", True),
    ("What do I usually drink in the morning?", True),
    ("Every time we cooked, who washed up?", True),
    ("How many chairs were there?", False),
    ("Who did I hand the phone to?", False),
])
def test_counting_questions_are_told_apart(question, counting):
    assert is_counting(question) is counting


# ---- split_events -------------------------------------------------------------------------

@pytest.mark.parametrize("question, events", [
    ("Did I wash the cups before or after Shure played the guitar?",
     ["Did I wash the cups", "Shure played the guitar"]),
    ("What did I do after we got back from the store?", ["we got back from the store"]),
    ("Which did I do first, buy flowers or assemble the shelf?",
     ["buy flowers", "assemble the shelf"]),
    ("The day before yesterday, what happened after Alice arrived?", ["Alice arrived"]),
    ("What did we eat on the first day?", []),
    ("Who came in first?", []),
    ("Once the dance had been filmed last night, where did we go?",
     ["the dance had been filmed last night", "where did we go"]),
    ("Who did I hand the phone to?", []),
])
def test_order_questions_split_into_their_events(question, events):
    assert event_phrases(question) == events


def test_split_events_adds_the_events_as_queries_only_when_on():
    q = "Did I wash the cups before or after Shure played the guitar?"
    assert round_queries(q, AskOptions(split_events=False)) == [q]
    assert round_queries(q, AskOptions(split_events=True)) == [
        q, "Did I wash the cups", "Shure played the guitar"]
    with_opts = round_queries(q, AskOptions(split_events=True, choices=["before", "after"]))
    assert with_opts[1:3] == ["Did I wash the cups", "Shure played the guitar"]
    assert with_opts[3:] == [f"{q} before", f"{q} after"]


# ---- day_part -----------------------------------------------------------------------------

def test_a_soft_part_of_day_ranks_its_clips_first_without_hiding_the_rest(memory):
    sims = [0.5, 0.6, 0.4, 0.95, 0.9]  # 10:00 … 10:02 morning, then 14:00, 14:00:30
    ids = add_clips(memory, 3, vectors=graded(sims[:3]), t0=parse_moment("DAY1 10:00"))
    ids += add_clips(memory, 2, vectors=graded(sims[3:]) , t0=parse_moment("DAY1 14:00"),
                     source="afternoon")
    q, at = "what did I do this morning?", parse_moment("DAY1 20:00")
    strict, _ = resolve_scope(memory, q, at, None, True)
    got = round_anchors(memory, [q], [E0], keys_opts(), strict, 4)
    assert [a.clip_id for a in got] == [ids[1], ids[0], ids[2]]  # the afternoon is gone
    soft, _ = resolve_scope(memory, q, at, None, True, day_part="soft")
    assert soft.prefer is not None and soft.label == "DAY1, morning first"
    got = round_anchors(memory, [q], [E0], keys_opts(day_part="soft"), soft, 4)
    assert [a.clip_id for a in got][:3] == [ids[1], ids[0], ids[3]]  # in-window first


def test_bad_lever_options_are_refused():
    with pytest.raises(ValueError, match="day_part"):
        AskOptions(day_part="loose").check()
    with pytest.raises(ValueError, match="spread"):
        AskOptions(spread=-1).check()
    with pytest.raises(ValueError, match="decompose_style 'hyde'; use phrases or statements"):
        AskOptions(decompose=True, decompose_style="hyde").check()
    AskOptions(decompose=True, decompose_style="statements").check()
