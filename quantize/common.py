"""What the converters share (:mod:`quantize.convert` for BERT, :mod:`quantize.convert_gemma`
for EmbeddingGemma, :mod:`quantize.convert_ge2e` for the GE2E voice encoder): the error and
result types, reading a model folder's JSON, and the GGUF writer's common steps.

Every converter imports this module and none imports another's helpers, so the converters
form no import circle (``convert`` still picks the Gemma writer by architecture, one way).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from quantize.ggufq import QuantizeError


class ConvertError(QuantizeError):
    """The source cannot be converted: missing files, not the expected model, an
    unrecognised tokenizer, damaged or unexpected weights."""


@dataclass(frozen=True)
class ConvertResult:
    """One finished conversion: output path, its type, size in bytes, wall seconds."""

    dst: Path
    out_type: str
    dst_bytes: int
    seconds: float


def read_json(path: Path) -> dict:
    """The JSON object in ``path`` (a model folder's config); raises :class:`ConvertError`
    when the file is missing."""
    if not path.is_file():
        raise ConvertError(f"{path}: no such file (is {path.parent} a HuggingFace model "
                           "folder?)")
    return json.loads(path.read_text(encoding="utf-8"))


def pooling_type(model_dir: Path):
    """The sentence-transformers pooling (modules.json -> its Pooling config) as a
    ``gguf.PoolingType``, or ``None`` without one. Raises :class:`ConvertError` for a
    pooling llama.cpp has no type for."""
    import gguf

    modules = model_dir / "modules.json"
    if not modules.is_file():
        return None
    paths = [m["path"] for m in json.loads(modules.read_text()) if m["type"].endswith("Pooling")]
    if not paths:
        return None
    cfg = read_json(model_dir / paths[0] / "config.json")
    modes = {"mean": gguf.PoolingType.MEAN, "cls": gguf.PoolingType.CLS,
             "lasttoken": gguf.PoolingType.LAST}
    if cfg.get("pooling_mode_mean_tokens"):
        return gguf.PoolingType.MEAN
    if cfg.get("pooling_mode_cls_token"):
        return gguf.PoolingType.CLS
    if cfg.get("pooling_mode_lasttoken"):
        return gguf.PoolingType.LAST
    if cfg.get("pooling_mode") in modes:
        return modes[cfg["pooling_mode"]]
    raise ConvertError(f"{model_dir / paths[0]}: only mean, CLS and last-token pooling convert")


def looks_special(token: str) -> bool:
    """llama.cpp's ``does_token_look_special``: added tokens some models forget to mark
    special."""
    return (token in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or token.startswith("<|") and token.endswith("|>")
            or token.startswith("<｜") and token.endswith("｜>")
            or token.startswith("<unused") and token.endswith(">"))


def add_general_metadata(writer, model_dir: Path) -> None:
    """The converter's ``general.*`` keys (name, size label from the parameter count of the
    tensors added so far, file type MODEL), read from ``model_dir`` as llama.cpp does."""
    import gguf

    total = writer.get_total_parameter_count()
    meta = gguf.Metadata.load(None, model_dir, None, total[0])
    meta.name = meta.name or model_dir.name
    if meta.size_label is None and total[0] > 0:
        meta.size_label = gguf.size_label(*total)
    writer.add_type(gguf.GGUFType.MODEL)
    meta.set_gguf_meta_model(writer)


def add_special_vocab(writer, model_dir: Path, n_vocab: int) -> None:
    """``gguf.SpecialVocab``'s special token ids and add-BOS/EOS flags from ``model_dir``,
    with its warnings about what llama.cpp has no key for kept quiet: BERT's CLS (its BOS),
    EmbeddingGemma's pair template (an embedder never encodes pairs)."""
    import gguf

    vocab_log = logging.getLogger("gguf.vocab")
    level = vocab_log.level
    vocab_log.setLevel(logging.ERROR)
    try:
        gguf.SpecialVocab(model_dir, n_vocab=n_vocab).add_to_gguf(writer)
    finally:
        vocab_log.setLevel(level)


def write_out(writer, dst: Path) -> None:
    """Write the header, the key-values and the tensors to ``dst`` and close the writer."""
    writer.write_header_to_file(path=dst)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
