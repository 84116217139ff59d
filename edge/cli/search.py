"""``edge search``: the moments ``edge ask`` would start from — its first round's anchor
clips, in rank order — with no LLM loaded (only the embedder).

The retrieval is :func:`edge.answer.search.first_round`, the code path ``ask``'s round 1
runs; the question, scope and retrieval options are the ones ``ask`` declares
(:mod:`edge.cli.options`), so the same flags give the same anchors.
"""

from __future__ import annotations

import click

from edge.cli import render
from edge.cli.options import (
    State,
    choices_option,
    fusion_options,
    json_option,
    keys_option,
    memory_options,
    open_memory,
    parse_choices,
    retrieval_option,
    retrieval_settings,
    scope_options,
    scope_settings,
    top_n_option,
)
from edge.cli.render.ask import search_lines

EXCERPT = 200
"""Characters of a moment's caption (whitespace collapsed) in ``edge search``'s output."""


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters (``…`` marks a
    cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def search_result(memory, found) -> dict:
    """What ``edge search --json`` prints for ``found`` (a
    :class:`edge.answer.search.FirstRound`): the question and queries, one moment per
    anchor in the order ``ask`` takes them (:func:`edge.answer.search.first_round`: the
    best spread apart, each option's best, then the skipped ones by score) — ``clip_id``,
    ``when`` as ``ask`` writes it, ``score`` rounded to 4 places, ``matched``: the key type
    or ``bm25`` that ranked it, ``caption``: an excerpt (the transcript when the clip has no
    caption) — the ``scope`` as ``ask``'s ``Answer.scope``, the ``note`` and the
    milliseconds the search took (``ms``)."""
    from edge.timeline import format_moment

    clips = memory.clips([a.clip_id for a in found.anchors])
    moments = []
    for a in found.anchors:
        c = clips[a.clip_id]
        moments.append({"clip_id": c.id, "when": format_moment(c.t_start, c.day, c.day_start),
                         "score": round(a.score, 4), "matched": a.key_type,
                         "caption": excerpt(c.caption or c.transcript)})
    s = found.scope
    return {"question": found.queries[0], "queries": found.queries, "moments": moments,
            "scope": {"label": s.label, "start": s.start, "end": s.end},
            "note": found.note, "ms": found.ms}


@click.command(short_help="Show the moments `edge ask` would start from (no LLM).")
@memory_options
@click.argument("question")
@scope_options
@top_n_option("Moments to show [default: 5, the anchors `edge ask` takes per round with a "
              "solver under a 16k context, as in the tiny and small profiles].")
@retrieval_option
@keys_option
@fusion_options
@choices_option("Multiple choice: options separated by '|'; each option is searched too "
                "(the question's words and the option's), fused, as `edge ask` does.")
@json_option("Print the question, queries, moments, scope, note and milliseconds as JSON.")
@click.pass_obj
def search(state: State, question: str, at: str | None, from_: str | None, to: str | None,
           auto_window: bool, top_n: int | None, retrieval: str, key_types: str, fusion: str,
           rrf_k: int | None, choices: str | None, as_json: bool) -> None:
    """Show the moments `edge ask` would start from: retrieval only, no LLM.

    They come in the order `ask` takes them: the best spread apart (no two within ±2 clips),
    with --choices each option's best, then the clips skipped for spreading, by score.

    The same flags give the anchors of `edge ask`'s first round (without --decompose); a
    question too long for `edge ask`'s solver is refused here too.
    """
    from edge.answer import AskOptions
    from edge.answer.question import check_question_length
    from edge.answer.scope import check_question, join_notes
    from edge.answer.search import first_round
    from edge.store.embedding import memory_embedder, reembed_note

    opts = AskOptions(**scope_settings(at, from_, to, auto_window), top_n=top_n,
                      **retrieval_settings(retrieval, key_types, fusion, rrf_k),
                      choices=parse_choices(choices))
    with open_memory(state, create=False, reading=True) as memory:
        checked, asked_at = check_question(memory, question, opts)  # before the embedder
        hub = state.hub()
        # the question `ask` refuses as too long, counted by the solver's vocabulary alone
        check_question_length(hub.tokenizer("solver"), opts, checked, asked_at)
        found = first_round(memory, memory_embedder(memory, hub), question, opts)
        result = search_result(memory, found)
        result["note"] = join_notes(result["note"], reembed_note(memory, hub) or "")
    if as_json:
        render.echo_json(result)
        return
    render.echo(search_lines(result))
