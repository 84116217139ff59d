"""Ingestion: media files → clips → caption, transcript, keyframes, MERIT keys, vectors, and
(unless the profile says ``characters = false``) the people seen and heard in each clip.

Per source (:mod:`edge.ingest.source`): hash the file (re-ingesting the same bytes adds
nothing), probe it, transcribe its audio once (or a separate ``--audio`` file placed on the
video's timeline; :mod:`edge.ingest.perception`), decode its video once, and write each clip —
caption, transcript, keyframe paths, the four keys and their vectors — in one transaction
(:mod:`edge.ingest.memory_writer`). A source whose ingest was cut short is resumed clip by clip. A
broken file is reported and skipped; it never stops a folder. Wall time is measured per
stage (:mod:`edge.stages`) and stored as a ``runs`` row for cost accounting.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import apsw

from edge.errors import MODEL_ERRORS
from edge.ingest.media import MediaError, MediaInfo, check_audio_alignment, probe, shown
from edge.ingest.memory_writer import SourceResult, file_sha256
from edge.ingest.source import IngestOptions, IngestRun, StartClock, ingest_source
from edge.people import PeopleTier
from edge.stages import StageClock, stage_report
from edge.store import Memory, StoreError, write_error
from edge.timeline import start_note

__all__ = [
    "MEDIA_SUFFIXES", "IngestOptions", "IngestReport", "SourceResult", "file_sha256",
    "find_media", "ingest_paths",
]

MEDIA_SUFFIXES = {
    ".mp4", ".mov", ".m4v", ".mkv", ".avi", ".webm", ".mts", ".m2ts", ".ts", ".3gp", ".flv",
    ".wmv", ".mpg", ".mpeg", ".mp3", ".wav", ".m4a", ".aac", ".flac", ".ogg", ".opus",
}

Plan = list[tuple[Path, MediaInfo | None, str]]
"""Per input file: its path, its probe (``None`` when it failed) and why it failed."""


@dataclass
class IngestReport:
    """What one ingest run did. ``seconds``: its wall time; ``media_seconds``: footage in
    the clips added; ``usage``: the hub's call totals (``UsageMeter.summary``); ``stages``:
    per stage seconds, real-time factor, calls and tokens (:func:`edge.stages.stage_report`);
    ``run_id``: its row in the ``runs`` table."""

    results: list[SourceResult]
    seconds: float
    usage: dict
    media_seconds: float = 0.0
    stages: dict = field(default_factory=dict)
    run_id: int | None = None

    @property
    def clips_added(self) -> int:
        """Clips stored by this run, over all sources."""
        return sum(r.clips_added for r in self.results)

    def as_dict(self) -> dict:
        """The report as ``edge ingest --json`` prints it (seconds rounded to 10 ms)."""
        return {
            "clips_added": self.clips_added,
            "seconds": round(self.seconds, 2),
            "media_seconds": round(self.media_seconds, 3),
            "hours": round(self.media_seconds / 3600.0, 4),
            "rtf": round(self.seconds / self.media_seconds, 4) if self.media_seconds else None,
            "stages": self.stages,
            "sources": [_source_dict(r) for r in self.results],
            "skipped": [{"path": r.path, "status": r.status, "reason": r.message}
                        for r in self.results if r.status in ("skipped", "failed")],
            "usage": self.usage,
            "run_id": self.run_id,
        }


def _source_dict(r: SourceResult) -> dict:
    """One file of ``edge ingest --json``: its :class:`SourceResult`, with ``start_note``
    saying its start and where it came from (``None`` when it failed before that)."""
    note = None if r.start is None else start_note(r.start, r.start_from, r.placed_after)
    return {**r.__dict__, "start_note": note}


def find_media(paths: Iterable[Path]) -> list[Path]:
    """Files to ingest: explicit files as given, folders searched recursively for media
    suffixes (hidden files skipped), in sorted order, each once."""
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            out.extend(
                f for f in sorted(p.rglob("*"))
                if f.is_file() and f.suffix.lower() in MEDIA_SUFFIXES
                and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
        else:
            out.append(p)
    return list(dict.fromkeys(out))


def ingest_paths(
    memory: Memory,
    hub,
    paths: Iterable[Path],
    options: IngestOptions | None = None,
    *,
    on_progress: Callable[[str, float], None] | None = None,
    on_total: Callable[[float], None] | None = None,
    pyramid=None,
    deferred=None,
) -> IngestReport:
    """Ingest files and folders into ``memory`` using ``hub``'s roles.

    ``on_total(seconds)`` is called once with the footage length to process;
    ``on_progress(name, seconds)`` after each clip with the clip's length. Never raises for a
    bad input file: its :class:`SourceResult` says ``failed`` and why. Raises
    :class:`StoreError` when the memory cannot be written (disk full, read-only file or
    folder): what was stored before stays readable. With ``options.audio`` exactly one video
    must be given (:class:`MediaError` otherwise). Raises the model-setup errors of
    :data:`MODEL_ERRORS` (e.g. a captioner whose weights are not downloaded): clips stored
    before stay, and the same call resumes once the setup is fixed.

    Each stage's wall time is measured and the run is stored in the ``runs`` table
    (also when the run stops early), its id in :attr:`IngestReport.run_id`. With ``pyramid``
    (an :class:`edge.build.pyramid.Pyramid`) each clip also gets its PyraVid facts, clip node and
    links, and the global nodes are finalized at the end (charged to ``memory_llm``).
    With ``deferred`` (:class:`edge.ingest.memory_writer.Deferred`) only the real-time tier runs:
    no memory-LLM call, the LLM work is queued for :mod:`edge.build` (``pyramid`` unused).
    """
    options = options or IngestOptions()
    t0 = time.perf_counter()
    started_at = time.time()
    mark = hub.usage.mark()
    run = IngestRun(memory, hub, options, StageClock(), StartClock(options.start),
                    on_progress=on_progress, pyramid=None if deferred else pyramid,
                    deferred=deferred, people=PeopleTier.for_hub(hub))
    results: list[SourceResult] = []
    status = "failed"
    run_id = None
    try:
        plan = _plan(run, paths)
        if on_total:
            on_total(sum(i.duration for _, i, _ in plan if i is not None))
        for path, info, error in plan:
            results.append(_ingest_planned(run, path, info, error))
        if run.pyramid is not None:
            with run.stages.stage("memory_llm"):
                pyramid.finalize()
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        run_id = _record_run(run, results, status, started_at, time.perf_counter() - t0)
    usage = hub.usage.summary(mark)
    return IngestReport(results, time.perf_counter() - t0, usage,
                        media_seconds=run.media_seconds,
                        stages=stage_report(run.stages.seconds, run.media_seconds,
                                            usage["by_role"]),
                        run_id=run_id)


def _plan(run: IngestRun, paths: Iterable[Path]) -> Plan:
    """Probe every input (charged to ``decode``), and the ``--audio`` file into
    ``run.audio_info``; a file that fails to probe is kept with the reason."""
    plan: Plan = []
    with run.stages.stage("decode"):
        for path in find_media(paths):
            try:
                plan.append((path, probe(path), ""))
            except MediaError as e:
                plan.append((path, None, str(e)))
            except OSError as e:
                plan.append((path, None, f"{shown(path)}: {e.strerror or e}"))
        run.audio_info = _probe_separate_audio(run.options, plan)
    return plan


def _probe_separate_audio(options: IngestOptions, plan: Plan) -> MediaInfo | None:
    """Probe ``options.audio`` and check it fits the one video it belongs to."""
    if options.audio is None:
        return None
    if len(plan) != 1:
        raise MediaError(f"--audio {shown(options.audio)} belongs to one video, but "
                         f"{len(plan)} media files were given; ingest that video on its own")
    video = plan[0][1]
    if video is None:
        return None  # the video itself failed to probe; its result says why
    if not video.has_video:
        raise MediaError(f"--audio is for a video, but {shown(video.path)} has no video "
                         "stream; ingest the audio file directly instead")
    audio = probe(Path(options.audio))
    check_audio_alignment(video, audio, options.audio_offset)
    return audio


def _ingest_planned(run: IngestRun, path: Path, info: MediaInfo | None,
                    error: str) -> SourceResult:
    """One planned file: a failed probe or a bad file becomes a ``failed`` result; what
    makes every later file fail too (the memory, the models) is raised."""
    if info is None:
        return SourceResult(shown(path), "failed", message=error)
    try:
        return ingest_source(run, info)
    except MediaError as e:
        return SourceResult(shown(path), "failed", message=str(e))
    except StoreError:
        raise  # the memory itself is unusable: stop, nothing more can be stored
    except apsw.Error as e:
        raise write_error(run.memory.path, e) from e
    except MODEL_ERRORS:
        raise  # the models, not this file: every later file would fail the same way
    except Exception as e:  # one bad file never stops a folder; its stored clips stay
        return SourceResult(
            shown(path), "failed",
            message=f"stopped by {e.__class__.__name__}: {e}; clips stored so far are "
                    "kept and a re-run resumes this file")


def _record_run(run: IngestRun, results: list[SourceResult], status: str,
                started_at: float, seconds: float) -> int | None:
    """Store the run (also one that stopped early) in ``runs``; its id. A failure to store
    it is raised only when nothing else went wrong (otherwise the first error is news)."""
    try:
        return run.memory.add_run(
            command="ingest", started_at=started_at, seconds=seconds,
            media_seconds=run.media_seconds, clips_added=sum(r.clips_added for r in results),
            sources=len(results), status=status, stages=run.stages.seconds)
    except (apsw.Error, StoreError):
        if status == "done":  # nothing else went wrong: this failure is the news
            raise
        return None  # otherwise the first error (disk full, ...) is the one to report
