"""What the user types, refused the same way everywhere (issue 42, item 5): one line, no
traceback, the exit code README's "Errors you may meet" gives; and ``edge search`` refuses
the question ``edge ask`` refuses as too long, at the same length, before any model call."""

from __future__ import annotations

import re

import pytest

from edge.store import Memory
from tests.factories import add_clips

CAPTIONS = ["Jake tightens the screws of the shelf with a screwdriver",
            "Lucia waters the flowers on the balcony",
            "Katrina and Alice bake a cake in the kitchen"]


@pytest.fixture()
def memory_file(tmp_path, hub):
    path = tmp_path / "day.db"
    with Memory(path) as m:
        vecs = hub.embedder.embed([c for c in CAPTIONS for _ in range(5)])
        add_clips(m, CAPTIONS, vectors=vecs.reshape(3, 5, 384), keys="caption")
    return path


def error_line(r) -> str:
    """The one line a refused command prints (``Error: …``), checked to be all it says."""
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert "Traceback" not in r.output and len(lines) == 1, r.output
    return lines[0]


def question_of(tokens: int, solver) -> str:
    """A question of exactly ``tokens`` solver tokens."""
    q = "where" + " bank" * (tokens - 1)
    assert solver.count_tokens(q) == tokens
    return q


# ---- the over-long question: ask and search alike --------------------------------------------

def test_search_refuses_the_over_long_question_ask_refuses_at_the_same_length(
        run, memory_file, hub):
    from edge.answer import AskOptions
    from edge.answer.question import start

    page = "Where did I leave the black power bank after lunch yesterday? " * 300
    asked = run("--memory", memory_file, "ask", page)
    searched = run("--memory", memory_file, "search", page)
    line = error_line(asked)
    assert re.match(r"Error: the question is too long \(\d+ tokens for the solver; at most "
                    r"\d+ tokens leave room for notes in its \d+-token context\): ask it in "
                    r"fewer words$", line), line
    assert error_line(searched) == line and searched.exit_code == asked.exit_code != 0

    most = int(re.search(r"at most (\d+) tokens", line).group(1))
    solver = hub.llm("solver")
    over, fits = question_of(most + 1, solver), question_of(most, solver)
    asked, searched = (run("--memory", memory_file, cmd, over) for cmd in ("ask", "search"))
    assert f"too long ({most + 1} tokens" in error_line(asked)
    assert error_line(searched) == error_line(asked)
    assert searched.exit_code == asked.exit_code
    r = run("--memory", memory_file, "search", fits, "--json")
    assert r.exit_code == 0, r.output
    with Memory(memory_file, create=False) as m:  # ask takes it: its checks pass
        assert start(m, hub, fits, AskOptions(), None).question == fits

    # a multiple-choice question's options count too (the prompt lists them)
    choices = ["the black power bank on the kitchen table by the window"] * 4
    fits_alone = question_of(most - 10, solver)
    asked, searched = (run("--memory", memory_file, cmd, fits_alone, "--choices",
                           "|".join(choices)) for cmd in ("ask", "search"))
    assert "tokens with its options for the solver" in error_line(asked)
    assert error_line(searched) == error_line(asked)
    assert searched.exit_code == asked.exit_code


def test_search_counts_with_the_solver_s_vocabulary_only(memory_file, hub):
    """The length check of `edge search` loads no model weights: a llama.cpp solver's
    vocabulary alone counts the same tokens."""
    from models import ModelHub

    fresh = ModelHub(hub.profile, hub.models_dir)
    try:
        counter = fresh.tokenizer("solver")
        assert fresh.tokenizer("solver") is counter  # loaded once
        text = "Who used the screwdriver first, Jake or Lucia? ¿Dónde está? 電源"
        assert counter.count_tokens(text) == hub.llm("solver").count_tokens(text)
        assert counter.n_ctx == hub.llm("solver").n_ctx
        assert fresh.usage.records == []
    finally:
        fresh.close()
