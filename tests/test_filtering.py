"""Neighbor filtering (MERIT §3.4) with real solver calls."""

import pytest

from edge.captions import ingest_caption_file
from edge.filtering import filter_neighborhoods, filter_schema, neighborhood_text
from edge.retrieval import expand_neighbors, max_sim_retrieve
from tests.conftest import EGOLIFE_DAY1, shared


def test_filter_schema_requires_one_key_per_anchor():
    s = filter_schema(3)
    assert s["required"] == ["clip_1", "clip_2", "clip_3"]
    assert s["additionalProperties"] is False


@pytest.mark.slow
def test_one_batched_call_returns_relevant_info_per_anchor(memory, hub):
    ingest_caption_file(memory, hub, shared(EGOLIFE_DAY1), limit=40)
    q = "Who used the screwdriver first?"
    anchors = max_sim_retrieve(memory, hub.embedder.embed_one(q), top_n=2)
    hoods = expand_neighbors(memory, anchors, delta=2)
    block = neighborhood_text(hoods[0], hub.llm("solver"), 200, 80)
    assert "center:" in block and "before_1:" in block
    mark = hub.usage.mark()
    out = filter_neighborhoods(hub.llm("solver"), q, hoods)
    assert set(out) == {h.anchor.id for h in hoods}
    assert all(isinstance(v, str) for v in out.values())
    assert any(v for v in out.values()), "nothing relevant around screwdriver anchors"
    usage = hub.usage.summary(mark)["by_role"]["solver"]
    assert 1 <= usage["calls"] <= 2  # one call, plus a repair at most
