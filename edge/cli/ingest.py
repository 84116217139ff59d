"""``edge ingest`` (footage) and ``edge ingest-captions`` (a caption file): both build memory
the same way around the work itself — a progress bar, the model calls stored with the
memory, Ctrl-C keeping every clip stored so far, no empty memory left by a run that stored
nothing (:func:`ingest_run`) — and build the LLM tier after, unless another process is
building it (:func:`build_now`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from edge.cli import render
from edge.cli.newmemory import NewMemory
from edge.cli.options import State, json_option, memory_options, open_memory, pyramid_options
from edge.cli.render.ingest import (
    INTERRUPTED,
    build_line,
    captions_line,
    deferred_line,
    ingest_lines,
    is_failure_line,
)


class IngestRun:
    """One ingest in progress: the open memory, the hub, the progress bar and, once the
    work is done, the memory's ``stats`` and the ``usage`` of this run's model calls;
    ``removed``: it stored nothing into the memory it created, which is gone again;
    ``deferred``: another process holds the build lock, the LLM tier waits for it."""

    def __init__(self, memory, hub, unit: str, desc: str) -> None:
        self.memory = memory
        self.hub = hub
        self.unit, self.desc = unit, desc
        self.mark = hub.usage.mark()
        self.bar = None
        self.run_id: int | None = None  # the ``runs`` row the calls belong to, when known
        self.stats: dict = {}
        self.usage: dict = {}
        self.removed = False
        self.deferred = False

    def on_total(self, total: float) -> None:
        """Start the progress bar once the total is known; none when there is nothing to
        count (every file failed before its length was known: its line says why)."""
        if total > 0:
            self.bar = render.progress_bar(total, self.unit, self.desc)

    def advance(self, amount: float, name: str | None = None) -> None:
        """Move the bar by ``amount`` (and show ``name``, the file being ingested)."""
        if self.bar is None:
            return
        if name is not None:
            self.bar.set_description(name[:30])
        self.bar.update(amount)


@contextmanager
def ingest_run(state: State, command: str, unit: str, desc: str) -> Iterator[IngestRun]:
    """Open (or create) the memory and the hub for ``command``; on the way out close the
    bar and store the model calls under ``command``, whatever happened. Ctrl-C says how
    to resume and exits 130. A memory this run created and stored no clip in (a broken
    file, a model that cannot run, Ctrl-C before the first clip) is removed again, with
    its files and folders (:class:`~edge.cli.newmemory.NewMemory`; ``run.removed``)."""
    hub = state.hub()  # an unknown profile is said before a new memory is made
    fresh = NewMemory(state.memory_path)
    try:
        with open_memory(state, create=True) as memory:
            try:
                run = IngestRun(memory, hub, unit, desc)
                try:
                    yield run
                except KeyboardInterrupt:
                    click.echo(INTERRUPTED, err=True)
                    raise SystemExit(130) from None
                finally:
                    if run.bar is not None:
                        run.bar.close()
                    memory.record_calls(command, run.hub.usage.records[run.mark:],
                                        run_id=run.run_id)
                run.stats = memory.stats()
                run.usage = run.hub.usage.summary(run.mark)
            finally:
                fresh.note(memory)
    finally:
        removed = fresh.remove_if_empty()
    run.removed = removed


def build_now(run: IngestRun, state: State, command: str, *, links: bool,
              max_candidates: int, global_every: int) -> str:
    """After an ingest's real-time tier: build the LLM tier now (:func:`edge.cli.build.
    build_backlog`, model calls stored under ``command``); the line saying what it built.
    Ctrl-C (the second one, or the first once the clip in progress is stored) keeps every
    clip; ``edge build`` resumes. When another process holds the memory's build lock (an
    ``edge build``, another ingest, a recorder) the LLM tier is left queued for it or
    ``edge build``: the line says so (``run.deferred``), and that is no error."""
    from edge.cli.build import build_backlog
    from edge.errors import BuildBusyError

    with open_memory(state, create=False) as memory:
        if not memory.backlog()["clips"]:
            return ""
        try:
            report = build_backlog(memory, run.hub, links=links,
                                   max_candidates=max_candidates, global_every=global_every,
                                   command=command)
        except BuildBusyError:
            run.deferred = True
            run.stats = memory.stats()
            return deferred_line(run.stats["backlog"])
        run.stats = memory.stats()
    if report.interrupted:
        click.echo(build_line(report, run.stats["backlog"]), err=True)
        raise SystemExit(130)
    return build_line(report, run.stats["backlog"])


def later_line(stats: dict) -> str:
    """After ``--later``: what waits for ``edge build`` (empty when nothing does)."""
    return render.backlog_line(stats["backlog"]) if stats["backlog"]["clips"] else ""


def llm_tier(run: IngestRun, state: State, command: str, later: bool, *, links: bool,
             max_candidates: int, global_every: int) -> str:
    """After the real-time tier: the line about the LLM tier — what waits (``later``), or
    what :func:`build_now` built or left to another builder; empty when the run created
    no memory (``run.removed``)."""
    if run.removed:
        return ""
    if later:
        return later_line(run.stats)
    return build_now(run, state, command, links=links, max_candidates=max_candidates,
                     global_every=global_every)


def check_paths(paths: tuple[Path, ...], audio: Path | None, audio_offset: float) -> None:
    """Refuse what ``edge ingest`` cannot do, before a memory is created: a missing path
    (:class:`~edge.errors.InputError`), ``--audio`` with anything but one video,
    ``--audio-offset`` without ``--audio``, folders without a media file (each
    ``click.ClickException``)."""
    from edge.errors import InputError

    for p in paths:
        if not p.exists():  # a usage error, as click says a missing FILE (exit code 2)
            raise InputError(f"{p}: no such file or folder")
    if audio is not None and (len(paths) != 1 or paths[0].is_dir()):
        raise click.ClickException("--audio belongs to one video: give exactly one video file "
                                   "with it (not a folder or several files)")
    if audio_offset and audio is None:
        raise click.ClickException("--audio-offset only applies together with --audio FILE")
    from edge.ingest.run import MEDIA_SUFFIXES, find_media

    if not find_media(paths):  # only folders were given, and they hold no media file
        raise click.ClickException(
            f"no video or audio files in {', '.join(str(p) for p in paths)} (looked for "
            f"{' '.join(sorted(MEDIA_SUFFIXES))}, in subfolders too); check the folder")


@click.command(short_help="Turn videos (files or folders) into episodic memory.")
@memory_options
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--start", default=None, metavar="TIME",
              help="Start time for files whose metadata has none, e.g. '2025-02-20 19:30' or "
                   "'DAY1 11:00' (later files follow back to back). Default: file mtime.")
@click.option("--audio", "audio", default=None, metavar="FILE",
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A separate audio recording of the (one) video given: its transcript is "
                   "used instead of the video's own sound.")
@click.option("--audio-offset", type=float, default=0.0, show_default=True, metavar="SECONDS",
              help="With --audio: how many seconds after the video's start the audio begins.")
@json_option("Print a JSON report.")
@pyramid_options
@click.option("--later", is_flag=True,
              help="Only the real-time tier (caption, transcript, caption vector, FTS): the "
                   "keys and pyramid wait in the memory's queue for `edge build`.")
@click.pass_obj
def ingest(state: State, paths: tuple[Path, ...], start: str | None, audio: Path | None,
           audio_offset: float, as_json: bool, pyramid: bool, links: bool,
           max_candidates: int, global_every: int, later: bool) -> None:
    """Turn videos (files or folders) into episodic memory: 30 s clips, captions, keys."""
    from edge.ingest.memory_writer import Deferred
    from edge.ingest.run import IngestOptions, ingest_paths
    from edge.timeline import parse_moment

    options = IngestOptions(start=parse_moment(start) if start else None, audio=audio,
                            audio_offset=audio_offset)
    check_paths(paths, audio, audio_offset)
    with ingest_run(state, "ingest", "s", "ingest") as run:
        report = ingest_paths(
            run.memory, run.hub, paths, options, on_total=run.on_total,
            on_progress=lambda name, seconds: run.advance(seconds, name),
            deferred=Deferred(pyramid=pyramid))
        run.run_id = report.run_id
    failed = any(r.status == "failed" for r in report.results)
    built = llm_tier(run, state, "ingest", later, links=links,
                     max_candidates=max_candidates, global_every=global_every)
    stats = None if run.removed else run.stats
    if as_json:
        render.echo_json({**report.as_dict(), "memory": str(state.memory_path),
                          "memory_stats": stats})
        if run.deferred:
            click.echo(built, err=True)
    else:
        for line in [*ingest_lines(report, state.memory_path, stats),
                     *([built] if built else [])]:
            click.echo(line, err=is_failure_line(line))  # failures on stderr
    if failed:
        raise SystemExit(1)


@click.command("ingest-captions", short_help="Build memory from an EgoLife/MERIT caption file.")
@memory_options
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--extract-keys", is_flag=True,
              help="Extract the four keys with the memory LLM instead of using the file's.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Only the first N records (a later run without it adds the rest).")
@json_option("Print a JSON report.")
@pyramid_options
@click.option("--later/--now", "later", default=True, show_default=True,
              help="--later: only the real-time tier (captions, the file's keys, vectors, "
                   "FTS: enough for `edge ask`); the pyramid (and keys the file lacks) wait "
                   "for `edge build`. --now: build them too.")
@click.pass_obj
def ingest_captions(state: State, file: Path, extract_keys: bool, limit: int | None,
                    as_json: bool, pyramid: bool, links: bool, max_candidates: int,
                    global_every: int, later: bool) -> None:
    """Build memory from a caption file (EgoLife/MERIT JSON: captions given, no video)."""
    from edge.ingest.captions import ingest_caption_file, read_caption_file
    from edge.ingest.memory_writer import Deferred

    records = read_caption_file(file)  # a bad file fails here, before a memory is created
    t0 = time.perf_counter()
    with ingest_run(state, "ingest-captions", "clips", "captions") as run:
        result = ingest_caption_file(
            run.memory, run.hub, file, records=records, extract=extract_keys, limit=limit,
            on_total=run.on_total, on_progress=run.advance, deferred=Deferred(pyramid=pyramid))
    realtime_seconds = round(time.perf_counter() - t0, 2)
    built = llm_tier(run, state, "ingest-captions", later, links=links,
                     max_candidates=max_candidates, global_every=global_every)
    seconds = round(time.perf_counter() - t0, 2)
    if as_json:
        render.echo_json({"source": result.__dict__, "seconds": seconds,
                          "realtime_seconds": realtime_seconds, "usage": run.usage,
                          "memory": str(state.memory_path), "memory_stats": run.stats})
        if run.deferred:
            click.echo(built, err=True)
        return
    click.echo(captions_line(result, file, seconds, state.memory_path, run.stats))
    if built:
        click.echo(built)
