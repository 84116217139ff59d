"""``edge models list|recommended|pull|add|verify|user`` (the roles of a profile, the weights
behind them, model files of the user's own) and ``edge doctor`` (every role, sqlite-vec, video
decoding and the memory file)."""

from __future__ import annotations

from pathlib import Path

import click

from edge import config
from edge.cli import render
from edge.cli.options import State, json_option, load_manifest, memory_options
from edge.cli.render.models import (
    added_lines,
    check_line,
    profile_line,
    pulled_lines,
    recommended_lines,
    role_lines,
    user_model_lines,
)
from models.user import BACKENDS


def recommended_rows() -> list[dict]:
    """The models worth pulling, with their role, size, RAM, license, whether present."""
    from models.pull import recommended

    return recommended(load_manifest(), config.models_dir())


@click.group(short_help="Model roles, profiles and weights.")
def models() -> None:
    """Model roles, profiles and weights."""


@models.command("list", short_help="Each role's model, backend, weights, and whether it loads.")
@memory_options
@click.option("--no-load", is_flag=True, help="Only resolve weights; do not load the models.")
@json_option("Print the rows as JSON.")
@click.pass_obj
def models_list(state: State, no_load: bool, as_json: bool) -> None:
    """Show each role of the profile: model, backend, where the weights are, whether it loads."""
    from edge.cli.doctor import check_roles

    rows = check_roles(state.hub(), load=not no_load)
    if as_json:
        render.echo_json(rows, ensure_ascii=True)
        return
    render.echo(role_lines(state.profile_name, rows))
    render.echo(recommended_lines(recommended_rows(), config.models_dir()))
    render.echo(user_model_lines(user_rows(full=False), _title()))


def _title() -> str:
    return f"your model files ({config.user_profiles_file()})"


def user_rows(*, full: bool, name: str | None = None) -> list[dict]:
    """The user's registered model files (or model ``name``, any model), each with its state:
    size checked, or with ``full`` the sha256 too (:func:`models.user.artifact_row`)."""
    from models.user import artifact_row, user_artifacts

    specs = ([load_manifest().model(name)] if name
             else user_artifacts(config.user_profiles_file()))
    return [artifact_row(spec, config.models_dir(), full=full) for spec in specs]


@models.command("recommended",
                short_help="Models to pull: role, size, RAM, license, present or not.")
@json_option("Print the rows as JSON.")
def models_recommended(as_json: bool) -> None:
    """Models to pull from a model hub: role, size, RAM needed, license, whether present."""
    rows = recommended_rows()
    if as_json:
        render.echo_json(rows, ensure_ascii=True)
        return
    render.echo(recommended_lines(rows, config.models_dir()))


@models.command("pull", short_help="Download a model from the model hub (needs a network).")
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
    render.echo(pulled_lines(name, files))


@models.command("add", short_help="Register a model file you made (GGUF or ONNX).")
@click.argument("name")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--backend", type=click.Choice(BACKENDS), required=True,
              help="What loads the file: a GGUF LLM or embedder, or an ONNX embedder.")
@click.option("--from", "derived_from", metavar="MODEL", default=None,
              help="The model the file was made from (its context size or tokenizer is used).")
@click.option("--quant", metavar="TYPE", default=None, help="Its quantization, e.g. Q8_0.")
@click.option("--n-ctx", type=click.IntRange(min=64), default=None, help="Context tokens.")
@click.option("--dim", type=click.IntRange(min=1), default=None, help="Embedding width.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="An embedder's truncation length.")
@click.option("--description", default="", help="What it is, for `edge models user`.")
@click.option("--force", is_flag=True, help="Replace a model of yours with this name.")
def models_add(name: str, path: Path, backend: str, derived_from: str | None,
               quant: str | None, n_ctx: int | None, dim: int | None, max_tokens: int | None,
               description: str, force: bool) -> None:
    """Register the model file PATH you made (a quantized GGUF, a converted embedder) as
    NAME in your profiles file, with its size and sha256; a profile can then name it."""
    from models.user import register_artifact

    user_file = config.user_profiles_file()
    spec = register_artifact(user_file, name, path, backend=backend, description=description,
                             derived_from=derived_from, quant_type=quant, force=force,
                             options={"n_ctx": n_ctx, "dim": dim, "max_tokens": max_tokens})
    render.echo(added_lines(spec, user_file))


@models.command("verify", short_help="Re-hash your registered model files against their sha256.")
@click.argument("name", required=False)
@json_option("Print the rows as JSON.")
def models_verify(name: str | None, as_json: bool) -> None:
    """Hash your registered model files (or model NAME) again and compare them with the
    sha256 recorded when they were registered; exit code 1 when one changed or is missing."""
    rows = user_rows(full=True, name=name)
    if as_json:
        render.echo_json(rows, ensure_ascii=True)
    else:
        render.echo(user_model_lines(rows, f"model {name}" if name else _title()) or
                    [f"no registered model files in {config.user_profiles_file()}"])
    if not all(r["ok"] for r in rows):
        raise SystemExit(1)


@models.command("user", short_help="Your registered model files: size, quantization, state.")
@json_option("Print the rows as JSON.")
def models_user(as_json: bool) -> None:
    """Your registered model files: backend, size, quantization, what each was made from,
    and whether the file is still the size it was registered with."""
    rows = user_rows(full=False)
    if as_json:
        render.echo_json(rows, ensure_ascii=True)
        return
    render.echo(user_model_lines(rows, _title()) or
                [f"no registered model files in {config.user_profiles_file()}; "
                 "add one with `edge models add NAME PATH --backend ...`"])


@click.command(short_help="Check every model role, sqlite-vec, video and memory.")
@memory_options
@click.pass_obj
def doctor(state: State) -> None:
    """Check every role of the profile, sqlite-vec, video decoding and the memory file."""
    from edge.cli.doctor import run_checks

    ok = True
    hub = state.hub()
    click.echo(profile_line(hub.profile))
    for check in run_checks(hub, state.memory_path):
        ok &= check.ok
        click.echo(check_line(check))
    if not ok:
        raise SystemExit(1)
