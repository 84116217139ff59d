"""What the commands share: the :class:`State` of one invocation (memory file, profile, the
model hub) and the option decorators that more than one command declares.

Each shared option is defined once here (flag, type, default); a command may give it its own
help text where its meaning differs (``edge chat --delta`` also sets a clip's neighbors).
"""

from __future__ import annotations

from pathlib import Path

import click

from edge import config


class State:
    """The memory file and profile one ``edge`` invocation works with, and its model hub
    (loaded on first use, closed when the command ends)."""

    def __init__(self, memory: Path, profile: str) -> None:
        self.memory_path = memory
        self.profile_name = profile
        self._hub = None

    def hub(self):
        """The :class:`models.ModelHub` of the profile (created on the first call)."""
        if self._hub is None:
            from models import ModelHub

            manifest = load_manifest()
            self._hub = ModelHub(manifest.profile(self.profile_name), config.models_dir(),
                                 manifest=manifest)
        return self._hub

    def close(self) -> None:
        """Close the hub, if one was created."""
        if self._hub is not None:
            self._hub.close()


def load_manifest():
    """The shipped model manifest merged with the user's own profiles file."""
    from models.registry import load_manifest_with_user

    return load_manifest_with_user(config.user_profiles_file())


def open_memory(state: State, create: bool, *, reading: bool = False):
    """The :class:`edge.store.Memory` at the invocation's memory path.

    ``create=False`` refuses a memory that does not exist (a typo must not make a new,
    empty one), naming the memories that do exist in ``$EDGE_HOME``. ``reading``: a
    command that only reads (ask, search, stats, chat, report, backup) opens a memory it
    cannot write (a read-only file or folder, read-only media) read-only and says so once
    on stderr; a writing command gets the error saying it cannot write there."""
    from edge.store import Memory, ReadOnlyMemoryError, StoreError

    path = state.memory_path
    if not create and not path.exists():
        raise StoreError(f"no memory at {path}; build one with `edge ingest VIDEO...` or "
                         f"`edge ingest-captions FILE`{known_memories(path)}")
    try:
        return Memory(path, create=create)
    except ReadOnlyMemoryError:
        if not reading:
            raise
    memory = Memory(path, create=False, readonly=True)
    click.echo(f"Note: {path} cannot be written here; it is opened read-only (nothing "
               "is recorded in it, model calls included).", err=True)
    return memory


def known_memories(missing: Path) -> str:
    """``. Memories in <EDGE_HOME>: <a.db>, <b.db>`` (at most 8) to end an error about the
    memory ``missing``, or ``""`` when there is none there."""
    found = sorted(p for p in config.home().glob("*.db") if p != missing)
    if not found:
        return ""
    return f". Memories in {config.home()}: " + ", ".join(str(p) for p in found[:8])


def record_calls(memory, command: str, records: list) -> None:
    """Store a command's model calls (``edge stats`` shows them); a memory that refuses the
    write (a read-only file) loses that accounting, said on stderr, rather than the answer or
    report the calls made."""
    import apsw

    from edge.store import write_error

    if getattr(memory, "readonly", False):
        return  # said once when it was opened
    try:
        memory.record_calls(command, records)
    except apsw.Error as e:
        click.echo(f"Warning: {write_error(memory.path, e)} The model calls of `edge "
                   f"{command}` were not recorded.", err=True)


def _apply(fn, options: list):
    """Apply ``options`` to ``fn`` so that they are listed in ``--help`` in this order."""
    for opt in reversed(options):
        fn = opt(fn)
    return fn


# ---- every command that reads a memory --------------------------------------------------

def memory_options(fn):
    """``--memory``/``--profile`` on a command too (``edge ask --memory day1.db ...``)."""

    def set_memory(ctx: click.Context, _param, value):
        if value is not None:
            ctx.find_object(State).memory_path = value
        return value

    def set_profile(ctx: click.Context, _param, value):
        if value is not None:
            ctx.find_object(State).profile_name = value
        return value

    return _apply(fn, [
        click.option("--memory", type=click.Path(dir_okay=False, path_type=Path),
                     default=None, expose_value=False, callback=set_memory,
                     help="Memory file (overrides the group option)."),
        click.option("--profile", default=None, expose_value=False, callback=set_profile,
                     help="Model profile (small, tiny)."),
    ])


def json_option(help: str):
    """``--json`` (the parameter ``as_json``): print machine-readable output."""
    return click.option("--json", "as_json", is_flag=True, help=help)


# ---- ingest, ingest-captions, record----------------------------------------------------

def pyramid_options(fn):
    """PyraVid pyramid switches shared by ``ingest``, ``ingest-captions`` and ``record``."""
    return _apply(fn, [
        click.option("--pyramid/--no-pyramid", "pyramid", default=True, show_default=True,
                     help="The LLM tier includes the PyraVid pyramid (facts, clip and "
                          "global nodes, links): one memory-LLM call per clip for "
                          "keys+facts+summary. Like the keys it is built by the deferred tier "
                          "(after ingest, in the recorder's slack, or by `edge build`). "
                          "--no-pyramid: keys only (cheaper)."),
        click.option("--links/--no-links", "links", default=True, show_default=True,
                     help="Judge relational fact links with the memory LLM (one more call "
                          "per clip that has similar earlier facts)."),
        click.option("--max-candidates", type=click.IntRange(1, 30), default=6,
                     show_default=True, help="Fact pairs judged per clip (relational links)."),
        click.option("--global-every", type=click.IntRange(1, 1000), default=20,
                     show_default=True, help="Clips per update of a day's global node (K)."),
    ])


# ---- the answer loop: ask and chat ------------------------------------------------------

def delta_option(help: str = "Neighbor window Δ (clips on each side)."):
    """``--delta``: the neighbor window Δ around each anchor clip."""
    return click.option("--delta", type=click.IntRange(0, 4), default=2, show_default=True,
                        help=help)


def rounds_option(help: str = "Most retrieval rounds R."):
    """``--rounds``: the most retrieval rounds of the answer loop."""
    return click.option("--rounds", type=click.IntRange(1, 5), default=5, show_default=True,
                        help=help)


def loop_option(help: str = "adaptive: one call per round answers and decides over the "
                            "evidence distilled to ~800 tokens (one call when round 1 "
                            "suffices); merit: per round a neighbor-filtering call and a "
                            "sufficiency call, then one answer call; single: as adaptive "
                            "over the captions as they are."):
    """``--loop adaptive|merit|single``: which answer loop runs."""
    return click.option("--loop", type=click.Choice(["adaptive", "merit", "single"]),
                        default="adaptive",
                        show_default=True, help=help)


def filter_option(fn):
    """``--filter/--no-filter`` (the parameter ``neighbor_filter``)."""
    return click.option("--filter/--no-filter", "neighbor_filter", default=False,
                        show_default=True,
                        help="--loop single/adaptive only: add MERIT neighbor filtering (one "
                             "more call a round).")(fn)


def loop_settings(rounds: int, loop: str, neighbor_filter: bool) -> dict:
    """The keyword arguments of :func:`edge.answer.ask` that ``--rounds``, ``--loop`` and
    ``--filter`` set."""
    return {"max_rounds": rounds, "loop": loop, "neighbor_filter": neighbor_filter}


# ---- one question's retrieval: ask and search -------------------------------------------

def scope_options(fn):
    """``--at``, ``--from``/``--to`` and ``--window/--no-window``: when the question is asked
    and which clips it searches (the parameters ``at``, ``from_``, ``to``, ``auto_window``;
    :func:`scope_settings` reads them)."""
    return _apply(fn, [
        click.option("--at", "at", default=None, metavar="TIME",
                     help="When the question is asked ('DAY1 11:21', '2025-02-20 19:40'); "
                          "only earlier clips are used. Default: now."),
        click.option("--from", "from_", default=None, metavar="TIME",
                     help="Search only clips that end after this moment (same forms as --at)."),
        click.option("--to", "to", default=None, metavar="TIME",
                     help="Search only clips that end by this moment."),
        click.option("--window/--no-window", "auto_window", default=True, show_default=True,
                     help="Read a time window the question names ('yesterday evening', "
                          "'last night', 'DAY1 afternoon') and search inside it."),
    ])


def top_n_option(help: str):
    """``--top-n``: anchor clips per round (1–50; default ``None``, the command's own)."""
    return click.option("--top-n", type=click.IntRange(1, 50), default=None, help=help)


def retrieval_option(fn):
    """``--retrieval hybrid|keys``."""
    return click.option(
        "--retrieval", type=click.Choice(["hybrid", "keys"]), default="hybrid",
        show_default=True,
        help="hybrid: MERIT max-sim over the keys (--keys) fused by RRF with BM25 over "
             "captions, transcripts and keys (k and weights tuned per embedder: "
             "EmbeddingGemma k=10, max-sim 2:1; MiniLM k=60, 1:1); keys: max-sim only.")(fn)


def keys_option(fn):
    """``--keys TYPES`` (the parameter ``key_types``; :func:`parse_key_types` reads it)."""
    return click.option(
        "--keys", "key_types", default="event,dialogue,object,summary,caption",
        show_default=True, metavar="TYPES",
        help="Comma-separated vectors that vote in max-sim (MERIT keys and the caption).")(fn)


def fusion_options(fn):
    """``--fusion`` and ``--rrf-k``: how several queries' rankings are fused."""
    return _apply(fn, [
        click.option("--fusion", type=click.Choice(["rrf", "wrrf", "max", "sum", "mean"]),
                     default="rrf", show_default=True, help="How sub-query rankings are fused."),
        click.option("--rrf-k", type=click.IntRange(1, 1000), default=None,
                     help="K of reciprocal rank fusion (10, 60, 100 are usual) [the "
                          "embedder's: 10 for EmbeddingGemma, 60 for MiniLM]."),
    ])


def choices_option(help: str):
    """``--choices 'A|B|C|D'``: a multiple-choice question's options
    (:func:`parse_choices` reads them)."""
    return click.option("--choices", default=None, metavar="A|B|C|D", help=help)


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


def parse_choices(choices: str | None) -> list[str] | None:
    """``--choices``: the options between the ``|`` separators, stripped; None without."""
    return [c.strip() for c in choices.split("|")] if choices else None


def scope_settings(at: str | None, from_: str | None, to: str | None,
                   auto_window: bool) -> dict:
    """The :class:`edge.answer.AskOptions` fields that :func:`scope_options` set: ``at``
    (timeline seconds or None), ``window`` and ``auto_window``. Raises
    :class:`~edge.errors.TimeParseError` or ``click.BadParameter`` (see
    :func:`parse_window`)."""
    from edge.timeline import parse_moment

    return {"at": parse_moment(at) if at else None, "window": parse_window(from_, to),
            "auto_window": auto_window}


def retrieval_settings(retrieval: str, key_types: str, fusion: str,
                       rrf_k: int | None) -> dict:
    """The :class:`edge.answer.AskOptions` fields that ``--retrieval``, ``--keys``,
    ``--fusion`` and ``--rrf-k`` set (``rrf_k`` ``None``: the embedder's). Raises
    ``click.BadParameter`` for bad ``--keys``."""
    out = {"retrieval": retrieval, "key_types": parse_key_types(key_types), "fusion": fusion}
    return out if rrf_k is None else {**out, "rrf_k": rrf_k}
