"""The time scope every KNN and BM25 query shares: keep what belongs to clips ending in
``(after, before]`` (timeline seconds, either end open), as part of the query itself so the
scope applies before the top-k cut, never after it."""

from __future__ import annotations

import math


def time_scope(column: str, *, before: float | None = None,
               after: float | None = None) -> tuple[str, list[float]]:
    """The SQL constraint ``after < column <= before`` and its parameters.

    ``column`` holds a clip's end in timeline seconds (``clips.t_end``, or the ``clip_end``
    metadata column of a vec0 table). Returns ``(" AND column <= ? AND column > ?",
    [before, after])`` with an open end (``None``) left out: ``("", [])`` when both are.
    The text starts with `` AND `` so it appends to a ``WHERE`` clause.
    """
    sql, args = "", []
    if before is not None:
        sql += f" AND {column} <= ?"
        args.append(float(before))
    if after is not None:
        sql += f" AND {column} > ?"
        args.append(float(after))
    return sql, args


DAY_SECONDS = 86400.0
"""The width of a ``day`` partition of ``key_vec`` (timeline seconds)."""


def day_of(t: float) -> int:
    """The timeline day of ``t`` seconds: ``floor(t / 86400)`` (``key_vec.day``)."""
    return math.floor(float(t) / DAY_SECONDS)


def sql_day(column: str) -> str:
    """SQL for :func:`day_of` of ``column`` (floor, also below zero), for migrations."""
    q = f"({column} / {DAY_SECONDS})"
    return f"(CAST({q} AS INTEGER) - ({q} < CAST({q} AS INTEGER)))"


def day_scope(column: str, *, before: float | None = None,
              after: float | None = None) -> tuple[str, list[int]]:
    """The partition constraint on the ``day`` column ``column`` that holds every clip ending
    in ``(after, before]``: ``day >= day_of(after)`` and ``day <= day_of(before)``, either
    left out when open. It only narrows which partitions a KNN reads; the exact
    :func:`time_scope` constraint goes with it. Same shape as :func:`time_scope`."""
    sql, args = "", []
    if before is not None:
        sql += f" AND {column} <= ?"
        args.append(day_of(before))
    if after is not None:
        sql += f" AND {column} >= ?"
        args.append(day_of(after))
    return sql, args
