"""Everything the commands print: each function turns a result into the lines a user reads
(``echo`` prints them), so the commands keep only parsing and policy. The helpers every
command uses are here; the lines of each command group are in a module of their own:
:mod:`.ingest` (ingest, ingest-captions, build), :mod:`.ask` (ask, chat, search),
:mod:`.status` (stats, status, record, backup), :mod:`.models` (models, doctor),
:mod:`.report` (report).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable

import click

WIDTH = 100
"""Width the excerpts of ``edge ask`` are wrapped to (with a 5-space indent)."""


def echo(lines: Iterable[str]) -> None:
    """Print each line to stdout."""
    for line in lines:
        click.echo(line)


def echo_json(data, *, ensure_ascii: bool = False) -> None:
    """Print ``data`` as indented JSON."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=ensure_ascii))


def progress_bar(total: float, unit: str, desc: str):
    """A tqdm bar on stderr counting ``total`` ``unit`` (seconds of footage, clips)."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} [{elapsed}<{remaining}]")


def ago(t: float | None) -> str:
    """``t`` (Unix seconds) as a whole-second age, e.g. ``14 minutes and 20 seconds ago``;
    ``-`` when unknown."""
    if not t:
        return "-"
    from humanfriendly import format_timespan

    return f"{format_timespan(round(max(0.0, time.time() - t)), max_units=2)} ago"


def span(seconds: float) -> str:
    """A duration in words, at most two units: ``2 minutes and 5 seconds``."""
    from humanfriendly import format_timespan

    return format_timespan(round(max(0.0, seconds)), max_units=2)


def backlog_line(b: dict) -> str:
    """The deferred LLM tier's backlog (:meth:`edge.store.Memory.backlog`) in one line."""
    if not b["clips"]:
        return "backlog  none: every clip is built"
    eta = (f"ETA {span(b['eta_seconds'])}" if b["eta_seconds"] is not None
           else "ETA unknown until a clip is built")
    return (f"backlog  {b['clips']} clip(s), {b['hours']:.2f} h of footage wait for the LLM "
            f"tier ({b['keys']} keys, {b['pyramid']} pyramid); {eta}; run `edge build`")
