"""The remote OpenAI-compatible backend against a REAL local server: llama-cpp-python's
``python -m llama_cpp.server`` serving the shipped Qwen2.5-Coder-0.5B GGUF (solver, memory
LLM) and the plumbing VLM (SmolLM2-135M + a random-weight projector) for the captioner."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from edge.cli import main
from edge.config import models_dir
from models import ConfigError, ModelHub, Profile, load_manifest, resolve_weights
from models.captioner import Frame
from models.llm import LLMOutputError
from models.registry import load_manifest_with_user
from models.remote import RemoteConfig, RemoteLLM, RemoteUnavailableError
from models.usage import UsageMeter
from tests.plumbing_vlm import write_random_projector

ROLES_ENV = [f"EDGE_{r}_{k}" for r in ("SOLVER", "MEMORY_LLM", "CAPTIONER")
             for k in ("BASE_URL", "MODEL", "API_KEY", "ALLOW_FRAMES", "MAX_RETRIES")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(models: list[dict], port: int, log: Path) -> subprocess.Popen:
    """``python -m llama_cpp.server`` on 127.0.0.1:``port`` with a config file."""
    cfg = log.with_suffix(".json")
    cfg.write_text(json.dumps({"host": "127.0.0.1", "port": port, "models": models}))
    return subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--config_file", str(cfg)],
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            env={**os.environ, "GGML_NO_BACKTRACE": "1"})


def wait_ready(proc: subprocess.Popen, url: str, log: Path, limit: float = 120.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited ({proc.returncode}): {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url + "/models", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"server not ready after {limit} s: {log.read_text()[-2000:]}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _weights(name: str) -> str:
    return str(resolve_weights(load_manifest().model(name), models_dir()))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Base URL (``http://127.0.0.1:PORT/v1``) of a real llama-cpp-python server."""
    d = tmp_path_factory.mktemp("server")
    mmproj = write_random_projector(d / "mmproj-plumbing.gguf", 576)
    port = free_port()
    log = d / "server.log"
    proc = start_server([
        {"model": _weights("qwen2.5-coder-0.5b-instruct"), "model_alias": "qwen-0.5b",
         "n_ctx": 4096, "n_threads": 2, "verbose": False},
        {"model": _weights("smollm2-135m-instruct"), "model_alias": "plumbing-vlm",
         "chat_format": "llava-1-5", "clip_model_path": str(mmproj), "n_ctx": 2048,
         "n_threads": 2, "verbose": False},
    ], port, log)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_ready(proc, url, log)
        yield url
    finally:
        stop(proc)


@pytest.fixture()
def clean_env(monkeypatch, tmp_path):
    for k in ROLES_ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("EDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EDGE_MODELS_DIR", str(models_dir()))
    return monkeypatch


ANSWER = {"type": "object", "properties": {"answer": {"type": "string"},
                                           "sufficient": {"type": "boolean"}},
          "required": ["answer", "sufficient"]}


@pytest.mark.slow
def test_remote_solver_from_a_user_profile_answers_valid_json(server, clean_env, tmp_path):
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(f"""
[models."remote-qwen"]
backend = "openai"
source = "none"
base_url = "{server}"
model = "qwen-0.5b"
api_key_env = "MY_TEST_KEY"
n_ctx = 4096
[profiles.frontier-test]
base = "tiny"
[profiles.frontier-test.roles]
solver = "remote-qwen"
""")
    clean_env.setenv("MY_TEST_KEY", "sk-local")
    hub = ModelHub(load_manifest_with_user(profiles).profile("frontier-test"), models_dir())
    try:
        solver = hub.llm("solver")
        assert isinstance(solver, RemoteLLM) and solver.config.api_key == "sk-local"
        assert hub.spec("memory_llm").backend == "llama.cpp"  # only the solver went remote
        msgs = [{"role": "system", "content": "Answer from the notes. Reply in JSON."},
                {"role": "user", "content": "Notes: [1] I put the keys in the red bowl.\n"
                 "Question: where are the keys?"}]
        pieces: list[str] = []  # on_token: the whole reply in one piece (not streamed)
        out = solver.chat_json(msgs, role="solver", schema=ANSWER, max_tokens=60,
                               on_token=pieces.append)
        assert "bowl" in out["answer"].lower() and out["sufficient"] is True, out
        assert len(pieces) == 1 and json.loads(pieces[0]) == out
        # llama-cpp-python rejects OpenAI's json_schema form; its json_object+schema is used
        assert solver.json_mode == "json_object"
        (rec,) = hub.usage.records  # the rejected probe is not counted; no repair was needed
        assert rec.role == "solver" and rec.model == "qwen-0.5b"
        assert rec.tokens_in > 20 and rec.tokens_out > 0  # the server's own counts
        assert rec.tokens_evaluated == rec.tokens_in  # a server does not say what it cached
    finally:
        hub.close()


@pytest.mark.slow
def test_remote_memory_llm_from_env_and_its_marked_failure(server, clean_env):
    clean_env.setenv("EDGE_MEMORY_LLM_BASE_URL", server)
    clean_env.setenv("EDGE_MEMORY_LLM_MODEL", "qwen-0.5b")
    hub = ModelHub(load_manifest().profile("tiny"), models_dir())
    try:
        llm = hub.llm("memory_llm")
        assert isinstance(llm, RemoteLLM) and hub.spec("solver").backend == "llama.cpp"
        # 3 tokens cannot hold the object: reply cut, repair cut → LLMOutputError, as local
        with pytest.raises(LLMOutputError):
            llm.chat_json([{"role": "user", "content": "Say hi"}], role="memory_llm",
                          schema=ANSWER, max_tokens=3)
        assert [r.role for r in hub.usage.records] == ["memory_llm"] * 2
    finally:
        hub.close()


def _frames(n: int) -> list[Frame]:
    rng = np.random.default_rng(2)
    return [Frame(float(i), rng.integers(0, 255, (240, 320, 3), dtype=np.uint8))
            for i in range(n)]


@pytest.mark.slow
def test_remote_captioner_sends_frames_only_when_allowed(server, clean_env):
    clean_env.setenv("EDGE_CAPTIONER_BASE_URL", server)
    clean_env.setenv("EDGE_CAPTIONER_MODEL", "plumbing-vlm")
    hub = ModelHub(load_manifest().profile("tiny"), models_dir())
    with pytest.raises(ConfigError, match="frames never leave this device"):
        hub.get("captioner")
    clean_env.setenv("EDGE_CAPTIONER_ALLOW_FRAMES", "1")
    hub = ModelHub(load_manifest().profile("tiny"), models_dir())
    try:
        cap = hub.captioner.caption(_frames(6), "the kettle is on", 30.0)
        assert cap.signals["frames"] == 4 and cap.signals["remote"] == server
        assert not cap.signals["vlm_empty"] and cap.text.endswith('"the kettle is on"')
        rec = hub.usage.records[-1]
        assert rec.role == "captioner" and rec.tokens_in >= 4 * 16  # 16 tokens per image
    finally:
        hub.close()


def test_unreachable_server_fails_fast_with_a_clear_message(clean_env):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    clean_env.setenv("EDGE_SOLVER_BASE_URL", url)
    clean_env.setenv("EDGE_SOLVER_MODEL", "any")
    hub = ModelHub(load_manifest().profile("tiny"), models_dir())
    t0 = time.perf_counter()
    with pytest.raises(RemoteUnavailableError) as e:
        hub.llm("solver").chat([{"role": "user", "content": "hi"}], role="solver")
    assert time.perf_counter() - t0 < 8  # 2 retries with backoff, connection refused
    msg = str(e.value)
    assert url in msg and "EDGE_SOLVER_BASE_URL" in msg and "running" in msg
    assert hub.usage.records == []  # nothing answered, nothing counted
    hub.close()


def test_frames_never_leave_unless_the_role_allows_it():
    usage = UsageMeter()
    llm = RemoteLLM(RemoteConfig(role="solver", base_url="http://127.0.0.1:9/v1", model="m"),
                    usage=usage)
    assert not llm.accepts_frames
    msg = [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                        {"type": "image_url",
                                         "image_url": {"url": "data:image/jpeg;base64,AA=="}}]}]
    with pytest.raises(ConfigError, match="refusing to send frames"):
        llm.chat(msg, role="solver")  # refused before any request (port 9 has no server)
    assert usage.records == []
    llm.close()


def test_bad_remote_settings_are_config_errors(clean_env):
    with pytest.raises(ConfigError, match="without a model name"):
        RemoteConfig.from_spec(None, "solver", {"EDGE_SOLVER_BASE_URL": "http://x:1/v1"})
    with pytest.raises(ConfigError, match="must start with http"):
        RemoteConfig.from_spec(None, "solver", {"EDGE_SOLVER_BASE_URL": "x:1",
                                                "EDGE_SOLVER_MODEL": "m"})
    with pytest.raises(ConfigError, match="allow_frames"):
        RemoteConfig.from_spec(None, "captioner", {"EDGE_CAPTIONER_BASE_URL": "http://x/v1",
                                                   "EDGE_CAPTIONER_MODEL": "m",
                                                   "EDGE_CAPTIONER_ALLOW_FRAMES": "maybe"})
    with pytest.raises(ConfigError, match="'y:2/v1' must start with http"):
        RemoteConfig.from_spec(None, "solver", {"EDGE_SOLVER_BASE_URL": "http://x:1/v1,y:2/v1",
                                                "EDGE_SOLVER_MODEL": "m"})


def test_several_servers_are_shared_out_one_per_thread(clean_env):
    """A comma-separated base_url: each calling thread keeps one server, given in turn."""
    cfg = RemoteConfig.from_spec(None, "solver", {
        "EDGE_SOLVER_BASE_URL": " http://127.0.0.1:1/v1/ , http://127.0.0.1:2/v1",
        "EDGE_SOLVER_MODEL": "m"})
    assert cfg.base_urls == ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    llm = RemoteLLM(cfg)
    got: list[str] = []

    def call() -> None:
        got.append(str(llm._client.base_url))
        assert llm._client is llm._client  # the same one again on this thread

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
        t.join()
    assert sorted(got) == ["http://127.0.0.1:1/v1/"] * 2 + ["http://127.0.0.1:2/v1/"] * 2
    llm.close()


@pytest.mark.slow
def test_client_retries_until_a_late_server_is_up(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    llm = RemoteLLM(RemoteConfig(role="solver", base_url=url, model="smol", max_retries=8,
                                 timeout=30), usage=UsageMeter())
    result: dict = {}

    def ask():
        try:
            result["res"] = llm.chat([{"role": "user", "content": "Say ok."}], role="solver",
                                     max_tokens=4)
        except Exception as e:  # reported below
            result["err"] = e

    t = threading.Thread(target=ask)
    t.start()
    time.sleep(1.0)  # the first attempts find nothing listening
    proc = start_server([{"model": _weights("smollm2-135m-instruct"), "model_alias": "smol",
                          "n_ctx": 512, "n_threads": 2, "verbose": False}], port,
                        tmp_path / "late.log")
    try:
        t.join(90)
        assert "err" not in result, result.get("err")
        assert result["res"].tokens_out > 0
        assert [r.role for r in llm.usage.records] == ["solver"]  # one answer, counted once
    finally:
        stop(proc)
        llm.close()


@pytest.mark.slow
def test_doctor_reports_remote_roles(server, clean_env):
    clean_env.setenv("EDGE_SOLVER_BASE_URL", server)
    clean_env.setenv("EDGE_SOLVER_MODEL", "qwen-0.5b")
    clean_env.setenv("EDGE_MEMORY_LLM_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    clean_env.setenv("EDGE_MEMORY_LLM_MODEL", "gone")
    from edge.cli.doctor import check_roles

    hub = ModelHub(load_manifest().profile("tiny"), models_dir())
    rows = {r["role"]: r for r in check_roles(hub, load=False)}
    assert rows["solver"]["backend"] == "openai" and server in rows["solver"]["weights"]
    # with load: only the two remote roles (a profile without local ones loads nothing)
    remote_only = ModelHub(Profile("remote-only", "", {
        "solver": hub.spec("solver"), "memory_llm": hub.spec("memory_llm")}), models_dir())
    rows = {r["role"]: r for r in check_roles(remote_only, load=True)}
    solver = rows["solver"]
    assert solver["ok"] and "reachable" in solver["detail"] and "lists it" in solver["detail"]
    assert not rows["memory_llm"]["ok"] and "cannot reach" in rows["memory_llm"]["error"]
    assert rows["embedder"]["error"] == "not set in this profile"
    r = CliRunner().invoke(main, ["models", "list", "--no-load"])
    assert "openai" in r.output and server in r.output
    r = CliRunner().invoke(main, ["doctor"])
    lines = {ln.split()[2]: ln for ln in r.output.splitlines()
             if ln.split()[1:2] == ["role"]}
    assert lines["memory_llm"].startswith("FAIL") and "cannot reach" in lines["memory_llm"]
    hub.close()


@pytest.mark.slow
def test_a_slow_answer_is_a_timeout_that_says_how_to_raise_it(server):
    llm = RemoteLLM(RemoteConfig(role="solver", base_url=server, model="qwen-0.5b",
                                 timeout=0.3, max_retries=0))
    t0 = time.perf_counter()
    with pytest.raises(RemoteUnavailableError, match="did not answer within 0.3 s") as e:
        llm.chat([{"role": "user", "content": "Count from 1 to 100."}], role="solver",
                 max_tokens=48)
    assert time.perf_counter() - t0 < 5 and "EDGE_SOLVER_TIMEOUT" in str(e.value)
    llm.close()


@pytest.mark.slow
def test_a_cancelled_remote_call_returns_at_once_and_counts_nothing(server):
    """The chat's Esc with a remote solver: the caller stops waiting within a moment of the
    cancel; the server's late reply is dropped, so only the next call is counted."""
    from models import GenerationCancelled, cancel_scope

    llm = RemoteLLM(RemoteConfig(role="solver", base_url=server, model="qwen-0.5b"),
                    usage=UsageMeter())
    count = [{"role": "user", "content": "Count from 1 to 100, separated by commas."}]
    event, box = threading.Event(), {}

    def ask():
        with cancel_scope(event):
            try:
                box["out"] = llm.chat(count, role="solver", max_tokens=64)
            except GenerationCancelled as e:
                box["out"] = e
        box["end"] = time.monotonic()

    t = threading.Thread(target=ask)
    t.start()
    time.sleep(0.5)  # the request is on the server (64 tokens take seconds there)
    cancelled = time.monotonic()
    event.set()
    t.join(30)
    assert isinstance(box["out"], GenerationCancelled), box["out"]
    assert box["end"] - cancelled < 2.0
    res = llm.chat([{"role": "user", "content": "Say ok."}], role="solver", max_tokens=4)
    assert res.tokens_out > 0 and len(llm.usage.records) == 1
    llm.close()


@pytest.mark.slow
def test_edge_ask_with_a_remote_solver_runs_the_merit_loop(server, clean_env, tmp_path):
    """`edge ask` end to end with the solver on the server: filtering, sufficiency and the
    final answer are remote calls, counted with the server's token counts; retrieval and
    the embedder stay local."""
    from edge.ingest.captions import ingest_caption_file
    from edge.store import Memory
    from tests.conftest import EGOLIFE_DAY1, shared

    mem = tmp_path / "day1.db"
    hub = ModelHub(load_manifest().profile("tiny"), models_dir())
    try:
        with Memory(mem) as m:
            ingest_caption_file(m, hub, shared(EGOLIFE_DAY1), limit=40)
    finally:
        hub.close()
    clean_env.setenv("EDGE_SOLVER_BASE_URL", server)
    clean_env.setenv("EDGE_SOLVER_MODEL", "qwen-0.5b")
    clean_env.setenv("EDGE_SOLVER_N_CTX", "4096")
    clean_env.setenv("EDGE_SOLVER_TIMEOUT", "600")
    r = CliRunner().invoke(main, ["ask", "--memory", str(mem), "--at", "DAY1 11:21",
                                  "--rounds", "2", "--top-n", "3", "--delta", "1", "--json",
                                  "--loop", "merit",
                                  "--choices", "Tasha|Alice|Shure|Lucia",
                                  "Who used the screwdriver first?"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output[r.output.index("{"):])
    assert out["answer"] in ("A", "B", "C", "D") and out["final"] is not None
    assert out["rounds"][0]["filtered"] and out["rounds"][0]["anchors"]
    solver = out["usage"]["by_role"]["solver"]
    assert solver["calls"] >= 2 and solver["tokens_in"] > 200  # filter + answer at least
    with Memory(mem) as m:
        models = {row[0] for row in m.db.execute(
            "SELECT model FROM calls WHERE command = 'ask' AND role = 'solver'")}
    assert models == {"qwen-0.5b"}


@pytest.mark.slow
def test_a_remote_vlm_solver_gets_keyframes_only_when_allowed(server, clean_env, tmp_path):
    """MERIT's final answer with frames: a remote VLM solver allowed frames receives the
    anchors' keyframes (real frames of a shared video) by the adaptive budget."""
    import av

    from edge.answer import AskError, ask
    from edge.config import frames_dir
    from edge.store import INDEX_TYPES, Memory
    from tests.conftest import FOOTAGE, shared

    video = shared(FOOTAGE / "ego_fisheye_b_noaudio.mp4")
    mem = tmp_path / "m.db"
    folder = frames_dir(mem) / "v"
    folder.mkdir(parents=True)
    import cv2

    with av.open(str(video)) as c:
        frames = [f.to_ndarray(format="bgr24") for _, f in zip(range(4), c.decode(video=0))]
    for i, img in enumerate(frames):
        cv2.imwrite(str(folder / f"k{i}.jpg"), img)
    hub = ModelHub(load_manifest().profile("tiny"), models_dir())
    with Memory(mem) as m:
        sid = m.add_source(path="v", sha256="v", kind="video", clock="dayclock",
                           start_from="file", t_start=0, duration=60, n_clips=2, info={})
        for i, cap in enumerate(["I walk down a corridor with a fisheye camera.",
                                 "I open a door and step outside."]):
            vecs = hub.embedder.embed([cap] * len(INDEX_TYPES))
            m.add_clip(source_id=sid, idx=i, t_start=30 * i, t_end=30 * i + 30, day="DAY1",
                       day_start=0, caption=cap, transcript="", signals={},
                       keyframes=[f"v/k{2 * i}.jpg", f"v/k{2 * i + 1}.jpg"],
                       keys={k: (cap, "file") for k in INDEX_TYPES},
                       vectors=dict(zip(INDEX_TYPES, vecs)))
        hub.close()
        clean_env.setenv("EDGE_SOLVER_BASE_URL", server)
        clean_env.setenv("EDGE_SOLVER_MODEL", "plumbing-vlm")
        clean_env.setenv("EDGE_SOLVER_N_CTX", "2048")
        hub = ModelHub(load_manifest().profile("tiny"), models_dir())
        try:
            with pytest.raises(AskError, match="does not take frames"):
                ask(m, hub, "where did I walk?", frames=True, max_rounds=1)
            clean_env.setenv("EDGE_SOLVER_ALLOW_FRAMES", "1")
            hub.close()
            hub = ModelHub(load_manifest().profile("tiny"), models_dir())
            res = ask(m, hub, "where did I walk?", max_rounds=1, top_n=2, delta=0,
                      loop="merit", open_check="words")  # the answer is the last call
            assert res.final is not None
            last = hub.usage.records[-1]  # the final answer: text + 4 images × 16 tokens
            assert last.role == "solver" and last.tokens_in >= 4 * 16
            no_frames = ask(m, hub, "where did I walk?", max_rounds=1, top_n=2, delta=0,
                            frames=False, loop="merit", open_check="words")
            # the images cost ~16 tokens each (text layout differs by a token or so)
            assert last.tokens_in - hub.usage.records[-1].tokens_in >= 4 * 16 - 8
            assert no_frames.final is not None
            # the adaptive loop's answering call (the default) gets the frames too
            ask(m, hub, "where did I walk?", max_rounds=1, top_n=2, delta=0,
                open_check="words")
            adaptive = hub.usage.records[-1]
            ask(m, hub, "where did I walk?", max_rounds=1, top_n=2, delta=0, frames=False,
                open_check="words")
            assert adaptive.tokens_in - hub.usage.records[-1].tokens_in >= 4 * 16 - 8
        finally:
            hub.close()
