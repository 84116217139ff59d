"""``edge ask`` (one question, answered with cited moments) and ``edge chat`` (the Textual
chat). Both run the same answer loop, so the loop's options (``--delta``, ``--rounds``,
``--loop``, ``--filter``) come from :mod:`edge.cli.options`."""

from __future__ import annotations

import click

from edge.cli import render
from edge.cli.options import (
    State,
    delta_option,
    filter_option,
    json_option,
    loop_option,
    loop_settings,
    memory_options,
    open_memory,
    rounds_option,
)


def parse_key_types(key_types: str) -> tuple[str, ...]:
    """``--keys``: the comma-separated vector types, each once, in the order given.
    Raises ``click.BadParameter`` for none or an unknown type."""
    from edge.store import INDEX_TYPES

    keys = tuple(dict.fromkeys(k.strip() for k in key_types.split(",") if k.strip()))
    if not keys or set(keys) - set(INDEX_TYPES):
        raise click.BadParameter(f"choose from {', '.join(INDEX_TYPES)}", param_hint="--keys")
    return keys


def parse_window(from_: str | None, to: str | None):
    """``--from``/``--to``: the :class:`edge.timeline.TimeWindow` to search, or None.
    Raises :class:`~edge.errors.TimeParseError` for a moment it cannot read and
    ``click.BadParameter`` when ``--from`` is not before ``--to``."""
    from edge.timeline import TimeWindow, parse_moment

    if not (from_ or to):
        return None
    start, end = (parse_moment(from_) if from_ else None), (parse_moment(to) if to else None)
    if start is not None and end is not None and start >= end:
        raise click.BadParameter("--from must be before --to", param_hint="--from")
    return TimeWindow(start, end, f"{from_ or '…'} to {to or '…'}")


@click.command()
@memory_options
@click.argument("question")
@click.option("--at", "at", default=None, metavar="TIME",
              help="When the question is asked ('DAY1 11:21', '2025-02-20 19:40'); only "
                   "earlier clips are used. Default: now.")
@click.option("--from", "from_", default=None, metavar="TIME",
              help="Search only clips that end after this moment (same forms as --at).")
@click.option("--to", "to", default=None, metavar="TIME",
              help="Search only clips that end by this moment.")
@click.option("--window/--no-window", "auto_window", default=True, show_default=True,
              help="Read a time window the question names ('yesterday evening', "
                   "'last night', 'DAY1 afternoon') and search inside it.")
@click.option("--top-n", type=click.IntRange(1, 50), default=None,
              help="Anchor clips per round [default: 10 for a solver with a ≥16k context, "
                   "else 5].")
@delta_option()
@rounds_option()
@click.option("--retrieval", type=click.Choice(["hybrid", "keys"]), default="hybrid",
              show_default=True,
              help="hybrid: MERIT max-sim over the keys (--keys) fused (RRF, k=60) with BM25 over "
                   "captions, transcripts and keys; keys: max-sim only.")
@click.option("--keys", "key_types", default="event,dialogue,object,summary,caption",
              show_default=True, metavar="TYPES",
              help="Comma-separated vectors that vote in max-sim (MERIT keys and the caption).")
@loop_option()
@filter_option
@click.option("--decompose", is_flag=True,
              help="MARQUIS: split the question into sub-queries (one more LLM call) and fuse "
                   "their rankings.")
@click.option("--fusion", type=click.Choice(["rrf", "wrrf", "max", "sum", "mean"]),
              default="rrf", show_default=True, help="How sub-query rankings are fused.")
@click.option("--rrf-k", type=click.IntRange(1, 1000), default=60, show_default=True,
              help="K of reciprocal rank fusion (10, 60, 100 are usual).")
@click.option("--pyramid/--no-pyramid", "use_pyramid", default=None,
              help="PyraVid expansion + pruning each round (one more LLM call) and the day's "
                   "global node as context [default: when the memory has a pyramid].")
@click.option("--frames/--no-frames", default=None,
              help="Send anchor keyframes to a VLM solver with the final answer [default: "
                   "only when the solver takes images and its backend allows frames].")
@click.option("--choices", default=None, metavar="A|B|C|D",
              help="Multiple choice: options separated by '|'; the answer is one letter.")
@json_option("Print the answer, moments, rounds and usage as JSON.")
@click.pass_obj
def ask(state: State, question: str, at: str | None, from_: str | None, to: str | None,
        auto_window: bool, top_n: int | None, delta: int, rounds: int, retrieval: str,
        key_types: str, loop: str, neighbor_filter: bool, decompose: bool, fusion: str, rrf_k: int,
        use_pyramid: bool | None, frames: bool | None, choices: str | None,
        as_json: bool) -> None:
    """Answer a question from memory and cite the moments it relied on."""
    from edge.answer import ask as run_ask
    from edge.timeline import parse_moment

    keys = parse_key_types(key_types)
    at_t = parse_moment(at) if at else None
    window = parse_window(from_, to)
    with open_memory(state, create=False) as memory:
        hub = state.hub()
        try:
            result = run_ask(
                memory, hub, question, at=at_t, window=window, auto_window=auto_window,
                top_n=top_n, delta=delta, retrieval=retrieval, key_types=keys,
                decompose=decompose, fusion=fusion, rrf_k=rrf_k, pyramid=use_pyramid,
                frames=frames, **loop_settings(rounds, loop, neighbor_filter),
                choices=[c.strip() for c in choices.split("|")] if choices else None,
                on_progress=None if as_json else render.ask_progress)
        finally:
            memory.record_calls("ask", hub.usage.records)
    if as_json:
        render.echo_json(result.as_dict())
        return
    render.echo(render.answer_lines(result))


@click.command()
@memory_options
@delta_option("Neighbor window Δ (clips on each side) for answers and a clip's neighbors.")
@rounds_option("Most retrieval rounds R per question.")
@loop_option("The answer loop, as in `edge ask --loop`.")
@filter_option
@click.pass_obj
def chat(state: State, delta: int, rounds: int, loop: str, neighbor_filter: bool) -> None:
    """Chat about your day in the terminal: ask, see cited moments, browse the timeline.

    Keys: Enter asks, Esc cancels, ctrl+t timeline, F1 help, ctrl+q quits.
    """
    from tui.app import EdgeApp  # Textual loads only for this command

    EdgeApp(state.memory_path, state.hub(), delta=delta,
            ask_options=loop_settings(rounds, loop, neighbor_filter)).run()
