"""``edge bench qa`` (edge.bench): the EgoLifeQA loader on the real question files and its
clear errors, the metrics on a small caption memory where the answers are known, the JSON
result, ``--split``, ``--set`` and the named sets. Fast: the real embedder on 14 clips."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from edge.bench import load_questions, plan, run_qa, select
from edge.bench.levers import build_options, parse_sets
from edge.bench.qa import caption_index, ensure_memory, part_of, unscored_reason
from edge.bench.questions import NAMED_SETS, resolve_set
from edge.cli import main
from edge.errors import BenchError
from edge.ingest.captions import ingest_caption_file
from edge.store import Memory
from tests.conftest import EGOLIFE_DAY1, ROOT, SHARED, shared

EASY = ROOT / "benchmarks" / "egolife_day1_questions.json"

SCENES = [  # one 30 s clip each on DAY1 from 10:00, then two on DAY2
    "I water the orange cactus on the balcony", "Lucia folds paper cranes at the desk",
    "Alice tunes the red guitar in the living room", "Shure fries dumplings in the kitchen",
    "Tasha assembles a wooden bookshelf with a screwdriver",
    "I charge the power bank by the window", "Katrina paints a blue flower on a canvas",
    "Jake counts the plastic cups on the table", "Alice waters the herbs in the garden",
    "Lucia reads a map of the subway", "Shure plays chess with Tasha",
    "I wash the dishes in the sink", "Katrina bakes chocolate cookies in the oven",
    "Jake repairs the broken lamp"]


def _caption(i: int, text: str) -> dict:
    day, t = (1, 36000 + 30 * i) if i < 12 else (2, 36000 + 30 * (i - 12))
    hms = lambda s: f"{s // 3600:02d}{s % 3600 // 60:02d}{s % 60:02d}00"  # noqa: E731
    return {"date": f"DAY{day}", "start_time": hms(t), "end_time": hms(t + 30),
            "text": text + ".", "event_key": text, "dialogue_key": f"talk while {text}",
            "object_key": text.split(" ", 2)[-1], "sum_key": text.lower()}


def _question(qid: str, question: str, targets, *, date="DAY1", time="12000000",
              tags=("single-clip",), split="dev", **extra) -> dict:
    q = {"ID": qid, "query_time": {"date": date, "time": time}, "type": "EntityLog",
         "question": question, "choice_a": "Alice", "choice_b": "Lucia", "choice_c": "Shure",
         "choice_d": "Tasha", "answer": "A", "target_time": {"date": "DAY1",
                                                             "time": "10010000"},
         "keywords": "guitar", "tags": list(tags), "split": split, **extra}
    if targets is not None:
        q["target_clips"] = list(targets)
    return q


GUITAR = "Who tuned the red guitar?"
QUESTIONS = [
    _question("Q1", GUITAR, [2]),                      # the anchor itself
    _question("Q2", GUITAR, [3], split="test"),        # one clip after the anchor
    _question("Q3", GUITAR, [2, 6], tags=("several-clips",), split="test"),  # 6 is 4 away
    _question("Q4", GUITAR, None),                     # answerable, not scorable
    _question("Q5", "Who tuned the red guitar yesterday?", [2], date="DAY2",
              time="20000000", tags=("single-clip", "neighbors"), type="EventRecall"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    (d / "caps.json").write_text(json.dumps([_caption(i, t) for i, t in enumerate(SCENES)]))
    (d / "qs.json").write_text(json.dumps(QUESTIONS))
    return d


@pytest.fixture(scope="module")
def result(files, hub):
    """One run with a single anchor (``top_n=1``), both modes."""
    p = plan(str(files / "qs.json"), files / "caps.json", files / "mem.db", files / "r.json",
             opts=build_options(parse_sets(["top_n=1"])))
    return run_qa(p, hub)


# ---- loader -----------------------------------------------------------------------------

def test_the_easy_set_loads_with_targets_inside_the_day_file():
    n = len(json.loads(shared(EGOLIFE_DAY1).read_text()))
    qs = load_questions(EASY, n)
    assert len(qs) == len(json.loads(EASY.read_text())) and len({q.id for q in qs}) == len(qs)
    assert all(q.target_clips and max(q.target_clips) < n for q in qs)
    assert all(q.at > q.target_at and q.answer in "ABCD" and len(q.choices) == 4 for q in qs)


def test_the_hard_format_with_tags_and_split_loads(tmp_path):
    sample = [_question("H-001", "What did Katrina bake the day after the guitar?", [12, 2],
                        date="DAY3", tags=["temporal-order", "several-clips"], split="test",
                        evidence="Katrina bakes cookies")]
    (tmp_path / "hard.json").write_text(json.dumps(sample))
    (q,) = load_questions(tmp_path / "hard.json", 3119)
    assert q.tags == ("temporal-order", "several-clips") and q.split == "test"
    assert q.target_clips == (12, 2) and q.day == 3


@pytest.mark.parametrize("change, field", [
    ({"query_time": {"date": "DAY1", "time": "11x"}}, "query_time: time '11x' is not HHMMSSFF"),
    ({"target_time": {"date": "day", "time": "11000000"}}, "target_time: date 'day'"),
    ({"choice_c": None}, "choice_c"),
    ({"target_clips": [2, 14]}, "target_clips: [14] outside the caption file (14 records"),
    ({"answer": "E"}, "answer: 'E'"),
    ({"split": "train"}, "split: 'train'"),
    ({"tags": "counting"}, "tags: must be a list"),
    ({"ID": "Q1"}, "ID 'Q1' is used twice"),
])
def test_a_broken_record_is_named_with_its_field(tmp_path, change, field):
    bad = {**QUESTIONS[1], **change}
    if change.get("choice_c", "") is None:
        del bad["choice_c"]
    (tmp_path / "q.json").write_text(json.dumps([QUESTIONS[0], bad]))
    with pytest.raises(BenchError) as e:
        load_questions(tmp_path / "q.json", len(SCENES))
    assert f"record 1 ({bad['ID']})" in str(e.value) and field in str(e.value)


def test_split_and_sample_select_questions(files):
    qs = load_questions(files / "qs.json", len(SCENES))
    assert [q.id for q in select(qs, "test")] == ["Q2", "Q3"]
    assert [q.id for q in select(qs, "dev", sample=2)] == ["Q1", "Q4"]
    assert len(select(qs, "all")) == 5


# ---- metrics on a memory where the answers are known ------------------------------------

def test_hit_rates_widen_with_delta_on_known_targets(result):
    rows = {r["id"]: r for r in result["per_question"]}
    for mode in ("question", "choices"):
        assert rows["Q1"][mode]["anchors"] == [2]  # the guitar clip, the only anchor
        assert [rows["Q2"][mode][f"hit@Δ{d}"] for d in (0, 1, 2)] == [False, True, True]
        assert rows["Q3"][mode]["hit@Δ0"] and not rows["Q3"][mode]["all@Δ2"]
        assert rows["Q1"][mode]["R@10"] == 1.0 and rows["Q1"][mode]["nDCG@10"] == 1.0
        assert rows["Q5"][mode]["hit@Δ0"]
    total = result["retrieval"]["question"]["total"]
    assert total["scored"] == 4 and total["hit@Δ0"] == 0.75 and total["hit@Δ1"] == 1.0
    assert total["all@Δ2"] == 0.75


def test_a_question_without_targets_is_counted_not_scored(result):
    assert result["questions"] == 5 and result["scored"] == 4
    assert result["unscored"] == {"no target_clips": 1}
    q4 = next(r for r in result["per_question"] if r["id"] == "Q4")
    assert q4["question"]["anchors"] and "hit@Δ0" not in q4["question"]


def test_breakdowns_per_type_tag_and_part(result):
    r = result["retrieval"]["choices"]
    assert set(r["by_type"]) == {"EntityLog", "EventRecall"}
    assert r["by_part"]["multi-day"]["scored"] == 1  # Q5: asked DAY2 about DAY1
    assert r["by_tag"]["several-clips"]["all@Δ2"] == 0.0
    assert r["by_tag"]["neighbors"]["n"] == 1 and r["by_tag"]["single-clip"]["n"] == 4


def test_a_target_clip_not_in_the_memory_makes_the_question_unscorable(files, hub, tmp_path):
    """(moved from the retired egolife_eval.py) a partial memory scores what it holds."""
    qs = load_questions(files / "qs.json", len(SCENES))
    with Memory(tmp_path / "part.db") as m:
        ingest_caption_file(m, hub, files / "caps.json", limit=3)
        index = caption_index(m, files / "caps.json")
        assert index.missing == len(SCENES) - 3
        assert unscored_reason(qs[0], index) is None  # target 2 is stored
        assert unscored_reason(qs[2], index) == "a target clip is not in the memory"
        told, seen = [], []
        index, added = ensure_memory(m, hub, files / "caps.json", on_progress=seen.append,
                                     on_missing=lambda n, total: told.append((n, total)))
        assert added == len(SCENES) - 3 and index.missing == 0
        assert told == [(len(SCENES) - 3, len(SCENES))]  # said once, before ingesting
        assert sum(seen) == len(SCENES)  # every record gone through, the stored ones too
        told.clear()
        ensure_memory(m, hub, files / "caps.json", on_missing=lambda n, t: told.append(n))
        assert told == []  # nothing missing: nothing said
        assert part_of(qs[4], index) == "multi-day" and part_of(qs[0], index) == "one-day"


def test_answer_summary_counts_accuracy_cost_and_hits_of_scored_questions():
    from edge.bench.answering import summarize_answers

    rows = [{"scored": True, "correct": True, "hit@Δ2": True, "all@Δ2": False, "rounds": 1,
             "calls": 2, "tokens_in": 1000, "tokens_out": 101, "seconds": 10.0},
            {"scored": False, "correct": False, "rounds": 3, "calls": 6, "tokens_in": 3001,
             "tokens_out": 300, "seconds": 30.0}]
    s = summarize_answers(rows)
    assert (s["n"], s["scored"], s["accuracy"], s["hit@Δ2"], s["all@Δ2"]) == (2, 1, 0.5, 1.0,
                                                                              0.0)
    assert s["rounds_mean"] == 2 and s["calls_mean"] == 4 and s["tokens_in_mean"] == 2000
    assert s["seconds_p50"] == 20.0 and s["seconds_p95"] == 29.0


def test_the_loss_steps_are_scored_on_the_questions_that_have_them_all():
    """Issue 26 item 1: accuracy at each step of the loss table, hand-computed."""
    from edge.bench.answering import loss_summary
    from edge.bench.report import loss_table

    rows = [{"correct": True, "gold": True, "gold_distilled": True, "round1": True,
             "solver_correct": True},
            {"correct": False, "gold": True, "gold_distilled": True, "round1": False,
             "solver_correct": False},
            {"correct": True, "gold": True, "gold_distilled": False, "round1": False,
             "solver_correct": False},  # the grounding replaced a wrong letter
            {"correct": False, "gold": False, "gold_distilled": False, "round1": False,
             "solver_correct": False},
            {"correct": True, "round1": True}]  # not scorable: no gold steps, left out
    assert loss_summary(rows) == {"n": 4, "gold": 0.75, "gold_distilled": 0.5,
                                  "round1": 0.25, "solver": 0.25, "loop": 0.5}
    assert loss_summary(rows[4:]) is None
    lines = loss_table({"total": {"loss": loss_summary(rows)},
                        "by_part": {"one-day": {"loss": None}}})
    assert lines[2] == "| **all** | 4 | 0.75 | 0.5 | 0.25 | 0.25 | 0.5 |" and len(lines) == 3
    old = [{k: v for k, v in r.items() if k != "solver_correct"} for r in rows]
    assert loss_summary(old)["solver"] is None  # results written before the grounding


def test_the_grounding_summary_counts_replaced_letters_won_and_lost():
    from edge.bench.answering import grounding_summary

    def row(solver, answer, truth):
        return {"solver_answer": solver, "answer": answer, "correct": answer == truth,
                "solver_correct": solver == truth}

    rows = [row("A", "A", "A"), row("A", "B", "B"), row("C", "B", "C"), row("D", "B", "A"),
            {"answer": "Alice", "correct": True}]  # an open answer: not counted
    assert grounding_summary(rows) == {"n": 4, "replaced": 3, "won": 1, "lost": 1}
    assert grounding_summary(rows[4:]) is None


@pytest.mark.slow
def test_answering_with_the_loss_steps_reads_the_target_clips(files, hub, tmp_path):
    """One scorable question answered by ask and from its target clip, raw and distilled:
    the gold steps read the target clip (Alice tunes the red guitar) and nothing else, and
    every step is scored (whether the test profile's solver gets it right is its own)."""
    p = plan(str(files / "qs.json"), files / "caps.json", files / "mem.db",
             tmp_path / "a.json", split="dev", sample=1, modes=("question",), answer=True,
             opts=build_options(parse_sets(["max_rounds=1"])))
    res = run_qa(p, hub)
    row = res["per_question_answers"][0]
    with Memory(files / "mem.db") as m:
        target = caption_index(m, files / "caps.json").clip_ids[2]
    assert row["id"] == "Q1" and row["gold_clips"] == [target] == row["gold_distilled_clips"]
    assert {row["gold_answer"], row["gold_distilled_answer"]} <= set("ABCD")
    assert row["gold"] == (row["gold_answer"] == "A")
    # one round: its reply is the solver's letter; the answer is that letter grounded
    assert row["round1"] == row["solver_correct"] == (row["solver_answer"] == "A")
    assert row["correct"] == (row["answer"] == "A")
    loss = res["answering"]["total"]["loss"]
    assert loss["n"] == 1 and loss["gold"] == float(row["gold"])
    assert loss["solver"] == float(row["solver_correct"]) and loss["loop"] == float(row["correct"])
    grounding = res["answering"]["total"]["grounding"]
    replaced = int(row["answer"] != row["solver_answer"])
    assert grounding["n"] == 1 and grounding["replaced"] == replaced
    from edge.bench.report import markdown
    assert f"| **all** | 1 | {float(row['gold'])} | " in markdown(res)


@pytest.mark.slow
def test_an_open_answer_is_judged_and_its_citations_checked(files, hub, tmp_path):
    """``--answer --open`` on the hard-set format (issue 26 item 3): asked without its
    options, the free answer judged against the right option's text, and every clip it
    cites judged by the report checker (support 0–1) and placed against the target."""
    p = plan(str(files / "qs.json"), files / "caps.json", files / "mem.db",
             tmp_path / "o.json", split="dev", sample=1, modes=("question",), answer=True,
             open_ended=True, opts=build_options(parse_sets(["max_rounds=1"])))
    res = run_qa(p, hub)
    row = res["per_question_answers"][0]
    assert row["id"] == "Q1" and row["truth"] == "Alice" and row["judged"] in (True, False)
    assert "gold" not in row and isinstance(row["flagged"], bool)
    with Memory(files / "mem.db") as m:
        index = caption_index(m, files / "caps.json")
    for c in row["citations"]:
        assert 0.0 <= c["support"] <= 1.0 and c["clip_id"] in index.index_of
        assert c["near_target"] == (abs(index.index_of[c["clip_id"]] - 2) <= 2)
    cites = res["answering"]["total"]["citations"]
    assert cites["citations"] == len(row["citations"]) and cites["flagged"] == float(row["flagged"])


# ---- the command ------------------------------------------------------------------------

def test_the_json_result_and_the_split(files, cli_home):
    out = files / "cli.json"
    r = CliRunner().invoke(main, [
        "bench", "qa", "--questions", str(files / "qs.json"), "--captions",
        str(files / "caps.json"), "--memory", str(files / "mem.db"), "--split", "test",
        "--no-choices", "--retrieval", "keys", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res == json.loads(out.read_text())
    assert [q["id"] for q in res["per_question"]] == ["Q2", "Q3"] and res["split"] == "test"
    assert res["modes"] == ["question"] and set(res["retrieval"]) == {"question"}
    summary = res["retrieval"]["question"]
    assert {"total", "by_type", "by_tag", "by_part"} <= set(summary)
    assert {"hit@Δ0", "hit@Δ1", "hit@Δ2", "all@Δ2", "R@10", "nDCG@10", "ms_median",
            "ms_mean", "n", "scored"} <= set(summary["total"])
    assert res["options"]["retrieval"] == "keys" and res["answering"] is None


def test_the_tables_are_printed_without_json(files, cli_home):
    r = CliRunner().invoke(main, [
        "bench", "qa", "--questions", str(files / "qs.json"), "--captions",
        str(files / "caps.json"), "--memory", str(files / "mem.db"), "--out",
        str(files / "t.json"), "--set", "top_n=1"])
    assert r.exit_code == 0, r.output
    assert "| **all** | 4 | 0.75 | 1.0 |" in r.stdout and "| part: multi-day | 1 |" in r.stdout
    assert "not scored for hits: 1 question(s), no target_clips" in r.stdout


def test_set_reads_any_ask_option_by_its_type():
    sets = parse_sets(["delta=1", "decompose=true", "key_types=event,caption", "top_n=none",
                       "window=DAY1 10:00..DAY1 12:00", "rrf-k=10"])
    assert sets["delta"] == 1 and sets["decompose"] is True and sets["top_n"] is None
    assert sets["key_types"] == ("event", "caption") and sets["rrf_k"] == 10
    assert sets["window"].start == 36000.0 and sets["window"].end == 43200.0
    opts = build_options(sets, retrieval="keys", rrf_k=100)
    assert opts.retrieval == "keys" and opts.rrf_k == 10  # --set wins over the flag


@pytest.mark.parametrize("item, message", [
    ("speed=2", "--set speed: not an AskOptions field; one of window, auto_window"),
    ("at=3", "each question gives its own at"),
    ("delta", "expected KEY=VALUE"),
    ("delta=two", "--set delta='two'"),
    ("decompose=maybe", "expected true or false"),
])
def test_a_bad_set_is_a_clear_error(item, message):
    with pytest.raises(BenchError) as e:
        parse_sets([item])
    assert message in str(e.value)


def test_bad_levers_are_refused_before_any_work():
    with pytest.raises(BenchError, match="choose from"):
        build_options({}, key_types=("event", "smell"))
    with pytest.raises(BenchError, match="unknown retrieval"):
        build_options(parse_sets(["retrieval=fuzzy"]))


def test_the_named_set_easy_resolves_to_the_real_files():
    shared(EGOLIFE_DAY1)
    path, captions, named = resolve_set("easy")
    assert path == EASY and path.is_file() and named is NAMED_SETS["easy"]
    assert captions == SHARED / "egolife" / "A1_JAKE_day1_captions.json"
    p = plan("easy", split="dev")
    assert p.memory == ROOT / "benchmarks" / "results" / "day1.db"
    assert p.out == ROOT / "benchmarks" / "results" / "bench_qa_easy_dev.json"
    assert p.captions == captions and p.name == "easy"


def test_a_question_file_needs_its_caption_file(files):
    with pytest.raises(BenchError, match="--captions is needed"):
        plan(str(files / "qs.json"))
    with pytest.raises(BenchError, match="question file not found"):
        plan(str(files / "nope.json"), files / "caps.json")
