"""`edge chat` driven headless with Textual's pilot, on real memories and real models.

The day memory holds 40 real EgoLife records sampled across DAY1–DAY2 (every 24th of the
shared caption file), so the timeline has many hours; questions go to the real embedder and
the real 0.5B solver.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from edge.ingest.captions import ingest_caption_file
from edge.store import Memory
from edge.timeline import parse_moment
from tests.conftest import EGOLIFE_DAY1, FOOTAGE, ROOT, shared

pytest.importorskip("textual")

from textual.widgets import Input, Tree  # noqa: E402

from tui.app import EdgeApp  # noqa: E402
from tui.screens.chat import ChatScreen  # noqa: E402
from tui.screens.clip import ClipScreen  # noqa: E402
from tui.screens.help import HelpScreen  # noqa: E402
from tui.screens.report import ReportScreen  # noqa: E402
from tui.screens.timeline import TimelineScreen  # noqa: E402
from tui.session import memory_status, remote_roles  # noqa: E402
from tui.widgets.clip_view import ClipView  # noqa: E402
from tui.widgets.conversation import Bubble  # noqa: E402
from tui.widgets.entries import EntryList, EntryRow  # noqa: E402
from tui.widgets.first_run import FirstRun  # noqa: E402
from tui.widgets.status_bar import StatusBar  # noqa: E402

SIZE = (130, 40)
ASK = {"max_rounds": 1, "top_n": 3, "loop": "single"}  # one solver call a question


@pytest.fixture(scope="module")
def day(tmp_path_factory, hub):
    """``(memory path, the 40 records)``: every 24th record of the shared caption day."""
    records = json.loads(shared(EGOLIFE_DAY1).read_text())[::24][:40]
    folder = tmp_path_factory.mktemp("day")
    src = folder / "sampled.json"
    src.write_text(json.dumps(records))
    path = folder / "memory.db"
    with Memory(path) as memory:
        assert ingest_caption_file(memory, hub, src, limit=40).clips_added == 40
    return path, records


def run(coro):
    return asyncio.run(coro)


async def until(pilot, cond, timeout: float, what: str) -> None:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await pilot.pause(0.2)


async def type_question(pilot, text: str) -> None:
    pilot.app.screen.query_one("#question", Input).value = text
    await pilot.press("enter")


@pytest.mark.slow
def test_a_question_shows_progress_then_the_answer_and_its_evidence(day, hub):
    path, _ = day

    async def go():
        app = EdgeApp(path, hub, delta=1, ask_options=ASK)
        async with app.run_test(size=SIZE) as pilot:
            chat = app.screen
            assert isinstance(chat, ChatScreen) and not chat.query_one(FirstRun).display
            await type_question(pilot, "Who did I hand the power bank to?")
            assert chat.asking
            pending = chat.query_one(".pending", Bubble)
            await until(pilot, lambda: "round 1/1: searching" in str(pending.render()), 60,
                        "the first progress line")
            drafts: list[str] = []  # the answer as shown while the solver writes it

            def drafted() -> bool:
                if chat.asking:
                    drafts.append(str(pending.render()))
                return not chat.asking

            await until(pilot, drafted, 400, "the answer")
            answer = chat.last_answer
            assert answer is not None and answer.answer.strip()
            shown = str(chat.query(Bubble).last().render())
            assert answer.answer.strip()[:40] in shown and "1 round(s)" in shown
            # streamed: a part of the answer showed in the pending turn before it ended (the
            # tiny solver's free reply is often cut inside its quotes: its retry streams)
            assert any(answer.answer.strip()[:12] in d for d in drafts), drafts[-1:]

            rows = list(chat.query(EntryRow))
            assert [r.entry.clip_id for r in rows] == [m.clip_id for m in answer.moments]
            assert [r.entry.when for r in rows] == [m.when for m in answer.moments]
            assert all(r.entry.cited == m.cited for r, m in zip(rows, answer.moments))
            assert all(not r.entry.keyframes for r in rows)  # caption-only clips
            assert all(r.query_one(".placeholder").render() for r in rows)
            # the clip where I hand Tasha a power bank is among the evidence
            target = parse_moment("DAY1 20:24:00")
            assert any(abs(m.t_start - target) < 1 for m in answer.moments), [
                m.when for m in answer.moments]

            # Enter on the first evidence row: the clip, its ±Δ neighbors, its full caption
            chat.query_one(EntryList).focus()
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ClipScreen), 10, "the clip")
            await pilot.pause()
            screen = app.screen
            with Memory(path, create=False) as m:
                clip = m.clips([rows[0].entry.clip_id])[rows[0].entry.clip_id]
                before, after = m.neighbors(clip, 1)
            assert screen.query_one(ClipView).entry.caption == clip.caption
            assert [r.entry.clip_id for r in screen.query_one(EntryList).query(EntryRow)] == [
                c.id for c in [*reversed(before), *after]]
            await pilot.press("escape")
            assert isinstance(app.screen, ChatScreen)
        return answer

    answer = run(go())
    with Memory(path, create=False) as m:  # the question's model calls were stored
        calls = {c["role"]: c["calls"] for c in m.call_totals() if c["command"] == "chat"}
    assert calls.get("solver", 0) >= answer.usage["llm"]["calls"] >= 1


@pytest.mark.slow
def test_a_report_line_opens_the_report_beside_citations_that_open_their_clips(day, hub):
    path, _ = day

    async def go():
        app = EdgeApp(path, hub, delta=1, ask_options=ASK)
        async with app.run_test(size=SIZE) as pilot:
            chat = app.screen
            await type_question(pilot, "/report DAY1 bullet")
            await until(pilot, lambda: isinstance(app.screen, ReportScreen), 400,
                        "the report")
            await pilot.pause()
            screen = app.screen
            rep = screen.query_one("#report").render()
            report = screen.report
            assert report.scope == "DAY1" and report.style == "bullet" and report.sentences
            assert report.sentences[0].when[0] in str(rep) and "precision" in str(rep)
            rows = list(screen.query(EntryRow))
            cited = list(dict.fromkeys(c for s in report.sentences for c in s.clips))
            assert [r.entry.clip_id for r in rows] == cited
            assert all(r.entry.tag.startswith("cited · support ") for r in rows)
            await pilot.press("enter")  # the first citation: its clip, neighbors, caption
            await until(pilot, lambda: isinstance(app.screen, ClipScreen), 10, "the clip")
            assert app.screen.clip_id == cited[0]
            await pilot.press("escape")
            assert isinstance(app.screen, ReportScreen)
            await pilot.press("escape")
            assert app.screen is chat and "DAY1 report (bullet)" in str(
                chat.query(Bubble).last().render())

    run(go())


@pytest.mark.slow
def test_a_memory_that_refuses_writes_still_shows_the_answer(tmp_path, hub):
    """The chat stores a question's calls after the model calls; a memory that refuses that
    write (a read-only file) showed the write error instead of the answer."""
    from tests.factories import add_clips

    path = tmp_path / "ro.db"
    with Memory(path) as m:
        add_clips(m, ["I put the black power bank into the desk drawer."], keys="caption")
        m.db.execute("CREATE TRIGGER ro BEFORE INSERT ON calls BEGIN "
                     "SELECT RAISE(ABORT, 'attempt to write a readonly database'); END")

    async def go():
        app = EdgeApp(path, hub, delta=1, ask_options=ASK)
        async with app.run_test(size=SIZE) as pilot:
            chat = app.screen
            await type_question(pilot, "Where did I put the power bank?")
            await until(pilot, lambda: not chat.asking, 400, "the answer")
            await pilot.pause(0.5)
            last = chat.query(Bubble).last()
            assert last.has_class("answer") and chat.last_answer is not None
            notes = [n.message for n in app._notifications]
            assert any("were not recorded" in n for n in notes), notes

    run(go())


@pytest.mark.slow  # the day memory is built with the real embedder
def test_the_timeline_counts_clips_per_hour(day, hub):
    path, records = day
    expected = Counter((r["date"], int(r["start_time"][:2])) for r in records)

    async def go():
        app = EdgeApp(path, hub)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+t")
            await until(pilot, lambda: isinstance(app.screen, TimelineScreen), 10, "timeline")
            tree = app.screen.query_one(Tree)
            days = list(tree.root.children)
            assert [str(d.label).split()[0] for d in days] == ["DAY1", "DAY2"]
            hours = {}
            for d in days:
                for h in d.children:
                    label = str(h.label)
                    hours[(d.data[1], int(label[:2]))] = int(label.split()[-2])
            assert hours == expected
            # opening an hour lists exactly its clips; moving onto one shows it beside
            node = days[0].children[0]
            node.expand()
            await pilot.pause()
            assert len(node.children) == expected[("DAY1", 11)]
            assert str(node.children[0].label).startswith("11:09:43")
            tree.move_cursor(node.children[0])
            await until(pilot, lambda: app.screen.query_one(ClipView).entry is not None, 10,
                        "the highlighted clip")
            assert app.screen.query_one(ClipView).entry.caption == records[0]["text"].strip()
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ClipScreen), 10, "the clip")
            await pilot.press("escape")
            await pilot.press("escape")
            assert isinstance(app.screen, ChatScreen)
            await pilot.press("f1")
            assert isinstance(app.screen, HelpScreen)
            await pilot.press("escape")
            assert isinstance(app.screen, ChatScreen)

    run(go())


@pytest.mark.slow
def test_escape_cancels_a_running_question_at_once(day, hub):
    path, _ = day

    async def go():
        # one anchor, no neighbors: the solver call that may start before Esc is short
        app = EdgeApp(path, hub, delta=0, ask_options={**ASK, "top_n": 1})
        async with app.run_test(size=SIZE) as pilot:
            chat = app.screen
            # 1. The worker is stuck behind a previous question's model call (the test holds
            # the lock): Esc frees the screen at once; the worker then stops without a call.
            calls = hub.usage.mark()
            app.ask_lock.acquire()
            try:
                await type_question(pilot, "Who did I hand the power bank to?")
                pending = chat.query_one(".pending", Bubble)
                await until(pilot, lambda: "waiting for the previous" in str(pending.render()),
                            30, "the worker to wait")
                await pilot.press("escape")
                assert not chat.asking and "cancelled" in str(pending.render())
                assert chat.query_one("#question", Input).has_focus
            finally:
                app.ask_lock.release()
            # 2. Cancelled while it runs: it stops at its next progress point, or its late
            # result is dropped; either way nothing reaches the screen. The cancelled turn
            # above gives way to the new question (issue 29: it stayed above the answer).
            await type_question(pilot, "Who did I hand the power bank to?")
            assert not chat.query(".cancelled") and len(chat.query(".question")) == 1
            pending = chat.query_one(".pending", Bubble)
            await until(pilot, lambda: "round 1/1" in str(pending.render()), 60, "progress")
            assert app.ask_lock.locked()
            await pilot.press("escape")
            assert not chat.asking and "cancelled" in str(pending.render())
            await until(pilot, lambda: not app.ask_lock.locked(), 300, "the worker to stop")
            await pilot.pause(0.5)
            assert chat.last_answer is None and not chat.query(".answer")
            assert not list(chat.query(EntryRow))
            solver = [r for r in hub.usage.records[calls:] if r.role == "solver"]
            assert len(solver) <= 1  # at most the one solver call that had started

    run(go())


LONG = {"max_rounds": 1, "top_n": 12, "loop": "single"}
"""Twelve anchors: the solver reads a prompt of ~2000 tokens, many seconds on 2 cores."""


async def start_long_solver_call(pilot) -> None:
    """Ask a question and return once its (long) solver call is under way."""
    await type_question(pilot, "Who did I hand the power bank to?")
    pending = pilot.app.screen.query_one(".pending", Bubble)
    await until(pilot, lambda: "the solver reads" in str(pending.render()), 120,
                "the solver call")
    await pilot.pause(0.5)


def solver_calls_since(hub, mark: int) -> list:
    return [r for r in hub.usage.records[mark:] if r.role == "solver"]


@pytest.mark.slow
def test_escape_stops_the_model_call_itself(day, hub):
    """Esc does not only free the screen: the solver call in flight is aborted (it is never
    completed, so never counted) and the worker ends within a moment."""
    path, _ = day

    async def go():
        app = EdgeApp(path, hub, delta=0, ask_options=LONG)
        async with app.run_test(size=SIZE) as pilot:
            await start_long_solver_call(pilot)
            assert app.ask_lock.locked()
            mark, t0 = hub.usage.mark(), time.monotonic()
            await pilot.press("escape")
            await until(pilot, lambda: not app.ask_lock.locked(), 300, "the worker to end")
            return mark, time.monotonic() - t0

    mark, took = run(go())
    assert solver_calls_since(hub, mark) == []  # the call did not run to its end
    assert took < 5.0, f"the worker ended {took:.1f} s after Esc"


@pytest.mark.slow
def test_ctrl_q_quits_at_once_while_a_model_call_runs(day, hub):
    """Ctrl+Q during the solver call: the app, its worker thread and the event loop (which
    joins the thread) are all done within seconds, and the call was aborted."""
    path, _ = day

    async def go():
        app = EdgeApp(path, hub, delta=0, ask_options=LONG)
        async with app.run_test(size=SIZE) as pilot:
            await start_long_solver_call(pilot)
            mark, t0 = hub.usage.mark(), time.monotonic()
            await pilot.press("ctrl+q")
        return mark, t0

    mark, t0 = run(go())
    took = time.monotonic() - t0
    assert solver_calls_since(hub, mark) == []
    assert took < 5.0, f"quitting took {took:.1f} s"


@pytest.mark.slow  # the caption ingest embeds the keys with the real embedder
def test_last_ingest_follows_a_caption_ingest_that_resumes_its_file(tmp_path, hub,
                                                                   monkeypatch):
    """``edge ingest-captions --limit 2`` three days ago, the rest of the file now, while the
    chat is open: the status bar's last ingest moves to now on its own refresh instead of
    keeping the date the file was first registered."""
    import re
    from datetime import datetime

    import tui.app

    monkeypatch.setattr(tui.app, "STATUS_EVERY", 0.2)
    src = tmp_path / "captions.json"
    src.write_text(json.dumps(json.loads(shared(EGOLIFE_DAY1).read_text())[:4]))
    path = tmp_path / "m.db"
    with Memory(path) as memory:
        assert ingest_caption_file(memory, hub, src, limit=2).clips_added == 2
        for table in ("sources", "clips"):  # that ingest was 3 days ago
            memory.db.execute(f"UPDATE {table} SET added_at = added_at - 3 * 86400")

    def last_ingest(bar) -> float:
        when = re.search(r"last ingest (\S+ \S+)", str(bar.render())).group(1)
        return datetime.strptime(when, "%Y-%m-%d %H:%M").timestamp()

    async def go():
        app = EdgeApp(path, hub)
        async with app.run_test(size=(200, 30)) as pilot:
            bar = app.screen.query_one(StatusBar)
            assert "2 clips" in str(bar.render())
            assert time.time() - last_ingest(bar) > 2 * 86400
            added = time.time()
            with Memory(path, create=False) as memory:
                assert ingest_caption_file(memory, hub, src).status == "resumed"
            await until(pilot, lambda: "4 clips" in str(bar.render()), 10, "the refresh")
            return added, last_ingest(bar)

    added, shown = run(go())
    assert added - 60 <= shown <= time.time()


def test_first_run_says_how_to_ingest_instead_of_failing(tmp_path, hub):
    missing = tmp_path / "new" / "memory.db"

    async def go(path: Path, how: str):
        app = EdgeApp(path, hub)
        async with app.run_test(size=SIZE) as pilot:
            first = app.screen.query_one(FirstRun)
            assert first.display
            text = str(first.render())
            assert how in text
            assert f"edge --memory {path} ingest " in text
            assert f"edge --memory {path} ingest-captions " in text
            await type_question(pilot, "where are my keys?")
            await pilot.press("ctrl+t")  # nothing to browse: a notice, not a crash
            await pilot.pause()
            assert isinstance(app.screen, ChatScreen) and not app.screen.asking
            assert "no memory yet" in str(app.screen.query_one(StatusBar).render()) or \
                "0 clips" in str(app.screen.query_one(StatusBar).render())

    run(go(missing, "does not exist"))
    assert not missing.exists() and not missing.parent.exists()  # the chat never creates it
    empty = tmp_path / "empty.db"
    Memory(empty).close()
    run(go(empty, "holds no clips"))
    junk = tmp_path / "junk.db"  # not a memory: the reason, and the file left as it was
    junk.write_text("not a database, " * 300)
    run(go(junk, "not a usable memory file"))
    assert junk.read_text() == "not a database, " * 300


def test_f1_help_lists_enter_in_the_chat(tmp_path, hub):
    """F1 from the chat: the chat's own section names Enter (ask / open the selected
    moment), not only the generic list keys. No model loads: the memory does not exist."""
    import io

    from rich.console import Console

    from tui.screens.help import bindings_table

    async def go():
        app = EdgeApp(tmp_path / "none.db", hub)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f1")
            assert isinstance(app.screen, HelpScreen)
            return app.screen.sections

    sections = run(go())
    console = Console(file=io.StringIO(), width=120, record=True)
    console.print(bindings_table(sections))
    lines = console.export_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["chat"])
    end = next(i for i, line in enumerate(lines) if line.split()[:1] == ["timeline"])
    enter = [line for line in lines[start:end] if " enter " in line]
    assert len(enter) == 1, lines[start:end]
    assert "ask (question box) / open the selected moment (evidence)" in enter[0]


@pytest.mark.slow  # the day memory is built with the real embedder
def test_status_bar_names_memory_clips_hours_profile_and_models(day, hub):
    path, _ = day

    async def go():
        app = EdgeApp(path, hub)
        async with app.run_test(size=(200, 30)):
            return str(app.screen.query_one(StatusBar).render())

    line = run(go())
    assert str(path) in line and "40 clips" in line and "DAY1, DAY2" in line
    assert "last ingest 20" in line and "profile tiny" in line and "models local" in line


def test_remote_roles_are_those_served_off_the_device(monkeypatch, hub):
    from edge.config import models_dir
    from models import ModelHub
    from models.registry import parse_manifest

    assert remote_roles(hub) == []
    monkeypatch.setenv("EDGE_SOLVER_BASE_URL", "http://127.0.0.1:9/v1")  # opt-in per role
    assert remote_roles(hub) == ["solver"]
    monkeypatch.delenv("EDGE_SOLVER_BASE_URL")
    manifest = parse_manifest({
        "models": {"local": {"backend": "llama.cpp", "source": "none"},
                   "far": {"backend": "openai", "source": "none",
                           "base_url": "http://gpu-box:8000/v1", "model": "big"}},
        "profiles": {"mixed": {"roles": {"memory_llm": "local", "solver": "far"}}}})
    mixed = ModelHub(manifest.profile("mixed"), models_dir())
    assert remote_roles(mixed) == ["solver"]
    status = memory_status(Path("x.db"), None, mixed)
    assert "models remote: solver" in status.line() and status.empty



def test_memory_status_counts_the_clips_of_a_synthetic_memory(tmp_path, hub):
    from tests.factories import add_clips

    path = tmp_path / "m.db"
    with Memory(path) as memory:
        add_clips(memory, 3, source="one", finish=True)
        add_clips(memory, 2, source="two", day="DAY2", finish=True)
        status = memory_status(path, memory, hub)
    assert (status.exists, status.empty, status.clips, status.days) == (True, False, 5,
                                                                        ["DAY1", "DAY2"])
    line = status.line()
    assert line.startswith(f"{path} · 5 clips · 0.04 h (DAY1, DAY2) · last ingest ")
    assert line.endswith(" · profile tiny · models local")

@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Image.Image.getdata:DeprecationWarning")  # textual-image
def test_a_clip_from_video_shows_its_keyframe(tmp_path, hub):
    from edge.ingest.run import ingest_paths

    path = tmp_path / "memory.db"
    with Memory(path) as memory:
        report = ingest_paths(memory, hub, [shared(FOOTAGE / "everyday_livingroom.mp4")])
        assert report.clips_added == 1
        clip = memory.all_clips()[0]
    assert clip.keyframes

    async def go():
        app = EdgeApp(path, hub)
        async with app.run_test(size=SIZE) as pilot:
            app.open_clip(clip.id)
            await until(pilot, lambda: isinstance(app.screen, ClipScreen), 10, "the clip")
            await pilot.pause()
            images = [w for w in app.screen.query("Keyframe *") if type(w).__name__.endswith(
                "Image")]
            assert len(images) == len(clip.keyframes)
            assert Path(images[0].image).is_file()
            assert Path(images[0].image).name == Path(clip.keyframes[0]).name
            # the half-block fallback (a terminal that cannot be queried) draws the same file
            from tui.widgets.keyframe import HalfBlocks

            blocks = HalfBlocks(images[0].image)
            blocks.styles.width, blocks.styles.height = 16, 6
            await app.screen.mount(blocks)
            await pilot.pause()
            line = blocks.render_line(0)
            assert line.text == "▀" * 16
            assert len({seg.style.color for seg in line} | {seg.style.bgcolor for seg in line}) > 2

    run(go())


def test_edge_cli_loads_textual_only_for_chat():
    code = ("import sys, edge.cli; from click.testing import CliRunner; "
            "r = CliRunner().invoke(edge.cli.main, ['chat', '--help']); "
            "assert r.exit_code == 0 and 'Esc cancels' in r.output, r.output; "
            "import edge.answer, edge.store; "
            "print('textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.slow  # the day memory is built with the real embedder
def test_panes_sit_side_by_side_and_stack_in_a_narrow_terminal(day, hub):
    path, _ = day

    async def go():
        app = EdgeApp(path, hub)
        async with app.run_test(size=(140, 40)) as pilot:
            chat, evidence = (app.screen.query_one(q) for q in ("#chat-pane", "#evidence-pane"))
            assert evidence.region.x >= chat.region.right and evidence.region.y == chat.region.y
            await pilot.resize_terminal(80, 40)
            await pilot.pause()
            assert app.screen.has_class("-narrow")
            assert evidence.region.y >= chat.region.bottom and evidence.region.width == 80
            await pilot.resize_terminal(140, 40)
            await pilot.pause()
            assert evidence.region.x >= chat.region.right

    run(go())


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Image.Image.getdata:DeprecationWarning")  # textual-image
def test_the_chat_reads_the_memory_while_the_recorder_writes_it(tmp_path, hub):
    """`edge record` (a real process replaying a shared video as a live source) writes the
    memory while the chat, in this process, shows its growing status and answers from it."""
    import signal

    from tests.test_record import LONG, _env, _record, _wait

    mem = tmp_path / "live.db"
    rec = _record(mem, "--url", str(shared(FOOTAGE / LONG)), "--realtime", "--speed", "6",
                  env=_env(tmp_path))

    def clips() -> int:
        if not mem.exists():
            return 0
        try:
            with Memory(mem, create=False) as m:
                return m.stats()["clips"]
        except Exception:  # the first writer may still be creating the schema
            return 0

    try:
        _wait(lambda: clips() >= 1, 300, rec)

        async def go():
            app = EdgeApp(mem, hub, delta=1, ask_options=ASK)
            async with app.run_test(size=SIZE) as pilot:
                chat = app.screen
                bar = app.screen.query_one(StatusBar)
                first = str(bar.render())
                assert "clip" in first and not chat.query_one(FirstRun).display
                await type_question(pilot, "What did I see?")
                await until(pilot, lambda: not chat.asking, 400, "the answer")
                answer = chat.last_answer
                assert answer is not None and answer.moments
                # the recorder goes on writing; the status bar follows it
                await until(pilot, lambda: clips() >= 2, 300, "a second clip")
                await pilot.press("ctrl+r")
                await pilot.pause(0.5)
                return first, str(app.screen.query_one(StatusBar).render()), answer

        first, later, answer = run(go())
        import re

        n_first, n_later = (int(re.search(r"(\d+) clips?\b", s).group(1))
                            for s in (first, later))
        assert n_later > n_first >= 1
    finally:
        rec.send_signal(signal.SIGTERM)
        rec.communicate(timeout=300)
    assert rec.returncode == 0


def test_a_report_line_is_recognised_in_any_case_as_its_words_are():
    from tui.screens.chat import is_report

    assert is_report("/report DAY1 bullet") and is_report("/Report day1")
    assert is_report("  /REPORT") and not is_report("/reports") and not is_report("report")
