"""Two tiers of memory construction (issue 13): the real-time tier stores a clip without a
memory-LLM call and queues its LLM work in the memory (m007); ``edge build`` consumes the
queue in clip order, each clip in one transaction; search and ask work on a partly built
memory and say how much of it is unbuilt."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from edge.build.lock import build_lock, lock_path
from edge.config import models_dir
from edge.ingest.captions import ingest_caption_file
from edge.ingest.memory_writer import Deferred
from edge.store import (
    INDEX_TYPES,
    KEY_TYPES,
    MIGRATIONS,
    BuildResult,
    Memory,
    apply_migrations,
    connect,
)
from tests.conftest import ROOT
from tests.factories import add_clips, unit_vectors

T0 = 11 * 3600.0
"""DAY1 11:00 on the EgoLife day clock: the first record's start (timeline seconds)."""
CAPTIONS = [
    "I pick up the red screwdriver from the workbench and loosen the screws of the shelf.",
    "Lucia says the flowers need water, and I fill the green watering can at the sink.",
    "I open the laptop on the desk and read an email about the grocery delivery.",
    "Shure plays the guitar in the living room while I sort the cables into a box.",
]


def _caption_file(path, captions=CAPTIONS, with_keys=()):
    """A caption file (EgoLife format) of ``captions``, 30 s apart from DAY1 11:00; the
    records whose index is in ``with_keys`` carry the four keys."""
    recs = []
    for i, text in enumerate(captions):
        m0, s0 = divmod(30 * i, 60)
        m1, s1 = divmod(30 * i + 30, 60)
        r = {"date": "DAY1", "start_time": f"11{m0:02d}{s0:02d}00",
             "end_time": f"11{m1:02d}{s1:02d}00", "text": text}
        if i in with_keys:
            r |= {"event_key": f"event of clip {i}", "dialogue_key": "no speech",
                  "object_key": f"object of clip {i}", "sum_key": text[:40]}
        recs.append(r)
    path.write_text(json.dumps(recs))
    return path


def _llm_calls(hub, mark):
    return [r for r in hub.usage.records[mark:] if r.role.startswith("memory_llm")]


def test_m007_migrates_a_memory_of_the_previous_version(tmp_path):
    path = tmp_path / "old.db"
    db = connect(path)
    previous = MIGRATIONS[:[name for name, _ in MIGRATIONS].index("m007_build_queue")]
    assert apply_migrations(db, previous) == [name for name, _ in previous]
    db.close()
    with Memory(path) as m:  # a memory built in full before the tiers: nothing queued
        ids = add_clips(m, 2)
        names = [r[0] for r in m.db.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == [name for name, _ in MIGRATIONS] and "m007_build_queue" in names
        assert m.queued() == [] and m.backlog()["clips"] == 0
        assert m.enqueue_pyramid_backfill() == 2  # --pyramid backfills the old clips
        assert [(q.clip_id, q.keys, q.pyramid) for q in m.queued()] == [
            (ids[0], False, True), (ids[1], False, True)]
        assert m.enqueue_pyramid_backfill() == 0
        assert m.migrate() == []


def test_realtime_caption_ingest_queues_the_llm_work_and_calls_no_llm(tmp_path, hub):
    src = _caption_file(tmp_path / "caps.json", with_keys=(0, 1))
    mark = hub.usage.mark()
    with Memory(tmp_path / "m.db") as m:
        res = ingest_caption_file(m, hub, src, deferred=Deferred(pyramid=True))
        assert res.clips_added == 4 and _llm_calls(hub, mark) == []
        q = m.queued()
        assert [(x.keys, x.pyramid) for x in q] == [(False, True), (False, True),
                                                   (True, True), (True, True)]
        clips = m.clips([x.clip_id for x in q], with_keys=True)
        # the file's keys are real-time (stored with vectors); the others have the caption
        assert set(clips[q[0].clip_id].keys) == set(INDEX_TYPES)
        assert set(clips[q[2].clip_id].keys) == {"caption"}
        assert m.db.execute("SELECT count(*) FROM key_vec").fetchone()[0] == 2 * 5 + 2
        b = m.backlog()
        assert (b["clips"], b["keys"], b["pyramid"], b["eta_seconds"]) == (4, 2, 4, None)
        assert b["hours"] == round(4 * 30 / 3600, 3)
    with Memory(tmp_path / "n.db") as m:  # keys given and no pyramid: nothing to defer
        ingest_caption_file(m, hub, _caption_file(tmp_path / "k.json", CAPTIONS[:2], (0, 1)),
                            deferred=Deferred(pyramid=False))
        assert m.queued() == [] and m.stats()["keys"] == 8


def test_an_unbuilt_clip_is_found_by_its_caption_vector_and_bm25(tmp_path, hub):
    from edge.answer import AskOptions
    from edge.answer.search import first_round
    from edge.recall.retrieval import bm25_retrieve, hybrid_retrieve, max_sim_retrieve

    with Memory(tmp_path / "m.db") as m:
        ingest_caption_file(m, hub, _caption_file(tmp_path / "caps.json"),
                            deferred=Deferred(pyramid=False))
        assert len(m.queued()) == 4  # no keys anywhere yet
        target = m.find_clip(T0 + 30, T0 + 60, CAPTIONS[1])
        q = "who said the flowers need water?"
        vec = hub.embedder.embed([q])[0]
        dense = max_sim_retrieve(m, vec, top_n=2, key_types=INDEX_TYPES)
        assert dense[0].clip_id == target and dense[0].key_type == "caption"
        assert bm25_retrieve(m, q, top_n=2)[0].clip_id == target
        assert hybrid_retrieve(m, q, vec, top_n=2, key_types=INDEX_TYPES)[0].clip_id == target
        found = first_round(m, hub.embedder, q, AskOptions(at=T0 + 4 * 30))
        assert found.anchors[0].clip_id == target
        assert "4 of the 4 clips in scope have no keys yet" in found.note


def test_asks_note_counts_the_unbuilt_clips_in_scope(tmp_path, hub):
    from edge.answer import AskOptions
    from edge.answer.question import start

    with Memory(tmp_path / "m.db") as m:
        ingest_caption_file(m, hub, _caption_file(tmp_path / "caps.json", with_keys=(0, 1)),
                            deferred=Deferred(pyramid=False))
        run = start(m, hub, "what did I read on the laptop?",
                    AskOptions(at=T0 + 4 * 30), None)
        assert "2 of the 4 clips in scope have no keys yet" in run.note.text
        run = start(m, hub, "what did I pick up?", AskOptions(at=T0 + 2 * 30), None)
        assert "no keys yet" not in run.note.text  # the first two clips have the file's keys


def test_a_pyramid_still_to_build_is_said_only_when_the_answer_would_use_it(tmp_path, hub):
    """Issue 29 item 4: a caption file's clips have their keys; waiting for the pyramid
    alone is no news for a plain question, but is for the merit loop or expansion."""
    from edge.answer import AskOptions
    from edge.answer.question import start

    with Memory(tmp_path / "m.db") as m:
        ingest_caption_file(m, hub, _caption_file(tmp_path / "caps.json",
                                                  with_keys=(0, 1, 2, 3)),
                            deferred=Deferred(pyramid=True))
        assert m.backlog()["pyramid"] == 4 and not m.backlog()["keys"]
        run = start(m, hub, "what did I read on the laptop?", AskOptions(at=T0 + 4 * 30), None)
        assert "pyramid" not in run.note.text and "not yet built" not in run.note.text
        run = start(m, hub, "what did I read on the laptop?",
                    AskOptions(at=T0 + 4 * 30, loop="merit"), None)
        assert "4 of the 4 clips in scope have no pyramid yet" in run.note.text
        assert run.note.text.count("edge build") == 1


def test_a_failed_build_transaction_keeps_the_clip_queued(tmp_path):
    with Memory(tmp_path / "m.db") as m:
        (cid,) = add_clips(m, 1)
        m.db.execute("DELETE FROM key_vec WHERE key_id IN (SELECT id FROM keys WHERE "
                     "type != 'caption')")
        m.db.execute("DELETE FROM keys WHERE type != 'caption'")
        m.db.execute("INSERT INTO build_queue VALUES(?, 1, 0, 0)", (cid,))
        (item,) = m.queued()
        bad = BuildResult(keys={k: (k, "llm") for k in KEY_TYPES},
                          key_vectors={k: np.zeros(3, np.float32) for k in KEY_TYPES})
        with pytest.raises(ValueError):
            m.complete_build(item, bad)
        assert m.queued() == [item] and m.stats()["keys"] == 0  # rolled back, nothing lost
        vecs = unit_vectors(4, seed=3)
        good = BuildResult(keys={k: (f"{k} text", "llm") for k in KEY_TYPES},
                           key_vectors={k: vecs[i] for i, k in enumerate(KEY_TYPES)},
                           seconds=2.5)
        assert m.complete_build(item, good) is True
        assert m.complete_build(item, good) is False  # built already: nothing twice
        assert m.queued() == [] and m.stats()["keys"] == 4
        assert m.bm25("dialogue", 5) and m.bm25("dialogue", 5)[0][0] == cid
        assert m.build_seconds(True, False) == 2.5


def test_stats_and_status_show_the_backlog_and_its_eta(tmp_path, run):
    mem = tmp_path / "m.db"
    with Memory(mem) as m:
        ids = add_clips(m, 3)
        m.enqueue_pyramid_backfill()
    out = run("--memory", mem, "stats").output
    assert "backlog  3 clip(s), 0.03 h of footage" in out and "ETA unknown" in out
    with Memory(mem) as m:
        m.db.execute("INSERT INTO builds(clip_id, keys, pyramid, seconds, built_at) "
                     "VALUES(?, 0, 1, 40, 0)", (ids[0],))
        m.db.execute("DELETE FROM build_queue WHERE clip_id = ?", (ids[0],))
    s = json.loads(run("--memory", mem, "stats", "--json").output)["backlog"]
    assert (s["clips"], s["pyramid"], s["eta_seconds"]) == (2, 2, 80.0)
    assert "backlog  2 clip(s)" in run("--memory", mem, "status").output
    assert "ETA 1 minute and 20 seconds" in run("--memory", mem, "stats").output


def test_a_second_builder_of_the_same_memory_is_refused_and_builds_nothing(tmp_path, run):
    """Two builds at once both ran the LLM for every clip and integrated the day twice
    (a global node counting 12 clips of a 6-clip memory): one builder per memory."""
    mem = tmp_path / "m.db"
    with Memory(mem) as m:
        add_clips(m, 2)
        m.enqueue_pyramid_backfill()
    with build_lock(mem):  # as a running `edge build` (or recorder) holds it
        r = run("--memory", mem, "build")
    assert r.exit_code == 1, r.output
    assert "another process" in r.output and "the clips stay queued" in r.output
    with Memory(mem, create=False) as m:
        assert len(m.queued()) == 2 and not m.call_totals()
    assert lock_path(mem).exists()  # released: the next build may take it
    with build_lock(mem):
        pass


def test_build_says_when_there_is_nothing_to_build(tmp_path, run):
    mem = tmp_path / "m.db"
    with Memory(mem) as m:
        add_clips(m, 2)
    r = run("--memory", mem, "build")
    assert r.exit_code == 0 and "Nothing to build: every clip of the memory is built." in r.output


def test_ingest_captions_later_leaves_the_queue_full(tmp_path, run):
    src = _caption_file(tmp_path / "caps.json")
    mem = tmp_path / "m.db"
    r = run("--memory", mem, "ingest-captions", src, "--no-pyramid")  # --later: the default
    assert r.exit_code == 0 and "4 clip(s), 0.03 h of footage wait" in r.output
    with Memory(mem, create=False) as m:
        assert len(m.queued()) == 4 and m.stats()["keys"] == 0
        assert not [c for c in m.call_totals() if c["role"].startswith("memory_llm")]


def _snapshot(m: Memory) -> dict:
    """What the LLM tier stored per clip (by clip time): keys, facts, clip node, links."""
    by_t = {c.id: c.t_start for c in m.all_clips()}
    keys = {(by_t[c], t, x) for c, t, x in m.db.execute(
        "SELECT clip_id, type, text FROM keys")}
    facts = [(by_t[c], t, k) for c, t, k in m.db.execute(
        "SELECT clip_id, text, kind FROM facts ORDER BY clip_id, t_start, id")]
    nodes = {(by_t[c], s) for c, s in m.db.execute("SELECT clip_id, summary FROM nodes_clip")}
    links = m.pyramid_stats()["links"]
    fts = {(by_t[c], k, f) for c, k, f in m.db.execute(
        "SELECT rowid, keys, facts FROM clip_text")}
    return {"keys": keys, "facts": facts, "nodes": nodes, "links": links, "fts": fts,
            "global": [r[0] for r in m.db.execute(
                "SELECT text FROM nodes_global ORDER BY scope, day, version")]}


@pytest.mark.slow
def test_build_drains_the_queue_into_what_synchronous_ingest_stores(tmp_path, hub):
    from edge.build.pyramid import Pyramid, PyramidOptions
    from edge.build.run import build

    src = _caption_file(tmp_path / "caps.json", CAPTIONS[:2])
    opts = PyramidOptions(global_every=20)
    # both runs from a cold KV cache: a restored prompt prefix is evaluated in other batches
    # than a whole prompt, and greedy replies may then differ by a word (LlamaCppLLM.reset)
    hub.reset_caches()
    with Memory(tmp_path / "sync.db") as m:
        ingest_caption_file(m, hub, src, pyramid=Pyramid(m, hub, opts))
        want = _snapshot(m)
    hub.reset_caches()
    with Memory(tmp_path / "tiers.db") as m:
        ingest_caption_file(m, hub, src, deferred=Deferred(pyramid=True))
        report = build(m, hub, options=opts)
        assert (report.built, report.remaining, len(report.clip_seconds)) == (2, 0, 2)
        got = _snapshot(m)
        assert m.db.execute("SELECT count(*) FROM builds").fetchone()[0] == 2
    assert got == want and want["facts"] and len(want["keys"]) == 10


def _queued_memory(tmp_path, hub, *, pyramid: bool):
    """A memory whose four caption-file clips wait for the LLM tier (keys, or the pyramid)."""
    mem = tmp_path / "m.db"
    with Memory(mem) as m:
        ingest_caption_file(m, hub, _caption_file(tmp_path / "caps.json"),
                            deferred=Deferred(pyramid=pyramid))
    return mem


def _cli_env(tmp_path) -> dict:
    return {**os.environ, "EDGE_HOME": str(tmp_path / "home"),
            "EDGE_MODELS_DIR": str(models_dir()), "PYTHONPATH": str(ROOT)}


def _build_cmd(mem) -> list[str]:
    return [sys.executable, "-m", "edge.cli", "--profile", "tiny", "--memory", str(mem),
            "build"]


def _interruptible_build(mem, env) -> subprocess.Popen:
    """`edge build` with its output merged as text and Ctrl-C restored: a shell running the
    tests in the background hands its children SIGINT ignored."""
    return subprocess.Popen(_build_cmd(mem), env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.slow
def test_sigkill_during_edge_build_loses_and_duplicates_nothing(tmp_path, hub):
    mem = _queued_memory(tmp_path, hub, pyramid=False)
    env = _cli_env(tmp_path)
    cmd = _build_cmd(mem)
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    built = 0
    while built == 0 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        with Memory(mem, create=False) as m:
            built = m.db.execute("SELECT count(*) FROM builds").fetchone()[0]
    assert proc.poll() is None and built > 0, "the build ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)

    def check(m: Memory) -> int:
        queued = {q.clip_id for q in m.queued()}
        for c in m.all_clips():
            types = [r[0] for r in m.db.execute("SELECT type FROM keys WHERE clip_id = ?",
                                                (c.id,))]
            builds = m.db.execute("SELECT count(*) FROM builds WHERE clip_id = ?",
                                  (c.id,)).fetchone()[0]
            want = (["caption"], 0) if c.id in queued else (sorted(INDEX_TYPES), 1)
            assert (sorted(types), builds) == want
        assert m.db.execute("SELECT count(*) FROM key_vec").fetchone()[0] == m.db.execute(
            "SELECT count(*) FROM keys").fetchone()[0]
        return len(queued)

    with Memory(mem, create=False) as m:
        assert 0 < check(m) < 4
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    with Memory(mem, create=False) as m:
        assert check(m) == 0 and m.stats()["keys"] == 16


@pytest.mark.slow
def test_ctrl_c_during_edge_build_stops_after_the_clip_and_says_what_remains(tmp_path, hub):
    mem = _queued_memory(tmp_path, hub, pyramid=False)
    proc = _interruptible_build(mem, _cli_env(tmp_path))
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        with Memory(mem, create=False) as m:
            if m.db.execute("SELECT count(*) FROM builds").fetchone()[0]:
                break
    assert proc.poll() is None, "the build ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)  # mid-clip: that clip is finished, then it stops
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 130 and "Traceback" not in out, out
    with Memory(mem, create=False) as m:
        built = m.db.execute("SELECT count(*) FROM builds").fetchone()[0]
        left = len(m.queued())
    assert built >= 1 and built + left == 4 and f"Stopped: {left} clip(s) remain" in out


@pytest.mark.slow
def test_a_second_ctrl_c_stops_the_model_call_in_progress_and_keeps_the_clip_queued(tmp_path,
                                                                                     hub):
    mem = _queued_memory(tmp_path, hub, pyramid=True)
    proc = _interruptible_build(mem, _cli_env(tmp_path))
    seen = []

    def read() -> None:  # the merged output, as it comes (tqdm writes \r, not lines)
        while ch := proc.stdout.read(1):
            seen.append(ch)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while "0/4 clips" not in "".join(seen) and time.monotonic() < deadline:
        assert proc.poll() is None, "".join(seen)
        time.sleep(0.1)
    time.sleep(3.0)  # the first clip's pyramid call is under way (it takes far longer)
    with Memory(mem, create=False) as m:
        built_before = m.db.execute("SELECT count(*) FROM builds").fetchone()[0]
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)  # now: the model call is cancelled
    proc.wait(timeout=300)
    reader.join(timeout=10)
    out = "".join(seen)
    assert proc.returncode == 130, out
    assert "Stopping now" in out and "Traceback" not in out and "Aborted" not in out, out
    with Memory(mem, create=False) as m:
        built = m.db.execute("SELECT count(*) FROM builds").fetchone()[0]
        left = len(m.queued())
        assert m.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        facts = m.db.execute("SELECT count(DISTINCT clip_id) FROM facts").fetchone()[0]
    # the clip in progress was dropped, not half-written: it is still queued
    assert built_before <= built <= built_before + 1 and built + left == 4
    assert facts <= built and f"Stopped: {left} clip(s) remain" in out
