"""The agent loop (MERIT Appendix 0.A). Fast, on factory clips: the options, evidence
priority, packing and frames, the time scope and the note. Slow, on a real 40-clip EgoLife
memory with the real embedder and 0.5B solver: the round bound, the exact calls per round,
the JSON and degradation."""

import dataclasses
import json
import re

import cv2
import numpy as np
import pytest

from edge.answer import (
    AskError,
    AskOptions,
    Evidence,
    Priority,
    ask,
    frame_budget,
    resolve_scope,
)
from edge.answer.distill import NOTE_OVERHEAD_TOKENS
from edge.answer.question import Note, check_question_fits
from edge.ingest.captions import ingest_caption_file
from edge.recall.decompose import decompose
from edge.recall.expansion import Candidate
from edge.recall.retrieval import ScoredClip, expand_neighbors
from edge.store import INDEX_TYPES, Memory
from edge.timeline import TimeWindow, parse_moment
from tests.conftest import EGOLIFE_DAY1, shared
from tests.factories import add_clips

Q = "Who used the screwdriver first?"
CHOICES = ["Tasha", "Alice", "Shure", "Lucia"]


@pytest.fixture(scope="module")
def day(tmp_path_factory, hub):
    """The first 40 clips of the EgoLife day (DAY1 11:09–11:29), file keys, no pyramid."""
    with Memory(tmp_path_factory.mktemp("day") / "day1.db") as m:
        ingest_caption_file(m, hub, shared(EGOLIFE_DAY1), limit=40)
        yield m


def _solver_calls(hub, mark, *, retries: bool = False) -> int:
    """Solver calls since ``mark``; without ``retries``, a call that asked again for a reply
    that broke its JSON schema (:meth:`models.llama_chat.LlamaCppLLM.chat_json`) is not counted."""
    recs = [r for r in hub.usage.records[mark:] if r.role == "solver"]
    return sum(1 for r in recs if retries or not r.retry)


def _anchored(memory, round_ids: list[list[int]], delta: int) -> Evidence:
    """Evidence with ``round_ids[r - 1]`` as the anchor clips of round r, best first."""
    ev = Evidence()
    for r, ids in enumerate(round_ids, start=1):
        anchors = [ScoredClip(cid, 0.9 - 0.1 * i, "event") for i, cid in enumerate(ids)]
        ev.add_neighborhoods(r, anchors, expand_neighbors(memory, anchors, delta))
    return ev


# ---- options ----------------------------------------------------------------------------

def test_ask_options_are_exactly_the_keyword_options_of_ask_with_their_defaults():
    assert {f.name: f.default for f in dataclasses.fields(AskOptions)} == {
        "at": None, "window": None, "auto_window": True, "top_n": None, "delta": 2,
        "max_rounds": 5, "key_types": INDEX_TYPES, "retrieval": "hybrid", "loop": "adaptive",
        "decompose": False, "decompose_style": "phrases", "fusion": "rrf", "rrf_k": None,
        "dense_weight": None,
        "choices": None, "choice_scoring": "generate", "choice_queries": True,
        "choice_slots": False, "spread": 2,
        "split_events": True, "aggregate": False, "day_part": "wide", "coverage": True,
        "distill_tokens": 800,
        "hints": True, "neighbor_filter": False, "pyramid": None, "frames": None,
        "answer_tokens": 300, "anchor_tokens": 300, "neighbor_tokens": 100,
        "open_check": "quotes", "reason_first": False, "distill_options": True,
        "option_grounding": True}


def test_overrides_replace_fields_by_name_and_unknown_names_are_refused():
    base = AskOptions(delta=1, max_rounds=2)
    merged = AskOptions.merge(base, {"delta": 3, "loop": "single"})
    assert (merged.delta, merged.max_rounds, merged.loop) == (3, 2, "single")
    assert base.delta == 1 and AskOptions.merge(None, {}) == AskOptions()
    with pytest.raises(TypeError, match="'rounds'"):
        AskOptions.merge(base, {"rounds": 2})


def test_bad_options_and_questions_are_refused_before_any_model_is_touched(memory):
    hub = None  # never reached
    with pytest.raises(AskError, match="2 to 26 choices"):
        ask(memory, hub, Q, choices=["only"])
    with pytest.raises(ValueError, match="unknown retrieval 'bm25'"):
        ask(memory, hub, Q, retrieval="bm25")
    with pytest.raises(ValueError, match="unknown loop 'react'"):
        ask(memory, hub, Q, AskOptions(loop="react"))
    with pytest.raises(TypeError, match="'rounds'"):
        ask(memory, hub, Q, rounds=2)
    with pytest.raises(AskError, match="the question is empty"):
        ask(memory, hub, "   ")
    with pytest.raises(AskError, match="is empty; ingest footage first"):
        ask(memory, hub, Q)


# ---- evidence ---------------------------------------------------------------------------

def test_priority_puts_anchors_by_round_and_rank_first_then_neighbors_by_distance():
    order = [Priority.anchor(1, 0), Priority.anchor(1, 4), Priority.linked(1, 5),
             Priority.anchor(2, 0), Priority.neighbor(1, 3, distance=1),
             Priority.neighbor(2, 0, distance=1), Priority.neighbor(1, 0, distance=2)]
    assert sorted(reversed(order)) == order


def test_evidence_keeps_each_clip_once_and_promotes_a_neighbor_found_as_anchor(memory):
    ids = add_clips(memory, 10)
    ev = _anchored(memory, [[ids[2]], [ids[6], ids[3]], [ids[2]]], delta=1)
    # first-found order; ids[3] (a neighbor in round 1) is promoted where it stands
    assert list(ev.items) == [ids[2], ids[1], ids[3], ids[6], ids[5], ids[7], ids[4]]
    assert ev.items[ids[3]].role == "anchor" and ev.items[ids[3]].priority == (0, 0, 2, 1)
    assert ev.items[ids[2]].round == 1  # found again in round 3: keeps its first rank
    assert ev.items[ids[4]].priority == Priority.neighbor(2, 1, distance=1)
    assert ev.anchors_by_round == [[ids[2]], [ids[6], ids[3]], [ids[2]]]
    moments = ev.moments(cited=[ids[3]])
    assert [(m.clip_id, m.cited, m.role) for m in moments] == [
        (ids[3], True, "anchor"), (ids[2], False, "anchor"), (ids[6], False, "anchor")]


def test_pack_views_all_filtered_and_raw(memory, hub):
    solver = hub.llm("solver")
    caps = ["a red kettle boils", "Alice pours tea", "Shure tunes  the guitar",
            "Lucia fixes the shelf", "I close the door", "a cat sleeps", "the lamp is on"]
    ids = add_clips(memory, caps)
    ev = _anchored(memory, [[ids[1], ids[3]]], delta=1)
    ev.filtered.update({ids[1]: "Alice pours green tea.", ids[3]: ""})
    kept = [Candidate(901, ids[0], 0.0, "The  kettle is red.", "seed", 0.5),
            Candidate(902, ids[6], 0.0, "The lamp is on.", "relational", 1.0)]
    ev.add_facts(1, kept, memory.clips([ids[6]]), first_rank=5)
    assert ev.items[ids[6]].role == "linked" and ev.items[ids[6]].priority == (0, 0, 1, 6)

    def pack(view):
        return [(p.item.clip.id, p.text) for p in ev.pack(
            solver, 10_000, anchor_tokens=300, neighbor_tokens=100, view=view)]

    raw = [(ids[i], " ".join(caps[i].split())) for i in (0, 1, 2, 3, 4, 6)]
    assert pack("raw") == raw  # timeline order, whitespace collapsed
    assert pack("all") == [(ids[0], "The kettle is red."), *raw[1:5], (ids[6], "The lamp is on.")]
    assert pack("filtered") == [(ids[1], "Alice pours green tea."), (ids[6], "The lamp is on.")]
    with pytest.raises(ValueError, match="unknown view"):
        ev.pack(solver, 100, anchor_tokens=1, neighbor_tokens=1, view="best")


def test_packing_takes_evidence_by_priority_inside_the_token_budget(day, hub):
    solver = hub.llm("solver")
    ev = _anchored(day, [[3, 18, 33]], delta=2)
    by_priority = sorted(ev.items.values(), key=lambda it: it.priority)

    def cost(it):
        cap = 300 if it.role == "anchor" else 100
        text = solver.truncate(" ".join(it.clip.caption.split()), cap)
        return solver.count_tokens(text) + NOTE_OVERHEAD_TOKENS

    def pack(budget):
        return ev.pack(solver, budget, anchor_tokens=300, neighbor_tokens=100)

    anchors = sum(cost(it) for it in by_priority[:3])
    assert {p.item.clip.id for p in pack(anchors)} == {3, 18, 33}
    first_neighbor = by_priority[3]  # distance 1 before the rank-0 anchor
    assert first_neighbor.clip.id == 2
    assert {p.item.clip.id for p in pack(anchors + cost(first_neighbor))} == {2, 3, 18, 33}
    for budget in (200, 800, 3000):
        chosen = pack(budget)
        assert chosen and sum(solver.count_tokens(p.text) + 16 for p in chosen) <= budget
        assert [p.item.clip.t_start for p in chosen] == sorted(p.item.clip.t_start
                                                                for p in chosen)
    assert len(pack(10**6)) == len(ev.items) == 3 * 5


def test_frame_budget_follows_merit():
    assert [frame_budget(1, r) for r in (0, 9)] == [6, 6]
    assert [frame_budget(2, r) for r in (0, 4, 5, 9)] == [6, 6, 0, 0]
    assert [frame_budget(r, 0) for r in (3, 4, 5)] == [1, 1, 1]


def test_frame_parts_send_each_anchor_once_within_budget(tmp_path, memory):
    folder = tmp_path / "frames"
    (folder / "c").mkdir(parents=True)
    for i in range(3):
        cv2.imwrite(str(folder / "c" / f"k{i}.jpg"), np.full((8, 8, 3), 40 * i, np.uint8))
    frames = [f"c/k{i}.jpg" for i in range(3)] + ["c/missing.jpg"]
    ids = add_clips(memory, 3, keyframes=[frames] * 3)
    ev = _anchored(memory, [[ids[0]], [ids[0], ids[1]], [ids[2]]], delta=0)
    parts = ev.frame_parts(folder)
    assert len(parts) == 3 + 3 + 1  # round 1: all 3 stored; round 2: 3 (clip 1 once); 3: 1
    assert all(p["image_url"]["url"].startswith("data:image/jpeg;base64,") for p in parts)


# ---- scope and note ---------------------------------------------------------------------

def test_a_named_window_scopes_the_search_and_an_empty_one_is_dropped(memory):
    add_clips(memory, 40, t0=parse_moment("DAY1 11:09"))
    at = parse_moment("DAY1 11:30")
    w, note = resolve_scope(memory, "what did I do this morning?", at, None, True)
    assert w.label == "DAY1 morning" and w.end == at and not note
    w, note = resolve_scope(memory, "what did we do last night?", parse_moment("DAY2 10:00"),
                            None, True)
    assert w.start is None and "DAY1 night" in note
    w, _ = resolve_scope(memory, "what did I do this morning?", at, None, False)
    assert w.start is None and w.end == at
    with pytest.raises(AskError, match="widen --from/--to"):
        resolve_scope(memory, "q", None, TimeWindow(parse_moment("DAY1 15:00"), None, "x"),
                      True)


def test_the_note_is_the_latest_failure_else_the_first_remark():
    n = Note()
    n.remark("")
    assert n.text == ""
    n.remark("the window was dropped")
    n.remark("pruning failed")
    assert n.text == "the window was dropped"
    n.failure("filtering failed")
    n.remark("filtering kept nothing")
    assert n.text == "filtering failed"
    n.failure("the answer was unusable")
    assert n.text == "the answer was unusable"


@pytest.mark.parametrize("choices", [["", ""], ["Tasha", "Alice", " "]])
def test_an_empty_choice_is_refused_before_any_call(day, hub, choices):
    mark = hub.usage.mark()
    with pytest.raises(AskError, match="is empty"):
        ask(day, hub, Q, at=parse_moment("DAY1 11:21"), choices=choices)
    assert hub.usage.summary(mark)["calls"] == 0


# ---- the loop with the real solver --------------------------------------------------------

@pytest.mark.slow
def test_decomposition_gives_atomic_sub_queries_in_one_call(hub):
    q = "Who used the screwdriver first, and what did Lucia say about the screw hole?"
    mark = hub.usage.mark()
    subs = decompose(hub.llm("solver"), q)
    assert 1 <= len(subs) <= 3 and all(s and s.lower() != q.lower() for s in subs)
    assert _solver_calls(hub, mark) == 1


@pytest.mark.slow
def test_one_round_merit_loop_filters_then_answers(day, hub):
    mark, lines = hub.usage.mark(), []
    res = ask(day, hub, Q, AskOptions(choices=CHOICES, max_rounds=1, top_n=3, delta=1,
                                      loop="merit", choice_scoring="generate"),
              at=parse_moment("DAY1 11:21"), on_progress=lines.append)
    assert len(res.rounds) == 1 and res.rounds[0].decision is None  # no sufficiency call
    assert set(res.rounds[0].filtered) == {a["clip_id"] for a in res.rounds[0].anchors}
    assert res.answer in "ABCD" and len(res.answer) == 1 and res.final is not None
    assert res.extra["choices"] == dict(zip("ABCD", CHOICES))
    assert set(res.extra["grounding"]) == set("ABCD")  # the letter checked by the embedder
    if "solver_answer" in res.extra:  # replaced: the reason says why
        assert "(grounding " in res.extra["reason"] and "the solver" in res.extra["reason"]
    else:
        assert res.extra["reason"] == res.final["reason"]
    more = len(res.rounds[0].queries) - 1  # the options and the question's event phrases
    assert more >= len(CHOICES)
    assert lines == [f"round 1/1: searching {Q!r} and {more} more queries",
                     "round 1/1: filtering 3 neighborhood(s)",
                     f"answering from {res.evidence_count} note(s)"]
    assert _solver_calls(hub, mark) == 2  # filter + answer
    assert res.usage["llm"]["tokens_in"] > 0 and res.moments
    out = json.loads(json.dumps(res.as_dict()))
    assert list(out) == ["question", "asked_at", "answer", "sufficient", "moments", "rounds",
                         "usage", "seconds", "note", "evidence_count", "extra", "scope",
                         "sub_queries", "final", "citation_check", "verdict", "quotes"]
    assert out["verdict"] in ("found", "unverified", "not_found")  # one word for the answer
    assert list(out["rounds"][0]) == ["round", "query", "anchors", "evidence", "decision",
                                      "queries", "filtered", "expanded"]
    assert out["scope"] == {"label": "", "start": None, "end": parse_moment("DAY1 11:21")}


@pytest.mark.slow
def test_a_likelihood_answer_reads_letter_and_verification_probabilities_and_writes_nothing(
        day, hub):
    """``choice_scoring="likelihood"``: one letter call and one verification call per
    option, 0 output tokens, the later calls evaluating only their tails after the shared
    notes; the answer is the best-scoring letter with its option as the reason, the scores
    are probabilities, and the cited notes are evidence clips."""
    mark = hub.usage.mark()
    res = ask(day, hub, Q, AskOptions(choices=CHOICES, max_rounds=1, top_n=3, delta=1,
                                      choice_scoring="likelihood", option_grounding=False),
              at=parse_moment("DAY1 11:21"))
    recs = [r for r in hub.usage.records[mark:] if r.role == "solver"]
    assert len(recs) == 1 + len(CHOICES) and all(r.tokens_out == 0 for r in recs)
    assert all(r.tokens_evaluated < recs[0].tokens_in // 2 for r in recs[1:])  # KV reuse
    scores = res.extra["scores"]
    assert abs(sum(s["score"] for s in scores.values()) - 1) < 1e-3
    assert abs(sum(s["letter"] for s in scores.values()) - 1) < 1e-3
    assert res.answer == max(scores, key=lambda L: scores[L]["score"])
    assert res.extra["reason"] == dict(zip("ABCD", CHOICES))[res.answer]
    decision = res.rounds[0].decision
    assert decision["sufficient"] and decision["cited_clips"]
    assert set(decision["cited_clips"]) <= set(res.rounds[0].evidence)


@pytest.mark.slow
def test_merit_loop_never_exceeds_its_round_bound(day, hub):
    mark = hub.usage.mark()
    res = ask(day, hub, "What did Lucia say about the big screw and the tripod?",
              at=parse_moment("DAY1 11:30"), max_rounds=2, top_n=3, delta=1, decompose=True,
              loop="merit")
    assert 1 <= len(res.rounds) <= 2
    assert res.rounds[0].queries[0] == res.question
    assert res.rounds[0].queries[1:] == res.sub_queries
    assert all(r.expanded == {} for r in res.rounds)  # no pyramid: no pruning calls
    filters = sum(1 for r in res.rounds if r.filtered)
    checks = sum(1 for r in res.rounds if r.decision is not None)
    assert checks == 1  # round 1 is checked; the last round never is
    # decomposition, a filter per round with new anchors, sufficiency, the answer, and a
    # support judgement per clip the open answer cited
    judged = len(res.citation_check.get("support", {}))
    assert _solver_calls(hub, mark) == 1 + filters + checks + 1 + judged
    if len(res.rounds) == 2:
        from edge.answer.steps import collapse_query  # a repeated phrase: once
        assert res.rounds[1].queries == [collapse_query(res.rounds[0].decision["search"])]


@pytest.mark.slow
def test_an_unusable_reply_degrades_to_the_evidence(day, hub):
    mark = hub.usage.mark()
    res = ask(day, hub, Q, AskOptions(loop="single", max_rounds=1, top_n=2, delta=0),
              at=parse_moment("DAY1 11:21"), answer_tokens=3)  # no JSON fits in 3 tokens
    assert res.answer == "" and "cut off" in res.note and res.rounds[0].decision is None
    assert res.moments and not res.sufficient and res.final is None
    # the reply and its retry under the grammar, at 3 and at 6 tokens
    assert _solver_calls(hub, mark, retries=True) == 4


def test_a_reply_budget_that_leaves_no_room_for_evidence_is_refused_before_any_call(
        memory, hub):
    """Issue 10 item 4: options that cannot fit the solver's context are refused with one
    line naming them and the limit, before any model call."""
    add_clips(memory, 3)
    mark = hub.usage.mark()
    with pytest.raises(AskError) as e:
        ask(memory, hub, "What did I fold?", answer_tokens=4000)
    assert "answer_tokens 4000" in str(e.value) and "4096-token" in str(e.value)
    assert "\n" not in str(e.value)
    assert hub.usage.summary(mark)["calls"] == 0


def test_a_looping_answer_is_cut_to_one_copy_of_the_phrase():
    """Issue 10 item 3: the answer that looped ten times, post-filtered."""
    from models.repeats import collapse_loops
    loop = "I look at Katrina's iPad screen. Katrina says, " * 10
    assert collapse_loops(loop.strip()) == "I look at Katrina's iPad screen. Katrina says,"


def test_a_next_query_that_repeats_itself_is_collapsed_and_a_tried_one_ends_the_loop():
    from edge.answer.steps import next_queries
    q = "Who bought the red kettle?"
    tried = {q.lower()}
    insufficient = {"sufficient": False, "search": ""}
    nxt, why = next_queries({**insufficient, "search": "kettle shop " * 3}, tried)
    assert (nxt, why) == (["kettle shop"], "")
    nxt, why = next_queries({**insufficient, "search": " ".join([q] * 5)}, tried)
    assert nxt == [] and "already searched" in why
    nxt, why = next_queries({**insufficient, "search": "WHO bought  the red kettle"}, tried)
    assert nxt == [] and "already searched" in why


def test_a_looping_query_cut_mid_word_by_its_budget_is_the_tried_question_again():
    """Issue 10 item 3, as the 0.5B solver did it: the question repeated until the 150-
    character search budget cut it mid-word. The cut copy must not make it a new query."""
    from edge.answer.steps import next_queries
    q = "What did Lucia say about the red kettle?"
    looped = (q + " ") * 4
    insufficient = {"sufficient": False, "search": looped[:150]}
    nxt, why = next_queries(insufficient, {q})
    assert nxt == [] and "already searched" in why
    from edge.answer.steps import repeats_query
    assert repeats_query("what did lucia say about the red kettle what did", q)
    assert not repeats_query("what did lucia say about the red kettle price", q)
    assert not repeats_query("kettle", q) and not repeats_query(q, "")


def test_an_answer_that_stops_mid_sentence_is_recognised():
    """Issue 10 item 3: 'one answer was cut at "Lucia said,"' — such an answer is marked."""
    from edge.answer.steps import ends_mid_sentence
    for cut in ["Lucia said,", "I look at Katrina's iPad screen. Katrina says",
                "We bought a kettle and", "The label read:", "Then we went to the"]:
        assert ends_mid_sentence(cut), cut
    for whole in ["Lucia said it was red.", "Katrina.", "B", "The red kettle", "",
                  "I don't know"]:
        assert not ends_mid_sentence(whole), whole


def test_reason_first_asks_for_the_reason_before_the_letter():
    """The reason_first lever (issue 26): the instruction lists "reason" before "answer"
    and the schema (the grammar's field order) follows; off, the letter comes first."""
    from edge.prompts import DECIDE_INSTRUCTION, choice_schema, for_choices
    first = for_choices(DECIDE_INSTRUCTION, reason_first=True)
    assert first.index('"reason"') < first.index('"answer"')
    plain = for_choices(DECIDE_INSTRUCTION)
    assert plain.index('"answer"') < plain.index('"reason"')
    assert list(choice_schema(["A", "B"], reason_first=True)["properties"])[:2] == \
        ["reason", "answer"]
    assert choice_schema(["A", "B"])["required"][:2] == ["answer", "reason"]


def test_distill_options_decides_whether_bare_options_guide_the_distiller():
    from edge.answer.question import relevance_texts
    tried = {"who cut the cake alice", "who cut the cake"}
    on = AskOptions(choices=["Alice", "Shure"])
    assert relevance_texts(on, tried) == ("Alice", "Shure", "who cut the cake",
                                          "who cut the cake alice")
    off = AskOptions(choices=["Alice", "Shure"], distill_options=False)
    assert relevance_texts(off, tried) == ("who cut the cake", "who cut the cake alice")
    assert relevance_texts(AskOptions(), tried) == ("who cut the cake", "who cut the cake alice")


def test_a_multiple_choice_letter_a_is_not_an_answer_cut_off():
    """Issue 26: 16 of 77 hard-set answers were noted "the answer was cut off
    mid-sentence" because their letter was "A" (read as the article). A letter is never
    cut; a multiple-choice reply's reason is what can be."""
    from edge.answer.steps import cut_off_note
    assert cut_off_note("A", "Note 3 shows Alice holding the knife.") == ""
    assert cut_off_note("A", "") == ""
    assert cut_off_note("B", "Because Lucia said,") == "the reason was cut off mid-sentence"
    assert cut_off_note("Lucia said,") == "the answer was cut off mid-sentence"
    assert cut_off_note("Lucia said it was red.") == ""


def test_an_answer_cut_by_its_budget_is_marked(memory, hub):
    add_clips(memory, ["I buy a red kettle at the shop with Lucia.", "Lucia pays for it."])
    # 4 tokens, then 8 on the retry: not even {"answer": "Lucia", "cited": [1]} fits
    a = ask(memory, hub, "Who bought the red kettle?", answer_tokens=4, max_rounds=1,
            pyramid=False)
    assert "the answer was cut off" in a.note


def test_a_question_too_long_for_the_context_is_refused_with_its_length(memory, hub):
    """Issue 26 item 4: a question that leaves no room for evidence says so, in tokens,
    with the most the solver takes, before any model call (not "answer_tokens 300 leaves
    0 …", an option `edge ask` does not have)."""
    add_clips(memory, 3)
    mark = hub.usage.mark()
    with pytest.raises(AskError) as e:
        ask(memory, hub, "Where did I put the red kettle " * 300 + "?")
    msg = str(e.value)
    assert msg.startswith("the question is too long (") and "answer_tokens" not in msg
    n, most = (int(x) for x in re.findall(r"(\d+) tokens", msg)[:2])
    assert n > most > 100 and "\n" not in msg
    assert hub.usage.summary(mark)["calls"] == 0
    # one token fewer than the most is not refused for its length; one more is
    solver, opts = hub.llm("solver"), AskOptions()
    text = " ".join(["kettle"] * most)
    while solver.count_tokens(text) > most:
        text = text.rsplit(" ", 1)[0]
    check_question_fits(solver, opts, text, "", "now")
    with pytest.raises(AskError, match="too long"):
        check_question_fits(solver, opts, text + " kettle kettle", "", "now")
