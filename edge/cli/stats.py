"""``edge stats``: what the memory holds and what building and asking it has cost."""

from __future__ import annotations

import click

from edge.cli import render
from edge.cli.options import State, json_option, memory_options, open_memory
from edge.cli.render.status import stats_lines


@click.command(short_help="What the memory holds: clips, hours, days, model calls.")
@memory_options
@json_option("Print the counts as JSON.")
@click.pass_obj
def stats(state: State, as_json: bool) -> None:
    """What the memory holds: clips, hours, days, model calls so far."""
    with open_memory(state, create=False, reading=True) as memory:
        s = memory.stats()
        s["ingest_cost"] = memory.stage_costs("ingest")
        s["calls"] = memory.call_totals()  # after ingest_cost, the key order of --json
    if as_json:
        render.echo_json(s, ensure_ascii=True)
        return
    render.echo(stats_lines(s, state.memory_path))
