"""What the recorder's threads share: what to record (:class:`SourceSpec`), how
(:class:`RecordOptions`), and :class:`Session` — the :class:`~edge.record.Recorder` as its
capture thread, its ingestion worker and its status file see it. Those modules type their
``rec`` with this protocol, so they import this module, never the recorder that owns them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from edge.build.pyramid import PyramidOptions
    from edge.record.audio import SilenceWatch
    from edge.record.segmenter import Segmenter


@dataclass(frozen=True)
class SourceSpec:
    """What to record. ``kind``: ``camera`` (index or device), ``stream`` (rtsp/http URL),
    ``file`` (a local file, paced at ``speed``× real time when ``realtime``) or ``watch`` (a
    folder a camera writes files into)."""

    kind: str
    target: str
    realtime: bool = False
    speed: float = 1.0

    @property
    def live(self) -> bool:
        """A live source cannot be paused: back-pressure never blocks its capture."""
        return self.kind in ("camera", "stream") or (self.kind == "file" and self.realtime)

    @property
    def can_pause(self) -> bool:
        """A source whose footage waits while capture pauses — a file (replayed in real time
        too) or a watched folder's files: below the disk floor it pauses instead of
        dropping footage."""
        return self.kind in ("file", "watch")

    def describe(self) -> str:
        """The source in words, for the log and the status file (``file x.mp4 (replayed in
        real time ×6)``)."""
        extra = ""
        if self.kind == "file" and self.realtime:
            extra = " (replayed in real time" + (f" ×{self.speed:g}" if self.speed != 1 else "")
            extra += ")"
        return f"{self.kind} {self.target}{extra}"


@dataclass
class RecordOptions:
    """How to record. Sizes in bytes, durations in seconds; ``None`` means no limit.

    ``clip_seconds``: the length of a clip (cut at the next keyframe after it).
    ``raw_budget``/``keep_raw``: the storage policy for raw clips (memory is always kept).
    ``min_free``: refuse to start below this much free disk; while running, a file or
    folder pauses below it, a camera or stream stops writing clips.
    ``max_pending``: the bound of the ingestion queue (finished clips not yet in memory).
    ``reencode``: encode the video instead of stream copying it.
    ``settle``: seconds a watched file must stay unchanged before it is read.
    ``poll``: seconds between status writes, policy checks and folder scans.
    ``pyramid``: build the PyraVid pyramid (facts, clip and global nodes, links) as ``edge
    ingest --pyramid`` does; ``None``: keys only (``--no-pyramid``).
    ``silent_after``: warn when the source's audio stays silent (below
    :data:`edge.record.audio.SILENCE_DBFS`) this long; ``None``: never.
    """

    clip_seconds: float = 30.0
    raw_budget: int | None = None
    keep_raw: float | None = None
    min_free: int = 1_000_000_000
    max_pending: int = 120
    reencode: bool = False
    settle: float = 5.0
    poll: float = 1.0
    pyramid: PyramidOptions | None = None
    silent_after: float | None = 180.0


class WorkerView(Protocol):
    """What capture and the status file read of the ingestion worker
    (:class:`~edge.record.worker.IngestWorker`)."""

    wake: threading.Event
    lock: threading.Lock
    ingested: set[str]
    ingested_until: float | None
    ingesting: str | None
    failed: int

    def wait_for_room(self) -> None: ...


class CaptureView(Protocol):
    """What the status file reads of the capture thread (:class:`~edge.record.capture.Capture`)."""

    segmenter: Segmenter | None
    recorded: int

    def source_now(self) -> float: ...


class Session(Protocol):
    """One recording session as its threads share it (:class:`~edge.record.Recorder` is
    the one implementation): the memory and spool, the source and options, the events that
    stop it, its ``state``, ``last_error`` and storage-policy counters, the audio watch,
    and the worker and capture threads; ``halt(reason)`` stops it for an error the user
    must fix (a full disk), said in one line when it ends."""

    memory_path: Path
    source: SourceSpec
    options: RecordOptions
    hub_factory: Callable[[], Any]
    spool: Path
    stop: threading.Event
    capture_done: threading.Event
    started_at: float
    state: str
    last_error: str | None
    last_deletion: str | None
    deleted: int
    silence: SilenceWatch
    worker: WorkerView
    capture: CaptureView

    def free_bytes(self) -> int: ...

    def halt(self, reason: str) -> None: ...
