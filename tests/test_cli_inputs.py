"""What the user types, refused the same way everywhere (issue 42, item 5): one line, no
traceback, the exit code docs/errors.md gives; and ``edge search`` refuses
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


# ---- every bad input: its exit code and one line ----------------------------------------

NOT_UTF8 = "lunch \udcff"  # how Python hands over bytes that were not UTF-8
PAGE = "where is the bank " * 500  # 2000 tokens
MISSING = "{tmp}/typo/m.db"
CAPS = '[{"date": "DAY1", "start_time": "11000000", "end_time": "11003000", "text": "a"}]'

# (id, arguments after `edge`, exit code, what the one line says); {m}: the memory
BAD_INPUTS = [
    # 2: what was typed cannot be used as it is, whatever the memory holds
    ("ask-question-not-utf8", ["ask", NOT_UTF8], 2, "the question is not valid UTF-8"),
    ("ask-choice-not-utf8", ["ask", "who?", "--choices", "Jake|Lu\udcffcia"], 2,
     "option 2 of --choices is not valid UTF-8"),
    ("ask-too-long", ["ask", PAGE], 2, "the question is too long (2000 tokens"),
    ("ask-empty", ["ask", "  "], 2, "the question is empty"),
    ("ask-bad-at", ["ask", "who?", "--at", "teatime"], 2, "cannot read the time 'teatime'"),
    ("ask-bad-from", ["ask", "who?", "--from", "DAY1 25:00"], 2, "'DAY1 25:00': day must"),
    ("ask-from-after-to", ["ask", "who?", "--from", "DAY1 12:00", "--to", "DAY1 11:00"], 2,
     "--from must be before --to"),
    ("ask-one-choice", ["ask", "who?", "--choices", "Jake"], 2, "needs 2 to 26 choices"),
    ("ask-empty-choice", ["ask", "who?", "--choices", "Jake||Lucia"], 2, "choice B is empty"),
    ("ask-bad-keys", ["ask", "who?", "--keys", "smell"], 2, "--keys: choose from event"),
    ("ask-delta-out-of-range", ["ask", "who?", "--delta", "9"], 2, "9 is not in the range"),
    ("ask-no-question", ["ask"], 2, "Missing argument 'QUESTION'"),
    ("search-question-not-utf8", ["search", NOT_UTF8], 2, "the question is not valid UTF-8"),
    ("search-choice-not-utf8", ["search", "who?", "--choices", "Jake|Lu\udcffcia"], 2,
     "option 2 of --choices is not valid UTF-8"),
    ("search-too-long", ["search", PAGE], 2, "the question is too long (2000 tokens"),
    ("search-empty", ["search", ""], 2, "the question is empty"),
    ("search-bad-at", ["search", "who?", "--at", "teatime"], 2, "cannot read the time"),
    ("search-one-choice", ["search", "who?", "--choices", "Jake"], 2, "needs 2 to 26"),
    ("search-empty-choice", ["search", "who?", "--choices", "|Jake"], 2, "choice A is empty"),
    ("search-top-n-0", ["search", "who?", "--top-n", "0"], 2, "0 is not in the range"),
    ("report-topic-not-utf8", ["report", "--topic", NOT_UTF8], 2,
     "--topic is not valid UTF-8"),
    ("report-topic-empty", ["report", "--topic", " "], 2, "--topic is empty"),
    ("report-bad-from", ["report", "--from", "teatime"], 2, "cannot read the time"),
    ("report-day-and-from", ["report", "--day", "DAY1", "--from", "DAY1 10:00"], 2,
     "give --day or --from/--to, not both"),
    ("report-qa-without-topic", ["report", "--qa", "2"], 2, "--qa needs --topic"),
    ("report-bad-style", ["report", "--style", "haiku"], 2, "'haiku' is not one of"),
    ("chat-delta-out-of-range", ["chat", "--delta", "9"], 2, "9 is not in the range"),
    ("ingest-bad-start", ["ingest", "--start", "teatime", "{tmp}"], 2, "cannot read the time"),
    ("ingest-captions-bad-limit", ["ingest-captions", "{tmp}/caps.json", "--limit", "0"], 2,
     "0 is not in the range"),
    ("ingest-missing-file", ["--memory", "{tmp}/new.db", "ingest", "{tmp}/nope.mp4"], 2,
     "nope.mp4: no such file or folder"),
    ("ingest-captions-missing-file", ["--memory", "{tmp}/new.db", "ingest-captions",
                                      "{tmp}/nope.json"], 2, "nope.json' does not exist"),
    # 1: what was typed is fine; the memory, the files or the setup say no
    ("ask-missing-memory", ["--memory", MISSING, "ask", "who?"], 1, "no memory at"),
    ("ask-unknown-profile", ["--profile", "huge", "ask", "who?"], 1, "unknown profile 'huge'"),
    ("ask-before-the-memory", ["ask", "who?", "--at", "DAY1 09:00"], 1,
     "nothing in memory ends before the question time DAY1 09:00:00"),
    ("search-missing-memory", ["--memory", MISSING, "search", "who?"], 1, "no memory at"),
    ("search-unknown-profile", ["--profile", "huge", "search", "who?"], 1, "unknown profile"),
    ("report-missing-memory", ["--memory", MISSING, "report"], 1, "no memory at"),
    ("report-day-not-in-memory", ["report", "--day", "DAY9"], 1, "no clip on DAY9"),
    ("report-unknown-profile", ["--profile", "huge", "report", "--style", "bullet"], 1,
     "unknown profile"),
    ("chat-missing-memory", ["--memory", MISSING, "chat"], 1, "no memory at"),
    ("chat-unknown-profile", ["--profile", "huge", "chat"], 1, "unknown profile"),
    ("stats-missing-memory", ["--memory", MISSING, "stats"], 1, "no memory at"),
    ("backup-missing-memory", ["--memory", MISSING, "backup", "{tmp}/copy.db"], 1,
     "no memory at"),
    ("backup-dest-exists", ["backup", "{tmp}/caps.json"], 1, "already exists; use --force"),
    ("backup-onto-itself", ["backup", "{m}"], 1, "is the memory itself"),
    ("ingest-unknown-profile", ["--memory", "{tmp}/new.db", "--profile", "huge", "ingest",
                                "{tmp}/broken.mp4"], 1, "unknown profile"),
    ("ingest-captions-malformed", ["--memory", "{tmp}/new.db", "ingest-captions",
                                   "{tmp}/bad.json"], 1, "record 0 is malformed"),
]


@pytest.mark.parametrize("args,code,says", [c[1:] for c in BAD_INPUTS],
                         ids=[c[0] for c in BAD_INPUTS])
def test_a_bad_input_is_one_line_and_the_exit_code_readme_gives(run, memory_file, tmp_path,
                                                                args, code, says):
    (tmp_path / "caps.json").write_text(CAPS)
    (tmp_path / "bad.json").write_text('[{"x": 1}]')
    (tmp_path / "broken.mp4").write_bytes(b"not a video")
    args = [a.replace("{m}", str(memory_file)).replace("{tmp}", str(tmp_path)) for a in args]
    if "--memory" not in args:
        args = ["--memory", str(memory_file), *args]
    r = run(*args)
    line = error_line(r)
    assert line.startswith("Error: ") and says in line, line
    assert r.exit_code == code, line
    assert not (tmp_path / "typo").exists() and not (tmp_path / "new.db").exists()


def test_readme_gives_these_exit_codes():
    """The rule the test above holds the commands to is docs/errors.md's, word for word, and
    the README says it in short."""
    from tests.conftest import ROOT

    errors = " ".join((ROOT / "docs" / "errors.md").read_text().split())
    assert ("Every expected error is one line saying what went wrong and what to do, never a "
            "traceback, and nothing already stored is lost. The exit code is 2 when what was "
            "typed cannot be used as it is" in errors)
    assert "it is 1 for the rest:" in errors
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "the exit code is 2 for what was typed that cannot be used, 1 for the rest" in readme
