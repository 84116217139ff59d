"""Convert EmbeddingGemma-300M (a sentence-transformers folder: ``Gemma3TextModel`` + mean
pooling + two Dense layers) to the ``gemma-embedding`` GGUF llama.cpp loads, without torch.

The sibling of :mod:`quantize.convert`'s BERT writer (the steps they share are in
:mod:`quantize.common`). It writes what llama.cpp's own
``convert_hf_to_gguf.py`` writes for this model (``EmbeddingGemma(Gemma3Model)`` in the
llama.cpp vendored by llama-cpp-python 0.3.36): Gemma 3 hyperparameters with the
``sliding_window`` of the original config.json, the RMSNorm weights stored as ``1 + w``
(Gemma3RMSNorm multiplies by ``1 + weight``), the SentencePiece vocabulary read with
``sentencepiece`` (tokenizer model "llama", no space prefix), the ``2_Dense`` / ``3_Dense``
weights as ``dense_2.weight`` / ``dense_3.weight`` with their in/out sizes, and the mean
pooling of ``1_Pooling``. Checked against the model card: the converted F16 file gives the
card's example similarities within 0.002 (tests/test_quantize_gemma.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from quantize.common import (
    ConvertError,
    add_general_metadata,
    add_special_vocab,
    looks_special,
    pooling_type,
    read_json,
    write_out,
)

ARCHITECTURE = "Gemma3TextModel"


def is_embedding_gemma(hparams: dict) -> bool:
    """Whether config.json ``hparams`` is an EmbeddingGemma text model."""
    return ARCHITECTURE in hparams.get("architectures", [])


def dense_modules(model_dir: Path) -> list[tuple[str, Path, int, int]]:
    """The sentence-transformers Dense modules (modules.json order) as ``(gguf prefix,
    weights file, in_features, out_features)``: ``2_Dense`` → ``dense_2``, ``3_Dense`` →
    ``dense_3``. Raises :class:`ConvertError` for a Dense module without weights/config."""
    modules = model_dir / "modules.json"
    if not modules.is_file():
        return []
    out = []
    for mod in json.loads(modules.read_text(encoding="utf-8")):
        if not mod["type"].endswith("Dense"):
            continue
        path = model_dir / mod["path"]
        if not (path / "model.safetensors").is_file():
            raise ConvertError(f"{path}: a Dense module without model.safetensors")
        cfg = read_json(path / "config.json")
        prefix = "dense_2" if mod["path"] == "2_Dense" else "dense_3"
        out.append((prefix, path / "model.safetensors", int(cfg["in_features"]),
                    int(cfg["out_features"])))
    return out


def sentencepiece_vocab(model_dir: Path, hparams: dict
                        ) -> tuple[list[bytes], list[float], list[int]]:
    """llama.cpp's ``_create_vocab_sentencepiece``: tokens (bytes), scores and token types
    for ``vocab_size`` ids from ``tokenizer.model``, then added_tokens.json and
    tokenizer_config.json's ``added_tokens_decoder`` (CONTROL when special, else
    USER_DEFINED), ``[PAD<i>]`` for ids the tokenizer lacks."""
    import gguf
    from sentencepiece import SentencePieceProcessor

    path = model_dir / "tokenizer.model"
    if not path.is_file():
        raise ConvertError(f"{path}: no such file (EmbeddingGemma's SentencePiece model)")
    types = gguf.TokenType  # the values of the converter's SentencePieceTokenTypes
    sp = SentencePieceProcessor()
    sp.LoadFromFile(str(path))
    n_vocab = int(hparams.get("vocab_size") or sp.vocab_size())
    tokens = [f"[PAD{i}]".encode() for i in range(n_vocab)]
    scores = [-10000.0] * n_vocab
    toktypes = [types.UNUSED] * n_vocab
    for i in range(min(sp.vocab_size(), n_vocab)):
        kind = types.NORMAL
        if sp.IsUnknown(i):
            kind = types.UNKNOWN
        elif sp.IsControl(i):
            kind = types.CONTROL
        elif sp.IsUnused(i):
            kind = types.UNUSED
        elif sp.IsByte(i):
            kind = types.BYTE
        tokens[i], scores[i], toktypes[i] = sp.IdToPiece(i).encode(), sp.GetScore(i), kind
    added = model_dir / "added_tokens.json"
    if added.is_file():
        for key, i in json.loads(added.read_text(encoding="utf-8")).items():
            if i < n_vocab:
                tokens[i], scores[i], toktypes[i] = key.encode(), -1000.0, types.USER_DEFINED
    config = model_dir / "tokenizer_config.json"
    if config.is_file():
        decoder = json.loads(config.read_text(encoding="utf-8")).get("added_tokens_decoder", {})
        for key, data in decoder.items():
            i = int(key)
            if i >= n_vocab:
                continue
            text = data["content"]
            if data.get("special") or looks_special(text):
                toktypes[i] = types.CONTROL
            else:
                text = text.replace("\u2581", " ")  # pre-normalised user-defined spaces
                toktypes[i] = types.USER_DEFINED
            scores[i], tokens[i] = -1000.0, text.encode()
    return tokens, scores, toktypes


def write_gemma_embedding_gguf(model_dir: Path, dst: Path, out_type: str) -> None:
    """Write the ``gemma-embedding`` GGUF (``out_type`` F32 or F16) of ``model_dir`` to
    ``dst``: tensors, general metadata, hyperparameters, vocabulary (the converter's order).
    Raises :class:`ConvertError` when ``model_dir`` is not an EmbeddingGemma folder."""
    import gguf

    hparams = read_json(model_dir / "config.json")
    if not is_embedding_gemma(hparams):
        raise ConvertError(f"{model_dir}: config.json is not {ARCHITECTURE} "
                           f"(architectures {hparams.get('architectures')})")
    if hparams.get("sliding_window") is None:
        raise ConvertError(f"{model_dir}: config.json has no sliding_window")
    ftype = gguf.LlamaFileType.ALL_F32 if out_type == "F32" else gguf.LlamaFileType.MOSTLY_F16
    arch = gguf.MODEL_ARCH.GEMMA_EMBEDDING
    writer = gguf.GGUFWriter(dst, gguf.MODEL_ARCH_NAMES[arch])
    tokens, scores, toktypes = sentencepiece_vocab(model_dir, hparams)
    dense = dense_modules(model_dir)
    _add_tensors(writer, model_dir, hparams, ftype, len(tokens), dense)
    add_general_metadata(writer, model_dir)
    _add_hparams(writer, model_dir, hparams, ftype, dense)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(toktypes)
    add_special_vocab(writer, model_dir, len(tokens))
    writer.add_add_space_prefix(False)
    write_out(writer, dst)


def _add_tensors(writer, model_dir: Path, hparams: dict, ftype, n_vocab: int,
                 dense: list[tuple[str, Path, int, int]]) -> None:
    """The text model's tensors (norm weights + 1, token embeddings cut to the vocabulary)
    then the Dense weights; F32 for 1-D tensors and norms, the file type for the rest."""
    import gguf
    from safetensors import safe_open

    path = model_dir / "model.safetensors"
    if not path.is_file():
        raise ConvertError(f"{path}: no such file (only safetensors weights are converted)")
    tensor_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GEMMA_EMBEDDING,
                                          int(hparams["num_hidden_layers"]))

    def add(new_name: str, data: np.ndarray) -> None:
        data = data.astype(np.float32) if data.dtype != np.float32 else data
        if (data.ndim <= 1 or new_name.endswith("_norm.weight")
                or ftype == gguf.LlamaFileType.ALL_F32):
            qtype = gguf.GGMLQuantizationType.F32
        else:
            qtype = gguf.GGMLQuantizationType.F16
        writer.add_tensor(new_name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    with safe_open(path, framework="np") as f:
        for raw in f.keys():
            name = raw.removeprefix("model.")
            if name == "lm_head.weight":
                continue
            new_name = tensor_map.get_name(name, try_suffixes=(".weight", ".bias"))
            if new_name is None:
                raise ConvertError(f"{path}: cannot map tensor {raw!r} to a GGUF name")
            data = f.get_tensor(raw)
            if name == "embed_tokens.weight":
                data = data[:n_vocab]
            if name.endswith("norm.weight"):
                data = data.astype(np.float32) + 1.0  # Gemma3RMSNorm: x * (1 + w)
            add(new_name, data)
    for prefix, file, _, _ in dense:
        with safe_open(file, framework="np") as f:
            for raw in f.keys():
                if raw.endswith(".weight"):
                    add(tensor_map.get_name(raw.replace("linear", prefix)) or
                        f"{prefix}.weight", f.get_tensor(raw))


def _add_hparams(writer, model_dir: Path, hparams: dict, ftype,
                 dense: list[tuple[str, Path, int, int]]) -> None:
    """Gemma3Model.set_gguf_parameters + EmbeddingGemma's: sizes, eps, head sizes, rope
    base, the original sliding window, the Dense sizes and the pooling."""
    writer.add_context_length(int(hparams.get("max_position_embeddings", 131072)))
    writer.add_embedding_length(int(hparams["hidden_size"]))
    writer.add_block_count(int(hparams["num_hidden_layers"]))
    writer.add_feed_forward_length(int(hparams["intermediate_size"]))
    writer.add_head_count(int(hparams.get("num_attention_heads", 8)))
    writer.add_layer_norm_rms_eps(float(hparams.get("rms_norm_eps", 1e-6)))
    writer.add_key_length(int(hparams.get("head_dim", 256)))
    writer.add_value_length(int(hparams.get("head_dim", 256)))
    writer.add_file_type(ftype)
    writer.add_rope_freq_base(float(hparams.get("rope_theta", 1_000_000.0)))
    if hparams.get("attn_logit_softcapping") is not None:
        raise ConvertError(f"{model_dir}: attn_logit_softcapping is not Gemma 3's")
    writer.add_sliding_window(int(hparams["sliding_window"]))
    writer.add_head_count_kv(int(hparams.get("num_key_value_heads", 4)))
    if hparams.get("rope_scaling") is not None:
        raise ConvertError(f"{model_dir}: rope_scaling is not converted")
    for prefix, _, n_in, n_out in dense:
        writer.add_dense_features_dims(prefix, n_in, n_out)
    pooling = pooling_type(model_dir)
    if pooling is not None:
        writer.add_pooling_type(pooling)
