"""LLM roles (memory LLM, solver) on llama.cpp through llama-cpp-python.

One :class:`LlamaCppLLM` per GGUF file, loaded once and shared by every role that names
the same model. Structured output uses llama.cpp's JSON-schema grammar; the parsed object
is validated with ``jsonschema`` and a broken reply gets one repair attempt before
:class:`LLMOutputError` is raised, so callers can fall back visibly instead of crashing.

Every backend's ``chat``/``chat_json`` take ``on_token`` to stream the reply's text as it is
written, and report ``tokens_evaluated``: the prompt tokens not served from the KV cache.
Consecutive calls on one model that share a long prompt prefix (same system prompt, same
evidence) only pay for what differs: llama-cpp-python keeps the longest common prefix of
the previous call's tokens. :class:`JsonFieldStream` (from :mod:`models.jsonstream`) turns
a streamed JSON reply into the growing text of one of its string fields.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.cancel import GenerationCancelled, current_cancel, raise_if_cancelled
from models.jsonstream import JsonFieldStream as JsonFieldStream  # re-exported for callers
from models.usage import CallRecord, UsageMeter

# A ggml assert otherwise forks gdb and hangs for minutes (MODELS.md).
os.environ.setdefault("GGML_NO_BACKTRACE", "1")


class _KeepStdStreams:
    """Stands in for llama-cpp-python's ``suppress_stdout_stderr``: does nothing."""

    def __init__(self, disable: bool = True) -> None:
        pass

    def __enter__(self) -> _KeepStdStreams:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None


_LLAMA_LOG = logging.getLogger("llama_cpp")
_LLAMA_LOG.addHandler(logging.NullHandler())  # shown only where the application logs
# ggml_log_level: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5 (continues the last line)
_GGML_LEVELS = {3: logging.WARNING, 4: logging.ERROR}
_log_state = {"level": logging.DEBUG, "callback": None}


def _log_to_python(level: int, text: bytes, _user_data: object) -> None:
    py_level = _log_state["level"] if level == 5 else _GGML_LEVELS.get(level, logging.DEBUG)
    _log_state["level"] = py_level
    if _LLAMA_LOG.isEnabledFor(py_level):
        _LLAMA_LOG.log(py_level, "%s", text.decode("utf-8", "replace").rstrip())


def llama_log_callback() -> Any:
    """The ctypes callback that sends llama.cpp's (and libmtmd's) messages to the Python
    logger ``llama_cpp`` at their level, instead of printing them on the terminal (made once;
    it must stay referenced while the library may call it)."""
    import llama_cpp

    if _log_state["callback"] is None:
        _log_state["callback"] = llama_cpp.llama_log_callback(_log_to_python)
    return _log_state["callback"]


def keep_std_streams() -> None:
    """Stop llama-cpp-python from pointing file descriptors 1 and 2 at ``/dev/null``.

    With ``verbose=False`` it wraps a model load (and, for a VLM, reading each image) in
    ``suppress_stdout_stderr``, which points ``/dev/null`` (``dup2``) over the *process's* stdout
    and stderr. Another thread's output in that window is lost: the recorder's log lines
    while its worker loads the memory LLM (a "deleted raw clip" line went missing that
    way), the TUI, a progress bar. The redirect is replaced by a no-op, and llama.cpp's own
    messages go to the Python logger ``llama_cpp`` (:func:`llama_log_callback`) instead of
    the terminal. Idempotent; called before every ``Llama`` is built.
    """
    import ctypes

    import llama_cpp
    import llama_cpp._internals
    import llama_cpp.llama
    import llama_cpp.llama_chat_format

    for module in (llama_cpp._internals, llama_cpp.llama, llama_cpp.llama_chat_format):
        module.suppress_stdout_stderr = _KeepStdStreams
    llama_cpp.llama_log_set(llama_log_callback(), ctypes.c_void_p(0))


class LLMOutputError(ValueError):
    """The model's reply could not be parsed or validated, even after one repair attempt.
    ``cut``: a reply stopped at its ``max_tokens`` (finish reason ``length``)."""

    def __init__(self, message: str, *, cut: bool = False) -> None:
        super().__init__(message)
        self.cut = cut


class ContextOverflowError(ValueError):
    """A prompt does not fit the model's context window."""


#: ``on_token(piece)``: called with each new piece of a streamed reply's text
OnToken = Callable[[str], None]


@dataclass(frozen=True)
class ChatResult:
    """A completion: ``text`` plus the backend's token counts and wall-clock seconds.

    ``tokens_evaluated``: the prompt tokens the model really evaluated (``tokens_in`` minus
    the prefix reused from the KV cache of the previous call on the same model); equal to
    ``tokens_in`` when left out (backends that cannot know: remote servers).
    """

    text: str
    tokens_in: int
    tokens_out: int
    seconds: float
    finish_reason: str = ""
    tokens_evaluated: int | None = None

    def __post_init__(self) -> None:
        if self.tokens_evaluated is None:
            object.__setattr__(self, "tokens_evaluated", self.tokens_in)


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

        keep_std_streams()
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
        self._counted = False  # whether a call has ended, so llama.cpp's counters count

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
        on_token: OnToken | None = None,
    ) -> ChatResult:
        """One chat completion, counted under ``role``.

        With ``schema`` the output is constrained by llama.cpp's JSON-schema grammar. With
        ``on_token`` the reply is streamed: ``on_token(piece)`` is called on this thread with
        each piece of text as it is generated (whole UTF-8 characters; the pieces join to
        ``text``); the result is the same as without it. An exception from ``on_token``
        ends the call and propagates (nothing is counted). Raises
        :class:`ContextOverflowError` when the prompt plus ``max_tokens`` exceeds n_ctx,
        :class:`models.cancel.GenerationCancelled` when the thread's cancel event
        (:func:`models.cancel.cancel_scope`) is set before or during the call, streamed or
        not (then nothing is counted).
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
            decoded = self._decoded_tokens() if self._counted else 0
            if on_token is None:
                out = self._llm.create_chat_completion(messages=messages, **kwargs)
                usage = out.get("usage") or {}
                text = out["choices"][0]["message"].get("content") or ""
                finish = out["choices"][0].get("finish_reason") or ""
                tokens_in = int(usage.get("prompt_tokens", prompt_tokens))
                tokens_out = int(usage.get("completion_tokens", 0))
            else:
                text, finish = self._stream(messages, kwargs, on_token)
                tokens_in, tokens_out = self._streamed_counts(finish)
            decoded = self._decoded_tokens() - decoded
            # the KV cache now holds the reused prefix + the evaluated prompt suffix + the
            # generated tokens fed back; llama.cpp decoded the last two
            evaluated = tokens_in + decoded - self._llm.n_tokens
            self._counted = True
        seconds = time.perf_counter() - t0
        res = ChatResult(text=text, tokens_in=tokens_in, tokens_out=tokens_out, seconds=seconds,
                         finish_reason=finish,
                         tokens_evaluated=min(tokens_in, max(0, evaluated)))
        if self.usage is not None:
            self.usage.record(CallRecord(role, self.name, res.tokens_in, res.tokens_out, seconds,
                                         res.tokens_evaluated))
        return res

    def _stream(self, messages: list[dict[str, Any]], kwargs: dict[str, Any],
                on_token: OnToken) -> tuple[str, str]:
        """Run a streamed completion, handing each text delta to ``on_token``; returns
        ``(text, finish_reason)``. The caller holds the lock and the abort callback."""
        pieces: list[str] = []
        finish = ""
        chunks = self._llm.create_chat_completion(messages=messages, stream=True, **kwargs)
        try:
            for chunk in chunks:
                choice = chunk["choices"][0]
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    pieces.append(piece)
                    on_token(piece)
                finish = choice.get("finish_reason") or finish
        finally:
            chunks.close()  # an exception from on_token leaves the generator suspended
        return "".join(pieces), finish

    def _streamed_counts(self, finish: str) -> tuple[int, int]:
        """``(tokens_in, tokens_out)`` of the streamed call that just ended (stream chunks
        carry no usage), as the unstreamed call reports them. llama-cpp-python's
        ``generate`` samples with a fresh sampler chain per call, whose llama.cpp perf
        counter ``n_sample`` counts the tokens sampled; every sampled token but the last is
        fed back, so the KV cache holds ``prompt + n_sample - 1`` tokens. The last sampled
        token is part of the reply unless it ended it (end of generation: ``stop``)."""
        import llama_cpp

        samples = llama_cpp.llama_perf_sampler(self._llm._sampler.sampler).n_sample
        return self._llm.n_tokens - samples + 1, samples - (1 if finish == "stop" else 0)

    def _decoded_tokens(self) -> int:
        """Tokens this llama.cpp context has decoded so far (prompt batches + single tokens),
        from its own perf counters. They read at least 1 each even before the first decode,
        so :meth:`chat` counts from 0 until a call has ended; after a cancelled first call
        that may overcount, but that call reset the cache, so the next one evaluates its
        whole prompt and the count is capped at ``tokens_in``."""
        import llama_cpp

        perf = llama_cpp.llama_perf_context(self._llm.ctx)
        return perf.n_p_eval + perf.n_eval

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
        on_token: OnToken | None = None,
    ) -> dict:
        """A JSON object that validates against ``schema``.

        Parse → validate → on failure one repair call that shows the model its broken reply
        and the error → :class:`LLMOutputError` if that fails too. ``on_token`` streams the
        first reply only (see :meth:`chat`; feed it to a :class:`JsonFieldStream` to show
        one field as it is written): a repair is not streamed, so a terminal never shows a
        second reply after the broken one; when the returned object differs from what was
        streamed, show the returned one.
        """
        import jsonschema

        res = self.chat(messages, role=role, schema=schema, max_tokens=max_tokens,
                        on_token=on_token)
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
