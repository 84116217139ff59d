"""A projector (``mmproj``) GGUF with random weights, written with the ``gguf`` package.

No vision-language model ships offline (MODELS.md), so the llama.cpp multimodal path is
tested with this: a tiny CLIP-like vision encoder (llava ``mlp`` projector type: patch
embedding, class embedding, 2 transformer blocks of width 64, a 2-layer MLP into the
language model's embedding width) paired with a shipped small LLM. It proves that images
are encoded (16 image tokens per 32×32 image) and text comes back; the text is nonsense.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_random_projector(path: Path, llm_embedding: int, *, image_size: int = 32,
                           patch: int = 8, width: int = 64, ffn: int = 128, blocks: int = 2,
                           heads: int = 2, seed: int = 0) -> Path:
    """Write a random-weight llava-style projector for a language model whose embedding
    width is ``llm_embedding`` (SmolLM2-135M: 576, Qwen2.5-0.5B: 896); returns ``path``.
    Each image costs ``(image_size // patch) ** 2`` tokens."""
    import gguf

    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_string("clip.projector_type", "mlp")
    w.add_uint32("clip.vision.image_size", image_size)
    w.add_uint32("clip.vision.patch_size", patch)
    w.add_uint32("clip.vision.embedding_length", width)
    w.add_uint32("clip.vision.feed_forward_length", ffn)
    w.add_uint32("clip.vision.projection_dim", llm_embedding)
    w.add_uint32("clip.vision.block_count", blocks)
    w.add_uint32("clip.vision.attention.head_count", heads)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_bool("clip.use_gelu", True)

    def rand(name: str, *shape: int) -> None:  # numpy shape = reversed ggml ne
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))

    def norm(name: str) -> None:
        w.add_tensor(f"{name}.weight", np.ones(width, np.float32))
        w.add_tensor(f"{name}.bias", np.zeros(width, np.float32))

    rand("v.patch_embd.weight", width, 3, patch, patch)
    rand("v.class_embd", width)
    rand("v.position_embd.weight", (image_size // patch) ** 2 + 1, width)
    norm("v.pre_ln")
    for i in range(blocks):
        for t in ("attn_q", "attn_k", "attn_v", "attn_out"):
            rand(f"v.blk.{i}.{t}.weight", width, width)
            rand(f"v.blk.{i}.{t}.bias", width)
        norm(f"v.blk.{i}.ln1")
        norm(f"v.blk.{i}.ln2")
        rand(f"v.blk.{i}.ffn_up.weight", ffn, width)
        rand(f"v.blk.{i}.ffn_up.bias", ffn)
        rand(f"v.blk.{i}.ffn_down.weight", width, ffn)
        rand(f"v.blk.{i}.ffn_down.bias", width)
    rand("mm.0.weight", llm_embedding, width)
    rand("mm.0.bias", llm_embedding)
    rand("mm.2.weight", llm_embedding, llm_embedding)
    rand("mm.2.bias", llm_embedding)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)
