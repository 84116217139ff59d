"""The time scope every KNN and BM25 query shares: keep what belongs to clips ending in
``(after, before]`` (timeline seconds, either end open), as part of the query itself so the
scope applies before the top-k cut, never after it."""

from __future__ import annotations


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
