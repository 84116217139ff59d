"""Option grounding (issue 26, :mod:`edge.answer.grounding`): the embedder's check of a
multiple-choice letter against the evidence. Fast: the rule on hand-made scores, the
store's key vectors, and the grounding and the replaced reply on clips embedded by the
real embedder (the tiny profile's solver answers the one full question)."""

import numpy as np
import pytest

from edge.answer import AskOptions, ask
from edge.answer.grounding import (
    GROUNDING_MARGIN,
    ground_reply,
    grounded_letter,
    option_grounding,
)
from edge.answer.hints import moment
from edge.answer.question import start
from edge.answer.steps import retrieve
from edge.store import INDEX_TYPES
from edge.timeline import parse_moment
from tests.factories import DIM, add_clips, unit_vectors

LETTERS = ["A", "B", "C", "D"]

# The question's moment names Alice; Shure and Tasha are named in other moments of the day,
# as the hard set's wrong options are: things that really happened, elsewhere.
CAPTIONS = [
    "Shure tunes his guitar on the sofa and sings a few lines.",
    "I walk to the kitchen and pour a glass of water.",
    "Alice and I assemble the wooden shelf in the living room; she holds the side panel "
    "while I drive in the screws.",
    "Alice hands me the last screw and we stand the shelf against the wall.",
    "Tasha waters the flowers on the windowsill.",
    "I sweep the floor of the hallway.",
]
QUESTION = "Who helped me put the shelf together?"
CHOICES = ["Shure", "Alice", "Tasha", "Lucia"]


@pytest.fixture()
def shelf_day(memory, hub):
    """The six captions above as clips (DAY1 10:00–10:03), every key the caption, embedded
    by the tiny profile's embedder."""
    add_clips(memory, CAPTIONS, vectors=hub.embedder.embed(CAPTIONS), keys="caption")
    return memory


def test_the_solvers_letter_stands_unless_another_is_grounded_by_more_than_the_margin():
    g = [0.90, 0.90 + GROUNDING_MARGIN + 0.01, 0.20, 0.10]
    assert grounded_letter("A", LETTERS, g) == "B"  # clearly better grounded: replaced
    g = [0.90, 0.90 + GROUNDING_MARGIN - 0.01, 0.20, 0.10]
    assert grounded_letter("A", LETTERS, g) == "A"  # within the margin: the solver's
    assert grounded_letter("B", LETTERS, g) == "B"  # the best already
    assert grounded_letter("Z", LETTERS, g) == "B"  # not an option: the best grounded
    assert grounded_letter("", LETTERS, g) == "B"
    assert grounded_letter("A", LETTERS, []) == "A"  # nothing to ground with
    assert grounded_letter("A", LETTERS, [0.1, 0.9]) == "A"  # scores not one per option


def test_clip_key_vectors_are_every_stored_key_of_the_clips(memory):
    vecs = unit_vectors(3 * len(INDEX_TYPES), seed=4).reshape(3, len(INDEX_TYPES), DIM)
    ids = add_clips(memory, 3, vectors=vecs)
    owners, got = memory.clip_key_vectors([ids[2], ids[0], ids[0]])
    assert sorted(owners.tolist()) == [ids[0]] * len(INDEX_TYPES) + [ids[2]] * len(INDEX_TYPES)
    assert got.shape == (2 * len(INDEX_TYPES), DIM) and got.dtype == np.float32
    for owner, v in zip(owners, got, strict=True):
        i = ids.index(int(owner))
        assert np.abs(vecs[i] @ v - 1.0).min() < 1e-5  # one of that clip's own vectors
    owners, got = memory.clip_key_vectors([10_000])
    assert owners.shape == (0,) and got.shape == (0, DIM)


def test_grounding_is_the_best_clip_for_the_question_and_the_option_together(shelf_day, hub):
    emb = hub.embedder
    ids = list(shelf_day.clip_key_vectors(range(1, 100))[0])
    g = option_grounding(shelf_day, emb, QUESTION, CHOICES, ids)
    assert g.clip_ids == sorted(set(ids)) and g.per_clip.shape == (len(CAPTIONS), 4)
    assert len(g.scores) == len(CHOICES) and max(g.scores) == g.scores[1]  # Alice
    # By hand: per clip, the question's best key cosine plus the option's.
    q = emb.embed([QUESTION], query=True)[0]
    o = emb.embed(CHOICES, query=True)
    keys = emb.embed(CAPTIONS)
    per_clip = (keys @ q)[:, None] + keys @ o.T
    assert np.allclose(g.per_clip, per_clip, atol=1e-3)
    assert np.allclose(g.scores, per_clip.max(axis=0), atol=1e-3)
    # Alice is grounded by the two shelf clips, not by where Shure or Tasha are
    assert g.best_clips(1) == [g.clip_ids[i] for i in np.argsort(-per_clip[:, 1])[:2]]
    assert set(g.best_clips(1)) == {g.clip_ids[2], g.clip_ids[3]}
    assert option_grounding(shelf_day, emb, QUESTION, CHOICES, [10_000]) is None
    # options that are only verdicts say nothing a clip could show: not grounded
    assert option_grounding(shelf_day, emb, "Did Alice help me?", ["Yes", "No."], ids) is None
    assert len(option_grounding(shelf_day, emb, QUESTION, ["No one", "Alice"], ids).scores) == 2


def test_a_poorly_grounded_letter_is_replaced_with_its_reason_citations_and_note(
        shelf_day, hub):
    run = start(shelf_day, hub, QUESTION,
                AskOptions(choices=CHOICES, at=parse_moment("DAY1 12:00"), max_rounds=1), None)
    anchors, hoods, _ = retrieve(run, 1, [QUESTION])
    run.evidence.add_neighborhoods(1, anchors, hoods)
    packed = run.pack("distilled")
    reply = {"answer": "A", "reason": "Shure is in note 1.", "cited": [1],
             "cited_clips": [packed[0].item.clip.id], "sufficient": True}
    out = ground_reply(run, reply, packed)
    assert out["answer"] == "B" and out["solver_answer"] == "A"
    assert set(out["grounding"]) == set(LETTERS)
    assert out["grounding"]["B"] - out["grounding"]["A"] > GROUNDING_MARGIN
    shown = {p.item.clip.id: p.item.clip.caption for p in packed}
    assert out["cited_clips"] and all("shelf" in shown[c] for c in out["cited_clips"])
    best = next(p.item.clip for p in packed if p.item.clip.id == out["cited_clips"][0])
    assert out["reason"].startswith(f"{moment(best.t_start)} is the moment most about the "
                                    "question that names this option (grounding B ")
    assert "; A " in out["reason"] and "the solver's choice" in out["reason"]
    assert [packed[n - 1].item.clip.id for n in out["cited"]] == out["cited_clips"]
    assert "the solver chose A; the evidence grounds B better" in run.note.text
    # the solver's own best-grounded letter is kept, with the scores beside it
    kept = ground_reply(run, {**reply, "answer": "B"}, packed)
    assert kept["answer"] == "B" and "solver_answer" not in kept and kept["cited"] == [1]


def test_ask_answers_a_multiple_choice_question_with_the_grounded_letter(shelf_day, hub):
    res = ask(shelf_day, hub, QUESTION, choices=CHOICES, at=parse_moment("DAY1 12:00"),
              max_rounds=1, pyramid=False)
    g = res.extra["grounding"]
    assert set(g) == set(LETTERS) and res.answer == "B"  # whatever the 0.5B wrote
    if "solver_answer" in res.extra:  # replaced: said, and cited by the grounding
        assert res.extra["solver_answer"] != "B" and "grounds B better" in res.note
    assert any(m.cited and "Alice" in m.caption for m in res.moments)
    off = ask(shelf_day, hub, QUESTION, choices=CHOICES, at=parse_moment("DAY1 12:00"),
              max_rounds=1, pyramid=False, option_grounding=False)
    assert "grounding" not in off.extra and "solver_answer" not in off.extra


def test_edge_ask_no_grounding_keeps_the_solvers_letter(run, hub, tmp_path):
    import json

    from edge.store import Memory

    path = tmp_path / "shelf.db"
    with Memory(path) as m:
        add_clips(m, CAPTIONS, vectors=hub.embedder.embed(CAPTIONS), keys="caption")
    args = ["ask", "--memory", path, "--at", "DAY1 12:00", "--rounds", "1", "--json",
            "--choices", "|".join(CHOICES), QUESTION]
    out = json.loads(run(*args).output)
    assert out["answer"] == "B" and set(out["extra"]["grounding"]) == set(LETTERS)
    out = json.loads(run(*args[:-1], "--no-grounding", QUESTION).output)
    assert "grounding" not in out["extra"] and "solver_answer" not in out["extra"]
    assert out["answer"] in LETTERS


def test_a_replaced_letter_is_checked_by_its_options_text_not_the_reasons_words():
    """Found as a user would (`edge ask --choices "Alice|Shure|Katrina|Tasha" "Who helped
    me assemble the rack?"`): the replaced answer "Shure" was marked unverified because its
    reason's words ("notes", "best"; now "grounding", "moment") are in no cited clip. The
    option is what is checked."""
    from types import SimpleNamespace

    from edge.answer.loop import check_cited

    ev = [(1, "Shure says, so it doesn't move around. I insert a rod while Shure holds it."),
          (2, "Shure laughs with Katrina about the rack."),
          (3, "Katrina says this is not the best spot; check the notes."),
          (4, "Shure and Tasha carry the boxes; Shure jokes.")]
    run = SimpleNamespace(question="Who helped me assemble the rack?",
                          evidence=SimpleNamespace(check_texts=lambda ids: ev))
    extra = {"choices": dict(zip(LETTERS, ["Alice", "Shure", "Katrina", "Tasha"])),
             "reason": "DAY1 12:58 is the moment most about the question that names this "
                       "option (grounding B 1.26; C 1.16, the solver's choice)"}
    _, check = check_cited(run, "B", {**extra, "solver_answer": "C"}, [1], [])
    assert not check["flagged"] and check["terms"] == ["shure"]
    _, check = check_cited(run, "B", extra, [1], [])  # a solver's own reason is checked
    assert check["flagged"] and "ground" in check["terms"]
