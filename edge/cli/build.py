"""``edge build``: the deferred LLM tier (:mod:`edge.build`) on demand — keys and the PyraVid
pyramid for the clips the real-time tier queued, with a progress bar and ETA, resumable and
Ctrl-C safe (the first Ctrl-C stops after the clip being built). ``edge ingest`` and
``edge ingest-captions`` call :func:`build_backlog` after their real-time tier unless
``--later``."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import click

from edge.cli import render
from edge.cli.options import State, json_option, memory_options, open_memory
from edge.cli.render.ingest import build_line


class StopAfterClip:
    """While active, the first SIGINT (Ctrl-C) only asks the build to stop after the clip
    in progress (``requested``); a second one stops it now: ``cancel`` is set, which makes
    the model call in progress raise :class:`~models.cancel.GenerationCancelled` (the clip
    is rolled back and stays queued, nothing is lost) and the build reports what it did. A
    third one interrupts at once (``KeyboardInterrupt``), for a step that cannot be
    cancelled."""

    def __init__(self) -> None:
        self.requested = False
        self.cancel = threading.Event()

    def _handle(self, _signum, _frame) -> None:
        if self.cancel.is_set():
            raise KeyboardInterrupt
        if self.requested:
            self.cancel.set()
            click.echo("\nStopping now: the clip being built stays queued.", err=True)
            return
        self.requested = True
        click.echo("\nStopping after the clip being built (Ctrl-C again to stop now).",
                   err=True)

    @contextmanager
    def active(self) -> Iterator[StopAfterClip]:
        """Install the handler (main thread only; elsewhere Ctrl-C keeps its default)."""
        try:
            previous = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread
            yield self
            return
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


def build_backlog(memory, hub, *, pyramid: bool = False, links: bool = True,
                  max_candidates: int = 6, global_every: int = 20,
                  limit: int | None = None, command: str = "build", reembed: bool = False):
    """Run :func:`edge.build.run.build` on ``memory`` with a progress bar (clips, with tqdm's
    ETA) and Ctrl-C stopping after the current clip, holding the memory's build lock; the
    model calls are stored under ``command``. With ``reembed`` (``edge build``), first
    re-embed a memory whose vectors are another embedder's than the profile's
    (:func:`edge.build.run.reembed`, its own progress bar in vectors; Ctrl-C stops after the
    batch in progress) and keep its report in the build report's ``reembed``. Returns the
    :class:`edge.build.run.BuildReport`. Raises :class:`~edge.errors.BuildBusyError` when
    another process builds the memory."""
    from edge.build.lock import build_lock
    from edge.build.pyramid import PyramidOptions
    from edge.build.run import build
    from models.cancel import cancel_scope

    bar = None
    mark = hub.usage.mark()

    def on_total(n: int) -> None:
        nonlocal bar
        if n:
            b = memory.backlog()  # its ETA is the whole queue's; this run builds n clips
            eta = b["eta_seconds"] * min(n, b["clips"]) / b["clips"] if b["eta_seconds"] \
                else None
            if eta:
                click.echo(f"building {n} clip(s); previous builds give ETA "
                           f"{render.span(eta)}", err=True)
            bar = render.progress_bar(n, "clips", "build")

    def on_step(step: str | None) -> None:  # the bar may sit at 100% during a global update
        if bar is not None:
            bar.set_description_str(f"build: {step}" if step else "build")

    stopper = StopAfterClip()
    try:
        # one builder per memory; a second Ctrl-C cancels the model call in progress
        with build_lock(memory.path), stopper.active(), cancel_scope(stopper.cancel):
            again = reembed_vectors(memory, hub, stopper) if reembed else None
            if again is not None and again.interrupted:
                from edge.build.run import BuildReport

                return BuildReport(interrupted=True, remaining=memory.backlog()["clips"],
                                   reembed=again)
            report = build(memory, hub, pyramid=pyramid, limit=limit, on_total=on_total,
                         on_clip=lambda _s: bar.update(1) if bar is not None else None,
                         stop=lambda: stopper.requested, on_step=on_step,
                         options=PyramidOptions(links=links, max_candidates=max_candidates,
                                                global_every=global_every))
            report.reembed = again
            return report
    finally:
        if bar is not None:
            bar.close()
        memory.record_calls(command, hub.usage.records[mark:])


def reembed_vectors(memory, hub, stopper: StopAfterClip):
    """:func:`edge.build.run.reembed` with a progress bar in vectors (tqdm's ETA) and the
    stopper's first Ctrl-C ending it after the batch in progress; ``None`` when the
    memory's vectors are already the profile's embedder's."""
    from edge.build.run import needs_reembed, reembed

    if not needs_reembed(memory, hub):
        return None
    bar = None

    def on_total(done: int, total: int) -> None:
        nonlocal bar
        space = memory.vector_space()
        click.echo(f"re-embedding the memory's {total:,} vectors ({space.embedder}'s) with "
                   f"the {hub.profile.name} profile's embedder; {done:,} done before", err=True)
        bar = render.progress_bar(total, "vectors", "re-embed")
        bar.update(done)

    try:
        return reembed(memory, hub, on_total=on_total,
                       on_batch=lambda n: bar.update(n) if bar is not None else None,
                       stop=lambda: stopper.requested)
    finally:
        if bar is not None:
            bar.close()


def _rebuild_people(memory, state: State):
    """The character memory's pass (:func:`edge.people.rebuild.rebuild_people`) when the
    profile runs the character tier; else ``None``."""
    from edge.people import characters_enabled
    from edge.people.rebuild import rebuild_people

    return rebuild_people(memory) if characters_enabled(state.hub()) else None


def people_line(r) -> str:
    """What the people pass changed, in one line."""
    parts = [f"{r.moved} appearance(s) re-assigned" if r.moved else "",
             f"{len(r.joined)} face and voice joined" if r.joined else "",
             f"{len(r.removed)} identit{'y' if len(r.removed) == 1 else 'ies'} merged away"
             if r.removed else "",
             f"names suggested for {len(r.suggested)} (see `edge people`)" if r.suggested
             else ""]
    return "people: " + "; ".join(p for p in parts if p) + f" ({r.seconds:.1f} s)"


@click.command("build", short_help="Build the queued LLM tier (keys, pyramid); resumable.")
@memory_options
@click.option("--pyramid", is_flag=True,
              help="Also queue the PyraVid pyramid of every clip that has none (backfills a "
                   "memory made with --no-pyramid), then build.")
@click.option("--links/--no-links", "links", default=True, show_default=True,
              help="Judge relational fact links (one more call per clip with candidates).")
@click.option("--max-candidates", type=click.IntRange(1, 30), default=6, show_default=True,
              help="Fact pairs judged per clip (relational links).")
@click.option("--global-every", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="Clips per update of a day's global node (K).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Build at most N clips (in clip order); the rest stay queued.")
@json_option("Print a JSON report.")
@click.pass_obj
def build_command(state: State, pyramid: bool, links: bool, max_candidates: int,
                  global_every: int, limit: int | None, as_json: bool) -> None:
    """Build the LLM tier (keys, pyramid) of the clips ingest queued; resumable. Then
    re-cluster the people (faces, voices) and suggest their names."""
    with open_memory(state, create=False) as memory:
        report = build_backlog(memory, state.hub(), pyramid=pyramid, links=links,
                               max_candidates=max_candidates, global_every=global_every,
                               limit=limit, reembed=True)
        backlog = memory.backlog()
        people = _rebuild_people(memory, state) if not report.interrupted else None
    if as_json:
        render.echo_json({**report.as_dict(), "backlog": backlog,
                          "people": people.as_dict() if people else None,
                          "memory": str(state.memory_path)})
    else:
        click.echo(build_line(report, backlog))
        if people is not None and (people.moved or people.removed or people.suggested):
            click.echo(people_line(people))
    if report.interrupted:
        raise SystemExit(130)
