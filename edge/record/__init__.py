"""Headless recording (``edge record``): capture → spool → ingestion worker → memory.

Three threads share one process: the capture thread cuts the source into 30 s clip files in
the spool, the ingestion worker turns each finished clip into memory through the normal
ingest path (:func:`edge.ingest.run.ingest_paths`), and the main thread applies the storage
policy, writes the status file and waits for SIGTERM/SIGINT. Capture never waits for a
model: the finished clips in the spool *are* the queue, so a slow model delays memory but
never drops footage. The queue is bounded by ``max_pending``: a file or folder source pauses
at the bound (back-pressure); a live source cannot pause, keeps recording to disk and the
status says it is over the bound.

Memory is built through the same path as ``edge ingest``, the PyraVid pyramid included when
``RecordOptions.pyramid`` asks for it (the CLI's default, as for ``edge ingest``).

Restarts and power loss: clips are published by an atomic rename after fsync, so on start
every finished clip not yet in memory is pending and ingested (oldest first); ingest hashes
each file, so a clip is never stored twice, and a clip whose ingest was cut short is resumed.
A file source is known by its content hash and resumed at the keyframe where the last run's
clips end (a stopped run closes its last clip at the next keyframe for that). The ``.part``
file that was being written is remuxed up to where it still decodes, or discarded when too
little of it does, or when its file is cut again (all logged). A source whose audio stays
silent for ``silent_after`` is warned about. A disk that fills stops the recording with one
line (:class:`RecordError`); the same command resumes once space is freed. Nothing here
imports Textual.

Modules, in reading order:

- :mod:`edge.record.spool`: the spool's layout, clip names, publishing, finished and
  half-written clips, repair, the retention plan.
- :mod:`edge.record.session`: what to record (:class:`SourceSpec`), how
  (:class:`RecordOptions`), and :class:`~edge.record.session.Session`, the recorder as its
  threads see it (so they never import the recorder).
- :mod:`edge.record.capture`: opening a source, and the capture thread (reconnects, a file
  resumed, the watched folder).
- :mod:`edge.record.ledger`: progress per file (:class:`WatchLedger`), so a restart resumes;
  written ahead of the spool, so a restart never cuts a span twice.
- :mod:`edge.record.disk`: a full disk recognised in any layer's error, and the one line the
  recording stops with.
- :mod:`edge.record.segmenter`: one opened source → 30 s clip files (:class:`Segmenter`).
- :mod:`edge.record.audio`: each clip's audio level and the silence warning
  (:class:`SilenceWatch`).
- :mod:`edge.record.worker`: the ingestion worker thread, its queue and back-pressure; the
  real-time tier per clip, the deferred LLM tier (:mod:`edge.build`) when no clip waits.
- :mod:`edge.record.status`: the status file (write, :func:`read_status`,
  :func:`recorder_status`).
- :mod:`edge.record.recorder`: :class:`Recorder` (lock, preflight, recovery, the run
  loop).

Everything a caller needs is importable from :mod:`edge.record` itself.
"""

from edge.errors import CaptureError, RecordError
from edge.record.audio import SILENCE_DBFS, SilenceWatch, audio_level
from edge.record.capture import Capture, open_source
from edge.record.ledger import WatchLedger, file_key
from edge.record.recorder import Recorder
from edge.record.segmenter import RAW_VIDEO_CODECS, Segmenter, fits_matroska, pick_encoder
from edge.record.session import RecordOptions, Session, SourceSpec
from edge.record.spool import (
    CLIP_PREFIX,
    CLIP_SUFFIX,
    MIN_REPAIR_SECONDS,
    PART_SUFFIX,
    ClipFile,
    Deletion,
    clip_name,
    clip_start,
    finished_clips,
    fsync_path,
    iso_utc,
    partial_clips,
    plan_retention,
    publish,
    repair,
    spool_dir,
)
from edge.record.status import read_status, recorder_status, status_path, write_status
from edge.record.worker import MODEL_RETRY_SECONDS, IngestWorker

__all__ = [
    "CLIP_PREFIX", "CLIP_SUFFIX", "MIN_REPAIR_SECONDS", "MODEL_RETRY_SECONDS", "PART_SUFFIX",
    "RAW_VIDEO_CODECS", "SILENCE_DBFS", "Capture", "CaptureError", "ClipFile", "Deletion",
    "IngestWorker", "RecordError", "RecordOptions", "Recorder", "Segmenter", "Session",
    "SilenceWatch", "SourceSpec", "WatchLedger", "audio_level", "clip_name", "clip_start",
    "file_key", "finished_clips", "fits_matroska", "fsync_path", "iso_utc",
    "open_source", "partial_clips", "pick_encoder", "plan_retention", "publish",
    "read_status", "recorder_status", "repair", "spool_dir", "status_path", "write_status",
]
