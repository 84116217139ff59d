"""The agent loop (MERIT Appendix 0.A): round bound, calls per round, token budgeting, time
scope, decomposition and degradation — on a real 40-clip EgoLife memory with the real
embedder and 0.5B solver."""

import cv2
import numpy as np
import pytest

from edge.answer import (
    AskError,
    _frame_parts,
    _Item,
    _pack,
    ask,
    frame_budget,
    resolve_scope,
)
from edge.captions import ingest_caption_file
from edge.decompose import decompose
from edge.retrieval import multi_query_retrieve
from edge.store import INDEX_TYPES, Memory
from edge.timeline import TimeWindow, parse_moment
from tests.conftest import EGOLIFE_DAY1, shared

Q = "Who used the screwdriver first?"
CHOICES = ["Tasha", "Alice", "Shure", "Lucia"]


@pytest.fixture(scope="module")
def day(tmp_path_factory, hub):
    """The first 40 clips of the EgoLife day (DAY1 11:09–11:29), file keys."""
    with Memory(tmp_path_factory.mktemp("day") / "day1.db") as m:
        ingest_caption_file(m, hub, shared(EGOLIFE_DAY1), limit=40)
        yield m


def _solver_calls(hub, mark) -> int:
    return hub.usage.summary(mark)["by_role"].get("solver", {}).get("calls", 0)


def test_frame_budget_follows_merit():
    assert [frame_budget(1, r) for r in (0, 9)] == [6, 6]
    assert [frame_budget(2, r) for r in (0, 4, 5, 9)] == [6, 6, 0, 0]
    assert [frame_budget(r, 0) for r in (3, 4, 5)] == [1, 1, 1]


def test_frame_parts_send_each_anchor_once_within_budget(tmp_path, day):
    folder = tmp_path / "frames"
    (folder / "c").mkdir(parents=True)
    for i in range(3):
        cv2.imwrite(str(folder / "c" / f"k{i}.jpg"), np.full((8, 8, 3), 40 * i, np.uint8))
    clips = list(day.clips([1, 2, 3]).values())
    for c in clips:
        c.keyframes = [f"c/k{i}.jpg" for i in range(3)] + ["c/missing.jpg"]
    items = {c.id: _Item(c, "anchor", 0.5, 1, (0,)) for c in clips}
    rounds = [[1], [1, 2], [3]]  # clip 1 again in round 2: sent once
    parts = _frame_parts(items, rounds, folder)
    assert len(parts) == 3 + 3 + 1  # round 1: all 3 stored; round 2: 3; round 3: 1
    assert all(p["image_url"]["url"].startswith("data:image/jpeg;base64,") for p in parts)


def test_evidence_packing_stays_inside_the_token_budget(day, hub):
    solver = hub.llm("solver")
    clips = sorted(day.clips(range(1, 41)).values(), key=lambda c: c.t_start)
    items = [_Item(c, "anchor" if i % 5 == 0 else "neighbor", None, 1, (i % 5 != 0, i))
             for i, c in enumerate(clips)]
    for budget in (200, 800, 3000):
        chosen = _pack(items, solver, budget, anchor_tokens=300, neighbor_tokens=100)
        used = sum(solver.count_tokens(t) + 16 for _, t in chosen)
        assert chosen and used <= budget
        assert [it.clip.t_start for it, _ in chosen] == sorted(it.clip.t_start
                                                                for it, _ in chosen)
        assert any(it.role == "anchor" for it, _ in chosen)  # anchors are packed first


def test_a_named_window_scopes_the_search_and_an_empty_one_is_dropped(day):
    at = parse_moment("DAY1 11:30")
    w, note = resolve_scope(day, "what did I do this morning?", at, None, True)
    assert w.label == "DAY1 morning" and w.end == at and not note
    w, note = resolve_scope(day, "what did we do last night?", parse_moment("DAY2 10:00"),
                            None, True)
    assert w.start is None and "DAY1 night" in note
    w, _ = resolve_scope(day, "what did I do this morning?", at, None, False)
    assert w.start is None and w.end == at
    with pytest.raises(AskError, match="widen --from/--to"):
        resolve_scope(day, "q", None, TimeWindow(parse_moment("DAY1 15:00"), None, "x"), True)


@pytest.mark.parametrize("choices", [["", ""], ["Tasha", "Alice", " "]])
def test_an_empty_choice_is_refused_before_any_call(day, hub, choices):
    mark = hub.usage.mark()
    with pytest.raises(AskError, match="is empty"):
        ask(day, hub, Q, at=parse_moment("DAY1 11:21"), choices=choices)
    assert hub.usage.summary(mark)["calls"] == 0

def test_sub_query_lists_are_fused(memory):
    sid = memory.add_source(path="t", sha256="t", kind="captions", clock="dayclock",
                            start_from="file", t_start=0, duration=0, n_clips=3, info={})
    basis = np.eye(384, dtype=np.float32)
    for i in range(3):
        memory.add_clip(source_id=sid, idx=i, t_start=30 * i, t_end=30 * i + 30, day="DAY1",
                        day_start=0, caption=f"clip {i}", transcript="", keyframes=[],
                        signals={}, keys={k: (f"k{i}", "file") for k in INDEX_TYPES},
                        vectors={k: basis[i] for k in INDEX_TYPES})
    one = multi_query_retrieve(memory, ["a"], [basis[0]], top_n=1, lexical=False)
    assert [s.clip_id for s in one] == [1]
    both = multi_query_retrieve(memory, ["a", "b"], [basis[0], basis[2]], top_n=2,
                                lexical=False, fusion="max")
    assert sorted(s.clip_id for s in both) == [1, 3]
    with pytest.raises(ValueError, match="one vector per query"):
        multi_query_retrieve(memory, ["a", "b"], [basis[0]], top_n=2)


@pytest.mark.slow
def test_decomposition_gives_atomic_sub_queries(hub):
    q = "Who used the screwdriver first, and what did Lucia say about the screw hole?"
    mark = hub.usage.mark()
    subs = decompose(hub.llm("solver"), q)
    assert 1 <= len(subs) <= 3 and all(s and s.lower() != q.lower() for s in subs)
    assert _solver_calls(hub, mark) in (1, 2)


@pytest.mark.slow
def test_one_round_merit_loop_filters_then_answers(day, hub):
    mark = hub.usage.mark()
    res = ask(day, hub, Q, at=parse_moment("DAY1 11:21"), choices=CHOICES, max_rounds=1,
              top_n=3, delta=1)
    assert len(res.rounds) == 1 and res.rounds[0].decision is None  # no sufficiency call
    assert set(res.rounds[0].filtered) == {a["clip_id"] for a in res.rounds[0].anchors}
    assert res.answer in "ABCD" and len(res.answer) == 1 and res.final is not None
    assert 2 <= _solver_calls(hub, mark) <= 4  # filter + answer, each may repair once
    assert res.usage["llm"]["tokens_in"] > 0 and res.moments


@pytest.mark.slow
def test_merit_loop_never_exceeds_its_round_bound(day, hub):
    mark = hub.usage.mark()
    res = ask(day, hub, "What did Lucia say about the big screw and the tripod?",
              at=parse_moment("DAY1 11:30"), max_rounds=2, top_n=3, delta=1, decompose=True)
    assert 1 <= len(res.rounds) <= 2
    assert res.rounds[0].queries[0] == res.question
    assert res.rounds[0].queries[1:] == res.sub_queries
    filters = sum(1 for r in res.rounds if r.filtered)
    checks = sum(1 for r in res.rounds if r.decision is not None)
    assert checks == 1  # round 1 is checked; the last round never is
    expected = 1 + filters + checks + 1  # decomposition, filters, sufficiency, answer
    assert expected <= _solver_calls(hub, mark) <= 2 * expected
    if len(res.rounds) == 2:
        assert res.rounds[1].queries == [res.rounds[0].decision["search"]]


@pytest.mark.slow
def test_an_unusable_reply_degrades_to_the_evidence(day, hub):
    res = ask(day, hub, Q, at=parse_moment("DAY1 11:21"), loop="single", max_rounds=1,
              top_n=2, delta=0, answer_tokens=3)  # no JSON fits in 3 tokens
    assert res.answer == "" and "unusable" in res.note
    assert res.moments and not res.sufficient
