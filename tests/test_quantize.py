"""`python -m quantize`: MiniLM converted to a BERT GGUF that llama.cpp embeds with (against
the shipped int8 ONNX embedder), Q8_0 from it, and llama.cpp's quantizer on the shipped
SmolLM2 Q4_1 GGUF (refused as a requantization unless allowed). Real models, real files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from models import ModelHub, UsageMeter, load_manifest, resolve_weights
from models.embedder import LlamaCppEmbedder
from models.registry import ModelSpec, Profile
from quantize.__main__ import main
from quantize.convert import default_model_dir
from quantize.ggufq import read_gguf_type, staged_output
from tests.conftest import EGOLIFE_DAY1, shared


def _cli(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    """Ten real captions, five of their short keys, and one caption past 256 tokens."""
    caps = json.loads(shared(EGOLIFE_DAY1).read_text())
    texts = [c["text"] for c in caps[:10]] + [c["event_key"] for c in caps[10:15]]
    return texts + [" ".join(c["text"] for c in caps[:12])]


@pytest.fixture(scope="module")
def f32_gguf(tmp_path_factory):
    out = tmp_path_factory.mktemp("gguf") / "minilm-f32.gguf"
    r = _cli("convert", out)
    assert r.exit_code == 0, r.output
    assert "F32" in r.output and out.name in r.output
    return out


@pytest.fixture(scope="module")
def f32_embedder(f32_gguf):
    emb = LlamaCppEmbedder(f32_gguf)
    yield emb
    emb.close()


@pytest.fixture(scope="module")
def f32_vectors(f32_embedder, sentences):
    return f32_embedder.embed(sentences)


@pytest.fixture(scope="module")
def smollm2():
    from edge.config import models_dir

    return resolve_weights(load_manifest().model("smollm2-135m-instruct"), models_dir())


def test_converted_minilm_writes_llama_cpp_bert_metadata(f32_gguf):
    import gguf

    config = json.loads((default_model_dir() / "config.json").read_text())
    fields = gguf.GGUFReader(f32_gguf).fields

    def value(key):
        return fields[key].contents()

    def strings(key):
        return [bytes(fields[key].parts[i]).decode() for i in fields[key].data]

    assert value("general.architecture") == "bert"
    assert value("bert.embedding_length") == config["hidden_size"]
    assert value("bert.block_count") == config["num_hidden_layers"]
    assert value("bert.attention.causal") is False
    assert value("bert.pooling_type") == gguf.PoolingType.MEAN
    assert value("tokenizer.ggml.model") == "bert"
    tokens = strings("tokenizer.ggml.tokens")
    vocab = (default_model_dir() / "vocab.txt").read_text().splitlines()
    assert len(tokens) == len(vocab) == config["vocab_size"]
    # phantom space: a word start gets "▁", a "##" continuation loses "##", control tokens
    # ([CLS], [SEP], ...) stay as they are
    control = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    for i, word in enumerate(vocab):
        want = word if word in control else word[2:] if word.startswith("##") else "\u2581" + word
        assert tokens[i] == want
    assert value("tokenizer.ggml.bos_token_id") == vocab.index("[CLS]")
    assert value("tokenizer.ggml.seperator_token_id") == vocab.index("[SEP]")
    names = {t.name for t in gguf.GGUFReader(f32_gguf).tensors}
    assert "token_embd.weight" in names and not any("pooler" in n for n in names)


def test_f32_gguf_embeds_like_the_shipped_onnx_embedder(hub, f32_embedder, f32_vectors,
                                                         sentences):
    onnx = hub.embedder.embed(sentences)
    ours = f32_vectors
    assert ours.shape == onnx.shape and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cos = (onnx * ours).sum(axis=1)
    assert cos.min() >= 0.99, cos  # the last one is truncated to 256 tokens by both
    # packing texts into one batch changes no row
    np.testing.assert_allclose(f32_embedder.embed_one(sentences[3]), ours[3], atol=1e-4)
    assert f32_embedder.embed([]).shape == (0, 384)


def test_q8_0_conversion_is_smaller_and_agrees_with_f32(f32_gguf, f32_vectors, sentences,
                                                        tmp_path):
    out = tmp_path / "minilm-q8_0.gguf"
    r = _cli("convert", out, "--type", "Q8_0")
    assert r.exit_code == 0, r.output
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no F32 intermediate left
    assert read_gguf_type(out).file_type == "Q8_0"
    assert out.stat().st_size < f32_gguf.stat().st_size / 3
    q8 = LlamaCppEmbedder(out)
    try:
        cos = (q8.embed(sentences) * f32_vectors).sum(axis=1)
    finally:
        q8.close()
    assert cos.min() >= 0.99, cos


def test_requantizing_smollm2_is_refused_with_the_reason_unless_allowed(smollm2, tmp_path):
    out = tmp_path / "smollm2-q4_0.gguf"
    r = _cli("gguf", smollm2, out, "--type", "Q4_0")
    assert r.exit_code == 1
    assert "already quantized (Q4_1)" in r.output and "compounds" in r.output
    assert "F16/F32 source" in r.output and "--allow-requantize" in r.output
    assert not out.exists() and list(tmp_path.iterdir()) == []

    r = _cli("gguf", smollm2, out, "--type", "Q4_0", "--allow-requantize")
    assert r.exit_code == 0, r.output
    assert read_gguf_type(out).file_type == "Q4_0"
    assert out.stat().st_size < smollm2.stat().st_size  # Q4_0 drops Q4_1's per-block minimum
    from llama_cpp import Llama

    from models.llama_session import keep_std_streams

    keep_std_streams()
    llm = Llama(model_path=str(out), n_ctx=64, n_threads=2, verbose=False)
    try:
        assert len(llm.tokenize(b"Hello there")) >= 2
        assert llm.create_completion("Hello", max_tokens=2)["choices"][0]["text"] is not None
    finally:
        llm.close()


def test_an_existing_output_is_kept_unless_forced(smollm2, f32_gguf, tmp_path):
    out = tmp_path / "taken.gguf"
    out.write_bytes(b"keep me")
    for args in (("gguf", smollm2, out, "--type", "Q4_0", "--allow-requantize"),
                 ("convert", out)):
        r = _cli(*args)
        assert r.exit_code == 1 and "exists; pass --force" in r.output
        assert out.read_bytes() == b"keep me"
    r = _cli("gguf", f32_gguf, out, "--type", "F16", "--force")
    assert r.exit_code == 0, r.output
    assert read_gguf_type(out).file_type == "F16"


def test_bad_inputs_get_clear_errors(f32_gguf, tmp_path):
    text = tmp_path / "notes.gguf"
    text.write_text("not a model\n")
    r = _cli("gguf", text, tmp_path / "out.gguf", "--type", "Q8_0")
    assert r.exit_code == 1 and "is not a GGUF file" in r.output
    r = _cli("gguf", tmp_path / "missing.gguf", tmp_path / "out.gguf", "--type", "Q8_0")
    assert r.exit_code == 1 and "no such file" in r.output
    r = _cli("gguf", f32_gguf, tmp_path / "out.gguf", "--type", "Q9_X")
    assert r.exit_code == 1 and "unknown type 'Q9_X'" in r.output and "Q4_K_M" in r.output
    r = _cli("convert", tmp_path / "out.gguf", "--model-dir", tmp_path)
    assert r.exit_code == 1 and "config.json: no such file" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.gguf"]


def test_an_interrupted_write_leaves_neither_output_nor_temporary(tmp_path):
    out = tmp_path / "out.gguf"
    with pytest.raises(KeyboardInterrupt), staged_output(out) as tmp:
        tmp.write_bytes(b"half a model")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_hub_builds_the_llama_cpp_embedder_and_records_its_calls(f32_gguf, tmp_path):
    spec = ModelSpec("minilm-gguf", "llama.cpp-embedder", "path", options={"path": str(f32_gguf)})
    usage = UsageMeter()
    hub = ModelHub(Profile("gguf", "", {"embedder": spec}), tmp_path, usage=usage, threads=2)
    try:
        emb = hub.embedder
        assert isinstance(emb, LlamaCppEmbedder) and emb.name == "minilm-gguf"
        assert emb.embed(["a dog runs across the beach"]).shape == (1, emb.dim)
    finally:
        hub.close()
    (rec,) = usage.as_dicts()
    assert rec["role"] == "embedder" and rec["model"] == "minilm-gguf" and rec["tokens_in"] > 2
