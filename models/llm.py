"""LLM roles (memory LLM, solver) on llama.cpp through llama-cpp-python.

One :class:`LlamaCppLLM` per GGUF file, loaded once and shared by every role that names
the same model. Structured output uses llama.cpp's JSON-schema grammar; the parsed object
is validated with ``jsonschema`` and a broken reply gets one repair attempt before
:class:`LLMOutputError` is raised, so callers can fall back visibly instead of crashing.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.cancel import GenerationCancelled, current_cancel, raise_if_cancelled
from models.usage import CallRecord, UsageMeter

# A ggml assert otherwise forks gdb and hangs for minutes (MODELS.md).
os.environ.setdefault("GGML_NO_BACKTRACE", "1")


class LLMOutputError(ValueError):
    """The model's reply could not be parsed or validated, even after one repair attempt.
    ``cut``: a reply stopped at its ``max_tokens`` (finish reason ``length``)."""

    def __init__(self, message: str, *, cut: bool = False) -> None:
        super().__init__(message)
        self.cut = cut


class ContextOverflowError(ValueError):
    """A prompt does not fit the model's context window."""


@dataclass(frozen=True)
class ChatResult:
    """A completion: ``text`` plus the backend's token counts and wall-clock seconds."""

    text: str
    tokens_in: int
    tokens_out: int
    seconds: float
    finish_reason: str = ""


class LlamaCppLLM:
    """A chat model on llama.cpp (GGUF), CPU by default.

    Args:
        model_path: the ``.gguf`` file. n_ctx: context window in tokens.
        threads: CPU threads (default 2, the edge budget). seed: fixed for reproducibility.
    """

    #: a text-only model: callers must not put frames (image parts) in its messages
    accepts_frames = False

    def __init__(
        self,
        model_path: Path,
        *,
        name: str = "llm",
        n_ctx: int = 4096,
        threads: int = 2,
        seed: int = 0,
        usage: UsageMeter | None = None,
        chat_format: str | None = None,
    ) -> None:
        from llama_cpp import Llama

        self._llm = Llama(
            model_path=str(model_path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            seed=seed,
            verbose=False,
            chat_format=chat_format,
        )
        self.name = name
        self.n_ctx = n_ctx
        self.usage = usage
        self._lock = threading.Lock()  # a llama.cpp context serves one call at a time

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` costs with this model's tokenizer."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def truncate(self, text: str, max_tokens: int) -> str:
        """``text`` cut to at most ``max_tokens`` tokens (on a token boundary), with an ellipsis."""
        toks = self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        if len(toks) <= max_tokens:
            return text
        cut = self._llm.detokenize(toks[: max(0, max_tokens - 1)]).decode("utf-8", "ignore")
        return cut.rstrip() + "…"

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        schema: dict | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
    ) -> ChatResult:
        """One chat completion, counted under ``role``.

        With ``schema`` the output is constrained by llama.cpp's JSON-schema grammar.
        Raises :class:`ContextOverflowError` when the prompt plus ``max_tokens`` exceeds n_ctx,
        :class:`models.cancel.GenerationCancelled` when the thread's cancel event
        (:func:`models.cancel.cancel_scope`) is set before or during the call (then nothing
        is counted).
        """
        prompt_tokens = sum(self.count_tokens(str(m.get("content", ""))) + 8 for m in messages)
        if prompt_tokens + max_tokens > self.n_ctx:
            raise ContextOverflowError(
                f"{self.name}: prompt of ~{prompt_tokens} tokens + {max_tokens} to generate "
                f"exceeds the {self.n_ctx}-token context"
            )
        kwargs: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        cancel = current_cancel()
        t0 = time.perf_counter()
        with self._lock, self._abort_on(cancel):
            out = self._llm.create_chat_completion(messages=messages, **kwargs)
        seconds = time.perf_counter() - t0
        usage = out.get("usage") or {}
        res = ChatResult(
            text=out["choices"][0]["message"].get("content") or "",
            tokens_in=int(usage.get("prompt_tokens", prompt_tokens)),
            tokens_out=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
            finish_reason=out["choices"][0].get("finish_reason") or "",
        )
        if self.usage is not None:
            self.usage.record(CallRecord(role, self.name, res.tokens_in, res.tokens_out, seconds))
        return res

    @contextmanager
    def _abort_on(self, cancel: threading.Event | None) -> Iterator[None]:
        """Make llama.cpp abort the decoding (a prompt batch or the next token) as soon as
        ``cancel`` is set: its abort callback, checked between graph nodes, is installed
        only for this call (the caller holds ``self._lock``). An aborted decode surfaces
        from llama-cpp-python as ``RuntimeError``; it becomes :class:`GenerationCancelled`."""
        raise_if_cancelled(cancel, self.name)
        if cancel is None:
            yield
            return
        import llama_cpp

        callback = llama_cpp.ggml_abort_callback(lambda _data: cancel.is_set())
        llama_cpp.llama_set_abort_callback(self._llm.ctx, callback, None)
        try:
            yield
        except RuntimeError:
            if not cancel.is_set():
                raise
            # the aborted decode left no logits to sample from: the next call reads its
            # prompt again instead of reusing the cached prefix
            self._llm.reset()
            raise GenerationCancelled(f"{self.name}: cancelled") from None
        finally:
            llama_cpp.llama_set_abort_callback(self._llm.ctx, llama_cpp.ggml_abort_callback(),
                                               None)

    def chat_json(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        schema: dict,
        max_tokens: int = 256,
    ) -> dict:
        """A JSON object that validates against ``schema``.

        Parse → validate → on failure one repair call that shows the model its broken reply
        and the error → :class:`LLMOutputError` if that fails too.
        """
        import jsonschema

        res = self.chat(messages, role=role, schema=schema, max_tokens=max_tokens)
        try:
            return _parse_valid(res.text, schema, jsonschema)
        except (ValueError, jsonschema.ValidationError) as first:
            repair = [
                *messages,
                {"role": "assistant", "content": res.text},
                {"role": "user", "content": f"That reply was not valid ({_short(first)}). "
                 "Reply again with only the JSON object, complete and valid."},
            ]
            res2 = None
            try:
                res2 = self.chat(repair, role=role, schema=schema, max_tokens=max_tokens)
                return _parse_valid(res2.text, schema, jsonschema)
            except (ValueError, jsonschema.ValidationError, ContextOverflowError) as second:
                cut = "length" in (res.finish_reason, res2 and res2.finish_reason)
                raise LLMOutputError(
                    f"{self.name} returned invalid JSON twice: {_short(second)}", cut=cut
                ) from second

    def close(self) -> None:
        """Free the llama.cpp context (call explicitly; MODELS.md), after the call in flight
        (if any) has ended: a cancelled one ends within a graph node."""
        with self._lock:
            llm = getattr(self, "_llm", None)
            if llm is not None:
                llm.close()
                self._llm = None


def _short(err: Exception) -> str:
    msg = getattr(err, "message", None) or str(err)
    return msg.splitlines()[0][:200]


def _parse_valid(text: str, schema: dict, jsonschema_mod) -> dict:
    obj = json.loads(text)
    if not isinstance(obj, dict):
        raise ValueError("reply is not a JSON object")
    jsonschema_mod.validate(obj, schema)
    return obj
