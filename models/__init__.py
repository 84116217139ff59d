"""Model roles and their backends; knows nothing about clips or memory.

Public API: the manifest (profiles, roles, model specs), the weight resolver, the
:class:`ModelHub` that loads each role once, the usage meter that counts every call, and
:func:`cancel_scope` that stops a thread's LLM calls (:class:`GenerationCancelled`).
"""

import os

# llama.cpp (and CTranslate2) run on OpenMP, whose worker threads spin while they wait. On a
# 2-core device that shares its cores with anything else (OCR, decoding, another model) the
# spinning threads starve each other: measured 35.8 s instead of 1.0 s for a 9-token reply.
# Passive waiting costs nothing measurable when the cores are idle. Must be set before the
# OpenMP runtime loads, i.e. before llama_cpp/ctranslate2 are imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("GGML_NO_BACKTRACE", "1")  # a ggml assert otherwise forks gdb (MODELS.md)
# onnxruntime (OCR in the perception captioner, the MiniLM embedder) ships Microsoft's 1DS
# telemetry on Linux: every process that creates an ORT environment queues usage events in
# ~/.cache/Microsoft/DeveloperTools/.onnxruntime/onnxruntime.db (with a persistent device id)
# and, a few seconds later and then periodically, resolves mobile.events.data.microsoft.com
# to upload them. Nothing may leave the device unless the user configured a remote role, so
# it is forced off (onnxruntime.disable_telemetry_events() does not stop it; this variable
# does, and ORT reads it natively, so it must be set before any session is created).
# tests/test_offline.py straces ingest and ask for any lookup.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

from models.cancel import GenerationCancelled, cancel_scope  # noqa: E402
from models.hub import ModelHub, default_threads  # noqa: E402
from models.registry import (
    ROLES,
    ConfigError,
    Manifest,
    ModelSpec,
    Profile,
    UnknownModelError,
    load_manifest,
)
from models.resolve import WeightsCorruptError, WeightsMissingError, resolve_weights
from models.usage import CallRecord, UsageMeter

__all__ = [
    "ROLES",
    "CallRecord",
    "ConfigError",
    "GenerationCancelled",
    "Manifest",
    "ModelHub",
    "ModelSpec",
    "Profile",
    "UnknownModelError",
    "UsageMeter",
    "WeightsCorruptError",
    "WeightsMissingError",
    "cancel_scope",
    "default_threads",
    "load_manifest",
    "resolve_weights",
]
