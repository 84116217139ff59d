"""The ``edge`` command line (click): one group, a command per job, ``--json`` for scripts.

- this module: the ``main`` group (``--memory``, ``--profile``, ``--version``) and the one
  place where the project's user errors become one line and exit code 1 (2 for what was
  typed that cannot be used as it is);
- :mod:`~edge.cli.options`: the invocation's :class:`~edge.cli.options.State` and the option
  decorators several commands share;
- a module per command group: :mod:`~edge.cli.ingest` (ingest, ingest-captions),
  :mod:`~edge.cli.build` (build: the deferred LLM tier), ask (ask, chat), search, stats,
  models (models, doctor), record (record, status), backup, bench, report, people
  (people and its add, name, merge, forget, show);
- :mod:`~edge.cli.doctor`: the health checks behind ``edge doctor`` and ``edge models list``;
- :mod:`~edge.cli.newmemory`: a memory an ingest created and stored no clip in is removed;
- :mod:`~edge.cli.render`: everything the commands print, a module per command group.
- ``__main__``: ``python -m edge.cli``.
"""

from __future__ import annotations

from pathlib import Path

import click

from edge import config
from edge.cli.options import State
from edge.errors import USER_ERRORS, InputError


class _InputException(click.ClickException):
    """One line and exit code 2: text the user typed that cannot be used."""

    exit_code = 2


class _Group(click.Group):
    """Turns the project's expected errors into one clear line and exit code 1 (2 for what
    the user typed that cannot be used as it is: :class:`~edge.errors.InputError`, and
    click's usage errors, said in one line too)."""

    def invoke(self, ctx: click.Context):
        """Run the command; a user error, or an apsw error (said as a memory write error),
        becomes a ``click.ClickException``; a usage error (a bad option value, a missing
        argument) one line naming the command's ``--help``."""
        import apsw

        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise  # a command group without its command: its help, as click shows it
        except click.UsageError as e:
            hint = f"; see `{e.ctx.command_path} --help`" if e.ctx is not None else ""
            raise _InputException(e.format_message().rstrip(".") + hint) from None
        except InputError as e:
            raise _InputException(str(e)) from None
        except USER_ERRORS as e:
            raise click.ClickException(str(e)) from None
        except apsw.Error as e:
            from edge.store import write_error

            state = ctx.find_object(State)
            raise click.ClickException(str(write_error(state.memory_path, e))) from None


@click.group(cls=_Group)
@click.option("--memory", "memory", type=click.Path(dir_okay=False, path_type=Path),
              default=None, help="Memory file (default: $EDGE_MEMORY or the user data dir).")
@click.option("--profile", default=None,
              help="Model profile: small (default) or tiny (devices under 2 GB); $EDGE_PROFILE.")
@click.version_option(package_name="edge-memory")
@click.pass_context
def main(ctx: click.Context, memory: Path | None, profile: str | None) -> None:
    """edge: on-device episodic memory of what you saw and heard.

    \b
      edge ingest VIDEO_OR_FOLDER...     turn footage into memory
      edge ask "where did I leave the keys?"
      edge doctor                        check every model role
    """
    state = State(memory or config.default_memory_path(), profile or config.default_profile())
    ctx.obj = state
    ctx.call_on_close(state.close)


def _add_commands() -> None:
    """Register every command module's commands on ``main``."""
    from edge.cli import (
        ask,
        backup,
        bench,
        build,
        ingest,
        models,
        people,
        record,
        report,
        search,
        stats,
    )

    for command in (ingest.ingest, ingest.ingest_captions, build.build_command, ask.ask,
                    ask.chat, search.search, stats.stats, models.models, models.doctor,
                    record.record, record.status, report.report, backup.backup, bench.bench,
                    people.people):
        main.add_command(command)


_add_commands()

__all__ = ["main"]
