"""Model files the user made, registered in the user profiles file (issue 15, part 2):
``edge models add`` records size and sha256 and keeps the rest of the file, the resolver
refuses a file whose size changed, ``edge models verify`` re-hashes, and a profile can name
the registered model (a copy of the shipped SmolLM2 GGUF answers a chat through it)."""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from edge.config import models_dir
from models import ModelHub, WeightsCorruptError, load_manifest, resolve_weights
from models.registry import load_manifest_with_user
from models.user import RegisterError, register_artifact, user_artifacts

USER_FILE = """\
# my own models and profiles
[profiles.mine]   # the solver is my quantized file
base = "tiny"
[profiles.mine.roles]
solver = "my-q8"

[models."big-solver"]
backend = "openai"
source = "none"
base_url = "http://127.0.0.1:8000/v1"  # my server
model = "Qwen2.5-32B-Instruct"
"""


def write_gguf(path: Path, seed: int = 0) -> Path:
    """A small real GGUF file (the ``gguf`` package's writer): one tensor of 4096 floats."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_string("general.name", f"edge-test-{seed}")
    w.add_tensor("token_embd.weight",
                 np.random.default_rng(seed).standard_normal((64, 64)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture()
def home(tmp_path, monkeypatch) -> Path:
    """A temporary ``$EDGE_HOME`` holding :data:`USER_FILE` as its profiles file."""
    monkeypatch.setenv("EDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EDGE_MODELS_DIR", str(models_dir()))
    monkeypatch.delenv("EDGE_PROFILES", raising=False)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "profiles.toml").write_text(USER_FILE, encoding="utf-8")
    return tmp_path / "home"


def test_register_records_size_and_sha256_and_keeps_the_rest_of_the_file(home, tmp_path):
    gguf_file = write_gguf(tmp_path / "mine-Q8_0.gguf")
    user_file = home / "profiles.toml"
    spec = register_artifact(user_file, "my-q8", gguf_file, backend="llama.cpp",
                             derived_from="smollm2-135m-instruct", quant_type="q8_0",
                             description="my Q8_0", options={"n_ctx": None})
    text = user_file.read_text(encoding="utf-8")
    assert text.startswith(USER_FILE)  # comments, the profile and the other model untouched
    table = tomllib.loads(text)["models"]["my-q8"]
    assert table["size"] == gguf_file.stat().st_size
    assert table["sha256"] == hashlib.sha256(gguf_file.read_bytes()).hexdigest()
    assert table["path"] == str(gguf_file.resolve()) and table["source"] == "path"
    assert table["quant"] == "Q8_0" and table["derived_from"] == "smollm2-135m-instruct"
    assert table["n_ctx"] == 2048  # taken from the model it was made from
    assert spec.name == "my-q8" and spec.option("sha256") == table["sha256"]
    # the profile that named it before it existed now loads, with the file as its solver
    manifest = load_manifest_with_user(user_file)
    assert manifest.profile("mine").spec("solver") == spec
    assert manifest.model("big-solver").option("model") == "Qwen2.5-32B-Instruct"
    assert resolve_weights(spec, tmp_path) == gguf_file.resolve()
    assert [s.name for s in user_artifacts(user_file)] == ["my-q8"]
    assert not list(home.glob("*.tmp"))  # the atomic write left no temporary file


def test_a_write_that_fails_half_way_keeps_the_old_file(home, tmp_path, monkeypatch):
    user_file = home / "profiles.toml"

    def crash(*args):  # the rename never happens: killed, or the disk refused it
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("models.user.os.replace", crash)
    with pytest.raises(OSError, match="No space left"):
        register_artifact(user_file, "my-q8", write_gguf(tmp_path / "one.gguf"),
                          backend="llama.cpp")
    assert user_file.read_text(encoding="utf-8") == USER_FILE
    assert [p.name for p in home.iterdir()] == ["profiles.toml"]  # no temporary file left


def test_shipped_name_wrong_format_and_existing_name_are_refused_and_force_replaces(
        home, tmp_path):
    user_file = home / "profiles.toml"
    one, two = write_gguf(tmp_path / "one.gguf", 1), write_gguf(tmp_path / "two.gguf", 2)
    with pytest.raises(RegisterError, match="shipped model's name"):
        register_artifact(user_file, "smollm2-135m-instruct", one, backend="llama.cpp")
    with pytest.raises(RegisterError, match="not a GGUF file"):
        register_artifact(user_file, "my-q8", user_file, backend="llama.cpp")
    with pytest.raises(RegisterError, match="not an ONNX model"):
        register_artifact(user_file, "my-emb", one, backend="onnx-embedder",
                          derived_from="minilm-l6-int8")
    with pytest.raises(RegisterError, match="profile 'mine', role 'solver': unknown model "
                       "'my-q8'; nothing was written"):  # the file would still not load
        register_artifact(user_file, "other", one, backend="llama.cpp")
    assert user_file.read_text(encoding="utf-8") == USER_FILE  # nothing written
    register_artifact(user_file, "my-q8", one, backend="llama.cpp")
    with pytest.raises(RegisterError, match="already has a model 'my-q8'.*--force"):
        register_artifact(user_file, "my-q8", two, backend="llama.cpp")
    with pytest.raises(RegisterError, match="already has a model 'big-solver'"):
        register_artifact(user_file, "big-solver", two, backend="llama.cpp")
    spec = register_artifact(user_file, "my-q8", two, backend="llama.cpp", force=True)
    models = tomllib.loads(user_file.read_text(encoding="utf-8"))["models"]
    assert models["my-q8"]["path"] == str(two.resolve()) == spec.option("path")
    assert models["my-q8"]["sha256"] == hashlib.sha256(two.read_bytes()).hexdigest()
    assert set(models) == {"big-solver", "my-q8"}


def test_an_onnx_embedder_copy_takes_the_tokenizer_of_the_model_it_came_from(home, tmp_path):
    shipped = load_manifest().model("minilm-l6-int8")
    copy = tmp_path / "minilm.onnx"
    copy.write_bytes(resolve_weights(shipped, tmp_path).read_bytes())
    user_file = home / "profiles.toml"
    user_file.write_text("", encoding="utf-8")
    with pytest.raises(RegisterError, match="needs a tokenizer.*--from"):
        register_artifact(user_file, "my-emb", copy, backend="onnx-embedder")
    spec = register_artifact(user_file, "my-emb", copy, backend="onnx-embedder",
                             derived_from="minilm-l6-int8", options={"max_tokens": 128})
    assert spec.option("tokenizer_module") == shipped.option("tokenizer_module")
    assert spec.option("dim") == 384 and spec.option("max_tokens") == 128
    assert spec.option("sha256") == shipped.option("sha256")  # a byte-for-byte copy


def test_a_changed_file_fails_the_size_check_at_load_and_verify(home, tmp_path, run):
    gguf_file = write_gguf(tmp_path / "mine.gguf")
    r = run("models", "add", "my-q8", gguf_file, "--backend", "llama.cpp", "--quant", "Q8_0")
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"registered my-q8: {gguf_file.resolve()} (llama.cpp, ")
    assert 'solver = "my-q8"' in r.output
    r = run("models", "verify")
    assert r.exit_code == 0 and "sha256 ok" in r.output, r.output
    with open(gguf_file, "ab") as f:
        f.write(b"\0")  # one byte more
    spec = load_manifest_with_user(home / "profiles.toml").model("my-q8")
    with pytest.raises(WeightsCorruptError, match=r"changed since it was registered "
                       r"\(\d+ bytes, registered \d+\): re-register with `edge models add "
                       r"--force my-q8 .*mine.gguf --backend llama.cpp --quant Q8_0`"):
        resolve_weights(spec, tmp_path)
    r = run("models", "verify", "my-q8")
    assert r.exit_code == 1
    assert "FAIL" in r.output and "changed since it was registered" in r.output


def test_verify_and_the_load_check_hash_a_file_whose_size_did_not_change(home, tmp_path, run):
    from edge.cli.doctor import check_roles

    (home / "profiles.toml").write_text(  # a profile of the solver alone: nothing else loads
        '[profiles.only]\n[profiles.only.roles]\nsolver = "my-q8"\n', encoding="utf-8")
    gguf_file = write_gguf(tmp_path / "mine.gguf")
    assert run("models", "add", "my-q8", gguf_file, "--backend", "llama.cpp").exit_code == 0
    data = bytearray(gguf_file.read_bytes())
    data[-1] ^= 0xFF  # same size, other bytes: only the sha256 tells
    gguf_file.write_bytes(bytes(data))
    manifest = load_manifest_with_user(home / "profiles.toml")
    resolve_weights(manifest.model("my-q8"), tmp_path)  # the cheap check passes
    r = run("models", "verify", "--json")
    (row,) = json.loads(r.output)
    assert r.exit_code == 1 and not row["ok"]
    assert "changed since it was registered (sha256 " in row["state"]
    assert "edge models add --force my-q8" in row["state"]
    # `edge models list` (check_roles with load) hashes it before loading it
    rows = check_roles(ModelHub(manifest.profile("only"), tmp_path), load=True)
    (solver,) = [r for r in rows if r["role"] == "solver"]
    assert not solver["ok"] and not solver["loaded"]
    assert "changed since it was registered (sha256 " in solver["error"]


def test_models_user_lists_size_quant_origin_and_state(home, tmp_path, run):
    r = run("models", "user")  # the profile names a model not registered yet
    assert r.exit_code == 1 and "profile 'mine', role 'solver': unknown model 'my-q8'" in r.output
    (home / "profiles.toml").write_text("", encoding="utf-8")
    r = run("models", "user")
    assert r.exit_code == 0 and "no registered model files" in r.output
    gguf_file = write_gguf(tmp_path / "mine.gguf")
    r = run("models", "add", "my-q8", gguf_file, "--backend", "llama.cpp", "--from",
            "smollm2-135m-instruct", "--quant", "Q8_0", "--n-ctx", 1024)
    assert r.exit_code == 0, r.output
    r = run("models", "user")
    assert r.exit_code == 0
    line = next(ln for ln in r.output.splitlines() if ln.strip().startswith("my-q8"))
    for word in ("llama.cpp", "KB", "Q8_0", "from smollm2-135m-instruct", "size ok"):
        assert word in line, line
    (row,) = json.loads(run("models", "user", "--json").output)
    assert row["size"] == gguf_file.stat().st_size and row["ok"]
    assert load_manifest_with_user(home / "profiles.toml").model("my-q8").option("n_ctx") == 1024
    gguf_file.unlink()
    r = run("models", "user")
    assert "FAIL" in r.output and "does not exist; put it back" in r.output
    r = run("models", "add", "other", tmp_path / "nope.gguf", "--backend", "llama.cpp")
    assert r.exit_code == 2 and "does not exist" in r.output  # click checks the path


@pytest.mark.slow
def test_a_profile_solves_with_a_registered_copy_of_the_shipped_gguf(home, tmp_path):
    shipped = resolve_weights(load_manifest().model("smollm2-135m-instruct"), models_dir())
    copy = tmp_path / "my-smollm2.gguf"
    copy.write_bytes(shipped.read_bytes())
    user_file = home / "profiles.toml"
    register_artifact(user_file, "my-q8", copy, backend="llama.cpp",
                      derived_from="smollm2-135m-instruct", quant_type="Q4_1")
    profile = load_manifest_with_user(user_file).profile("mine")
    hub = ModelHub(profile, models_dir())
    try:
        llm = hub.llm("solver")
        assert llm.name == "my-q8"
        reply = llm.chat([{"role": "user", "content": "Say hello."}], role="solver",
                         max_tokens=8)
        assert reply.text.strip() and reply.tokens_out > 0
    finally:
        hub.close()
