"""LLM roles (memory LLM, solver) on llama.cpp through llama-cpp-python: chat and JSON calls.

One :class:`LlamaCppLLM` per GGUF file, loaded once and shared by every role that names
the same model (:mod:`models.llama_session`: loading, tokens, KV prefix snapshots;
:mod:`models.llama_probs`: token probabilities). Structured output is parsed and validated
with ``jsonschema``; llama.cpp's JSON-schema grammar constrains a call only when the free
reply was broken (``grammar="on_failure"``, the default: the grammar checks every token of
a 150k-token vocabulary and made generation ~35 % slower on 2 cores) or always
(``grammar="always"``). A reply still broken under the grammar raises
:class:`~models.llm.LLMOutputError`, so callers can fall back visibly instead of crashing.

Consecutive calls on one model that share a long prompt prefix (same system prompt, same
evidence) only pay for what differs: llama-cpp-python keeps the longest common prefix of
the previous call's tokens.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from models.cancel import current_cancel
from models.llama_probs import TokenProbabilities
from models.llama_session import LlamaSession
from models.llm import (
    ChatResult,
    ContextOverflowError,
    LLMOutputError,
    OnToken,
    _parse_valid,
    _short,
    schema_token_cap,
)
from models.usage import CallRecord


class LlamaCppLLM(LlamaSession, TokenProbabilities):
    """A chat model on llama.cpp (GGUF), CPU by default: :meth:`chat` and :meth:`chat_json`
    here, loading and the KV cache in :class:`~models.llama_session.LlamaSession` (its
    arguments), :meth:`yes_probability`/:meth:`choice_probabilities` in
    :class:`~models.llama_probs.TokenProbabilities`."""

    #: a text-only model: callers must not put frames (image parts) in its messages
    accepts_frames = False

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
        prompt_tokens = self._check_fits(messages, max_tokens)
        kwargs: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        cancel = current_cancel()
        t0 = time.perf_counter()
        with self._lock, self._abort_on(cancel):
            if keep_prefix:
                self._prefixes.restore(self._llm, role)
            decoded = self._decoded_tokens() if self._counted else 0
            text, finish, tokens_in, tokens_out = self._complete(messages, kwargs, on_token,
                                                                 prompt_tokens)
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

    def _check_fits(self, messages: list[dict[str, Any]], max_tokens: int) -> int:
        """The prompt's estimated tokens (each message's text + 8 for its template frame);
        :class:`ContextOverflowError` when they and ``max_tokens`` exceed ``n_ctx``."""
        prompt_tokens = sum(self.count_tokens(str(m.get("content", ""))) + 8 for m in messages)
        if prompt_tokens + max_tokens > self.n_ctx:
            raise ContextOverflowError(
                f"{self.name}: prompt of ~{prompt_tokens} tokens + {max_tokens} to generate "
                f"exceeds the {self.n_ctx}-token context"
            )
        return prompt_tokens

    def _complete(self, messages: list[dict[str, Any]], kwargs: dict[str, Any],
                  on_token: OnToken | None, prompt_tokens: int) -> tuple[str, str, int, int]:
        """``(text, finish_reason, tokens_in, tokens_out)`` of one completion, streamed to
        ``on_token`` when given (:meth:`_stream`). The caller holds the lock and the abort
        callback; ``prompt_tokens``: the estimate used when the backend reports none."""
        if on_token is not None:
            text, finish = self._stream(messages, kwargs, on_token)
            return (text, finish, *self._streamed_counts(finish))
        out = self._llm.create_chat_completion(messages=messages, **kwargs)
        usage = out.get("usage") or {}
        choice = out["choices"][0]
        return (choice["message"].get("content") or "", choice.get("finish_reason") or "",
                int(usage.get("prompt_tokens", prompt_tokens)),
                int(usage.get("completion_tokens", 0)))

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

    def chat_json(
        self,
        messages: list[dict[str, Any]],
        *,
        role: str,
        schema: dict,
        max_tokens: int = 256,
        on_token: OnToken | None = None,
        on_retry: Callable[[], OnToken | None] | None = None,
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
        ``on_token`` streams the first reply (see :meth:`chat`; feed it to a
        :class:`JsonFieldStream` to show one field as it is written). A second reply is
        streamed only to what ``on_retry()`` returns, called just before it (the caller
        clears what the broken reply showed, e.g. with a progress line, and hands back a
        fresh stream); without ``on_retry`` it is not streamed, so a terminal never shows a
        second reply run on after the broken one.
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
                                 keep_prefix=keep_prefix, retry=True,
                                 on_token=on_retry() if on_retry and on_token else None)
                return _parse_valid(res2.text, schema, jsonschema)
            except (ValueError, jsonschema.ValidationError, ContextOverflowError) as second:
                cut = "length" in (res.finish_reason, res2 and res2.finish_reason)
                raise LLMOutputError(
                    f"{self.name} returned invalid JSON twice: {_short(second)}", cut=cut
                ) from second
