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

            self._hub = ModelHub(load_manifest().profile(self.profile_name),
                                 config.models_dir())
        return self._hub

    def close(self) -> None:
        """Close the hub, if one was created."""
        if self._hub is not None:
            self._hub.close()


def load_manifest():
    """The shipped model manifest merged with the user's own profiles file."""
    from models.registry import load_manifest_with_user

    return load_manifest_with_user(config.user_profiles_file())


def open_memory(state: State, create: bool):
    """The :class:`edge.store.Memory` at the invocation's memory path."""
    from edge.store import Memory

    return Memory(state.memory_path, create=create)


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
                     help="Model profile (tiny, small)."),
    ])


def json_option(help: str):
    """``--json`` (the parameter ``as_json``): print machine-readable output."""
    return click.option("--json", "as_json", is_flag=True, help=help)


# ---- ingest, ingest-captions, record----------------------------------------------------

def pyramid_options(fn):
    """PyraVid pyramid switches shared by ``ingest``, ``ingest-captions`` and ``record``."""
    return _apply(fn, [
        click.option("--pyramid/--no-pyramid", "pyramid", default=True, show_default=True,
                     help="Build the PyraVid pyramid (facts, clip and global nodes, links): "
                          "one memory-LLM call per clip for keys+facts+summary. --no-pyramid: "
                          "keys only (cheaper)."),
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


def loop_option(help: str = "merit: per round a neighbor-filtering call and a sufficiency "
                            "call, then one answer call; single: one call per round answers "
                            "and decides (cheapest)."):
    """``--loop merit|single``: which answer loop runs."""
    return click.option("--loop", type=click.Choice(["merit", "single"]), default="merit",
                        show_default=True, help=help)


def filter_option(fn):
    """``--filter/--no-filter`` (the parameter ``neighbor_filter``)."""
    return click.option("--filter/--no-filter", "neighbor_filter", default=False,
                        show_default=True,
                        help="--loop single only: add MERIT neighbor filtering (one more call "
                             "a round).")(fn)


def loop_settings(rounds: int, loop: str, neighbor_filter: bool) -> dict:
    """The keyword arguments of :func:`edge.answer.ask` that ``--rounds``, ``--loop`` and
    ``--filter`` set."""
    return {"max_rounds": rounds, "loop": loop, "neighbor_filter": neighbor_filter}
