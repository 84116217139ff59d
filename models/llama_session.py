"""A llama.cpp model in this process (llama-cpp-python): loading a GGUF without touching the
terminal (:func:`keep_std_streams`, llama.cpp's messages to the ``llama_cpp`` logger),
counting and cutting tokens, the KV-cache prefix snapshots that let a role's constant
instructions survive other roles' calls (:class:`PrefixSnapshots`), cancelling a decode,
and :meth:`LlamaSession.reset`/:meth:`LlamaSession.close`.

:class:`LlamaSession` is the base of :class:`models.llama_chat.LlamaCppLLM`; its chat and
JSON calls are in :mod:`models.llama_chat`, its token probabilities in
:mod:`models.llama_probs`.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from models.cancel import GenerationCancelled, raise_if_cancelled
from models.usage import UsageMeter

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


def cpu_build() -> str:
    """The instruction set llama.cpp was built for, as ``edge doctor`` names it: ``AVX-512``
    (``scripts/setup.sh`` on a CPU with AVX-512 VNNI/VBMI/BF16: prompts read ~1.45x faster),
    ``AVX2`` (the portable build) or ``generic``, from ``llama_print_system_info``."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode(errors="replace")
    return next((name for flag, name in (("AVX512 = 1", "AVX-512"), ("AVX2 = 1", "AVX2"))
                 if flag in info), "generic")


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


PROMPT_SPEED = {"flash_attn": True, "n_ubatch": 256}
"""llama.cpp context settings that read a prompt faster on a CPU: flash attention and a
256-token micro-batch. Measured on 2 cores with Qwen2.5-Coder-1.5B Q4_K_M, a 1,000-token
prompt: 64 → 70 tokens/s (15.7 → 14.2 s); generation unchanged at 14.3 tokens/s. Through
``edge bench qa --answer`` (10 dev questions of the hard set, the same hour): every
question 0.6–3.9 s faster, p50 26.3 → 24.6 s, the same answers (and the same answers on all
77 dev questions against the run before it)."""


class LlamaSession:
    """One GGUF model loaded by llama.cpp, CPU by default, serving one call at a time.

    Args:
        model_path: the ``.gguf`` file. n_ctx: context window in tokens.
        threads: CPU threads (default 2, the edge budget). seed: fixed for reproducibility.
        grammar: when :meth:`~models.llama_chat.LlamaCppLLM.chat_json` constrains the reply
            with the schema's grammar — ``"on_failure"`` (default: first unconstrained, then
            constrained if the reply does not parse and validate) or ``"always"``.
    """

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
            **PROMPT_SPEED,
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

    def _remember_prefix(self, role: str, prompt_tokens: int,
                         messages: list[dict[str, Any]]) -> None:
        """After a ``keep_prefix`` call (the caller holds the lock): keep ``role``'s prefix
        snapshot, on its first call all but the last message (and its template frame)."""
        tail = self.count_tokens(str(messages[-1].get("content", ""))) + 8
        self._prefixes.remember(self._llm, role, prompt_tokens, first=prompt_tokens - tail)

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
