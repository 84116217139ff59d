"""Person questions answered from the character memory's appearances (edge/answer/people.py)
and names in retrieval (edge/answer/people_search.py): "when did I last see X" cites the
clip X was last seen in, "who said …" names the voice whose turn says it, "who was with me"
lists who appeared in scope, and a search for a name ranks that person's clips first — with
no word of the name in any caption."""

import numpy as np
import pytest

from edge.answer import ask
from edge.answer.options import AskOptions
from edge.answer.search import first_round
from edge.timeline import parse_moment
from tests.factories import add_clips


def unit(dim: int, seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture()
def people_memory(memory):
    """Six clips of walk.mp4 from DAY1 10:00; Barack Obama's face in clips 1 and 4 (0-based),
    Alice's voice in clip 2 saying we should leave at six, an unnamed face in clip 2."""
    ids = add_clips(memory, [f"a quiet room, moment {i}" for i in range(6)], source="walk.mp4",
                    t0=parse_moment("DAY1 10:00"), finish=True)
    sid = memory.clips(ids)[ids[0]].source_id
    obama, alice, stranger = (memory.new_identity("Barack Obama"), memory.new_identity("Alice"),
                              memory.new_identity())
    for k in (1, 4):
        memory.add_appearance(obama, "face", unit(128, k), quality=0.9, source_id=sid,
                              clip_id=ids[k], t=30 * k + 3, t_end=30 * k + 9)
    memory.add_appearance(alice, "voice", unit(256, 7), quality=0.8, source_id=sid,
                          clip_id=ids[2], t=61, t_end=64, text="I think we should leave at six.")
    memory.add_appearance(stranger, "face", unit(128, 9), quality=0.8, source_id=sid,
                          clip_id=ids[2], t=62, t_end=62)
    return memory, ids


def test_when_did_i_last_see_cites_the_last_clip_he_was_seen_in(people_memory, hub):
    memory, ids = people_memory
    res = ask(memory, hub, "When did I last see Barack Obama?", at=parse_moment("DAY1 11:00"))
    assert res.verdict == "found" and "DAY1 10:02:03" in res.answer
    assert [m.clip_id for m in res.moments if m.cited] == [ids[4]]
    assert res.usage["llm"]["calls"] == 0  # from the appearances, no model call
    first = ask(memory, hub, "When did I first see Obama?", at=parse_moment("DAY1 11:00"))
    assert [m.clip_id for m in first.moments if m.cited] == [ids[1]]
    early = ask(memory, hub, "When did I last see Barack Obama?", at=parse_moment("DAY1 10:01"))
    assert early.verdict == "found" and [m.clip_id for m in early.moments] == [ids[1]]


def test_who_said_names_the_voice_and_who_was_with_me_lists_the_scope(people_memory, hub):
    memory, ids = people_memory
    said = ask(memory, hub, "Who said we should leave at six?", at=parse_moment("DAY1 11:00"))
    assert said.answer.startswith("Alice said it at DAY1 10:01:01")
    assert [m.clip_id for m in said.moments if m.cited] == [ids[2]]
    with_me = ask(memory, hub, "Who was with me this morning?", at=parse_moment("DAY1 11:00"))
    assert "Barack Obama (seen, 2 clips)" in with_me.answer
    assert "Alice (heard, 1 clip)" in with_me.answer and "person " in with_me.answer


def test_a_search_for_a_name_ranks_that_persons_clips_first(people_memory, hub):
    memory, ids = people_memory
    found = first_round(memory, hub.embedder, "Barack Obama",
                        AskOptions(at=parse_moment("DAY1 11:00")))
    assert [a.clip_id for a in found.anchors][:2] == [ids[4], ids[1]]
    assert {a.key_type for a in found.anchors[:2]} == {"face"}
    other = first_round(memory, hub.embedder, "a quiet room",
                        AskOptions(at=parse_moment("DAY1 11:00")))
    assert all(a.key_type != "face" for a in other.anchors)  # nobody named: unchanged


def test_a_known_person_never_seen_is_said_so_without_a_guess_label(people_memory, hub):
    """Enrolled but never in the footage: ask says so with no model call and the verdict
    line does not call the program's own sentence a guess; search says the moments it lists
    only match the words."""
    from edge.answer.records import verdict_words

    memory, ids = people_memory
    memory.new_identity("Kit Harington")
    res = ask(memory, hub, "When did I last see Kit Harington?", at=parse_moment("DAY1 11:00"))
    assert res.verdict == "not_found" and res.usage["llm"]["calls"] == 0
    assert res.answer.startswith("Kit Harington has not been seen or heard in memory")
    assert verdict_words(res) == "not found in memory" and not res.moments
    did = ask(memory, hub, "Did I see Kit Harington today?", at=parse_moment("DAY1 11:00"))
    assert did.answer.startswith("No: Kit Harington has not been seen or heard in memory")
    assert did.usage["llm"]["calls"] == 0 and verdict_words(did) == "not found in memory"
    yes = ask(memory, hub, "Did I see Obama today?", at=parse_moment("DAY1 11:00"))
    assert yes.answer.startswith("Yes. You last saw Barack Obama at DAY1 10:02:03")
    assert yes.verdict == "found" and [m.clip_id for m in yes.moments] == [ids[4]]
    where = ask(memory, hub, "Where did I see Kit Harington?", at=parse_moment("DAY1 11:00"))
    assert where.verdict == "not_found" and where.usage["llm"]["calls"] == 0
    found = first_round(memory, hub.embedder, "Kit Harington",
                        AskOptions(at=parse_moment("DAY1 11:00")))
    assert "Kit Harington is known (enrolled) but not seen or heard" in found.note
    assert ".;" not in found.note
    both = first_round(memory, hub.embedder, "Barack Obama with Kit Harington",
                       AskOptions(at=parse_moment("DAY1 11:00")))
    assert "Kit Harington is known" in both.note and "Obama is known" not in both.note
    kit = first_round(memory, hub.embedder, "where is the first aid kit?",
                      AskOptions(at=parse_moment("DAY1 11:00")))
    assert "known (enrolled)" not in kit.note  # "kit" is not Kit
    seen = first_round(memory, hub.embedder, "Barack Obama",
                       AskOptions(at=parse_moment("DAY1 11:00")))
    assert "known (enrolled)" not in seen.note
