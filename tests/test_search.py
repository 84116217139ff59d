"""``edge search``: round 1 of ``edge ask`` without the LLM. Fast, with the real embedder:
on factory clips over two days (the JSON, the time scope), and on the first 40 clips of the
real EgoLife day (the anchors are the ones ask's round 1 composes, the options' queries, a
known question's target). Slow: the anchors equal ``ask``'s first round with the solver."""

import json
import subprocess
import sys

import pytest

from edge.answer import AskError, AskOptions, ask
from edge.answer.scope import resolve_scope
from edge.answer.search import embed_queries, first_round, round_anchors, round_queries
from edge.ingest.captions import ingest_caption_file
from edge.store import Memory
from edge.timeline import parse_moment
from tests.conftest import EGOLIFE_DAY1, ROOT, shared
from tests.factories import add_clips

QUESTIONS = ROOT / "benchmarks" / "egolife_day1_questions.json"
SCREWDRIVER = "D1-001"  # "Who used the screwdriver first?", asked at DAY1 11:21
MATCHED = {"event", "dialogue", "object", "summary", "caption", "bm25"}
LONG = ("I  unpack the\nshopping bags:   " + "apples, bread, milk, eggs, " * 12).strip()

DAYS = {  # (first clip's start, captions): 30 s clips back to back
    "morning": ("DAY1 10:00", ["I put the black power bank in my backpack",
                               "I chop onions in the kitchen", LONG]),
    "evening": ("DAY1 19:00", ["I charge my phone with the power bank on the sofa",
                               "We watch a movie in the living room"]),
    "next day": ("DAY2 09:00", ["I take the power bank out of my backpack at the station",
                                "I buy a coffee at the station"]),
}


@pytest.fixture(scope="module")
def two_days(tmp_path_factory, hub):
    """Seven factory clips on DAY1 morning, DAY1 evening and DAY2 morning; every key is the
    caption, embedded by the real embedder. The path of the memory file."""
    path = tmp_path_factory.mktemp("two_days") / "m.db"
    with Memory(path) as m:
        for name, (start, caps) in DAYS.items():
            t0 = parse_moment(start)
            add_clips(m, caps, vectors=hub.embedder.embed(caps), keys="caption", t0=t0,
                      day=f"DAY{int(t0 // 86400) + 1}", day_start=t0 // 86400 * 86400,
                      source=name, finish=True)
    return path


@pytest.fixture(scope="module")
def day(tmp_path_factory, hub):
    """The first 40 clips of the EgoLife day (DAY1 11:09–11:29), file keys, no pyramid."""
    path = tmp_path_factory.mktemp("day") / "day1.db"
    with Memory(path) as m:
        ingest_caption_file(m, hub, shared(EGOLIFE_DAY1), limit=40)
    return path


def search(run, memory, question, *args) -> dict:
    r = run("search", "--memory", str(memory), "--json", *args, question)
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def ids(result: dict) -> list[int]:
    return [m["clip_id"] for m in result["moments"]]


def clip_ends(memory, result: dict) -> list[float]:
    with Memory(memory, create=False) as m:
        clips = m.clips(ids(result))
    return [clips[i].t_end for i in ids(result)]


def question(qid: str) -> dict:
    return next(q for q in json.loads(QUESTIONS.read_text(encoding="utf-8")) if q["ID"] == qid)


# ---- output -------------------------------------------------------------------------------

def test_the_json_names_each_moment_its_time_score_key_and_caption(run, two_days):
    out = search(run, two_days, "  where is my power bank?  ")
    assert set(out) == {"question", "queries", "moments", "scope", "note", "ms"}
    assert out["question"] == "where is my power bank?" and out["queries"] == [out["question"]]
    assert len(out["moments"]) == 5  # the default top-N of ask with the tiny profile
    for m in out["moments"]:
        assert set(m) == {"clip_id", "when", "score", "matched", "caption"}
        assert m["when"].startswith(("DAY1 ", "DAY2 ")) and len(m["when"]) == 13
        assert m["matched"] in MATCHED and isinstance(m["score"], float)
    scores = [m["score"] for m in out["moments"]]
    assert scores == sorted(scores, reverse=True)
    assert "power bank" in out["moments"][0]["caption"]
    assert out["scope"] == {"label": "", "start": None, "end": None}
    assert out["note"] == "" and out["ms"] > 0
    long = search(run, two_days, "shopping bags apples bread milk eggs", "--top-n", "1")
    assert len(long["moments"]) == 1
    caption = long["moments"][0]["caption"]
    assert caption.startswith("I unpack the shopping bags: apples") and "  " not in caption
    assert len(caption) <= 201 and caption.endswith("…") and len(LONG) > 300


def test_the_human_output_is_a_line_per_moment_then_the_scope_and_time(run, two_days):
    r = run("search", "--memory", str(two_days), "--at", "DAY1 20:00", "--top-n", "3",
            "where is my power bank?")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    out = search(run, two_days, "where is my power bank?", "--at", "DAY1 20:00", "--top-n", "3")
    assert len(lines) == 4
    for rank, (line, m) in enumerate(zip(lines, out["moments"]), 1):
        assert line.split()[:6] == [f"{rank}.", *m["when"].split(), f"{m['score']:.4f}",
                                    m["matched"], "clip"]
        assert line.split()[6] == str(m["clip_id"]) and m["caption"][:20] in line
    assert lines[-1].startswith("Searched everything before DAY1 20:00:00; 1 query in ")
    assert lines[-1].endswith(" ms.")


# ---- scope --------------------------------------------------------------------------------

def test_at_leaves_out_every_clip_that_ends_later(run, two_days):
    everything = search(run, two_days, "where is my power bank?")
    at = parse_moment("DAY1 20:00")
    before = search(run, two_days, "where is my power bank?", "--at", "DAY1 20:00")
    assert max(clip_ends(two_days, everything)) > at  # a DAY2 clip ranks without --at
    assert max(clip_ends(two_days, before)) <= at and before["scope"]["end"] == at
    later = {i for i, t in zip(ids(everything), clip_ends(two_days, everything)) if t > at}
    assert later and not later & set(ids(before))


def test_from_and_to_keep_the_clips_that_end_inside(run, two_days):
    out = search(run, two_days, "where is my power bank?", "--from", "DAY1 18:00",
                 "--to", "DAY1 23:00")
    start, end = parse_moment("DAY1 18:00"), parse_moment("DAY1 23:00")
    assert out["scope"] == {"label": "DAY1 18:00 to DAY1 23:00", "start": start, "end": end}
    assert len(out["moments"]) == 2  # only the two evening clips end inside
    assert all(start < t <= end for t in clip_ends(two_days, out))
    assert "power bank" in out["moments"][0]["caption"]


def test_a_question_naming_yesterday_searches_that_day(run, two_days):
    q = "where did I put the power bank yesterday?"
    out = search(run, two_days, q, "--at", "DAY2 12:00")
    assert out["scope"]["label"] == "DAY1" and out["scope"]["start"] == parse_moment("DAY1 00:00")
    assert all(m["when"].startswith("DAY1 ") for m in out["moments"])
    unscoped = search(run, two_days, q, "--at", "DAY2 12:00", "--no-window")
    assert any(m["when"].startswith("DAY2 ") for m in unscoped["moments"])
    lines = run("search", "--memory", str(two_days), "--at", "DAY2 12:00", q).output
    assert lines.splitlines()[-1].startswith(
        "Searched DAY1 (clips ending after DAY1 00:00:00 and by DAY2 00:00:00); ")


# ---- the same anchors as ask --------------------------------------------------------------

@pytest.mark.parametrize("args,overrides", [
    ((), {}),
    (("--choices", "Tasha|Alice|Shure|Lucia"), {"choices": ["Tasha", "Alice", "Shure", "Lucia"]}),
    (("--retrieval", "keys", "--keys", "event,dialogue", "--top-n", "8"),
     {"retrieval": "keys", "key_types": ("event", "dialogue"), "top_n": 8}),
    (("--fusion", "max", "--rrf-k", "10", "--choices", "Tasha|Alice|Shure|Lucia"),
     {"fusion": "max", "rrf_k": 10, "choices": ["Tasha", "Alice", "Shure", "Lucia"]}),
])
def test_search_returns_the_anchors_asks_first_round_composes(run, day, hub, args, overrides):
    """What ``ask``'s loop does before its first solver call: scope, the round's queries,
    their vectors, the round's anchors (edge/answer/loop.py and steps.retrieve)."""
    q = question(SCREWDRIVER)["question"]
    out = search(run, day, q, "--at", "DAY1 11:21", *args)
    opts = AskOptions(at=parse_moment("DAY1 11:21"), **overrides)
    with Memory(day, create=False) as m:
        scope, _ = resolve_scope(m, q, opts.at, opts.window, opts.auto_window)
        queries = round_queries(q, opts)
        anchors = round_anchors(m, queries, embed_queries(hub.embedder, queries), opts, scope,
                                opts.top_n or 5)
        found = first_round(m, hub.embedder, q, opts)
    assert out["queries"] == queries == found.queries
    assert ids(out) == [a.clip_id for a in anchors] == [a.clip_id for a in found.anchors]
    assert [m["matched"] for m in out["moments"]] == [a.key_type for a in anchors]
    assert [m["score"] for m in out["moments"]] == [round(a.score, 4) for a in anchors]


def test_choices_add_one_query_per_option_and_change_the_fused_ranking(run, day):
    rec = question(SCREWDRIVER)
    options = [rec[f"choice_{c}"] for c in "abcd"]
    plain = search(run, day, rec["question"], "--at", "DAY1 11:21")
    chosen = search(run, day, rec["question"], "--at", "DAY1 11:21", "--choices",
                    "|".join(options))
    assert chosen["queries"][0] == rec["question"]
    assert chosen["queries"][-4:] == [f"{rec['question']} {o}" for o in options]
    assert chosen["queries"][:-4] == plain["queries"]  # the question and its event phrases
    assert ids(chosen) != ids(plain)


def test_a_known_question_finds_its_moment_in_the_top_five(run, day):
    """D1-001's evidence (Alice: "I've already screwed in one screw.") is in its target
    clips; hybrid ranks the clip right after them first, max-sim over the keys puts both
    inside one anchor's ±1 window (anchors are spread, so not both as anchors)."""
    rec = question(SCREWDRIVER)
    targets = set(rec["target_clips"])
    hybrid = search(run, day, rec["question"], "--at", "DAY1 11:21")
    keys = search(run, day, rec["question"], "--at", "DAY1 11:21", "--retrieval", "keys")
    with Memory(day, create=False) as m:
        idx = {c.id: c.idx for c in m.clips(ids(hybrid) + ids(keys)).values()}
    assert any(min(abs(idx[i] - t) for t in targets) <= 1 for i in ids(hybrid))
    assert all(min(abs(idx[i] - t) for i in ids(keys)) <= 1 for t in targets)


@pytest.mark.slow
def test_search_equals_the_first_round_of_ask(run, day, hub):
    """One real solver call (one round, Δ0 and a short reply keep it cheap; neither
    changes round 1's anchors): the queries, anchors and keys are search's."""
    rec = question(SCREWDRIVER)
    options = [rec[f"choice_{c}"] for c in "abcd"]
    out = search(run, day, rec["question"], "--at", "DAY1 11:21", "--choices", "|".join(options))
    with Memory(day, create=False) as m:
        answer = ask(m, hub, rec["question"], at=parse_moment("DAY1 11:21"), loop="single",
                     max_rounds=1, delta=0, answer_tokens=64, choices=options)
    first = answer.rounds[0]
    assert out["queries"] == first.queries and len(first.queries) >= 5
    assert ids(out) == [a["clip_id"] for a in first.anchors]
    assert [m["matched"] for m in out["moments"]] == [a["key"] for a in first.anchors]


# ---- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("args,message,code", [
    (("   ",), "the question is empty", 2),  # 2: what was typed cannot be used (docs/errors.md)
    (("--at", "DAY1 09:00", "where is my power bank?"),
     "nothing in memory ends before the question time DAY1 09:00:00; the memory covers", 1),
    (("--from", "DAY1 12:00", "--to", "DAY1 13:00", "where is my power bank?"),
     "nothing in memory ends between DAY1 12:00:00 and DAY1 13:00:00; widen --from/--to", 1),
    (("--choices", "Tasha||Shure", "who?"), "choice B is empty", 2),
])
def test_bad_questions_get_asks_one_line_error(run, two_days, args, message, code):
    r = run("search", "--memory", str(two_days), *args)
    assert r.exit_code == code and r.output.startswith(f"Error: {message}")
    assert len(r.output.splitlines()) == 1
    assert run("ask", "--memory", str(two_days), *args).output == r.output


def test_an_empty_memory_is_asks_error_too(run, tmp_path):
    Memory(tmp_path / "empty.db").close()
    r = run("search", "--memory", str(tmp_path / "empty.db"), "where are my keys?")
    assert r.exit_code == 1 and "is empty; ingest footage first" in r.output
    assert run("ask", "--memory", str(tmp_path / "empty.db"), "where are my keys?").output \
        == r.output


def test_first_round_refuses_what_ask_refuses(memory, hub):
    """The library path too, not only the command: no embedding for a question ask refuses."""
    mark = hub.usage.mark()
    with pytest.raises(AskError, match="is empty; ingest footage first"):
        first_round(memory, hub.embedder, "where are my keys?", AskOptions())
    add_clips(memory, 3, t0=parse_moment("DAY1 10:00"))
    with pytest.raises(AskError, match="the question is empty"):
        first_round(memory, hub.embedder, " ", AskOptions())
    with pytest.raises(AskError, match="nothing in memory ends before the question time"):
        first_round(memory, hub.embedder, "keys?", AskOptions(at=parse_moment("DAY1 09:00")))
    assert hub.usage.summary(mark)["calls"] == 0


def test_search_loads_the_embedder_and_never_the_solver(two_days, cli_home):
    """Only the solver's vocabulary is read (to refuse the question `ask` refuses as too
    long): no llama.cpp model is loaded, no context made."""
    code = ("import sys, json; from click.testing import CliRunner; from edge.cli import main; "
            "import models.llama_session as s; loads = []; "
            "s.LlamaSession.__init__ = lambda self, *a, **k: loads.append(a); "
            f"r = CliRunner().invoke(main, ['search', '--memory', {str(two_days)!r}, 'keys?']); "
            "assert r.exit_code == 0, r.output; print(json.dumps([loads, sorted("
            "m for m in sys.modules if m.split('.')[0] in ('llama_cpp', 'onnxruntime'))]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    loads, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "onnxruntime" in loaded and loads == []


def test_search_declares_asks_question_options():
    from edge.cli.ask import ask as ask_command
    from edge.cli.search import search as search_command

    def spec(command, name):
        p = next(p for p in command.params if p.name == name)
        return (p.opts, p.secondary_opts, repr(p.type), p.default, p.show_default)

    for name in ("at", "from_", "to", "auto_window", "top_n", "retrieval", "key_types",
                 "fusion", "rrf_k", "choices", "as_json"):
        assert spec(ask_command, name) == spec(search_command, name), name


def test_a_persons_clip_that_retrieval_did_not_score_shows_no_score():
    """`edge search "Barack Obama"` lists the clips he was seen in first; one retrieval did
    not score shows — rather than 0.0000 (which read as a failed match)."""
    from edge.cli.render.ask import search_lines

    moment = {"when": "2025-03-01 09:03:30", "matched": "face", "clip_id": 8, "caption": "c"}
    lines = search_lines({"moments": [{**moment, "score": 0.0}, {**moment, "score": 0.1818},
                                      {**moment, "score": 0.0, "matched": "caption"}],
                          "note": "", "scope": {"label": "", "start": None, "end": None},
                          "queries": ["Barack Obama"], "ms": 40})
    assert lines[0].split()[3] == "—" and "0.0000" not in lines[0]
    assert lines[1].split()[3] == "0.1818" and lines[2].split()[3] == "0.0000"
