"""``edge models list|recommended|pull`` (the roles of a profile and the weights behind
them) and ``edge doctor`` (every role, sqlite-vec, video decoding and the memory file)."""

from __future__ import annotations

import click

from edge import config
from edge.cli import render
from edge.cli.options import State, json_option, load_manifest, memory_options


def recommended_rows() -> list[dict]:
    """The models worth pulling, with their role, size, RAM, license, whether present."""
    from models.pull import recommended

    return recommended(load_manifest(), config.models_dir())


@click.group()
def models() -> None:
    """Model roles, profiles and weights."""


@models.command("list")
@memory_options
@click.option("--no-load", is_flag=True, help="Only resolve weights; do not load the models.")
@json_option("Print the rows as JSON.")
@click.pass_obj
def models_list(state: State, no_load: bool, as_json: bool) -> None:
    """Show each role of the profile: model, backend, where the weights are, whether it loads."""
    from edge.doctor import check_roles

    rows = check_roles(state.hub(), load=not no_load)
    if as_json:
        render.echo_json(rows, ensure_ascii=True)
        return
    render.echo(render.role_lines(state.profile_name, rows))
    render.echo(render.recommended_lines(recommended_rows(), config.models_dir()))


@models.command("recommended")
@json_option("Print the rows as JSON.")
def models_recommended(as_json: bool) -> None:
    """Models to pull from a model hub: role, size, RAM needed, license, whether present."""
    rows = recommended_rows()
    if as_json:
        render.echo_json(rows, ensure_ascii=True)
        return
    render.echo(render.recommended_lines(rows, config.models_dir()))


@models.command("pull")
@click.argument("name")
def models_pull(name: str) -> None:
    """Download model NAME (GGUF + mmproj) from the model hub into the models directory,
    with progress, resume and checksum verification. Needs a network connection."""
    from models.pull import PullError, pull

    spec = load_manifest().model(name)
    try:
        files = pull(spec, config.models_dir())
    except PullError as e:
        raise click.ClickException(str(e)) from None
    render.echo(render.pulled_lines(name, files))


@click.command()
@memory_options
@click.pass_obj
def doctor(state: State) -> None:
    """Check every role of the profile, sqlite-vec, video decoding and the memory file."""
    from edge.doctor import run_checks

    ok = True
    hub = state.hub()
    click.echo(render.profile_line(hub.profile))
    for check in run_checks(hub, state.memory_path):
        ok &= check.ok
        click.echo(render.check_line(check))
    if not ok:
        raise SystemExit(1)
