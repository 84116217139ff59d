"""The chat-completions client behind every remote LLM role: :class:`RemoteLLM`.

Structured output has the same contract as :class:`models.llama_chat.LlamaCppLLM.chat_json`: the
server constrains the reply with the JSON schema where it supports it (``json_schema`` is
the OpenAI form; ``json_object`` with a ``schema`` is llama.cpp's; ``auto`` tries them in
that order and remembers what the server accepted), then parse → validate → one repair call
→ :class:`models.llm.LLMOutputError`. Every call is counted with the server's own token
counts (its ``usage`` field).
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from models.cancel import current_cancel, run_cancellable
from models.llm import (
    ChatResult,
    ContextOverflowError,
    LLMOutputError,
    OnToken,
    _parse_valid,
    _short,
)
from models.registry import ConfigError
from models.remote.config import (
    JSON_MODES,
    RemoteConfig,
    RemoteError,
    RemoteUnavailableError,
    env_prefix,
)
from models.usage import CallRecord, UsageMeter


class _FormatRejected(RemoteError):
    """The server refused a response_format form (internal: the next form is tried)."""


class RemoteLLM:
    """An LLM role served by an OpenAI-compatible server; a drop-in for
    :class:`models.llama_chat.LlamaCppLLM` (``chat``, ``chat_json``, ``count_tokens``, ``truncate``,
    ``n_ctx``, ``close``).

    Token counts for budgeting are estimates (3 UTF-8 bytes per token, on the safe side of
    the usual ~4 characters per token); counts recorded for usage are the server's.
    Raises :class:`RemoteUnavailableError` when the server cannot be reached after
    ``max_retries`` retries, :class:`ConfigError` for a rejected key or unknown model,
    :class:`ContextOverflowError` when the server says the prompt is too long.

    Args:
        config: the role's settings. name: the model name usage is recorded under (default
        ``config.model``). usage: where every call is counted (None: not counted).
    """

    def __init__(self, config: RemoteConfig, *, name: str | None = None,
                 usage: UsageMeter | None = None) -> None:
        from openai import OpenAI

        self.config = config
        self.name = name or config.model
        self.n_ctx = config.n_ctx
        self.usage = usage
        self._clients = [OpenAI(base_url=url, api_key=config.api_key,
                                timeout=config.timeout, max_retries=config.max_retries)
                         for url in config.base_urls]
        self._json_mode = None if config.json_mode == "auto" else config.json_mode
        self._lock = threading.Lock()
        self._local = threading.local()
        self._next = itertools.count()

    @property
    def _client(self):
        """This thread's client: with several servers (a comma-separated ``base_url``)
        each thread that calls is given the next one in turn and keeps it, so questions
        answered at once on threads (``edge bench qa --workers``) spread over the servers."""
        client = getattr(self._local, "client", None)
        if client is None:
            client = self._local.client = self._clients[next(self._next) % len(self._clients)]
        return client

    @property
    def accepts_frames(self) -> bool:
        """Whether callers may put frames (``image_url`` parts) in this role's messages: only
        when the user allowed it for this role (``allow_frames``) — the server must also be
        a VLM for them to be useful."""
        return self.config.allow_frames

    @property
    def json_mode(self) -> str | None:
        """The ``response_format`` form schema calls use (one of ``JSON_MODES``): the
        configured one, or with ``json_mode = "auto"`` the one this server accepted, ``None``
        until the first schema call has found it."""
        return self._json_mode

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
                probing: bool = False, retry: bool = False) -> ChatResult:
        """One request, counted under ``role``. ``probing``: this response_format may be
        unsupported; a server error answer is then not retried and raises
        :class:`_FormatRejected`. SDK errors become this module's (:meth:`_error`). Inside a
        :func:`models.cancel.cancel_scope` the request waits on a daemon thread and the set
        event raises :class:`models.cancel.GenerationCancelled` at once (the server's reply,
        when it comes, is dropped and not counted)."""
        import openai

        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages,
                                  "max_tokens": max_tokens, "temperature": temperature}
        if response_format is not None:
            kwargs["response_format"] = response_format
        t0 = time.perf_counter()
        try:
            out = run_cancellable(
                (lambda: self._probe(kwargs)) if probing else
                (lambda: self._client.chat.completions.create(**kwargs)),
                current_cancel(), f"role {self.config.role}")
        except (openai.APIConnectionError, openai.APIStatusError) as e:
            err = self._error(e)
            # only an unexpected error status keeps the SDK's exception as its cause
            raise err from (e if type(err) is RemoteError else None)
        seconds = time.perf_counter() - t0
        text = (out.choices[0].message.content or "") if out.choices else ""
        u = out.usage
        res = ChatResult(
            text=text,
            tokens_in=int(u.prompt_tokens) if u else self._prompt_tokens(messages),
            tokens_out=int(u.completion_tokens) if u else self.count_tokens(text),
            seconds=seconds)
        if self.usage is not None:
            self.usage.record(CallRecord(role, self.name, res.tokens_in, res.tokens_out, seconds,
                                         retry=retry))
        return res

    def _probe(self, kwargs: dict[str, Any]) -> Any:
        """The request with a response_format the server may not know: one try without
        retries; an error status (other than a bad key or model) raises
        :class:`_FormatRejected`, a connection error falls back to the retrying client."""
        import openai

        try:  # llama-cpp-python answers an unknown response_format with a 500
            return self._client.with_options(max_retries=0).chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            raise  # the server took the request: the format is not the problem
        except openai.APIConnectionError:
            return self._client.chat.completions.create(**kwargs)  # with retries
        except (openai.AuthenticationError, openai.PermissionDeniedError,
                openai.NotFoundError):
            raise
        except openai.APIStatusError as e:
            raise _FormatRejected(f"{e.status_code}: {_short(e)}") from None

    def _error(self, e: Exception) -> Exception:
        """The error to raise for the SDK's connection or status error ``e`` (after the
        SDK's retries): what went wrong and what the user can change."""
        import openai

        cfg = self.config
        if isinstance(e, openai.APITimeoutError):
            pre = env_prefix(cfg.role)
            return RemoteUnavailableError(
                f"role {cfg.role}: the server at {cfg.base_url} did not answer "
                f"within {cfg.timeout:g} s ({cfg.max_retries} retries); a slow "
                f"server or a long prompt needs a longer timeout ({pre}TIMEOUT or timeout in "
                "your profile)")
        if isinstance(e, openai.APIConnectionError):
            return RemoteUnavailableError(
                f"role {cfg.role}: cannot reach the OpenAI-compatible server at "
                f"{cfg.base_url} ({e.__class__.__name__}: {_short(e)}; "
                f"{cfg.max_retries} retries, {cfg.timeout:g} s timeout); "
                f"{self._hint()}")
        if isinstance(e, (openai.AuthenticationError, openai.PermissionDeniedError)):
            return ConfigError(
                f"role {cfg.role}: {cfg.base_url} rejected the API key "
                f"({e.status_code}); set {env_prefix(cfg.role)}API_KEY or api_key_env "
                "in your profile")
        if isinstance(e, openai.NotFoundError):
            return ConfigError(
                f"role {cfg.role}: {cfg.base_url} has no model "
                f"{cfg.model!r} or no chat-completions endpoint ({_short(e)}); check "
                f"the model name and that the base URL ends in /v1")
        if isinstance(e, openai.InternalServerError):
            return RemoteUnavailableError(
                f"role {cfg.role}: the server at {cfg.base_url} kept failing "
                f"({e.status_code}: {_short(e)}) after {cfg.max_retries} retries")
        msg = _short(e)
        if "context" in msg.lower() or "too long" in msg.lower():
            return ContextOverflowError(f"{self.name}: {msg}")
        return RemoteError(f"role {cfg.role}: {cfg.base_url} answered "
                           f"{e.status_code}: {msg}")

    def chat(self, messages: list[dict[str, Any]], *, role: str, schema: dict | None = None,
             max_tokens: int = 256, temperature: float = 0.0,
             on_token: OnToken | None = None, keep_prefix: bool = False,
             retry: bool = False) -> ChatResult:
        """One chat completion, counted under ``role`` (as a retry with ``retry``); with
        ``schema`` the server is asked to constrain the reply (see the module docstring).
        ``on_token`` is accepted for the same signature as
        :meth:`models.llama_chat.LlamaCppLLM.chat` but nothing is streamed: it is called once, on
        this thread, with the whole text when the reply has come (the request waits on
        another thread to stay cancellable). ``tokens_evaluated`` equals
        ``tokens_in`` (the server does not say what its cache served); ``keep_prefix`` is
        accepted for the same signature and left to the server's own prompt cache. Raises
        :class:`ContextOverflowError` when the estimated prompt plus ``max_tokens`` exceeds
        ``n_ctx`` (or the server says so), :class:`ConfigError` for frames the role may not
        send, a rejected key or an unknown model, :class:`RemoteUnavailableError` when the
        server is unreachable, times out or keeps failing after ``max_retries`` retries,
        :class:`RemoteError` for any other error answer, and
        :class:`models.cancel.GenerationCancelled` when the thread's cancel event is set."""
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
        res = self._chat(messages, role=role, schema=schema, max_tokens=max_tokens,
                         temperature=temperature, retry=retry)
        if on_token is not None and res.text:
            on_token(res.text)
        return res

    def _chat(self, messages: list[dict[str, Any]], *, role: str, schema: dict | None,
              max_tokens: int, temperature: float, retry: bool = False) -> ChatResult:
        if schema is None:
            return self._create(messages, role=role, max_tokens=max_tokens,
                                temperature=temperature, response_format=None, retry=retry)
        known = self._json_mode
        modes = [known] if known else list(JSON_MODES)
        for mode in modes:
            try:
                res = self._create(_with_schema_hint(messages, schema) if mode == "none"
                                   else messages, role=role, max_tokens=max_tokens,
                                   temperature=temperature,
                                   response_format=_response_format(mode, schema),
                                   probing=known is None and mode != "none", retry=retry)
            except _FormatRejected:
                continue  # the server rejected this response_format: try the next form
            with self._lock:
                self._json_mode = mode  # remember what this server accepts
            return res
        raise AssertionError("unreachable")

    def chat_json(self, messages: list[dict[str, Any]], *, role: str, schema: dict,
                  max_tokens: int = 256, on_token: OnToken | None = None,
                  on_retry: Callable[[], OnToken | None] | None = None,
                  keep_prefix: bool = False) -> dict:
        """A JSON object that validates against ``schema``: parse → validate → one repair
        call showing the broken reply and the error → :class:`LLMOutputError`. Request
        errors are those of :meth:`chat`. ``on_token`` sees the first reply, in one piece
        (:meth:`chat`), and what ``on_retry()`` returns sees the repair, as with
        :meth:`models.llama_chat.LlamaCppLLM.chat_json`; ``keep_prefix``: see :meth:`chat`."""
        import jsonschema

        res = self.chat(messages, role=role, schema=schema, max_tokens=max_tokens,
                        on_token=on_token)
        try:
            return _parse_valid(res.text, schema, jsonschema)
        except (ValueError, jsonschema.ValidationError) as first:
            repair = [*messages, {"role": "assistant", "content": res.text},
                      {"role": "user", "content": f"That reply was not valid ({_short(first)}). "
                       "Reply again with only the JSON object, complete and valid."}]
            try:
                res2 = self.chat(repair, role=role, schema=schema, max_tokens=max_tokens,
                                 retry=True,
                                 on_token=on_retry() if on_retry and on_token else None)
                return _parse_valid(res2.text, schema, jsonschema)
            except (ValueError, jsonschema.ValidationError, ContextOverflowError) as second:
                raise LLMOutputError(
                    f"{self.name} returned invalid JSON twice: {_short(second)}") from second

    def ping(self, timeout: float = 3.0) -> list[str]:
        """The model names the server lists (``GET /models``; with several servers, each
        is asked and the first one's list returned), one try with ``timeout`` seconds;
        raises :class:`RemoteUnavailableError` naming a server that does not answer."""
        import openai

        names: list[str] | None = None
        for url, client in zip(self.config.base_urls, self._clients):
            try:
                page = client.with_options(timeout=timeout, max_retries=0).models.list()
            except openai.APIConnectionError as e:
                raise RemoteUnavailableError(
                    f"cannot reach {url} ({_short(e)}); {self._hint()}") from None
            except openai.APIStatusError as e:
                raise RemoteUnavailableError(
                    f"{url} answered {e.status_code} to GET /models: {_short(e)}") from None
            names = names if names is not None else [m.id for m in page.data]
        return names or []

    def close(self) -> None:
        """Close the HTTP connection pools."""
        for client in self._clients:
            client.close()


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
