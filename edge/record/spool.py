"""The recorder's spool: raw clip files on disk beside the memory, their names, publishing,
repair of half-written clips, and the retention plan (which raw clips the storage policy
deletes).

Layout, for a memory ``day.db``::

    day.db.spool/clip-20261129T192702.123Z.mkv        a finished clip (pending or ingested)
    day.db.spool/clip-20261129T192702.123Z.mkv.part   the clip being written
    day.db.spool/failed/                              clips the ingest could not read
    day.db.spool/record.log                           the recorder's log
    day.db.spool/watched.json                         progress per watched file (--watch)
    day.db.record.json                                the status file (:mod:`edge.record.status`)

A clip's name is its absolute start time (UTC, milliseconds); the same time, to the
microsecond, is in the Matroska ``creation_time`` tag, which is what ingest puts it on the
timeline by. Matroska is used because a file cut short (power loss, SIGKILL) keeps every
cluster written before the cut, so a ``.part`` file can be repaired by remuxing what still
decodes; an MP4 without its ``moov`` atom cannot. A clip becomes visible under its final name
only by an atomic rename after it was closed and fsynced, so a finished name always means a
complete file.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from edge.record.disk import is_disk_full

log = logging.getLogger("edge.record")

CLIP_PREFIX = "clip-"
CLIP_SUFFIX = ".mkv"
PART_SUFFIX = ".part"
MIN_REPAIR_SECONDS = 1.0  # a half-written clip with less decodable footage is discarded


def spool_dir(memory_path: Path) -> Path:
    """The spool folder of a memory: ``<memory>.spool`` beside its database file (like its
    keyframes). Only computes the path; the recorder creates the folder."""
    memory_path = Path(memory_path)
    return memory_path.with_name(memory_path.name + ".spool")


def clip_name(start: float) -> str:
    """File name of a clip starting at Unix time ``start`` (UTC, millisecond resolution)."""
    dt = datetime.fromtimestamp(round(start, 3), UTC)
    return f"{CLIP_PREFIX}{dt:%Y%m%dT%H%M%S}.{dt.microsecond // 1000:03d}Z{CLIP_SUFFIX}"


def clip_start(path: Path | str) -> float | None:
    """The start time (Unix seconds) in a clip's name, or ``None`` for another name."""
    name = Path(path).name.removesuffix(PART_SUFFIX)
    if not (name.startswith(CLIP_PREFIX) and name.endswith(CLIP_SUFFIX)):
        return None
    stamp = name[len(CLIP_PREFIX):-len(CLIP_SUFFIX)].split("-")[0]  # "-1": a name clash
    try:
        return datetime.strptime(stamp, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def iso_utc(t: float) -> str:
    """Unix seconds as the ISO 8601 ``creation_time`` tag FFmpeg reads back (µs)."""
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class ClipFile:
    """A finished raw clip in the spool: ``start`` Unix seconds, ``size`` bytes."""

    path: Path
    start: float
    size: int


def finished_clips(spool: Path) -> list[ClipFile]:
    """Finished clips in the spool, oldest first (partial ``.part`` files excluded)."""
    out = []
    if not spool.is_dir():
        return out
    for p in spool.iterdir():
        start = clip_start(p)
        if start is None or p.name.endswith(PART_SUFFIX):
            continue
        try:
            out.append(ClipFile(p, start, p.stat().st_size))
        except FileNotFoundError:  # deleted by retention while we listed
            continue
    return sorted(out, key=lambda c: (c.start, c.path.name))


def partial_clips(spool: Path) -> list[Path]:
    """Clips that were being written when the recorder stopped without closing them."""
    if not spool.is_dir():
        return []
    return sorted(p for p in spool.iterdir()
                  if p.name.endswith(PART_SUFFIX) and clip_start(p) is not None)


def fsync_path(path: Path, *, directory: bool = False) -> None:
    """Flush a file (or a folder's entries) to disk, so a power cut cannot undo it. Raises
    :class:`OSError`."""
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(part: Path) -> Path:
    """Make a closed ``.part`` clip visible under its final name (fsync, atomic rename,
    fsync of the folder); returns the final path. Raises :class:`OSError`."""
    final = part.with_name(part.name.removesuffix(PART_SUFFIX))
    fsync_path(part)
    os.replace(part, final)
    fsync_path(part.parent, directory=True)
    return final


def repair(part: Path) -> Path | None:
    """Remux what still decodes of a half-written clip into a finished clip.

    Reads packets until the first error (the cut), keeps them from the first video keyframe,
    and writes them to a new Matroska file with the same start time. Returns the finished
    clip, or ``None`` after deleting the ``.part`` when less than
    :data:`MIN_REPAIR_SECONDS` of footage decodes. Logs what it did either way. Raises the
    write error when the disk is full (:func:`edge.record.disk.is_disk_full`): the ``.part``
    is kept for a later start.
    """
    import av

    fixed = part.with_name(part.name + ".fix")  # still a partial name until published
    try:
        kept = _remux(part, fixed, clip_start(part))
    except (av.error.FFmpegError, ValueError, OSError) as e:
        if is_disk_full(e):  # no room for the repaired copy: keep the .part for later
            fixed.unlink(missing_ok=True)
            raise
        log.info("%s: not readable (%s: %s)", part.name, e.__class__.__name__, e)
        kept = 0.0
    if kept < MIN_REPAIR_SECONDS:
        fixed.unlink(missing_ok=True)
        part.unlink(missing_ok=True)
        log.warning("discarded half-written clip %s: only %.1f s of it decodes (the recorder "
                    "was stopped while writing it)", part.name, kept)
        return None
    final = part.with_name(part.name.removesuffix(PART_SUFFIX))
    fsync_path(fixed)
    os.replace(fixed, final)
    part.unlink(missing_ok=True)
    fsync_path(part.parent, directory=True)
    log.warning("repaired half-written clip %s: kept the %.1f s that decode (the recorder was "
                "stopped while writing it)", final.name, kept)
    return final


def _remux(part: Path, fixed: Path, start: float | None) -> float:
    """Copy the packets of ``part`` that still read, from its first video keyframe, into the
    new Matroska file ``fixed`` with the start time ``start``; returns the seconds kept.
    Raises ``av`` errors and :class:`ValueError` for a file that cannot be read at all, and
    the write error of a full disk."""
    import av

    kept = 0.0
    with av.open(str(part)) as src:
        streams = [s for s in (*src.streams.video[:1], *src.streams.audio[:1])]
        if not streams:
            raise av.error.InvalidDataError(0, "no stream")
        video = src.streams.video[0] if src.streams.video else None
        with av.open(str(fixed), "w", format="matroska") as out:
            if start is not None:
                out.metadata["creation_time"] = iso_utc(start)
            mapping = {s.index: out.add_stream_from_template(s) for s in streams}
            started = video is None
            try:
                for pkt in src.demux(streams):
                    if pkt.dts is None and pkt.pts is None:
                        continue
                    if not started:
                        if pkt.stream is video and pkt.is_keyframe:
                            started = True
                        else:
                            continue
                    t = pkt.pts if pkt.pts is not None else pkt.dts
                    kept = max(kept, float(t * pkt.time_base))
                    pkt.stream = mapping[pkt.stream.index]
                    out.mux(pkt)
            except (av.error.FFmpegError, ValueError) as e:
                if is_disk_full(e):
                    raise
                log.info("%s: reading stopped at %.1f s (%s)", part.name, kept,
                         e.__class__.__name__)
    return kept


@dataclass(frozen=True)
class Deletion:
    """A raw clip the storage policy removes, and why (for the log)."""

    clip: ClipFile
    reason: str


def plan_retention(clips: list[ClipFile], ingested: set[str], *, now: float,
                   budget: int | None, keep_raw: float | None, free: int | None = None,
                   min_free: int = 0) -> list[Deletion]:
    """Which raw clips to delete, oldest first; a pure function of the spool's state.

    Only clips already in memory (their names in ``ingested``) are ever deleted — the memory
    (captions, keys, keyframes) is always kept, and a clip still waiting for ingestion is
    never lost to the policy. Three reasons, checked in this order: older than ``keep_raw``
    seconds; all raw clips together over ``budget`` bytes; free disk ``free`` below
    ``min_free`` bytes. ``clips``: :func:`finished_clips`.
    """
    out: list[Deletion] = []
    gone: set[Path] = set()
    deletable = [c for c in clips if c.path.name in ingested]
    if keep_raw is not None:
        for c in deletable:
            if now - c.start > keep_raw:
                out.append(Deletion(c, f"older than --keep-raw ({_age(now - c.start)} > "
                                       f"{_age(keep_raw)})"))
                gone.add(c.path)
    if budget is not None:
        used = sum(c.size for c in clips if c.path not in gone)
        _free_up(deletable, gone, out, used - budget,
                 lambda over: f"raw clips use {_size(budget + over)}, over --raw-budget "
                              f"{_size(budget)}")
    if free is not None and free < min_free:
        _free_up(deletable, gone, out, min_free - free,
                 lambda short: f"free disk {_size(min_free - short)} is below --min-free "
                               f"{_size(min_free)}")
    return out



def _free_up(deletable: list[ClipFile], gone: set[Path], out: list[Deletion], excess: float,
             reason: Callable[[float], str]) -> None:
    """Plan deleting the oldest ``deletable`` clips not yet planned (``gone``) until
    ``excess`` bytes are freed; ``reason(excess left)`` words each deletion."""
    for c in deletable:
        if excess <= 0:
            break
        if c.path in gone:
            continue
        out.append(Deletion(c, reason(excess)))
        gone.add(c.path)
        excess -= c.size

def _size(n: float) -> str:
    from humanfriendly import format_size

    return format_size(n)


def _age(seconds: float) -> str:
    from humanfriendly import format_timespan

    return format_timespan(seconds, max_units=2)
