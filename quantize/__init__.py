"""Producing smaller models (GGUF quantization, int8 ONNX). Nothing here yet."""
