"""``edge ask`` on a terminal: progress lines with their seconds, and the answer's text as
the solver writes it, on stderr (stdout keeps the final block)."""

from __future__ import annotations

import sys

from edge.cli.render.ask import AskStream


def test_pieces_of_the_answer_follow_their_step_on_one_line(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    s = AskStream()
    s.progress("round 1/5: searching 'kettle'")
    s.token("Lucia ")
    s.token("bought it.")
    s.progress("round 2/5: searching 'shop'")  # a later round: the draft line ends first
    s.token("Lucia, at the shop.")
    s.close()
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == ""
    assert lines[0].startswith("…") and lines[0].endswith("s  round 1/5: searching 'kettle'")
    assert lines[1] == "  Lucia bought it."
    assert lines[2].endswith("round 2/5: searching 'shop'")
    assert lines[3] == "  Lucia, at the shop." and err.endswith("\n")


def test_nothing_is_written_when_stderr_is_not_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    s = AskStream()
    s.progress("round 1/5: searching")
    s.token("Lucia")
    s.close()
    assert capsys.readouterr() == ("", "")
