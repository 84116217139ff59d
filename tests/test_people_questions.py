"""Person questions the character memory answers (edge/answer/people_q.py): which
questions are read as "when did I last/first see X", "who was with me", "who said …",
and which names they find. Pure parsing, no model."""

import pytest

from edge.answer.people_q import PersonQuestion, match_name, person_question

NAMES = ["Barack Obama", "Alice", "Joe Biden", "Alice Chen"]


@pytest.mark.parametrize("question, want", [
    ("When did I last see Barack Obama?", PersonQuestion("last", "Barack Obama")),
    ("when did I see obama last?", PersonQuestion("last", "Barack Obama")),
    ("When was the last time I saw Joe Biden?", PersonQuestion("last", "Joe Biden")),
    ("when did we first meet Joe Biden", PersonQuestion("first", "Joe Biden")),
    ("When did I first hear Obama?", PersonQuestion("first", "Barack Obama")),
    ("When was Barack Obama last here?", PersonQuestion("last", "Barack Obama")),
    ("Who was with me at lunch?", PersonQuestion("with")),
    ("who did I see this morning?", PersonQuestion("with")),
    ("Who said we should leave at six?", PersonQuestion("said", what="we should leave at six")),
    ("Who told me to bring the cake?", PersonQuestion("said", what="to bring the cake")),
    ("Did I see Joe Biden today?", PersonQuestion("did", "Joe Biden")),
    ("have we ever met obama?", PersonQuestion("did", "Barack Obama")),
    ("did I hear Alice this morning", PersonQuestion("did", "Alice")),
    ("Where did I see Barack Obama?", PersonQuestion("last", "Barack Obama")),
    ("where did I first meet Joe Biden", PersonQuestion("first", "Joe Biden")),
])
def test_person_questions_are_read_with_the_stored_name(question, want):
    assert person_question(question, NAMES) == want


@pytest.mark.parametrize("question", [
    "When did I last see Bob?",  # no identity of that name: the captions may know Bob
    "What did Alice say about the cake?",
    "When did I last see the power bank?",
    "Who said",  # nothing said
    "Did I see the power bank today?",
    "Where did I see the power bank?",
])
def test_other_questions_are_left_to_the_loop(question):
    assert person_question(question, NAMES) is None


def test_a_word_two_names_share_matches_neither():
    assert match_name("Alice", NAMES) == "Alice"  # the whole name first
    assert match_name("Chen", NAMES) == "Alice Chen"
    assert match_name("alice's", ["Alice Chen", "Alice Wu"]) is None
