"""LLM roles (memory LLM, solver) on llama.cpp through llama-cpp-python.

One :class:`LlamaCppLLM` per GGUF file, loaded once and shared by every role that names
the same model. Structured output is parsed and validated with ``jsonschema``; llama.cpp's
JSON-schema grammar constrains a call only when the free reply was broken (``grammar=
"on_failure"``, the default: the grammar checks every token of a 150k-token vocabulary and
made generation ~35 % slower on 2 cores) or always (``grammar="always"``). A reply still
broken under the grammar raises :class:`LLMOutputError`, so callers can fall back visibly
instead of crashing.

Every backend's ``chat``/``chat_json`` take ``on_token`` to stream the reply's text as it is
written, and report ``tokens_evaluated``: the prompt tokens not served from the KV cache.
Consecutive calls on one model that share a long prompt prefix (same system prompt, same
evidence) only pay for what differs: llama-cpp-python keeps the longest common prefix of
the previous call's tokens. :class:`JsonFieldStream` (from :mod:`models.jsonstream`) turns
a streamed JSON reply into the growing text of one of its string fields.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

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


def common_prefix(a: np.ndarray, b: np.ndarray, cap: int) -> int:
    """The number of leading tokens ``a`` and ``b`` share, at most ``cap``."""
    m = max(0, min(len(a), len(b), cap))
    differ = np.flatnonzero(np.asarray(a[:m]) != np.asarray(b[:m]))
    return int(differ[0]) if len(differ) else m


class PrefixSnapshots:
    """KV-cache snapshots of the constant prompt prefixes of a few roles, for one llama.cpp
    context (issue 13: the memory LLM's per-clip prompt is ~430 tokens of instructions and
    example before the caption, ~9 s of prompt evaluation on 2 cores, and the link call in
    between used to evict it).

    After a call of a role, :meth:`remember` finds the prefix its prompt shares with that
    role's previous prompt (on its first call: all but the last message); from
    ``min_tokens`` tokens on, the KV cache is cut to that
    prefix and the prefix's cells are copied out (llama.cpp's per-sequence state: KV only,
    no logits — ~28 KB a token for Qwen2.5-1.5B, ~12 MB for 430 tokens; llama-cpp-python's
    ``LlamaRAMCache`` would also copy a ~311 MB logits buffer per state). Before the role's
    next call :meth:`restore` writes them back unless the cache already starts with them;
    llama-cpp-python then reuses them as its longest common prefix and evaluates the rest.
    At most ``max_roles`` snapshots, the least recently used dropped first.
    """

    def __init__(self, *, max_roles: int = 4, min_tokens: int = 64) -> None:
        self.max_roles = max_roles
        self.min_tokens = min_tokens
        self._snapshots: OrderedDict[str, tuple[np.ndarray, Any]] = OrderedDict()
        self._last_prompt: dict[str, np.ndarray] = {}

    def tokens(self, role: str) -> int:
        """Tokens of ``role``'s snapshot (0 without one)."""
        snap = self._snapshots.get(role)
        return 0 if snap is None else len(snap[0])

    def restore(self, llm: Any, role: str) -> None:
        """Put ``role``'s prefix back at the start of ``llm``'s (a ``llama_cpp.Llama``) KV
        cache, unless it is there already. A failed write drops the snapshot and empties the
        cache (the call then evaluates its whole prompt)."""
        import llama_cpp

        snap = self._snapshots.get(role)
        if snap is None:
            return
        self._snapshots.move_to_end(role)
        tokens, state = snap
        n = len(tokens)
        if llm.n_tokens >= n and np.array_equal(llm.input_ids[:n], tokens):
            return
        if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, state, len(state), 0) == 0:
            del self._snapshots[role]
            llm._ctx.kv_cache_seq_rm(-1, 0, -1)
            llm.n_tokens = 0
            return
        llm.input_ids[:n] = tokens
        llm.n_tokens = n
        llm._requires_eval = True  # the next decode refreshes the logits

    def remember(self, llm: Any, role: str, prompt_tokens: int, *, first: int = 0) -> None:
        """After ``role``'s call whose prompt was ``llm``'s first ``prompt_tokens`` tokens:
        keep (or lengthen) the snapshot of the prefix it shares with the role's previous
        prompt — on the role's first call, of its first ``first`` tokens (the caller's
        estimate of where the constant part ends), so the second call already finds its
        instructions after another role's call. Never the whole prompt: at least its last
        token stays to evaluate."""
        import llama_cpp

        prompt = llm.input_ids[:prompt_tokens].copy()
        prev, self._last_prompt[role] = self._last_prompt.get(role), prompt
        snap = self._snapshots.get(role)
        have = len(snap[0]) if snap is not None and len(prompt) > len(snap[0]) and \
            np.array_equal(prompt[:len(snap[0])], snap[0]) else 0
        if prev is None:
            n = min(first, len(prompt) - 1)
        else:
            n = common_prefix(prev, prompt, len(prompt) - 1)
        if n < self.min_tokens or n <= have:
            return
        llm._ctx.kv_cache_seq_rm(-1, n, -1)  # the cache now holds the prefix only
        llm.n_tokens = n
        size = llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0)
        state = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, state, size, 0)
        if written == 0:
            return
        self._snapshots[role] = (prompt[:n], (ctypes.c_uint8 * written).from_buffer(state))
        self._snapshots.move_to_end(role)
        while len(self._snapshots) > self.max_roles:
            self._snapshots.popitem(last=False)


class LlamaCppLLM:
    """A chat model on llama.cpp (GGUF), CPU by default.

    Args:
        model_path: the ``.gguf`` file. n_ctx: context window in tokens.
        threads: CPU threads (default 2, the edge budget). seed: fixed for reproducibility.
        grammar: when :meth:`chat_json` constrains the reply with the schema's grammar —
            ``"on_failure"`` (default: first unconstrained, then constrained if the reply
            does not parse and validate) or ``"always"``.
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
        grammar: str = "on_failure",
    ) -> None:
        from llama_cpp import Llama

        if grammar not in ("on_failure", "always"):
            raise ValueError(f"grammar must be 'on_failure' or 'always', not {grammar!r}")

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
        self.grammar = grammar
        self._prefixes = PrefixSnapshots()
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
        keep_prefix: bool = False,
        retry: bool = False,
    ) -> ChatResult:
        """One chat completion, counted under ``role`` (as a retry with ``retry``:
        :class:`models.usage.CallRecord`).

        ``keep_prefix``: this role's prompts start with the same instructions every time
        (the memory LLM's per-clip, link and global calls): the KV state of the prefix its
        calls share (after its first call: all but the last message; then what its last two
        prompts shared) is kept (:class:`PrefixSnapshots`) and restored before its next
        call, so calls of other roles in between do not cost re-reading it.

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
            if keep_prefix:
                self._prefixes.restore(self._llm, role)
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
            if keep_prefix:
                self._remember_prefix(role, tokens_in, messages)
        seconds = time.perf_counter() - t0
        res = ChatResult(text=text, tokens_in=tokens_in, tokens_out=tokens_out, seconds=seconds,
                         finish_reason=finish,
                         tokens_evaluated=min(tokens_in, max(0, evaluated)))
        if self.usage is not None:
            self.usage.record(CallRecord(role, self.name, res.tokens_in, res.tokens_out, seconds,
                                         res.tokens_evaluated, retry=retry))
        return res

    def yes_probability(self, messages: list[dict[str, Any]], *, role: str,
                        keep_prefix: bool = False) -> float:
        """P(yes) of a yes/no judgement, 0–1, from the token probabilities of the reply's
        first token (MARQUIS §4.4 calibration: a support score read off the model instead
        of a verbalised number): ``Σ p(yes-tokens) / (Σ p(yes-tokens) + Σ p(no-tokens))``
        over ``Yes``/``yes``/``YES`` and ``No``/``no``/``NO``
        (:meth:`choice_probabilities`). Nothing is generated; counted under ``role`` as a
        call with 0 output tokens. Raises as :meth:`choice_probabilities`.
        """
        p = self.choice_probabilities(messages, {"yes": ("Yes", "yes", "YES"),
                                                 "no": ("No", "no", "NO")},
                                      role=role, keep_prefix=keep_prefix)
        return p["yes"]

    def choice_probabilities(self, messages: list[dict[str, Any]],
                             choices: dict[str, tuple[str, ...]], *, role: str,
                             keep_prefix: bool = False) -> dict[str, float]:
        """How likely the reply starts with each choice: the chat prompt is evaluated (its
        prefix reused from the KV cache as :meth:`chat` does) and the next-token
        probabilities of each choice's words' first tokens are summed and normalised over
        the choices (0–1, summing to 1; uniform when every one is ~0). ``choices`` maps a
        name to the words a reply choosing it starts with (``{"A": ("A",), …}``; words
        whose first tokens coincide across choices make them indistinguishable). Nothing
        is generated; counted under ``role`` as a call with 0 output tokens.
        ``keep_prefix``: see :meth:`chat`.

        Raises :class:`ContextOverflowError` when the prompt does not fit ``n_ctx``,
        :class:`NotImplementedError` when the model has no chat template of its own (a
        ``chat_format`` override: the caller then asks for a verbalised reply), and
        :class:`models.cancel.GenerationCancelled` as :meth:`chat` does.
        """
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self._llm.metadata.get("tokenizer.chat_template")
        if template is None or self._llm.chat_format != "chat_template.default":
            raise NotImplementedError(f"{self.name}: no GGUF chat template to render")
        model = self._llm._model  # the special tokens' text, as Llama renders its template
        eos, bos = (model.token_get_text(t) if t != -1 else ""
                    for t in (self._llm.token_eos(), self._llm.token_bos()))
        prompt = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)(
            messages=messages).prompt
        tokens = self._llm.tokenize(prompt.encode("utf-8"), special=True)
        if len(tokens) + 1 > self.n_ctx:
            raise ContextOverflowError(f"{self.name}: prompt of {len(tokens)} tokens exceeds "
                                       f"the {self.n_ctx}-token context")
        firsts = {name: self._first_tokens(words) for name, words in choices.items()}
        cancel = current_cancel()
        t0 = time.perf_counter()
        with self._lock, self._abort_on(cancel):
            if keep_prefix:
                self._prefixes.restore(self._llm, role)
            llm = self._llm
            reused = common_prefix(llm.input_ids[:llm.n_tokens], tokens, len(tokens) - 1)
            llm.n_tokens = reused
            llm.eval(tokens[reused:])
            logits = np.ctypeslib.as_array(
                llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).copy()
            if keep_prefix:
                self._remember_prefix(role, len(tokens), messages)
            self._counted = True  # llama.cpp's decode counters now count (see chat)
        top = float(logits.max())
        mass = {name: float(np.exp(logits[ids] - top).sum()) for name, ids in firsts.items()}
        seconds = time.perf_counter() - t0
        if self.usage is not None:
            self.usage.record(CallRecord(role, self.name, len(tokens), 0, seconds,
                                         len(tokens) - reused))
        total = sum(mass.values())
        if total <= 0:
            return {name: 1 / len(mass) for name in mass}
        return {name: m / total for name, m in mass.items()}

    def _remember_prefix(self, role: str, prompt_tokens: int,
                         messages: list[dict[str, Any]]) -> None:
        """After a ``keep_prefix`` call (the caller holds the lock): keep ``role``'s prefix
        snapshot, on its first call all but the last message (and its template frame)."""
        tail = self.count_tokens(str(messages[-1].get("content", ""))) + 8
        self._prefixes.remember(self._llm, role, prompt_tokens, first=prompt_tokens - tail)

    def _first_tokens(self, words: tuple[str, ...]) -> list[int]:
        """The distinct first token of each of ``words`` (as a reply starts with it)."""
        return list(dict.fromkeys(
            self._llm.tokenize(w.encode("utf-8"), add_bos=False, special=False)[0]
            for w in words))

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
        keep_prefix: bool = False,
    ) -> dict:
        """A JSON object that validates against ``schema``.

        With ``grammar="on_failure"``: an unconstrained reply → parse (the first JSON
        object in the text, code fences and trailing text ignored) → fit to the schema's
        caps (:func:`fit_to_schema`: the grammar would have stopped a list at ``maxItems`` and
        a string at ``maxLength``) → validate → on failure (a free reply is also cut at
        :func:`schema_token_cap` tokens: a model looping without the grammar)
        the same messages again under the schema's grammar (its prompt is served from the KV
        cache) → :class:`LLMOutputError` if that fails too. With ``grammar="always"``: the
        constrained reply → on failure one repair call that shows the model its broken reply
        and the error → :class:`LLMOutputError`. Either way at most two metered calls.
        ``on_token`` streams the first reply only (see :meth:`chat`; feed it to a
        :class:`JsonFieldStream` to show one field as it is written): a second reply is not
        streamed, so a terminal never shows a second reply after the broken one; when the
        returned object differs from what was streamed, show the returned one.
        ``keep_prefix``: see :meth:`chat`.
        """
        import jsonschema

        free = self.grammar == "on_failure"
        cap = schema_token_cap(schema) if free else None
        res = self.chat(messages, role=role, schema=None if free else schema,
                        max_tokens=min(max_tokens, cap or max_tokens), on_token=on_token,
                        keep_prefix=keep_prefix)
        try:
            return _parse_valid(res.text, schema, jsonschema, fit=free)
        except (ValueError, jsonschema.ValidationError) as first:
            again = messages if free else [
                *messages,
                {"role": "assistant", "content": res.text},
                {"role": "user", "content": f"That reply was not valid ({_short(first)}). "
                 "Reply again with only the JSON object, complete and valid."},
            ]
            res2 = None
            try:
                res2 = self.chat(again, role=role, schema=schema, max_tokens=max_tokens,
                                 keep_prefix=keep_prefix, retry=True)
                return _parse_valid(res2.text, schema, jsonschema)
            except (ValueError, jsonschema.ValidationError, ContextOverflowError) as second:
                cut = "length" in (res.finish_reason, res2 and res2.finish_reason)
                raise LLMOutputError(
                    f"{self.name} returned invalid JSON twice: {_short(second)}", cut=cut
                ) from second

    def reset(self) -> None:
        """Forget the KV cache and every role's prefix snapshot: the next call evaluates its
        whole prompt, as on a fresh load. llama.cpp's logits depend (in the last digits) on
        how a prompt was split into batches, so greedy replies can differ by a word between
        a cold cache and a restored prefix; two runs that must match start from here."""
        with self._lock:
            self._prefixes = PrefixSnapshots()
            if self._llm is not None:
                self._llm._ctx.kv_cache_seq_rm(-1, 0, -1)
                self._llm.n_tokens = 0

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


def _schema_chars(schema: dict) -> int | None:
    """The most characters a reply the schema's grammar lets through can have (compact
    JSON), or ``None`` when a string or list in it is uncapped."""
    kind = schema.get("type")
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    if kind == "string":
        n = schema.get("maxLength")
        return None if n is None else n + 2
    if kind in ("integer", "number"):
        return 12
    if kind == "boolean":
        return 5
    if kind == "array":
        n, items = schema.get("maxItems"), schema.get("items")
        each = _schema_chars(items) if isinstance(items, dict) else None
        return None if n is None or each is None else n * (each + 2) + 2
    if kind == "object":
        total = 2
        for key, sub in schema.get("properties", {}).items():
            each = _schema_chars(sub)
            if each is None:
                return None
            total += len(key) + 4 + each
        return total
    return None


def schema_token_cap(schema: dict) -> int | None:
    """A token budget for an unconstrained reply to ``schema``: its longest grammatical
    reply at 2.5 characters a token (numbers and rare words take more tokens than English
    prose's ~4 characters) plus 40 for a code fence and indentation; ``None`` when the
    schema caps no length. A longer free reply breaks a cap anyway, so cutting it there only
    stops a model that loops."""
    chars = _schema_chars(schema)
    return None if chars is None else int(chars / 2.5) + 40


def fit_to_schema(value: Any, schema: dict) -> Any:
    """``value`` with every list cut to its schema's ``maxItems`` and every string to its
    ``maxLength`` (at a word boundary when one lies in the second half), recursively through
    object properties and array items; anything else unchanged. An unconstrained model
    writes six facts where the prompt and schema say three (the 1.5B did in 7 of 24
    EgoLife clips): the first three are the reply the grammar would have let through."""
    kind = schema.get("type")
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: fit_to_schema(v, props[k]) if k in props else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        if schema.get("maxItems") is not None:
            value = value[:schema["maxItems"]]
        items = schema.get("items")
        return [fit_to_schema(v, items) for v in value] if isinstance(items, dict) else value
    if kind == "string" and isinstance(value, str):
        n = schema.get("maxLength")
        if n is not None and len(value) > n:
            cut = value[:n]
            space = cut.rfind(" ")
            return cut[:space] if space > n // 2 else cut
    return value


def _parse_valid(text: str, schema: dict, jsonschema_mod, *, fit: bool = False) -> dict:
    """The first JSON object in ``text`` (an unconstrained reply may wrap it in a code fence
    or add words after it), with ``fit`` cut to the schema's caps (:func:`fit_to_schema`),
    validated against ``schema``; ValueError / ValidationError."""
    start = text.find("{")
    if start < 0:
        raise ValueError("reply has no JSON object")
    obj, _end = json.JSONDecoder().raw_decode(text, start)
    if fit:
        obj = fit_to_schema(obj, schema)
    if not isinstance(obj, dict):
        raise ValueError("reply is not a JSON object")
    jsonschema_mod.validate(obj, schema)
    return obj
