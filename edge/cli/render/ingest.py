"""What ``edge ingest``, ``edge ingest-captions`` and ``edge build`` print: the lines of an
ingest run, a caption file and a build (its backlog line: :func:`edge.cli.render.backlog_line`)."""

from __future__ import annotations

from pathlib import Path

INTERRUPTED = ("\nInterrupted. Every clip stored so far is kept; run the same command "
               "again to resume where it stopped.")
"""Printed (to stderr) when Ctrl-C stops ``ingest`` or ``ingest-captions``."""


def build_line(report, backlog: dict) -> str:
    """``edge build`` (and the LLM tier of ingest): what was re-embedded, what was built,
    what remains."""
    per = report.as_dict()["seconds_per_clip"]
    again = getattr(report, "reembed", None)
    head = ""
    if again is not None:
        head = (f"re-embedded {again.embedded:,} vectors with {again.embedder} in "
                f"{again.seconds:.1f} s; " + (
                    "the memory is now searched with it. " if again.switched else
                    f"{again.done:,} of {again.total:,} done: `edge build` resumes. "))
        if again.interrupted:
            return head.rstrip() + f" {backlog['clips']} clip(s) wait to be built."
    if not (report.built or report.backfilled or report.interrupted or backlog["clips"]):
        return head + "Nothing to build: every clip of the memory is built."
    line = (f"built {report.built} clip(s) in {report.seconds:.1f} s"
            + (f" ({per:.1f} s a clip)" if per is not None else "")
            + (f"; {report.backfilled} clip(s) queued for the pyramid"
               if report.backfilled else ""))
    if report.interrupted:
        line += f". Stopped: {backlog['clips']} clip(s) remain; `edge build` resumes"
    elif backlog["clips"]:
        line += f". {backlog['clips']} clip(s) remain; `edge build` continues"
    return head + line + "."


def deferred_line(backlog: dict) -> str:
    """After an ingest's real-time tier, when another process holds the memory's build
    lock: the LLM tier is left to it or to ``edge build``; the clips stored are searchable
    already."""
    return (f"LLM tier deferred: another process (edge build, an ingest or edge record) is "
            f"building this memory's LLM tier now; {backlog['clips']} clip(s) wait for it or "
            "for `edge build` (the clips stored are searchable already).")


def is_failure_line(line: str) -> bool:
    """Whether an :func:`ingest_lines` line reports a failure (a file marked ``!`` or the
    closing count of failed files): ``edge ingest`` prints those on stderr."""
    return line.startswith(" ! ") or line.endswith("see the lines marked '!'.")


def ingest_lines(report, memory_path: Path, stats: dict | None) -> list[str]:
    """``edge ingest``: a line per file (and one with its start on the timeline and where
    that came from), the cost per stage, then the totals (:func:`is_failure_line` tells the
    lines about failed files). ``stats`` ``None``: the run stored nothing and created no
    memory."""
    from edge.timeline import start_note

    lines = []
    for r in report.results:
        mark = {"ingested": "+", "resumed": "+", "skipped": "=", "failed": "!"}[r.status]
        line = f" {mark} {r.status:8} {Path(r.path).name}"
        if r.status in ("ingested", "resumed"):
            line += f"  {r.clips_added} clips, {r.duration:.0f} s"
        if r.message:
            line += f"  ({r.message})"
        lines.append(line)
        if r.start is not None:
            lines.append(f"     {Path(r.path).name}: "
                         f"{start_note(r.start, r.start_from, r.placed_after)}")
        lines += [f"     note: {w}" for w in r.warnings]
    if report.media_seconds > 0:
        lines.append("stage        seconds    RTF  calls  tokens in/out")
        for name, st in report.stages.items():
            lines.append(f"  {name:10} {st['seconds']:8.1f} {st['rtf']:6.3f} {st['calls']:6} "
                         f"{st['tokens_in']:>7}/{st['tokens_out']}")
    u = report.usage["llm"]
    memory = (f"No memory was created at {memory_path}: nothing was stored." if stats is None
              else f"Memory: {memory_path} ({stats['clips']} clips, {stats['hours']:.2f} h).")
    lines.append(f"{report.clips_added} clips added in {report.seconds:.1f} s; "
                 f"{u['calls']} LLM calls, {u['tokens_in']} tokens in / {u['tokens_out']} out. "
                 f"{memory}")
    failed = [r for r in report.results if r.status == "failed"]
    if failed:
        lines.append(f"{len(failed)} file(s) could not be ingested; see the lines marked '!'.")
    return lines


def captions_line(result, file: Path, seconds: float, memory_path: Path, stats: dict) -> str:
    """``edge ingest-captions``: what happened to the caption file, in one line."""
    return (f"{result.status}: {file.name}, {result.clips_added} clips added"
            + (f" ({result.message})" if result.message else "")
            + f" in {seconds:.1f} s. Memory: {memory_path} "
            f"({stats['clips']} clips, days {', '.join(stats['days'])}).")
