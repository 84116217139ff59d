"""The recorder's status file, ``<memory>.record.json``: what it says (:func:`snapshot`),
writing it atomically, reading it back, and :func:`recorder_status` for ``edge status``.

The recorder rewrites the file every ``poll`` seconds while it runs and once more when it
stops, so a reader (``edge status``, a dashboard) never talks to the recorder process itself.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from edge.record.session import Session
from edge.record.spool import finished_clips

RUNNING_WITHIN_SECONDS = 60
"""A recorder whose status file is older than this is not counted as running."""


def status_path(memory_path: Path) -> Path:
    """The recorder's status file beside the memory: ``<memory>.record.json`` (read by
    ``edge status``)."""
    memory_path = Path(memory_path)
    return memory_path.with_name(memory_path.name + ".record.json")


def snapshot(rec: Session) -> dict:
    """The status of a running recorder, as written to the status file (see
    :meth:`edge.record.Recorder.status` for the keys)."""
    worker, capture, options = rec.worker, rec.capture, rec.options
    clips = finished_clips(rec.spool)
    with worker.lock:
        pending = [c for c in clips if c.path.name not in worker.ingested]
    seg = capture.segmenter
    head = seg.head if seg is not None else None
    live = rec.source.live and rec.state in ("recording", "backpressure")
    lag = None
    if live:
        lag = capture.source_now() - (worker.ingested_until or rec.started_at)
    elif head is not None:
        lag = head - (worker.ingested_until or head)
    try:
        free = rec.free_bytes()
    except OSError:
        free = None
    over = len(pending) >= options.max_pending
    return {
        "state": rec.state,
        "pid": os.getpid(),
        "memory": str(rec.memory_path),
        "spool": str(rec.spool),
        "source": rec.source.describe(),
        "started_at": rec.started_at,
        "current_clip": seg.current.name if seg is not None and seg.current else None,
        "clips_recorded": capture.recorded,
        "clips_ingested": len(worker.ingested),
        "ingesting": worker.ingesting,
        "queue": len(pending),
        "queue_capacity": options.max_pending,
        "backpressure": over,
        "failed_clips": worker.failed,
        "lag_seconds": None if lag is None else round(max(0.0, lag), 1),
        "ingested_until": worker.ingested_until,
        "disk": {"raw_bytes": sum(c.size for c in clips), "raw_clips": len(clips),
                 "raw_budget": options.raw_budget, "keep_raw": options.keep_raw,
                 "free_bytes": free, "min_free": options.min_free,
                 "deleted_clips": rec.deleted},
        "audio": rec.silence.status(),
        "last_deletion": rec.last_deletion,
        "last_error": rec.last_error,
    }


def write_status(path: Path, status: dict) -> None:
    """Write ``status`` (with ``updated_at``, Unix seconds, added) to the status file
    atomically: temporary file, fsync, rename; a reader sees the old or the new status,
    never half of one. Raises :class:`OSError` when the file cannot be written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    data = json.dumps({**status, "updated_at": time.time()}, indent=2, ensure_ascii=False)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_status(path: Path) -> dict | None:
    """Read the recorder's status file at ``path`` (:func:`status_path`): the last status
    the recorder wrote, as a dict, or ``None`` when it never ran for this memory (no file).

    This is the status-file reader of the recorder; it says nothing about whether the
    recorder still runs (:func:`recorder_status` does). Raises :class:`ValueError`
    (``json.JSONDecodeError``) on a file that is not JSON.
    """
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def recorder_status(memory_path: Path) -> dict | None:
    """The last status of the recorder of ``memory_path``, with ``running`` (its process is
    alive and wrote the status within the last minute) added; ``None`` when it never ran."""
    s = read_status(status_path(memory_path))
    if s is None:
        return None
    alive = False
    try:
        os.kill(int(s.get("pid", 0)), 0)
        alive = s.get("pid", 0) > 0
    except (ProcessLookupError, PermissionError, ValueError):
        alive = False
    s["running"] = bool(alive and s.get("state") not in ("stopped", "failed")
                        and time.time() - s.get("updated_at", 0) < RUNNING_WITHIN_SECONDS)
    return s
