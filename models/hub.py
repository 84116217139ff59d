"""Loads each role's backend once per process and shares it.

``ModelHub(profile)`` is the only place that turns a manifest entry into a live model.
Roles that name the same model (the tiny profile's memory LLM and solver) share one
instance, so a GGUF is mapped into memory once.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from models.registry import ConfigError, Manifest, ModelSpec, Profile
from models.resolve import WeightsMissingError, resolve_tokenizer, resolve_weights
from models.usage import UsageMeter

REMOTE_BACKEND = "openai"
"""The backend name of a role served by an OpenAI-compatible server (models/remote/)."""
VOICE_MODEL = "ge2e-resemblyzer"
"""The manifest's voice encoder (:attr:`ModelHub.voices`): GE2E converted to ONNX."""


def default_threads() -> int:
    """CPU threads per model: ``EDGE_THREADS`` or 2 (the edge budget), never more than the cores.
    Raises :class:`ConfigError` when ``EDGE_THREADS`` is not a whole number ≥ 1."""
    env = os.environ.get("EDGE_THREADS")
    if env:
        if not env.strip().isdigit() or int(env) < 1:
            raise ConfigError(f"EDGE_THREADS={env!r}: must be a whole number of threads ≥ 1")
        return int(env)
    return max(1, min(2, os.cpu_count() or 1))


class ModelHub:
    """Lazily built, cached backends for one profile.

    Args:
        profile: which model serves each role. models_dir: where assembled GGUF files live.
        usage: every call of every role is recorded here. manifest: where models named
            outside the profile are looked up (:meth:`embedder_named`; default the
            shipped manifest).
    """

    def __init__(self, profile: Profile, models_dir: Path, *, usage: UsageMeter | None = None,
                 threads: int | None = None, manifest: Manifest | None = None) -> None:
        self.profile = profile
        self.manifest = manifest
        self.models_dir = Path(models_dir)
        self.usage = usage or UsageMeter()
        self.threads = threads or default_threads()
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _build(self, spec: ModelSpec, role: str) -> Any:
        model = self._build_model(spec, role)
        # the retrieval fusion tuned for this embedder's vectors: a local model is shared by
        # the roles naming it, so whichever embedder role loads it first attaches it
        if role in ("embedder", "sentence_embedder"):
            model.fusion = {k: spec.option(k) for k in ("rrf_k", "dense_weight")
                            if spec.option(k) is not None}
        return model

    def _build_model(self, spec: ModelSpec, role: str) -> Any:
        if spec.backend == REMOTE_BACKEND:
            return self._build_remote(spec, role)
        path = self._weights(spec)
        if spec.backend == "faster-whisper":
            from models.transcriber import WhisperTranscriber

            return WhisperTranscriber(path, name=spec.name, threads=self.threads,
                                      usage=self.usage)
        if spec.backend == "onnx-embedder":
            from models.embedder import OnnxEmbedder

            return OnnxEmbedder(path, resolve_tokenizer(spec), name=spec.name,
                                dim=spec.option("dim", 384),
                                max_tokens=spec.option("max_tokens", 256),
                                threads=self.threads, usage=self.usage)
        if spec.backend == "llama.cpp-embedder":
            from models.embedder import LlamaCppEmbedder

            return LlamaCppEmbedder(path, name=spec.name, dim=spec.option("dim", 384),
                                    max_tokens=spec.option("max_tokens", 256),
                                    query_prefix=spec.option("query_prefix", ""),
                                    document_prefix=spec.option("document_prefix", ""),
                                    threads=self.threads, usage=self.usage)
        if spec.backend == "llama.cpp":
            from models.llama_chat import LlamaCppLLM

            return LlamaCppLLM(path, name=spec.name, n_ctx=spec.option("n_ctx", 4096),
                               grammar=spec.option("grammar", "on_failure"),
                               threads=self.threads, usage=self.usage,
                               chat_format=spec.option("chat_format"))
        if spec.backend == "perception":
            from models.captioner import PerceptionCaptioner
            from models.vision import TextReader

            return PerceptionCaptioner(reader=TextReader(usage=self.usage))
        if spec.backend == "llama.cpp-vlm":
            from models.resolve import resolve_mmproj
            from models.vlm import FrameBudget, LlamaCppVLMCaptioner

            return LlamaCppVLMCaptioner(path, resolve_mmproj(spec, self.models_dir),
                                        name=spec.name, n_ctx=spec.option("n_ctx", 4096),
                                        threads=self.threads,
                                        budget=FrameBudget.from_options(spec.options),
                                        max_tokens=spec.option("max_tokens", 160),
                                        usage=self.usage)
        raise ValueError(f"model {spec.name!r}: unknown backend {spec.backend!r}")

    def _weights(self, spec: ModelSpec) -> Path | None:
        """:func:`resolve_weights`, its missing-weights error naming the profile's setup."""
        try:
            return resolve_weights(spec, self.models_dir)
        except WeightsMissingError as e:
            raise WeightsMissingError(
                f"{e} For every model of the {self.profile.name!r} profile: "
                f"`bash scripts/setup.sh --profile {self.profile.name}`.") from None

    def _build_remote(self, spec: ModelSpec, role: str) -> Any:
        from models.remote import RemoteCaptioner, RemoteConfig, RemoteLLM
        from models.vlm import FrameBudget

        config = RemoteConfig.from_spec(spec, role)
        llm = RemoteLLM(config, name=config.model, usage=self.usage)
        if role == "captioner":
            return RemoteCaptioner(llm, budget=FrameBudget.from_options(spec.options),
                                   max_tokens=spec.option("max_tokens", 200))
        return llm

    def spec(self, role: str) -> ModelSpec:
        """The model serving ``role``: ``EDGE_<ROLE>_BASE_URL`` in the environment makes it a
        remote OpenAI-compatible one (opt-in per role), else the profile's."""
        from models.remote import env_remote_spec

        return env_remote_spec(role) or self.profile.spec(role)

    def remote_roles(self) -> list[str]:
        """Roles served off the device by an OpenAI-compatible server: from the profile, or
        made remote by ``EDGE_<ROLE>_BASE_URL`` (:meth:`spec`). Loads nothing."""
        return [role for role in self.profile.roles if self.spec(role).backend == REMOTE_BACKEND]

    def get(self, role: str) -> Any:
        """The live backend for ``role`` (loaded on first use, then reused).

        Raises :class:`WeightsMissingError` (naming the setup command) or
        :class:`models.resolve.WeightsCorruptError` for local weights, :class:`ConfigError`
        for bad remote settings or a remote captioner whose frames are not allowed,
        :class:`models.registry.UnknownModelError` for a role the profile lacks, and
        ``ValueError`` for an unknown backend."""
        spec = self.spec(role)
        # a local model is shared by the roles naming it; a remote one is configured per role
        key = f"{spec.name}#{role}" if spec.backend == REMOTE_BACKEND else spec.name
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._build(spec, role)
            return self._cache[key]

    @property
    def transcriber(self):
        """The ``transcriber`` role's backend (:meth:`get`)."""
        return self.get("transcriber")

    @property
    def embedder(self):
        """The ``embedder`` role's backend (:meth:`get`)."""
        return self.get("embedder")

    @property
    def sentence_embedder(self):
        """The ``sentence_embedder`` role's backend (:meth:`get`): the embedder that picks
        a question's sentences (the profile's ``embedder`` unless it names another)."""
        return self.get("sentence_embedder")

    def embedder_named(self, name: str):
        """The embedder model ``name`` (a manifest or user model; loaded once, shared with
        the role when it is the same model): a memory's vectors are searched with the
        embedder that wrote them, whatever the profile names now. Raises
        :class:`models.registry.UnknownModelError` for an unknown name and what
        :meth:`get` raises for missing weights."""
        if self.spec("embedder").name == name:
            return self.embedder
        from models.registry import load_manifest

        spec = (self.manifest or load_manifest()).model(name)
        with self._lock:
            if spec.name not in self._cache:
                self._cache[spec.name] = self._build(spec, "embedder")
            return self._cache[spec.name]

    @property
    def captioner(self):
        """The ``captioner`` role's backend (:meth:`get`)."""
        return self.get("captioner")

    @property
    def faces(self):
        """The face embedder of the character tier (:class:`models.faces.FaceEmbedder`:
        dlib's HOG detector on a 640-px copy without upsampling, 5-point alignment, 128-d
        ResNet descriptor), loaded once. Without upsampling the detector kept every usable
        face of the shared footage at a fifth of the cost (benchmarks/face_cost.py: 0.09
        against 0.44 s a frame; the smaller faces upsampling adds fail the size gate).
        Raises ``ImportError`` without dlib and what :func:`models.faces.model_files`
        raises for missing or altered model files."""
        with self._lock:
            if "#faces" not in self._cache:
                from models.faces import FaceEmbedder

                self._cache["#faces"] = FaceEmbedder(detect_side=640, upsample=0)
            return self._cache["#faces"]

    @property
    def voices(self):
        """The voice encoder of the character tier (:class:`models.voices.VoiceEncoder`,
        GE2E on onnxruntime; the manifest's ``ge2e-resemblyzer`` model), loaded once.
        Raises :class:`WeightsMissingError` (naming the setup command) when it is not
        converted yet."""
        with self._lock:
            if "#voices" not in self._cache:
                from models.registry import load_manifest
                from models.voices import VoiceEncoder

                spec = (self.manifest or load_manifest()).model(VOICE_MODEL)
                self._cache["#voices"] = VoiceEncoder(self._weights(spec), name=spec.name,
                                                      threads=self.threads, usage=self.usage)
            return self._cache["#voices"]

    def llm(self, role: str):
        """The LLM serving ``role`` (``memory_llm`` or ``solver``)."""
        return self.get(role)

    def tokenizer(self, role: str):
        """What counts the tokens of ``role``'s LLM, loading no weights where it can: the
        LLM itself once it is loaded, or a remote one (its own estimate); else a llama.cpp
        model's vocabulary alone (:class:`models.llama_vocab.LlamaVocab`, about 0.5 s; its
        counts are the model's). It has ``count_tokens(text)`` and ``n_ctx``, and records
        no call. Raises what :meth:`get` raises."""
        spec = self.spec(role)
        if spec.backend != "llama.cpp":
            return self.get(role)
        from models.llama_vocab import LlamaVocab

        with self._lock:
            if spec.name in self._cache:
                return self._cache[spec.name]
            key = f"{spec.name}#vocab"
            if key not in self._cache:
                self._cache[key] = LlamaVocab(self._weights(spec), name=spec.name,
                                              n_ctx=spec.option("n_ctx", 4096))
            return self._cache[key]

    def reset_caches(self) -> None:
        """Empty the KV caches and prompt-prefix snapshots of the loaded local LLMs
        (:meth:`models.llama_chat.LlamaCppLLM.reset`); the models stay loaded."""
        with self._lock:
            models = list(self._cache.values())
        for model in models:
            reset = getattr(model, "reset", None)
            if callable(reset):
                reset()

    def close(self) -> None:
        """Release native resources (llama.cpp contexts) explicitly."""
        with self._lock:
            for model in self._cache.values():
                close = getattr(model, "close", None)
                if close is not None:
                    close()
            self._cache.clear()
