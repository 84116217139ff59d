"""Remote OpenAI-compatible backend for any LLM role, and for the captioner.

Remote use is opt-in per role (DESIGN.md): a role goes remote only when its profile names a
model with ``backend = "openai"`` or ``EDGE_<ROLE>_BASE_URL`` is set. Frames never leave the
device unless that role also allows it (``allow_frames = true`` or
``EDGE_<ROLE>_ALLOW_FRAMES=1``). Any server that speaks the chat-completions API works: a
vLLM box, ``llama-server``, llama-cpp-python's ``python -m llama_cpp.server``, a frontier
API.

Settings per role (a ``[models.NAME]`` table in a user profile file; each key also has an
environment override ``EDGE_<ROLE>_<KEY>`` that wins, ROLE being SOLVER, MEMORY_LLM or
CAPTIONER):

======================  ==========================================================  =========
key                     meaning                                                     default
======================  ==========================================================  =========
``base_url``            server root including ``/v1``                               required
``model``               model name the server serves                                required
``api_key_env``         environment variable holding the API key                    —
``api_key``             the key itself (env ``EDGE_<ROLE>_API_KEY``)                "none"
``timeout``             seconds per request                                         60
``max_retries``         retries with exponential backoff (connection errors,        2
                        408/409/429/5xx; the ``openai`` SDK's own)
``n_ctx``               context tokens the prompt budget assumes                    8192
``json_mode``           ``auto``, ``json_schema``, ``json_object`` or ``none``      auto
``allow_frames``        captioner/VLM solver may send frames                        false
======================  ==========================================================  =========

Structured output has the same contract as :class:`models.llm.LlamaCppLLM.chat_json`: the
server constrains the reply with the JSON schema where it supports it (``json_schema`` is
the OpenAI form; ``json_object`` with a ``schema`` is llama.cpp's; ``auto`` tries them in
that order and remembers what the server accepted), then parse → validate → one repair call
→ :class:`models.llm.LLMOutputError`. Every call is counted with the server's own token
counts (its ``usage`` field).
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from models.captioner import Caption, Frame
from models.llm import ChatResult, ContextOverflowError, LLMOutputError, _parse_valid, _short
from models.registry import ConfigError, ModelSpec
from models.usage import CallRecord, UsageMeter
from models.vlm import FrameBudget, caption_messages, compose_caption, pick_frames

JSON_MODES = ("json_schema", "json_object", "none")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class RemoteUnavailableError(ConfigError):
    """The remote server could not be reached (or kept failing) after the retries."""


class RemoteError(RuntimeError):
    """The remote server answered with an error that retrying does not fix."""


class _FormatRejected(RemoteError):
    """The server refused a response_format form (internal: the next form is tried)."""


def env_prefix(role: str) -> str:
    """``EDGE_SOLVER_`` for role ``solver``: the prefix of a role's environment overrides."""
    return f"EDGE_{role.upper()}_"


@dataclass(frozen=True)
class RemoteConfig:
    """Where and how one role talks to an OpenAI-compatible server (see the module table)."""

    role: str
    base_url: str
    model: str
    api_key: str = "none"
    timeout: float = 60.0
    max_retries: int = 2
    n_ctx: int = 8192
    json_mode: str = "auto"
    allow_frames: bool = False

    @classmethod
    def from_spec(cls, spec: ModelSpec | None, role: str,
                  environ: Mapping[str, str] | None = None) -> RemoteConfig:
        """Settings from ``spec``'s options with ``EDGE_<ROLE>_*`` overrides from ``environ``
        (default ``os.environ``). Raises :class:`ConfigError` naming the missing or bad key."""
        env = os.environ if environ is None else environ
        opts = dict(spec.options) if spec is not None else {}
        pre = env_prefix(role)
        where = f"model {spec.name!r}" if spec is not None else "the environment"

        def get(key: str, default: Any = None) -> Any:
            return env.get(pre + key.upper(), opts.get(key, default))

        base_url = str(get("base_url") or "").strip()
        model = str(get("model") or "").strip()
        if not base_url:
            raise ConfigError(f"role {role}: remote backend without a base URL; set base_url "
                              f"in {where} or {pre}BASE_URL (e.g. http://127.0.0.1:8080/v1)")
        if urlparse(base_url).scheme not in ("http", "https"):
            raise ConfigError(f"role {role}: base URL {base_url!r} must start with http:// or "
                              "https://")
        if not model:
            raise ConfigError(f"role {role}: remote backend at {base_url} without a model "
                              f"name; set model in {where} or {pre}MODEL")
        key = env.get(pre + "API_KEY")
        if key is None and opts.get("api_key_env"):
            key = env.get(str(opts["api_key_env"]))
        if key is None:
            key = opts.get("api_key")
        try:
            cfg = cls(role=role, base_url=base_url.rstrip("/"), model=model,
                      api_key=str(key) if key else "none",
                      timeout=float(get("timeout", 60.0)),
                      max_retries=int(get("max_retries", 2)), n_ctx=int(get("n_ctx", 8192)),
                      json_mode=str(get("json_mode", "auto")),
                      allow_frames=_flag(get("allow_frames", False)))
        except ValueError as e:
            raise ConfigError(
                f"role {role}: bad remote setting in {where} or {pre}*: {e}") from None
        if cfg.json_mode not in ("auto", *JSON_MODES):
            raise ConfigError(f"role {role}: json_mode {cfg.json_mode!r} is not one of auto, "
                              + ", ".join(JSON_MODES))
        if cfg.timeout <= 0 or cfg.max_retries < 0 or cfg.n_ctx < 256:
            raise ConfigError(f"role {role}: timeout must be > 0, max_retries ≥ 0, n_ctx ≥ 256")
        return cfg


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"allow_frames={value!r}: use true or false")


def env_remote_spec(role: str, environ: Mapping[str, str] | None = None) -> ModelSpec | None:
    """A remote model spec for ``role`` when ``EDGE_<ROLE>_BASE_URL`` is set, else ``None``.

    This is how a role goes remote without a profile file; the remaining settings come from
    the other ``EDGE_<ROLE>_*`` variables.
    """
    env = os.environ if environ is None else environ
    if not env.get(env_prefix(role) + "BASE_URL"):
        return None
    model = env.get(env_prefix(role) + "MODEL", "")
    return ModelSpec(name=f"remote-{role}" + (f" ({model})" if model else ""),
                     backend="openai", source="none",
                     description=f"remote OpenAI-compatible {role} from {env_prefix(role)}*")


class RemoteLLM:
    """An LLM role served by an OpenAI-compatible server; a drop-in for
    :class:`models.llm.LlamaCppLLM` (``chat``, ``chat_json``, ``count_tokens``, ``truncate``,
    ``n_ctx``, ``close``).

    Token counts for budgeting are estimates (3 UTF-8 bytes per token, on the safe side of
    the usual ~4 characters per token); counts recorded for usage are the server's.
    Raises :class:`RemoteUnavailableError` when the server cannot be reached after
    ``max_retries`` retries, :class:`ConfigError` for a rejected key or unknown model,
    :class:`ContextOverflowError` when the server says the prompt is too long.
    """

    def __init__(self, config: RemoteConfig, *, name: str | None = None,
                 usage: UsageMeter | None = None) -> None:
        from openai import OpenAI

        self.config = config
        self.name = name or config.model
        self.n_ctx = config.n_ctx
        self.usage = usage
        self._client = OpenAI(base_url=config.base_url, api_key=config.api_key,
                              timeout=config.timeout, max_retries=config.max_retries)
        self._json_mode = None if config.json_mode == "auto" else config.json_mode
        self._lock = threading.Lock()

    @property
    def accepts_frames(self) -> bool:
        """Whether callers may put frames (``image_url`` parts) in this role's messages: only
        when the user allowed it for this role (``allow_frames``) — the server must also be
        a VLM for them to be useful."""
        return self.config.allow_frames

    # ---- token budgeting (estimates) ---------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Estimated tokens of ``text``: UTF-8 bytes / 3, rounded up (no remote tokenizer)."""
        return math.ceil(len(text.encode("utf-8")) / 3)

    def truncate(self, text: str, max_tokens: int) -> str:
        """``text`` cut so that :meth:`count_tokens` ≤ ``max_tokens``, with an ellipsis."""
        if self.count_tokens(text) <= max_tokens:
            return text
        raw = text.encode("utf-8")[: max(0, max_tokens - 1) * 3]
        return raw.decode("utf-8", "ignore").rstrip() + "…"

    def _prompt_tokens(self, messages: list[dict[str, Any]]) -> int:
        total = 0
        for m in messages:
            content = m.get("content", "")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            total += self.count_tokens(str(content)) + 8
        return total

    # ---- calls -------------------------------------------------------------------------

    def _hint(self) -> str:
        pre = env_prefix(self.config.role)
        return (f"check that the server is running and reachable from this device, and the "
                f"base URL ({pre}BASE_URL or base_url in your profile)")

    def _create(self, messages: list[dict[str, Any]], *, role: str, max_tokens: int,
                temperature: float, response_format: dict | None,
                probing: bool = False) -> ChatResult:
        """One request. ``probing``: this response_format may be unsupported; a server
        error answer is then not retried and raises :class:`_FormatRejected`."""
        import openai

        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                  "max_tokens": max_tokens, "temperature": temperature}
        if response_format is not None:
            kwargs["response_format"] = response_format
        t0 = time.perf_counter()
        try:
            if probing:
                try:  # llama-cpp-python answers an unknown response_format with a 500
                    out = self._client.with_options(max_retries=0).chat.completions.create(
                        **kwargs)
                except openai.APITimeoutError:
                    raise  # the server took the request: the format is not the problem
                except openai.APIConnectionError:
                    out = self._client.chat.completions.create(**kwargs)  # with retries
                except (openai.AuthenticationError, openai.PermissionDeniedError,
                        openai.NotFoundError):
                    raise
                except openai.APIStatusError as e:
                    raise _FormatRejected(f"{e.status_code}: {_short(e)}") from None
            else:
                out = self._client.chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            pre = env_prefix(self.config.role)
            raise RemoteUnavailableError(
                f"role {self.config.role}: the server at {self.config.base_url} did not answer "
                f"within {self.config.timeout:g} s ({self.config.max_retries} retries); a slow "
                f"server or a long prompt needs a longer timeout ({pre}TIMEOUT or timeout in "
                "your profile)") from None
        except openai.APIConnectionError as e:  # after the SDK's retries
            raise RemoteUnavailableError(
                f"role {self.config.role}: cannot reach the OpenAI-compatible server at "
                f"{self.config.base_url} ({e.__class__.__name__}: {_short(e)}; "
                f"{self.config.max_retries} retries, {self.config.timeout:g} s timeout); "
                f"{self._hint()}") from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
            raise ConfigError(
                f"role {self.config.role}: {self.config.base_url} rejected the API key "
                f"({e.status_code}); set {env_prefix(self.config.role)}API_KEY or api_key_env "
                "in your profile") from None
        except openai.NotFoundError as e:
            raise ConfigError(
                f"role {self.config.role}: {self.config.base_url} has no model "
                f"{self.config.model!r} or no chat-completions endpoint ({_short(e)}); check "
                f"the model name and that the base URL ends in /v1") from None
        except openai.InternalServerError as e:
            raise RemoteUnavailableError(
                f"role {self.config.role}: the server at {self.config.base_url} kept failing "
                f"({e.status_code}: {_short(e)}) after {self.config.max_retries} retries") from None
        except openai.APIStatusError as e:
            msg = _short(e)
            if "context" in msg.lower() or "too long" in msg.lower():
                raise ContextOverflowError(f"{self.name}: {msg}") from None
            raise RemoteError(f"role {self.config.role}: {self.config.base_url} answered "
                              f"{e.status_code}: {msg}") from e
        seconds = time.perf_counter() - t0
        text = (out.choices[0].message.content or "") if out.choices else ""
        u = out.usage
        res = ChatResult(
            text=text,
            tokens_in=int(u.prompt_tokens) if u else self._prompt_tokens(messages),
            tokens_out=int(u.completion_tokens) if u else self.count_tokens(text),
            seconds=seconds)
        if self.usage is not None:
            self.usage.record(CallRecord(role, self.name, res.tokens_in, res.tokens_out, seconds))
        return res

    def chat(self, messages: list[dict[str, Any]], *, role: str, schema: dict | None = None,
             max_tokens: int = 256, temperature: float = 0.0) -> ChatResult:
        """One chat completion, counted under ``role``; with ``schema`` the server is asked
        to constrain the reply (see the module docstring). Raises
        :class:`ContextOverflowError` when the estimated prompt plus ``max_tokens`` exceeds
        ``n_ctx``."""
        if not self.config.allow_frames and _has_images(messages):
            raise ConfigError(
                f"role {self.config.role}: refusing to send frames to {self.config.base_url}; "
                "frames leave this device only when that role sets allow_frames = true "
                f"({env_prefix(self.config.role)}ALLOW_FRAMES=1)")
        prompt_tokens = self._prompt_tokens(messages)
        if prompt_tokens + max_tokens > self.n_ctx:
            raise ContextOverflowError(
                f"{self.name}: prompt of ~{prompt_tokens} tokens + {max_tokens} to generate "
                f"exceeds the {self.n_ctx}-token context")
        if schema is None:
            return self._create(messages, role=role, max_tokens=max_tokens,
                                temperature=temperature, response_format=None)
        known = self._json_mode
        modes = [known] if known else list(JSON_MODES)
        for mode in modes:
            try:
                res = self._create(_with_schema_hint(messages, schema) if mode == "none"
                                   else messages, role=role, max_tokens=max_tokens,
                                   temperature=temperature,
                                   response_format=_response_format(mode, schema),
                                   probing=known is None and mode != "none")
            except _FormatRejected:
                continue  # the server rejected this response_format: try the next form
            with self._lock:
                self._json_mode = mode  # remember what this server accepts
            return res
        raise AssertionError("unreachable")

    def chat_json(self, messages: list[dict[str, Any]], *, role: str, schema: dict,
                  max_tokens: int = 256) -> dict:
        """A JSON object that validates against ``schema``: parse → validate → one repair
        call showing the broken reply and the error → :class:`LLMOutputError`."""
        import jsonschema

        res = self.chat(messages, role=role, schema=schema, max_tokens=max_tokens)
        try:
            return _parse_valid(_strip_fence(res.text), schema, jsonschema)
        except (ValueError, jsonschema.ValidationError) as first:
            repair = [*messages, {"role": "assistant", "content": res.text},
                      {"role": "user", "content": f"That reply was not valid ({_short(first)}). "
                       "Reply again with only the JSON object, complete and valid."}]
            try:
                res2 = self.chat(repair, role=role, schema=schema, max_tokens=max_tokens)
                return _parse_valid(_strip_fence(res2.text), schema, jsonschema)
            except (ValueError, jsonschema.ValidationError, ContextOverflowError) as second:
                raise LLMOutputError(
                    f"{self.name} returned invalid JSON twice: {_short(second)}") from second

    def ping(self, timeout: float = 3.0) -> list[str]:
        """The model names the server lists (``GET /models``), one try with ``timeout``
        seconds; raises :class:`RemoteUnavailableError` when it does not answer."""
        import openai

        try:
            page = self._client.with_options(timeout=timeout, max_retries=0).models.list()
            return [m.id for m in page.data]
        except openai.APIConnectionError as e:
            raise RemoteUnavailableError(
                f"cannot reach {self.config.base_url} ({_short(e)}); {self._hint()}") from None
        except openai.APIStatusError as e:
            raise RemoteUnavailableError(
                f"{self.config.base_url} answered {e.status_code} to GET /models: "
                f"{_short(e)}") from None

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


def _has_images(messages: list[dict[str, Any]]) -> bool:
    return any(isinstance(p, dict) and p.get("type") in ("image_url", "input_image")
               for m in messages if isinstance(m.get("content"), list) for p in m["content"])


def _response_format(mode: str, schema: dict) -> dict | None:
    if mode == "json_schema":
        return {"type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema, "strict": False}}
    if mode == "json_object":
        return {"type": "json_object", "schema": schema}
    return None


def _with_schema_hint(messages: list[dict[str, Any]], schema: dict) -> list[dict[str, Any]]:
    note = ("Reply with only a JSON object (no prose, no code fence) that validates against "
            "this JSON schema:\n" + json.dumps(schema, separators=(",", ":")))
    return [*messages, {"role": "system", "content": note}]


def _strip_fence(text: str) -> str:
    """Servers without constrained output often wrap JSON in a Markdown code fence."""
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        t = t.rsplit("```", 1)[0]
    return t.strip()


class RemoteCaptioner:
    """Captioner role on a remote VLM: the prompt of :func:`models.vlm.caption_messages`
    with frames as JPEG ``data:`` URLs.

    Raises :class:`ConfigError` at construction unless the role's config allows frames to
    leave the device (``allow_frames``).
    """

    def __init__(self, llm: RemoteLLM, *, budget: FrameBudget | None = None,
                 max_tokens: int = 200) -> None:
        if not llm.config.allow_frames:
            pre = env_prefix(llm.config.role)
            raise ConfigError(
                f"role {llm.config.role} points at the remote server {llm.config.base_url}, "
                "but frames never leave this device unless you allow it: set allow_frames = "
                f"true for that model in your profile (or {pre}ALLOW_FRAMES=1), or use a "
                "local captioner")
        self.llm = llm
        self.name = llm.name
        self.budget = budget or FrameBudget()
        self.max_tokens = max_tokens

    def caption(self, frames: list[Frame], transcript: str, duration: float) -> Caption:
        """A dense caption of one clip from at most ``budget.max_frames`` of its frames;
        halves the frames while the server reports a context overflow."""
        n = min(self.budget.max_frames, len(frames))
        while True:
            picked = pick_frames(frames, n)
            try:
                res = self.llm.chat(caption_messages(picked, transcript, duration, self.budget),
                                    role="captioner", max_tokens=self.max_tokens)
                break
            except ContextOverflowError:
                if n == 0:
                    raise
                n //= 2
        return compose_caption(res.text, transcript, model=self.name, frames=len(picked),
                               duration=duration, extra={"tokens_in": res.tokens_in,
                                                         "remote": self.llm.config.base_url})

    def close(self) -> None:
        self.llm.close()
