"""``edge ask`` (one question, answered with cited moments) and ``edge chat`` (the Textual
chat). Both run the same answer loop, so the loop's options (``--delta``, ``--rounds``,
``--loop``, ``--filter``) come from :mod:`edge.cli.options`."""

from __future__ import annotations

import click

from edge.cli import render
from edge.cli.options import (
    State,
    choices_option,
    delta_option,
    filter_option,
    fusion_options,
    json_option,
    keys_option,
    loop_option,
    loop_settings,
    memory_options,
    open_memory,
    parse_choices,
    record_calls,
    retrieval_option,
    retrieval_settings,
    rounds_option,
    scope_options,
    scope_settings,
    top_n_option,
)
from edge.cli.render.ask import AskStream, answer_lines


@click.command(short_help="Answer a question, citing the moments it relied on.")
@memory_options
@click.argument("question")
@scope_options
@top_n_option("Anchor clips per round [default: 10 for a solver with a ≥16k context, else 5].")
@delta_option()
@rounds_option()
@retrieval_option
@keys_option
@loop_option()
@filter_option
@click.option("--decompose", is_flag=True,
              help="MARQUIS: split the question into sub-queries (one more LLM call) and fuse "
                   "their rankings.")
@fusion_options
@click.option("--pyramid/--no-pyramid", "use_pyramid", default=None,
              help="PyraVid expansion + pruning each round (one more LLM call) and the day's "
                   "global node as context [default: when the memory has a pyramid].")
@click.option("--frames/--no-frames", default=None,
              help="Send anchor keyframes to a VLM solver with the final answer [default: "
                   "only when the solver takes images and its backend allows frames].")
@choices_option("Multiple choice: options separated by '|'; the answer is one letter.")
@click.option("--choice-scoring", type=click.Choice(["generate", "likelihood"]),
              default="generate", show_default=True,
              help="With --choices: the solver writes its reply (letter, reason, cited notes), "
                   "or the letter comes from its token probabilities, nothing written "
                   "(faster; a remote solver always writes).")
@click.option("--no-grounding", "option_grounding", is_flag=True, default=True,
              flag_value=False,
              help="With --choices: keep the solver's letter even when the evidence grounds "
                   "another option clearly better (the embedder's check, no solver call).")
@click.option("--open-check", type=click.Choice(["quotes", "judge", "words"]),
              default="quotes", show_default=True,
              help="Open questions: how the answer is tied to its clips — quotes: the solver "
                   "quotes the notes and the program checks each quote is in its clip and "
                   "states the answer; judge: the solver judges each cited clip (one call a "
                   "clip, ~5 s on 2 cores); words: the answer's words only.")
@json_option("Print the answer, moments, rounds and usage as JSON.")
@click.pass_obj
def ask(state: State, question: str, at: str | None, from_: str | None, to: str | None,
        auto_window: bool, top_n: int | None, delta: int, rounds: int, retrieval: str,
        key_types: str, loop: str, neighbor_filter: bool, decompose: bool, fusion: str,
        rrf_k: int | None, use_pyramid: bool | None, frames: bool | None, choices: str | None,
        choice_scoring: str, option_grounding: bool, open_check: str,
        as_json: bool) -> None:
    """Answer a question from memory and cite the moments it relied on."""
    from edge.answer import ask as run_ask

    retrieval_opts = retrieval_settings(retrieval, key_types, fusion, rrf_k)
    scope = scope_settings(at, from_, to, auto_window)
    stream = AskStream()
    with open_memory(state, create=False, reading=True) as memory:
        hub = state.hub()
        try:
            result = run_ask(
                memory, hub, question, **scope, top_n=top_n, delta=delta, **retrieval_opts,
                decompose=decompose, pyramid=use_pyramid, frames=frames,
                **loop_settings(rounds, loop, neighbor_filter), choices=parse_choices(choices),
                choice_scoring=choice_scoring, option_grounding=option_grounding,
                open_check=open_check,
                on_progress=None if as_json else stream.progress,
                on_token=None if as_json else stream.token)
        finally:
            stream.close()
            record_calls(memory, "ask", hub.usage.records)
    if as_json:
        render.echo_json(result.as_dict())
        return
    render.echo(answer_lines(result))


@click.command(short_help="Chat about your day in the terminal, with cited moments.")
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

    if not state.memory_path.exists():  # a typo must not wait for a memory never made
        from edge.cli.options import known_memories
        from edge.store import StoreError

        raise StoreError(f"no memory at {state.memory_path}; build one with `edge ingest "
                         "VIDEO...`, `edge ingest-captions FILE` or `edge record`"
                         f"{known_memories(state.memory_path)}")
    EdgeApp(state.memory_path, state.hub(), delta=delta,
            ask_options=loop_settings(rounds, loop, neighbor_filter)).run()
