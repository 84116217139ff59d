"""Everything the commands print: each function turns a result into the lines a user reads
(``echo`` prints them), so the commands keep only parsing and policy.
"""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Iterable
from pathlib import Path

import click

EXCERPT = 160
"""Characters of a moment's caption shown under it by ``edge ask``."""

WIDTH = 100
"""Width the excerpts of ``edge ask`` are wrapped to (with a 5-space indent)."""

INTERRUPTED = ("\nInterrupted. Every clip stored so far is kept; run the same command "
               "again to resume where it stopped.")
"""Printed (to stderr) when Ctrl-C stops ``ingest`` or ``ingest-captions``."""

FORCED_STOP = ("Forced stop: finished clips are kept; the clip being ingested and the "
               "rest of the queue are ingested on the next start.")
"""Printed (to stderr) when a second Ctrl-C stops ``edge record`` at once."""


def echo(lines: Iterable[str]) -> None:
    """Print each line to stdout."""
    for line in lines:
        click.echo(line)


def echo_json(data, *, ensure_ascii: bool = False) -> None:
    """Print ``data`` as indented JSON."""
    click.echo(json.dumps(data, indent=2, ensure_ascii=ensure_ascii))


def progress_bar(total: float, unit: str, desc: str):
    """A tqdm bar on stderr counting ``total`` ``unit`` (seconds of footage, clips)."""
    from tqdm import tqdm

    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} [{elapsed}<{remaining}]")


def ago(t: float | None) -> str:
    """``t`` (Unix seconds) as a whole-second age, e.g. ``14 minutes and 20 seconds ago``;
    ``-`` when unknown."""
    if not t:
        return "-"
    from humanfriendly import format_timespan

    return f"{format_timespan(round(max(0.0, time.time() - t)), max_units=2)} ago"


def span(seconds: float) -> str:
    """A duration in words, at most two units: ``2 minutes and 5 seconds``."""
    from humanfriendly import format_timespan

    return format_timespan(round(max(0.0, seconds)), max_units=2)


# ---- ingest and build ---------------------------------------------------------------------

def backlog_line(b: dict) -> str:
    """The deferred LLM tier's backlog (:meth:`edge.store.Memory.backlog`) in one line."""
    if not b["clips"]:
        return "backlog  none: every clip is built"
    eta = (f"ETA {span(b['eta_seconds'])}" if b["eta_seconds"] is not None
           else "ETA unknown until a clip is built")
    return (f"backlog  {b['clips']} clip(s), {b['hours']:.2f} h of footage wait for the LLM "
            f"tier ({b['keys']} keys, {b['pyramid']} pyramid); {eta}; run `edge build`")


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


def is_failure_line(line: str) -> bool:
    """Whether an :func:`ingest_lines` line reports a failure (a file marked ``!`` or the
    closing count of failed files): ``edge ingest`` prints those on stderr."""
    return line.startswith(" ! ") or line.endswith("see the lines marked '!'.")


def ingest_lines(report, memory_path: Path, stats: dict) -> list[str]:
    """``edge ingest``: a line per file (and one with its start on the timeline and where
    that came from), the cost per stage, then the totals (:func:`is_failure_line` tells the
    lines about failed files)."""
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
    lines.append(f"{report.clips_added} clips added in {report.seconds:.1f} s; "
                 f"{u['calls']} LLM calls, {u['tokens_in']} tokens in / {u['tokens_out']} out. "
                 f"Memory: {memory_path} ({stats['clips']} clips, {stats['hours']:.2f} h).")
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


# ---- ask ----------------------------------------------------------------------------------

class AskStream:
    """``edge ask`` on a terminal: the loop's progress lines and, as the solver writes it,
    the answer's text, on stderr (stdout keeps only the final answer block). Nothing is
    written when stderr is not a terminal."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._mid_line = False
        self._t0 = time.monotonic()

    def _end_line(self) -> None:
        if self._mid_line:
            click.echo("", err=True)
            self._mid_line = False

    def progress(self, line: str) -> None:
        """One progress line with the seconds since the question was asked
        (``… 2.1 s  round 1/5: the solver reads 9 note(s)``)."""
        if self.tty:
            self._end_line()
            click.echo(f"… {time.monotonic() - self._t0:4.1f} s  {line}", err=True)

    def token(self, text: str) -> None:
        """A piece of the answer, written as it comes."""
        if self.tty:
            if not self._mid_line:
                click.echo("  ", err=True, nl=False)
            click.echo(text, err=True, nl=False)
            self._mid_line = True

    def close(self) -> None:
        """End a streamed line before the final block is printed."""
        if self.tty:
            self._end_line()


def answer_lines(result) -> list[str]:
    """``edge ask``: the answer, what the citation check did, its cost, then every moment
    (``*`` = cited, after the check) with an excerpt of its caption and the evidence kept
    from it."""
    lines = []
    if result.scope.get("label"):
        lines.append(f"Searched {result.scope['label']}.")
    if result.sub_queries:
        lines.append("Sub-queries: " + "; ".join(result.sub_queries))
    answer = result.answer or "(no answer)"
    if result.extra.get("choices") and result.answer:
        answer = (f"{result.answer}. {result.extra['choices'][result.answer]} — "
                  f"{result.extra['reason']}")
    lines.append(f"Answer: {answer}")
    if result.note:
        lines.append(f"Note: {result.note}")
    if result.citation_check:
        lines.append(f"Citations: {result.citation_check['summary']}")
    u = result.usage["llm"]
    lines.append(f"({len(result.rounds)} round(s), {u['calls']} LLM call(s), {u['tokens_in']} "
                 f"tokens in / {u['tokens_out']} out, {result.seconds:.1f} s)")
    lines.append("\nMoments (* = cited by the answer):")
    for m in result.moments:
        lines += moment_lines(m)
    return lines


def moment_lines(m) -> list[str]:
    """One :class:`edge.answer.Moment`: its head line, caption excerpt and kept evidence."""
    star = "*" if m.cited else " "
    score = f" score {m.score:.3f} via {m.matched}" if m.score is not None else ""
    lines = [f" {star} {m.when}  clip {m.clip_id}  ({m.role}{score})"]
    excerpt = " ".join(m.caption.split())
    if len(excerpt) > EXCERPT:
        excerpt = excerpt[:EXCERPT].rstrip() + "…"
    lines.append(textwrap.indent(textwrap.fill(excerpt, WIDTH - 6), "     "))
    if m.evidence:
        lines.append(textwrap.indent(textwrap.fill(f"kept: {m.evidence}", WIDTH - 6), "     "))
    return lines


def search_lines(result: dict) -> list[str]:
    """``edge search``: one line per moment (rank, when, score, what matched, clip id,
    caption excerpt), then the note, the scope searched and the milliseconds it took."""
    lines = [f"{rank:2}. {m['when']}  {m['score']:.4f}  {m['matched']:9} clip {m['clip_id']:<5} "
             f"{m['caption']}" for rank, m in enumerate(result["moments"], 1)]
    if not lines:
        lines.append("No moments found.")
    if result["note"]:
        lines.append(f"Note: {result['note']}")
    lines.append(f"Searched {scope_words(result['scope'])}; {len(result['queries'])} "
                 f"quer{'y' if len(result['queries']) == 1 else 'ies'} in {result['ms']:.0f} ms.")
    return lines


def scope_words(scope: dict) -> str:
    """A scope (``Answer.scope``: label, start, end in timeline seconds) in words:
    ``yesterday evening (DAY1 18:00:00 to DAY1 23:59:59)``, ``everything before DAY1
    11:21:00`` or ``everything``."""
    from edge.answer.scope import time_label

    if scope["start"] is None and scope["end"] is None:
        return "everything"
    if scope["start"] is None and not scope["label"]:
        return f"everything before {time_label(scope['end'], 'now')}"
    span = (f"clips ending after {time_label(scope['start'], 'the start')} and by "
            f"{time_label(scope['end'], 'now')}")
    return f"{scope['label']} ({span})" if scope["label"] else span


# ---- stats --------------------------------------------------------------------------------

def stats_lines(s: dict, memory_path: Path) -> list[str]:
    """``edge stats``: counts, the pyramid, model calls per command and role, ingest cost."""
    lines = [f"memory   {memory_path}",
             f"sources  {s['sources']}\nclips    {s['clips']}\nkeys     {s['keys']}",
             f"hours    {s['hours']:.2f}\ndays     {', '.join(s['days']) or '-'}"]
    pyr = s["pyramid"]
    lines.append(f"facts    {pyr['facts']}" + (f" ({pyr['facts_extractive']} extractive)"
                                               if pyr["facts_extractive"] else ""))
    lines.append(f"clip nodes   {pyr['clip_nodes']}")
    for day, g in pyr["global_nodes"].items():
        lines.append(f"global node  {day:10} version {g['versions']}, {g['clips']} clips")
    for kind, n in pyr["links"].items():
        lines.append(f"links    {kind:28} {n}")
    lines.append(backlog_line(s["backlog"]))
    v = s["vectors"]
    line = f"vectors  {v['embedder']}, {v['dim']}-d"
    if v["reembedding"]:
        r = v["reembedding"]
        line += (f"; re-embedding with {r['embedder']} ({r['dim']}-d): {r['done']:,} of "
                 f"{r['total']:,} done, `edge build` goes on")
    lines.append(line)
    if s["partial_sources"]:
        lines.append(f"partial  {len(s['partial_sources'])} source(s) not finished (run the "
                     "same ingest again to resume): " + ", ".join(s["partial_sources"]))
    for c in s["calls"]:
        lines.append(f"calls    {c['command']:16} {c['role']:12} {c['calls']:6} calls "
                     f"{c['tokens_in'] or 0:8} in {c['tokens_out'] or 0:7} out "
                     f"{c['seconds'] or 0:8.1f} s")
    cost = s["ingest_cost"]
    if cost["stages"]:
        lines.append(f"ingest   {cost['runs']} run(s), {cost['clips_added']} clips, "
                     f"{cost['hours']:.3f} h of footage processed")
        for name, st in cost["stages"].items():
            rtf = f"{st['rtf']:.3f}" if st["rtf"] is not None else "-"
            lines.append(f"stage    {name:12} {st['seconds']:8.1f} s  RTF {rtf:>6}  "
                         f"{st['calls']:6} calls {st['tokens_in']:8} in "
                         f"{st['tokens_out']:7} out")
    return lines


# ---- backup -------------------------------------------------------------------------------

def backup_lines(memory_path: Path, dest: Path, clips: int,
                 frames: tuple[int, int] | None) -> list[str]:
    """``edge backup``: what was copied where: the clips and size of the database, then the
    keyframes (files, bytes) copied beside it."""
    from humanfriendly import format_size

    from edge.config import frames_dir

    lines = [f"Backed up {memory_path} to {dest}: {clips} clips, "
             f"{format_size(dest.stat().st_size)}."]
    if frames is None:
        lines.append("Keyframes: none (the memory has no keyframes folder).")
    else:
        lines.append(f"Keyframes: {frames[0]} files, {format_size(frames[1])} in "
                     f"{frames_dir(dest)}")
    return lines


# ---- models, doctor -----------------------------------------------------------------------

def role_lines(profile: str, rows: list[dict]) -> list[str]:
    """``edge models list``: each role's model, backend, state and weights (or its error),
    and under it the model's licence."""
    lines = [f"profile {profile}"]
    for r in rows:
        status = "ok" if r["ok"] else "FAIL"
        if r["ok"] and not r["loaded"]:
            status = "found"
        lines.append(f"  {r['role']:17} {r['model']:30} {r['backend']:14} {status:5} "
                     f"{r['weights'] or '-'}")
        if r.get("license", "-") != "-":
            lines.append(f"  {'':17} licence: {r['license']}")
        if r["error"]:
            lines.append(f"  {'':17} {r['error']}")
    return lines


def recommended_lines(rows: list[dict], models_dir: Path) -> list[str]:
    """``edge models recommended``: the models to pull (nothing when there are none)."""
    if not rows:
        return []
    lines = [f"recommended models (edge models pull NAME; into {models_dir})"]
    for r in rows:
        lines.append(f"  {r['name']:30} {r['role']:18} {r['download_mb'] or '?':>5} MB "
                     f"{r['ram_gb'] or '?':>4} GB RAM  "
                     f"{'present' if r['present'] else '-':8} {r['license']}")
    return lines


def pulled_lines(name: str, files) -> list[str]:
    """``edge models pull``: each file of the model, then how to use it."""
    lines = []
    for f in files:
        how = "downloaded" if f.downloaded else "already present"
        check = ("sha256 verified" if f.verified else
                 f"sha256 {f.sha256} (unverified: the manifest records no checksum)")
        lines.append(f"{how:15} {f.path}  {check}")
    lines.append(f"{name} is ready; use it in a profile (see `edge models recommended`).")
    return lines


def added_lines(spec, user_file: Path) -> list[str]:
    """``edge models add``: what was recorded where, and how a profile names the model."""
    from humanfriendly import format_size

    made = [spec.backend, format_size(spec.option("size") or 0), spec.option("quant"),
            spec.option("derived_from") and f"from {spec.option('derived_from')}"]
    role = "embedder" if "embedder" in spec.backend else "solver"
    return [f"registered {spec.name}: {spec.option('path')} ({', '.join(filter(None, made))})",
            f"  sha256 {spec.option('sha256')}, recorded in {user_file}",
            "Use it in a profile of that file, e.g.", "  [profiles.mine]", '  base = "small"',
            "  [profiles.mine.roles]", f'  {role} = "{spec.name}"']


def user_model_lines(rows: list[dict], title: str) -> list[str]:
    """``edge models user|verify`` (and the end of ``list``): under ``title``, each model
    file, its size, quantization, origin and state (nothing when there are none)."""
    from humanfriendly import format_size

    if not rows:
        return []
    lines = [title]
    for r in rows:
        size = format_size(r["size"]) if r["size"] is not None else "?"
        origin = f"from {r['derived_from']}" if r["derived_from"] else ""
        state = r["state"] if r["ok"] else "FAIL"
        lines.append(f"  {r['name']:30} {r['backend']:18} {size:>9} {r['quant'] or '-':7} "
                     f"{origin:32} {state}")
        lines.append(f"  {'':30} {r['path']}")
        if not r["ok"]:
            lines.append(f"  {'':30} {r['state']}")
    return lines


def profile_line(profile) -> str:
    """``edge doctor``: the profile in use and what it is for (its limits)."""
    return f"      {'profile':22} {profile.name}: {profile.description}"


def check_line(check) -> str:
    """``edge doctor``: one :class:`edge.cli.doctor.Check`."""
    return f"{'ok  ' if check.ok else 'FAIL'}  {check.name:22} {check.detail}"


# ---- status -------------------------------------------------------------------------------

def status_lines(s: dict | None, memory_path: Path, stats: dict | None) -> list[str]:
    """``edge status``: the memory, then the recorder's state, source, queue, lag, disk use
    and last error (or how to start it when it never ran)."""
    lines = [f"memory     {memory_path}"
             + (f"  ({stats['clips']} clips, {stats['hours']:.2f} h, last ingest "
                f"{ago(stats['last_ingest'])})" if stats else "  (not created yet)")]
    if stats:
        lines.append(backlog_line(stats["backlog"]))
    if s is None:
        return [*lines, "recorder   has never run for this memory; start it with "
                        "`edge record --camera 0` (or --url URL, --watch DIR)"]
    from humanfriendly import format_timespan

    shown_state = s["state"] if s["running"] or s["state"] in ("stopped", "failed") else (
        f"not running (last state {s['state']}; it stopped without a clean shutdown)")
    lines.append(f"recorder   {shown_state}, pid {s['pid']}, updated {ago(s['updated_at'])}")
    lines.append(f"source     {s['source']}")
    lines.append(f"clips      {s['clips_recorded']} recorded this run, {s['clips_ingested']} "
                 f"in memory" + (f", ingesting {s['ingesting']}" if s.get("ingesting") else ""))
    bp = "  BACK-PRESSURE" if s["backpressure"] else ""
    lines.append(f"queue      {s['queue']}/{s['queue_capacity']} clips waiting for "
                 f"ingestion{bp}")
    lag = s.get("lag_seconds")
    lines.append(f"lag        {format_timespan(lag) if lag is not None else '-'} behind "
                 "the source")
    lines.append(disk_line(s["disk"]))
    if s.get("last_deletion"):
        lines.append(f"deleted    {s['last_deletion']}")
    if s.get("audio"):
        lines.append(audio_line(s["audio"]))
    lines.append(f"last error {s.get('last_error') or '-'}")
    return lines


def audio_line(a: dict) -> str:
    """The source's audio: its level, or the silence warning (``edge status``)."""
    if a.get("warning"):
        return f"audio      WARNING: {a['warning']}"
    if a.get("has_audio") is None:
        return "audio      - (no clip measured yet)"
    if not a["has_audio"]:
        return "audio      none (the source has no audio track)"
    silent = f", silent for {a['silent_seconds']:.0f} s" if a.get("silent_seconds") else ""
    return f"audio      {a['level_dbfs']:.0f} dBFS{silent}"


def disk_line(d: dict) -> str:
    """The recorder's raw clips on disk, its budget and the free space."""
    from humanfriendly import format_size, format_timespan

    budget = format_size(d["raw_budget"]) if d["raw_budget"] else "no budget"
    keep = format_timespan(d["keep_raw"]) if d["keep_raw"] else "kept"
    free = format_size(d["free_bytes"]) if d["free_bytes"] is not None else "?"
    return (f"disk       raw clips {format_size(d['raw_bytes'])} in {d['raw_clips']} files "
            f"({budget}, older ones {keep}); free {free} (floor "
            f"{format_size(d['min_free'])}); {d['deleted_clips']} deleted")


# ---- edge report -------------------------------------------------------------------------

def _report_sources(rep) -> list[str]:
    """The cited clips with the evidence from each, best support first."""
    cited = rep.cited_clips
    lines = []
    for cid in cited:
        recs = sorted((r for r in rep.evidence if r.clip_id == cid),
                      key=lambda r: -(r.support or 0.0))
        if not recs:
            continue
        lines.append(f"[{recs[0].when}] clip {cid}: " + "; ".join(
            r.text + (f" ({r.support:.2f})" if r.support is not None else "")
            for r in recs[:2]))
    return lines


def report_lines(rep) -> list[str]:
    """``edge report`` on a terminal: the title, the report wrapped to :data:`WIDTH`, its
    sources (cited clips with their evidence and support) and the checks line."""
    title = f"{rep.scope}" + (f": {rep.topic}" if rep.topic else "") + f" ({rep.style})"
    out = [title, ""]
    if not rep.sentences:
        out.append(f"Nothing to report: no evidence reached support {rep.threshold:.2f} "
                   "(lower --threshold, or widen the scope).")
    elif rep.style == "bullet":
        out += [textwrap.fill(line, WIDTH, subsequent_indent="   ")
                for line in rep.text.splitlines()]
    else:
        out.append(textwrap.fill(rep.text, WIDTH))
    sources = _report_sources(rep)
    if sources:
        out += ["", "Sources:"] + [textwrap.fill(s, WIDTH, initial_indent="  ",
                                                 subsequent_indent="    ") for s in sources]
    return out + ["", rep.checks_line()]


def report_markdown(rep) -> str:
    """``edge report --md``: the report, its sources and the checks as Markdown."""
    title = f"# {rep.scope}" + (f": {rep.topic}" if rep.topic else "")
    body = rep.text if rep.sentences else "_Nothing reached the support threshold._"
    sources = "\n".join(f"- {s}" for s in _report_sources(rep))
    return (f"{title}\n\n{body}\n\n## Sources\n\n{sources or '_none_'}\n\n"
            f"## Checks\n\n{rep.checks_line()}\n")
