"""Token probabilities on llama.cpp: how likely a reply starts with each choice, read off the
next-token logits of the evaluated prompt, nothing generated — a yes/no support score
(MARQUIS §4.4 calibration, :mod:`edge.report.calibrate`) or a multiple-choice answer's
letter (:mod:`edge.answer.likelihood`). A mixin of :class:`models.llama_chat.LlamaCppLLM`
over its :class:`~models.llama_session.LlamaSession`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from models.cancel import current_cancel
from models.llama_session import common_prefix
from models.llm import ContextOverflowError
from models.usage import CallRecord


class TokenProbabilities:
    """:meth:`yes_probability` and :meth:`choice_probabilities` for a
    :class:`~models.llama_session.LlamaSession` (its ``_llm``, lock, prefix snapshots and
    usage meter)."""

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

    def _first_tokens(self, words: tuple[str, ...]) -> list[int]:
        """The distinct first token of each of ``words`` (as a reply starts with it)."""
        return list(dict.fromkeys(
            self._llm.tokenize(w.encode("utf-8"), add_bos=False, special=False)[0]
            for w in words))
