"""``--set KEY=VALUE``: any :class:`~edge.answer.options.AskOptions` field by name, its value
read by the field's type — so a field added to ``AskOptions`` is measurable at once.

Per question fields (``at``, ``choices``) are not settable: the question file gives them.
"""

from __future__ import annotations

import types
import typing
from dataclasses import fields, replace

from edge.answer.options import AskOptions
from edge.errors import BenchError
from edge.recall.retrieval import FUSIONS
from edge.store import INDEX_TYPES
from edge.timeline import TimeWindow, parse_moment

PER_QUESTION = ("at", "choices")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _window(text: str) -> TimeWindow:
    """``FROM..TO`` (either side may be empty) → a :class:`TimeWindow`."""
    if ".." not in text:
        raise ValueError("expected FROM..TO, e.g. 'DAY1 10:00..DAY1 12:00'")
    a, b = (s.strip() for s in text.split("..", 1))
    return TimeWindow(parse_moment(a) if a else None, parse_moment(b) if b else None, text)


def parse_value(text: str, hint) -> object:
    """``text`` read as type ``hint`` (bool, int, float, str, ``tuple[str, ...]`` /
    ``list[str]`` comma-separated, :class:`TimeWindow` ``FROM..TO``, ``X | None`` with
    ``none``). Raises ``ValueError`` when it cannot."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        if text.strip().lower() in ("none", "null") and type(None) in args:
            return None
        (hint,) = [a for a in args if a is not type(None)]
        args = typing.get_args(hint)
    origin = typing.get_origin(hint) or hint
    if origin is bool:
        low = text.strip().lower()
        if low not in _TRUE | _FALSE:
            raise ValueError("expected true or false")
        return low in _TRUE
    if origin in (int, float, str):
        return origin(text.strip())
    if origin in (tuple, list):
        items = [s.strip() for s in text.split(",") if s.strip()]
        return tuple(items) if origin is tuple else items
    if origin is TimeWindow:
        return _window(text)
    raise ValueError(f"cannot read a value of type {hint}")


def parse_sets(items: typing.Iterable[str]) -> dict[str, object]:
    """``["delta=1", "decompose=true"]`` → ``{"delta": 1, "decompose": True}``.

    Raises:
        BenchError: no ``=``, a name that is not an ``AskOptions`` field (the message lists
            them), a per-question field, or a value its type cannot read.
    """
    hints = typing.get_type_hints(AskOptions)
    names = [f.name for f in fields(AskOptions)]
    out: dict[str, object] = {}
    for item in items:
        name, eq, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not eq:
            raise BenchError(f"--set {item!r}: expected KEY=VALUE, e.g. --set delta=1")
        if name not in names:
            raise BenchError(f"--set {name}: not an AskOptions field; one of "
                             f"{', '.join(n for n in names if n not in PER_QUESTION)}")
        if name in PER_QUESTION:
            raise BenchError(f"--set {name}: each question gives its own {name} "
                             "(use --no-choices to leave the options out of the search)")
        try:
            out[name] = parse_value(text, hints[name])
        except (TypeError, ValueError) as e:
            raise BenchError(f"--set {name}={text!r}: {e}") from None
    return out


def build_options(sets: dict[str, object], **flags) -> AskOptions:
    """The benchmark's :class:`AskOptions`: the product's defaults, then the named flags
    that are not ``None`` (``key_types``, ``retrieval``, ``fusion``, ``rrf_k``,
    ``auto_window``), then ``sets`` (``--set`` wins). Raises :class:`BenchError` for
    options no question can run with (an unknown retrieval, loop, fusion or key
    type)."""
    opts = replace(AskOptions(), **{k: v for k, v in flags.items() if v is not None})
    opts = replace(opts, **sets)
    bad = set(opts.key_types) - set(INDEX_TYPES)
    if not opts.key_types or bad:
        raise BenchError(f"key_types {opts.key_types}: choose from {', '.join(INDEX_TYPES)}")
    if opts.fusion not in FUSIONS:
        raise BenchError(f"fusion {opts.fusion!r}: choose from {', '.join(FUSIONS)}")
    try:
        opts.check()
    except ValueError as e:
        raise BenchError(str(e)) from None
    return opts
