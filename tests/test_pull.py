"""``edge models pull`` without the internet: fast, clear failure when offline; and a real
download through huggingface_hub from a local HTTP "hub" (python's http.server speaking the
resolve endpoint: HEAD metadata, GET with Range) proving checksum verification, resume of
an interrupted download and progress."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from click.testing import CliRunner

from edge.cli import main
from models.pull import PullError, hub_files, is_present, pull
from models.registry import ModelSpec, load_manifest
from models.resolve import WeightsMissingError, resolve_weights


def small_gguf(path, n: int = 300_000) -> bytes:
    """A real (tiny) GGUF file written with the gguf package; returns its bytes."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_string("general.name", "pull-test")
    w.add_tensor("t", np.random.default_rng(0).standard_normal(n // 4).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


class Hub(ThreadingHTTPServer):
    """Serves ``files`` at /{repo}/resolve/{revision}/{name}; ``cut_first_get`` makes the first
    GET of a file stop half-way (the connection drops), as a flaky network would."""

    daemon_threads = True

    def __init__(self, files: dict[str, bytes], cut_first_get: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), HubHandler)
        self.files, self.cut = files, cut_first_get
        self.log: list[tuple[str, str, str | None]] = []
        self.cut_done: set[str] = set()


class HubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _lookup(self):
        m = re.match(r"^/(.+?/.+?)/resolve/([^/]+)/(.+)$", self.path)
        data = self.server.files.get(m.group(3)) if m else None
        self.server.log.append((self.command, m.group(3) if m else self.path,
                                self.headers.get("Range")))
        if data is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
        return (m.group(3), data) if data is not None else (None, None)

    def _headers(self, name: str, data: bytes, status: int, start: int) -> None:
        self.send_response(status)
        self.send_header("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
        self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        self.send_header("Content-Length", str(len(data) - start))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_HEAD(self):
        name, data = self._lookup()
        if data is not None:
            self._headers(name, data, 200, 0)

    def do_GET(self):
        name, data = self._lookup()
        if data is None:
            return
        rng = self.headers.get("Range")
        start = int(re.match(r"bytes=(\d+)-", rng).group(1)) if rng else 0
        self._headers(name, data, 206 if start else 200, start)
        body = data[start:]
        if self.server.cut and name not in self.server.cut_done:
            self.server.cut_done.add(name)
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)  # drop the connection mid-body
            return
        self.wfile.write(body)


@pytest.fixture()
def hub_server():
    servers = []

    def start(files, cut_first_get=False):
        s = Hub(files, cut_first_get)
        threading.Thread(target=s.serve_forever, daemon=True).start()
        servers.append(s)
        return s, f"http://127.0.0.1:{s.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


@pytest.fixture()
def no_offline(monkeypatch):
    for var in ("HF_HUB_OFFLINE", "EDGE_OFFLINE", "HF_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def _spec(model: bytes, mmproj: bytes, *, sha: str | None = None, **extra) -> ModelSpec:
    return ModelSpec("test-vlm", "llama.cpp-vlm", "hub", options={
        "repo": "local/test-vlm-GGUF", "file": "model.gguf", "size": len(model),
        "sha256": sha or hashlib.sha256(model).hexdigest(), "mmproj": "mmproj.gguf",
        "mmproj_size": len(mmproj), "mmproj_sha256": "unverified", **extra})


class Progress:
    """A tqdm stand-in that records what the progress bar was told."""

    seen: list[tuple[float | None, float]] = []

    def __init__(self, *args, total=None, initial=0, **kwargs):
        self.total, self.n = total, initial

    def update(self, n=1):
        self.n += n
        Progress.seen.append((self.total, self.n))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def close(self):
        pass

    def __getattr__(self, name):  # set_description, refresh, ... are no-ops here
        return lambda *a, **k: None


def test_pull_downloads_verifies_and_reports_progress(tmp_path, hub_server, no_offline):
    model, mmproj = small_gguf(tmp_path / "m.gguf"), small_gguf(tmp_path / "p.gguf", 90_000)
    server, url = hub_server({"model.gguf": model, "mmproj.gguf": mmproj})
    spec, dest = _spec(model, mmproj), tmp_path / "models"
    with pytest.raises(WeightsMissingError, match="edge models pull test-vlm"):
        resolve_weights(spec, dest)
    Progress.seen = []
    out = pull(spec, dest, endpoint=url, tqdm_class=Progress)
    assert [p.path.name for p in out] == ["model.gguf", "mmproj.gguf"]
    assert (dest / "model.gguf").read_bytes() == model
    assert out[0].verified and out[0].sha256 == hashlib.sha256(model).hexdigest()
    assert not out[1].verified and out[1].sha256 == hashlib.sha256(mmproj).hexdigest()
    assert is_present(spec, dest) and resolve_weights(spec, dest) == dest / "model.gguf"
    assert Progress.seen and Progress.seen[-1][1] == Progress.seen[-1][0]  # bar reached total
    assert {t for t, _ in Progress.seen} >= {len(model), len(mmproj)}
    assert [name for m, name, _ in server.log if m == "GET"] == ["model.gguf", "mmproj.gguf"]
    again = pull(spec, dest, endpoint=url)  # already there and verified: no download
    assert not any(p.downloaded for p in again)
    assert sum(1 for m, _, _ in server.log if m == "GET") == 2


def test_pull_resumes_an_interrupted_download(tmp_path, hub_server, no_offline):
    import huggingface_hub.constants as hf_constants

    # huggingface_hub writes in 10 MB chunks; small chunks let a 2 MB file break mid-way
    no_offline.setattr(hf_constants, "DOWNLOAD_CHUNK_SIZE", 64 * 1024)
    model, mmproj = small_gguf(tmp_path / "m.gguf", 2_000_000), small_gguf(tmp_path / "p.gguf")
    server, url = hub_server({"model.gguf": model, "mmproj.gguf": mmproj}, cut_first_get=True)
    spec = _spec(model, mmproj)
    try:
        pull(spec, tmp_path / "models", endpoint=url)
    except PullError as e:  # huggingface_hub may give up on the broken stream: run again
        assert "again to resume" in str(e)
        pull(spec, tmp_path / "models", endpoint=url)
    gets = [(name, rng) for m, name, rng in server.log if m == "GET" and name == "model.gguf"]
    # one cut GET, then one that resumes (in huggingface_hub's retry or in the second pull)
    assert len(gets) == 2 and gets[0][1] is None
    # the retry asked only for the bytes it did not have
    assert gets[-1][1] is not None, server.log
    assert 0 < int(re.search(r"\d+", gets[-1][1]).group()) < len(model)
    assert (tmp_path / "models" / "model.gguf").read_bytes() == model


def test_pull_rejects_and_removes_a_file_with_the_wrong_checksum(tmp_path, hub_server,
                                                                 no_offline):
    model, mmproj = small_gguf(tmp_path / "m.gguf"), small_gguf(tmp_path / "p.gguf")
    _, url = hub_server({"model.gguf": model, "mmproj.gguf": mmproj})
    spec = _spec(model, mmproj, sha="0" * 64)
    with pytest.raises(PullError, match="does not match") as e:
        pull(spec, tmp_path / "models", endpoint=url)
    assert "download was removed" in str(e.value)
    assert not (tmp_path / "models" / "model.gguf").exists()


def test_pull_fails_fast_and_clearly_when_offline(tmp_path, no_offline):
    spec = load_manifest().model("smolvlm2-256m-video-instruct")
    t0 = time.perf_counter()
    with pytest.raises(PullError) as e:  # no internet here: the host does not resolve
        pull(spec, tmp_path, connect_timeout=3)
    assert time.perf_counter() - t0 < 8
    msg = str(e.value)
    assert "cannot reach the model hub" in msg and "offline" in msg
    assert "edge models pull smolvlm2-256m-video-instruct" in msg and str(tmp_path) in msg
    no_offline.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(PullError, match="HF_HUB_OFFLINE is set"):
        pull(spec, tmp_path)
    assert time.perf_counter() - t0 < 1


def test_every_recommended_hub_model_is_well_formed():
    m = load_manifest()
    hub = [s for s in m.models.values() if s.source == "hub"]
    assert {"smolvlm2-256m-video-instruct", "qwen2.5-vl-3b-instruct"} <= {s.name for s in hub}
    for s in hub:
        assert s.option("repo") and s.option("ram_gb") and s.license, s.name
        for f in hub_files(s):
            assert f.file.endswith(".gguf") and (f.sha256 is None or len(f.sha256) == 64)
        if s.backend == "llama.cpp-vlm":
            assert s.option("mmproj"), s.name


def test_cli_models_pull_offline_and_list_shows_recommended(tmp_path, monkeypatch, no_offline):
    monkeypatch.setenv("EDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EDGE_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on port 9
    r = CliRunner().invoke(main, ["models", "pull", "smolvlm2-500m-video-instruct"])
    assert r.exit_code == 1 and "cannot reach the model hub" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(main, ["models", "pull", "perception"])
    assert r.exit_code == 1 and "not downloaded from a model hub" in r.output
    r = CliRunner().invoke(main, ["models", "list", "--no-load"])
    assert "smolvlm2-256m-video-instruct" in r.output and "recommended models" in r.output
    r = CliRunner().invoke(main, ["models", "recommended", "--json"])
    rows = {row["name"]: row for row in json.loads(r.output)}
    assert rows["smolvlm2-256m-video-instruct"]["present"] is False
    assert rows["smolvlm2-256m-video-instruct"]["role"] == "captioner"
