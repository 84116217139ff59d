"""``edge record`` (a camera, stream, file or folder into memory, unattended) and
``edge status`` (how the recorder is doing)."""

from __future__ import annotations

import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

import click

from edge.cli import render
from edge.cli.options import (
    State,
    json_option,
    memory_options,
    open_memory,
    pyramid_options,
)
from edge.cli.render.status import FORCED_STOP, status_lines


def parse_size(value: str | None, name: str) -> int | None:
    """A size option (``500MB``, ``2GB``) in bytes; None for ``none``/``off``/``0``."""
    from humanfriendly import InvalidSize, parse_size

    got = _parse(value, name, parse_size, InvalidSize, ("none", "off", "0"),
                 "a size; write e.g. 500MB, 2GB or 1.5GiB")
    return None if got is None else int(got)


def parse_duration(value: str | None, name: str) -> float | None:
    """A duration option (``90m``, ``7d``) in seconds; None for ``none``/``off``/``forever``."""
    from humanfriendly import InvalidTimespan, parse_timespan

    got = _parse(value, name, parse_timespan, InvalidTimespan, ("none", "off", "forever"),
                 "a duration; write e.g. 90m, 12h or 7d")
    return None if got is None else float(got)


def _parse(value: str | None, name: str, parse, invalid: type[Exception],
           off: tuple[str, ...], expected: str) -> float | None:
    """``parse(value)`` (a humanfriendly parser); None for the ``off`` words; a click error
    saying what was ``expected`` when the parser rejects it."""
    if value is None or value.lower() in off:
        return None
    try:
        return parse(value)
    except invalid:
        raise click.BadParameter(f"{value!r} is not {expected}", param_hint=name) from None


def source_spec(camera: str | None, url: str | None, watch: Path | None, realtime: bool,
                speed: float):
    """The one source ``--camera``, ``--url`` or ``--watch`` names, as a
    :class:`edge.record.SourceSpec`. Raises ``click.UsageError`` for none or several sources
    and for ``--realtime`` without ``--url FILE``, ``click.BadParameter`` for a missing
    folder or file."""
    from edge.record import SourceSpec

    given = [x for x in (camera, url, watch) if x is not None]
    if len(given) != 1:
        raise click.UsageError("give exactly one source: --camera INDEX, --url URL|FILE or "
                               "--watch DIR")
    if camera is not None:
        spec = SourceSpec("camera", str(camera))
    elif watch is not None:
        if not watch.is_dir():
            raise click.BadParameter(f"{watch} is not a folder", param_hint="--watch")
        spec = SourceSpec("watch", str(watch))
    elif "://" in url:
        spec = SourceSpec("stream", url)
    else:
        if not Path(url).is_file():
            raise click.BadParameter(f"{url}: no such file (a stream needs a scheme such as "
                                     "rtsp:// or http://)", param_hint="--url")
        spec = SourceSpec("file", url, realtime=realtime, speed=speed)
    if realtime and spec.kind != "file":
        raise click.UsageError("--realtime applies to --url FILE only")
    return spec


class LogFile(RotatingFileHandler):
    """The recorder's log file (rotated at 5 MB). A write that fails (a full disk) is said
    once on stderr, where the log goes on, instead of a traceback for every line."""

    failed = False

    def handleError(self, record) -> None:  # noqa: N802 (logging's name)
        """Say the first failure in one line on stderr; ignore the rest."""
        if not self.failed:
            self.failed = True
            why = sys.exc_info()[1]
            sys.stderr.write(f"cannot write the log file {self.baseFilename}: {why}; the log "
                             "goes on on stderr only\n")


def record_logging(spool: Path) -> None:
    """The recorder's log: to stderr and to ``<spool>/record.log`` (rotated at 5 MB;
    :class:`LogFile`)."""
    import logging

    log = logging.getLogger("edge.record")
    log.setLevel(logging.INFO)
    log.propagate = False
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S")
    for h in list(log.handlers):
        log.removeHandler(h)
    err = logging.StreamHandler(sys.stderr)
    err.setFormatter(fmt)
    log.addHandler(err)
    spool.mkdir(parents=True, exist_ok=True)
    fh = LogFile(spool / "record.log", maxBytes=5_000_000, backupCount=3)
    fh.setFormatter(fmt)
    log.addHandler(fh)


@click.command(short_help="Record a camera, stream, file or folder into memory.")
@memory_options
@click.option("--camera", default=None, metavar="INDEX",
              help="Record a webcam: its index (0 = /dev/video0) or device name.")
@click.option("--url", default=None, metavar="URL|FILE",
              help="Record a network stream (rtsp://…, http://…) or replay a file.")
@click.option("--watch", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR", help="Record the files a camera writes into DIR.")
@click.option("--realtime", is_flag=True,
              help="With --url FILE: replay the file at real speed, as a live source.")
@click.option("--speed", type=click.FloatRange(min=0.1, max=100), default=1.0,
              show_default=True, help="With --realtime: replay this many times faster "
                                      "(for tests and demos).")
@click.option("--raw-budget", default=None, metavar="SIZE",
              help="Disk budget for raw clips, e.g. 2GB; the oldest clips already in memory "
                   "are deleted above it. Default: no budget.")
@click.option("--keep-raw", default=None, metavar="DURATION",
              help="Delete raw clips older than this once in memory, e.g. 7d or 12h. "
                   "Default: keep.")
@click.option("--min-free", default="1GB", show_default=True, metavar="SIZE",
              help="Refuse to start below this much free disk; while running, a file or "
                   "folder pauses below it, a camera or stream stops writing clips.")
@click.option("--max-pending", type=click.IntRange(min=1), default=120, show_default=True,
              help="Bound of the ingestion queue (finished clips not yet in memory).")
@click.option("--clip-seconds", type=click.FloatRange(min=2), default=30.0, show_default=True,
              help="Length of a clip file (cut at the next keyframe when stream copying).")
@click.option("--reencode", is_flag=True,
              help="Encode the video (H.264) instead of stream copying it.")
@click.option("--settle", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="With --watch: seconds a file must stay unchanged before it is read.")
@click.option("--silent-after", default="3m", show_default=True, metavar="DURATION",
              help="Warn (log and `edge status`) when the source's audio stays below "
                   "-60 dBFS this long, e.g. 3m; 'off' never warns.")
@pyramid_options
@click.pass_obj
def record(state: State, camera: str | None, url: str | None, watch: Path | None,
           realtime: bool, speed: float, raw_budget: str | None, keep_raw: str | None,
           min_free: str, max_pending: int, clip_seconds: float, reencode: bool,
           settle: float, silent_after: str, pyramid: bool, links: bool,
           max_candidates: int, global_every: int) -> None:
    """Record a camera, stream, file or folder into memory, unattended, until stopped.

    \b
    Capture writes 30 s clip files into <memory>.spool/ first; an ingestion worker turns
    each finished clip into memory, so a slow model never drops footage. Restarting
    resumes the clips not yet in memory, and a file where the last run stopped. Memory is
    built as by `edge ingest` (the pyramid too, unless --no-pyramid). SIGTERM/SIGINT close
    the current clip and stop after the clip being ingested. `edge status` shows how it
    is going.
    """
    from edge.build.pyramid import PyramidOptions
    from edge.record import Recorder, RecordOptions, spool_dir

    spec = source_spec(camera, url, watch, realtime, speed)
    options = RecordOptions(
        clip_seconds=clip_seconds, raw_budget=parse_size(raw_budget, "--raw-budget"),
        keep_raw=parse_duration(keep_raw, "--keep-raw"),
        min_free=parse_size(min_free, "--min-free") or 0, max_pending=max_pending,
        reencode=reencode, settle=settle,
        silent_after=parse_duration(silent_after, "--silent-after"),
        pyramid=PyramidOptions(links=links, max_candidates=max_candidates,
                               global_every=global_every) if pyramid else None)
    record_logging(spool_dir(state.memory_path))
    recorder = Recorder(state.memory_path, spec, options, hub_factory=state.hub)
    try:
        code = recorder.run()  # a RecordError is one line and exit 1, like every user error
    except KeyboardInterrupt:
        recorder.mark_stopped()
        click.echo(FORCED_STOP, err=True)
        raise SystemExit(130) from None
    raise SystemExit(code)


@click.command(short_help="The recorder's state: source, queue, lag, disk, errors.")
@memory_options
@json_option("Print the status as JSON.")
@click.pass_obj
def status(state: State, as_json: bool) -> None:
    """Is the recorder running? Its source, queue, lag, disk use and last error."""
    from edge.record import recorder_status

    s = recorder_status(state.memory_path)
    stats = None
    if state.memory_path.exists():
        with open_memory(state, create=False, reading=True) as memory:
            stats = memory.stats()
    if as_json:
        render.echo_json({"recorder": s, "memory": str(state.memory_path),
                          "memory_stats": stats})
        return
    render.echo(status_lines(s, state.memory_path, stats))
