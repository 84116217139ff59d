"""``edge people``: the people in your footage (the character memory, :mod:`edge.people`) —
list them, enrol one from photos or recordings, name, merge, forget (vectors, crops and
appearances: biometric data is erasable), and show where one was seen or heard.

Listing and showing only read (a memory that cannot be written is opened read-only);
``add``, ``name``, ``merge`` and ``forget`` write. What was typed that cannot be used (a
photo without a usable face or with several, silence, an unknown person) is one line and
exit code 2, with nothing stored.
"""

from __future__ import annotations

from pathlib import Path

import click

from edge import config
from edge.cli import render
from edge.cli.options import State, json_option, memory_options, open_memory
from edge.cli.render.people import enrol_line, people_lines, person_dict, show_lines
from edge.errors import InputError


def _frames(state: State) -> Path:
    return config.frames_dir(state.memory_path)


def _tier_on(state: State) -> bool:
    """Whether the profile runs the character tier (an unknown profile: said elsewhere)."""
    from edge.cli.options import load_manifest

    return load_manifest().profile(state.profile_name).characters


def _person(memory, ref: str, *, partial: bool = False):
    """The person ``ref`` names: an id (digits) or a name (any case). With ``partial`` (a
    command that only reads), a part of one name ("Obama" for "Barack Obama", whole words)
    when exactly one name holds it. :class:`InputError` when there is none, naming the
    people whose names hold it (a command that changes memory never guesses)."""
    ref = ref.strip()
    found = memory.person(int(ref)) if ref.isdigit() else memory.identity_by_name(ref)
    if found is not None:
        return found
    words = ref.lower().split()
    holding = [p for p in memory.persons() if p.name and words and _holds(p.name, words)]
    if partial and len(holding) == 1:
        return holding[0]
    hint = (f"; did you mean {', '.join(f'{p.name!r} (id {p.id})' for p in holding[:5])}?"
            if holding else "; `edge people` lists them")
    raise InputError(f"no person {ref!r} in {memory.path}{hint}")


def _holds(name: str, words: list[str]) -> bool:
    """Whether ``words`` (lowercased) appear in ``name`` in order, as whole words."""
    have = name.lower().split()
    return any(have[i:i + len(words)] == words for i in range(len(have)))


@click.group("people", invoke_without_command=True,
             short_help="The people in your footage: list, add, name, merge, forget.")
@memory_options
@json_option("Print the people as JSON.")
@click.pass_context
def people(ctx: click.Context, as_json: bool) -> None:
    """The people in your footage: list them, or add, name, merge, forget, show one."""
    if ctx.invoked_subcommand is not None:
        return
    state: State = ctx.obj
    with open_memory(state, create=False, reading=True) as memory:
        found = memory.persons()
    if as_json:
        render.echo_json([person_dict(p, _frames(state)) for p in found])
        return
    render.echo(people_lines(found, _frames(state), state.memory_path, _tier_on(state)))


@people.command("add", short_help="Enrol NAME from photos (a face each) or recordings.")
@memory_options
@click.argument("name")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.pass_obj
def add(state: State, name: str, files: tuple[Path, ...]) -> None:
    """Enrol NAME from photos (a face each) and recordings (a voice each)."""
    from edge.people.enrol import enrol, read_samples
    from edge.people.observe import ClipPeople
    from edge.people.online import Thresholds, save_crops

    if not name.strip() or name.strip().isdigit():
        raise InputError(f"{name!r} cannot be a name (empty, or a number: ids are numbers)")
    if not _tier_on(state):
        raise click.ClickException(f"the character tier is off in the {state.profile_name!r} "
                                   "profile (characters = false): no faces or voices are kept")
    from models.faces import FaceEmbedder

    hub = state.hub()
    # photos get the detector upsampled once (faces down to ~40 px at 640 px: a phone
    # photo's face), unlike footage, where the tier's cheaper detector serves (ModelHub.faces)
    samples = read_samples(files, FaceEmbedder, lambda: hub.voices)
    with open_memory(state, create=True) as memory:
        try:
            report, crops = enrol(memory, name, samples, Thresholds.measured())
        except ValueError as e:
            raise InputError(str(e)) from None
        save_crops(_frames(state), ClipPeople(crops=crops))
    click.echo(enrol_line(report, state.memory_path))


@people.command("name", short_help="Give person ID the name NAME.")
@memory_options
@click.argument("ref", metavar="ID")
@click.argument("name")
@click.pass_obj
def name_command(state: State, ref: str, name: str) -> None:
    """Give person ID the name NAME."""
    if not name.strip() or name.strip().isdigit():
        raise InputError(f"{name!r} cannot be a name (empty, or a number: ids are numbers)")
    with open_memory(state, create=False) as memory:
        p = _person(memory, ref)
        try:
            memory.name_identity(p.id, name)
        except ValueError as e:
            raise InputError(str(e)) from None
    click.echo(f"person {p.id} is now {name.strip()}")


@people.command("merge", short_help="Make two identities one person.")
@memory_options
@click.argument("keep", metavar="ID")
@click.argument("other", metavar="ID")
@click.pass_obj
def merge(state: State, keep: str, other: str) -> None:
    """Make two identities one person: the second's appearances join the first (which keeps
    its name; an unnamed first takes the second's)."""
    with open_memory(state, create=False) as memory:
        a, b = _person(memory, keep), _person(memory, other)
        if a.id == b.id:
            raise InputError(f"{keep} and {other} are the same person (id {a.id})")
        moved = memory.merge_identities(a.id, b.id)
        merged = memory.person(a.id)
    dropped = f"; the name {b.name} was dropped" if a.name and b.name and a.name != b.name \
        else ""
    click.echo(f"merged person {b.id} into {merged.label} (id {a.id}): {moved} appearance(s) "
               f"moved{dropped}")


@people.command("forget", short_help="Erase a person: vectors, crops, appearances.")
@memory_options
@click.argument("ref", metavar="ID|NAME")
@click.pass_obj
def forget(state: State, ref: str) -> None:
    """Erase a person: face and voice vectors, crops, appearances and the identity."""
    with open_memory(state, create=False) as memory:
        p = _person(memory, ref)
        crops = memory.forget_identity(p.id)
    deleted = 0
    for rel in crops:
        path = _frames(state) / rel
        try:
            path.unlink()
            deleted += 1
        except FileNotFoundError:
            pass
        except OSError as e:
            raise click.ClickException(f"forgot {p.label}'s vectors and appearances, but "
                                       f"could not delete the crop {path}: {e}") from None
    click.echo(f"forgot {p.label} (id {p.id}): {p.faces} face and {p.voices} voice "
               f"appearance(s) with their vectors, {deleted} crop file(s)")


@people.command("show", short_help="Where a person was seen or heard, clip by clip.")
@memory_options
@click.argument("ref", metavar="ID|NAME")
@json_option("Print the person and the appearances as JSON.")
@click.pass_obj
def show(state: State, ref: str, as_json: bool) -> None:
    """Where a person was seen (face) or heard (voice): source, clip, seconds into it."""
    with open_memory(state, create=False, reading=True) as memory:
        p = _person(memory, ref, partial=True)
        found = memory.appearances(p.id)
    if as_json:
        render.echo_json({**person_dict(p, _frames(state)),
                          "appearances": [a.as_dict() for a in found]})
        return
    render.echo(show_lines(p, found))
