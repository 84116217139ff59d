"""Neighbor filtering (MERIT §3.4, Eq. 9): the prompt block of a neighborhood on factory
clips, and one real batched solver call on the EgoLife day."""

import pytest

from edge.ingest.captions import ingest_caption_file
from edge.recall.filtering import filter_neighborhoods, filter_schema, neighborhood_text
from edge.recall.retrieval import ScoredClip, expand_neighbors, max_sim_retrieve
from tests.conftest import EGOLIFE_DAY1, shared
from tests.factories import add_clips


def test_filter_schema_requires_one_key_per_anchor():
    s = filter_schema(3)
    assert s["required"] == ["clip_1", "clip_2", "clip_3"]
    assert s["additionalProperties"] is False


def test_a_neighborhood_block_labels_clips_by_offset_and_cuts_each_to_its_budget(memory, hub):
    llm = hub.llm("solver")
    ids = add_clips(memory, [f"caption {i}:  " + "the kettle boils " * 60 for i in range(5)])
    hood, = expand_neighbors(memory, [ScoredClip(ids[2], 0.5, "event")], delta=2)
    lines = neighborhood_text(hood, llm, 50, 10).splitlines()
    assert lines[0] == "time DAY1 10:01:00"  # the anchor clip's start
    labels = [line.split(": ", 1)[0] for line in lines[1:]]
    assert labels == ["before_2", "before_1", "center", "after_1", "after_2"]
    texts = [line.split(": ", 1)[1] for line in lines[1:]]
    assert [t.split(":")[0] for t in texts] == [f"caption {i}" for i in range(5)]
    assert "  " not in texts[2]  # whitespace collapsed
    assert llm.count_tokens(texts[2]) <= 50 < llm.count_tokens(hood.anchor.caption)
    assert all(llm.count_tokens(t) <= 10 for i, t in enumerate(texts) if i != 2)


def test_no_neighborhoods_make_no_call():
    assert filter_neighborhoods(None, "Who used the screwdriver first?", []) == {}


@pytest.mark.slow
def test_one_batched_call_returns_relevant_info_per_anchor(memory, hub):
    ingest_caption_file(memory, hub, shared(EGOLIFE_DAY1), limit=40)
    q = "Who used the screwdriver first?"
    anchors = max_sim_retrieve(memory, hub.embedder.embed_one(q), top_n=2)
    hoods = expand_neighbors(memory, anchors, delta=2)
    mark = hub.usage.mark()
    out = filter_neighborhoods(hub.llm("solver"), q, hoods)
    assert list(out) == [h.anchor.id for h in hoods]  # one entry per anchor, in order
    assert all(v == " ".join(v.split()) for v in out.values())
    assert "screw" in " ".join(out.values()).lower(), out  # what the question is about
    solver = hub.usage.summary(mark)["by_role"]["solver"]
    assert solver["calls"] - solver["retries"] == 1  # one batched call (+ a JSON retry, if any)


class _Sizes:
    """The real solver, recording each call's prompt tokens (as the backend counts them)
    and reply budget."""

    def __init__(self, llm):
        self.llm, self.calls = llm, []

    def __getattr__(self, name):
        return getattr(self.llm, name)

    def chat_json(self, messages, *, max_tokens, **kw):
        prompt = sum(self.llm.count_tokens(m["content"]) + 8 for m in messages)
        self.calls.append((prompt, max_tokens))
        return self.llm.chat_json(messages, max_tokens=max_tokens, **kw)


@pytest.mark.slow
def test_fifty_anchors_with_delta_four_fit_the_context(memory, hub):
    """Issue 10 item 4: ``edge ask --top-n 50 --delta 4`` asked for 4,040 reply tokens in a
    4,096-token context and filtering overflowed; each call now fits beside its prompt."""
    llm = _Sizes(hub.llm("solver"))
    said = "while Alice talks about the weather and the train timetable for tomorrow."
    ids = add_clips(memory, [f"At the table I fold paper number {i} {said}" for i in range(58)])
    hoods = expand_neighbors(memory, [ScoredClip(i, 0.5, "event") for i in ids[4:54]], delta=4)
    kept = filter_neighborhoods(llm, "Who bought the red kettle?", hoods)
    assert set(kept) == set(ids[4:54])
    assert llm.calls and all(p + m <= llm.n_ctx for p, m in llm.calls)


SCREEN = ["I walk down the hall to the office", "A laptop screen shows the words BUILD FAILED",
          "I sit at the desk and drink coffee", "Alice waters the plants by the window",
          "I close the door and leave"]


def _evidence(memory, anchors: list[int], delta: int = 1):
    from edge.answer import Evidence

    ev = Evidence()
    scored = [ScoredClip(a, 0.9, "event") for a in anchors]
    ev.add_neighborhoods(1, scored, expand_neighbors(memory, scored, delta))
    return ev


def test_kept_text_goes_to_the_clip_it_came_from_not_to_the_anchor(memory, hub):
    """Issue 10 item 1: filtering answers per neighborhood, and what it kept from a
    neighbor was shown (``kept:``), packed as a note and cited as the anchor clip."""
    ids = add_clips(memory, SCREEN)
    ev = _evidence(memory, [ids[2]])  # the anchor's window: ids[1], ids[2], ids[3]
    ev.filtered[ids[2]] = "The screen shows BUILD FAILED. I sit at the desk."
    moments = {m.clip_id: m for m in ev.moments(cited=[])}
    assert moments[ids[2]].evidence == "I sit at the desk."  # not the neighbor's text
    assert moments[ids[1]].evidence == "The screen shows BUILD FAILED."  # listed, as neighbor
    assert moments[ids[1]].role == "neighbor"
    packed = ev.pack(hub.llm("solver"), 10_000, anchor_tokens=300, neighbor_tokens=5,
                     view="filtered")
    assert [(p.item.clip.id, p.text) for p in packed] == [
        (ids[1], "The screen shows BUILD FAILED."), (ids[2], "I sit at the desk.")]
    assert ev.kept() == {ids[1]: "The screen shows BUILD FAILED.",
                         ids[2]: "I sit at the desk."}


def test_kept_text_from_another_neighborhood_goes_to_that_clip(memory):
    """A reply that puts one neighborhood's text under another anchor's key (a small
    model mixing the blocks up) still lands on the clip that holds it; a sentence no clip
    shares a word with stays with its anchor."""
    ids = add_clips(memory, SCREEN)
    ev = _evidence(memory, [ids[0], ids[4]], delta=0)
    ev.filtered.update({ids[0]: "I close the door and leave.", ids[4]: "Nothing of note."})
    assert [m.evidence for m in ev.moments(cited=[])] == [
        "", "I close the door and leave. Nothing of note."]
    assert ev.kept() == {ids[4]: "I close the door and leave. Nothing of note."}
