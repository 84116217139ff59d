"""What ``edge stats``, ``edge status`` (and ``edge record``'s stop) and ``edge backup``
print: what a memory holds, what its recorder is doing, what a backup copied."""

from __future__ import annotations

from pathlib import Path

from edge.cli.render import ago, backlog_line

FORCED_STOP = ("Forced stop: finished clips are kept; the clip being ingested and the "
               "rest of the queue are ingested on the next start.")
"""Printed (to stderr) when a second Ctrl-C stops ``edge record`` at once."""


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
