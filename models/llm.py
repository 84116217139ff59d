"""What every LLM backend keeps (llama.cpp: :class:`models.llama_chat.LlamaCppLLM`; remote
OpenAI-compatible servers: :class:`models.remote.llm.RemoteLLM`): :class:`ChatResult`, the
errors a caller falls back on (:class:`LLMOutputError`, :class:`ContextOverflowError`) and
the JSON-schema checks behind ``chat_json`` (:func:`schema_token_cap`,
:func:`fit_to_schema`).

Every backend's ``chat``/``chat_json`` take ``on_token`` to stream the reply's text as it is
written, and report ``tokens_evaluated``: the prompt tokens not served from the KV cache.
:class:`JsonFieldStream` (from :mod:`models.jsonstream`) turns a streamed JSON reply into
the growing text of one of its string fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from models.jsonstream import JsonFieldStream as JsonFieldStream  # re-exported for callers


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
