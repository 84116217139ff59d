"""Where ingest time goes, per tier: real-time factor (RTF) per stage (``edge bench speed``
part ``ingest``; ``benchmarks/ingest_stages.py`` is a wrapper of it).

Each file is ingested on its own into a fresh memory with the profile's models, loaded
once before the clock starts (:func:`load_models`), as ``edge ingest`` does it (issue 13's
two tiers):

- the *real-time tier* (``ingest_paths(..., deferred=...)``): decode, ASR, caption, embed,
  store — per stage the seconds and RTF (stage seconds / footage seconds; below 1 keeps up
  with real time on this device);
- the *LLM tier* (:func:`edge.build.run.build`): MERIT keys and, with ``pyramid``, the PyraVid
  facts, clip node, links and global nodes — wall seconds, RTF, seconds per clip,
  memory-LLM calls and tokens.

For the total: LLM-tier calls and tokens per hour of footage beside MERIT Table 6's
(:func:`merit_per_hour`), and the backlog a 16-hour day leaves for the night
(:func:`day_backlog`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from edge.stages import STAGES, stage_report

from .papers import MERIT_TABLE6_COST

SHOWN = [s for s in STAGES if s not in ("load", "memory_llm")]
"""The real-time tier's stages in the table (``load`` is not charged; ``memory_llm`` is the
LLM tier's)."""
CLIP_SECONDS = 30.0

Say = Callable[[str], None]


def merit_per_hour() -> dict:
    """MERIT Table 6 (GPT-5 building the EgoLifeQA memory: 6,223 calls, 815K tokens in,
    288K out) per hour of footage, taking its 6,223 key calls as one per 30 s clip (51.9 h;
    §4.1's 44.3 h per video would give 17% more): ``llm_calls``, ``tokens_in``,
    ``tokens_out`` per hour."""
    hours = MERIT_TABLE6_COST["clips"] * CLIP_SECONDS / 3600.0
    return {k: round(MERIT_TABLE6_COST[k] / hours, 1)
            for k in ("llm_calls", "tokens_in", "tokens_out")}


def day_backlog(realtime_rtf: float, llm_rtf: float, llm_seconds_per_clip: float,
                day_hours: float = 16.0, night_hours: float = 8.0) -> dict:
    """The LLM tier's backlog after a recorded day of ``day_hours``, and whether the night
    drains it. While recording, the worker builds only in the slack between clips and a
    clip coming in cancels the build in progress (edge/record/worker.py), so a clip's build
    completes during the day only if it fits the slack of one clip period,
    ``CLIP_SECONDS * (1 - realtime_rtf)``; then the day builds ``(1 - realtime_rtf) /
    llm_rtf`` of its footage (at most all). The rest waits: ``backlog_hours`` of footage,
    ``drain_hours`` to build it at ``llm_rtf``."""
    slack = CLIP_SECONDS * max(0.0, 1.0 - realtime_rtf)
    share = min(1.0, (1.0 - realtime_rtf) / llm_rtf) if llm_seconds_per_clip <= slack else 0.0
    backlog = day_hours * (1.0 - share)
    drain = backlog * llm_rtf
    return {"day_hours": day_hours, "slack_seconds_per_clip": round(slack, 1),
            "built_during_day": round(share, 3), "backlog_hours": round(backlog, 2),
            "backlog_clips": round(backlog * 3600 / CLIP_SECONDS),
            "drain_hours": round(drain, 2), "drained_by_morning": drain <= night_hours}


def _meter(records: list):
    """A meter holding ``records`` only (to sum a slice of the hub's calls)."""
    from models.usage import UsageMeter

    meter = UsageMeter()
    for rec in records:
        meter.record(rec)
    return meter


def _per_hour(value: float, media_seconds: float) -> float | None:
    return round(value * 3600.0 / media_seconds, 1) if media_seconds > 0 else None


def file_row(name: str, media: float, rt_wall: float, stages: dict, llm_wall: float,
             clips_built: int, llm_usage: dict) -> dict:
    """One row: ``realtime`` (wall seconds, RTF, per-stage seconds/RTF/calls), ``llm_tier``
    (wall seconds, RTF, clips, seconds per clip, calls, tokens, per role) and ``per_hour``
    (LLM calls and tokens per hour of footage). RTF is ×real time (seconds per second of
    footage); ``None`` without footage."""
    llm = llm_usage["llm"]

    def rtf(wall: float) -> float | None:
        return round(wall / media, 4) if media > 0 else None

    return {
        "file": name, "media_seconds": round(media, 2),
        "realtime": {"wall_seconds": round(rt_wall, 2), "rtf": rtf(rt_wall), "stages": stages},
        "llm_tier": {"wall_seconds": round(llm_wall, 2), "rtf": rtf(llm_wall),
                     "clips": clips_built,
                     "seconds_per_clip": round(llm_wall / clips_built, 2) if clips_built
                     else None,
                     "llm_calls": llm["calls"], "llm_tokens_in": llm["tokens_in"],
                     "llm_tokens_evaluated": llm["tokens_evaluated"],
                     "llm_tokens_out": llm["tokens_out"],
                     "by_role": {r: {"calls": v["calls"], "tokens_in": v["tokens_in"],
                                     "tokens_out": v["tokens_out"],
                                     "seconds": round(v["seconds"], 2)}
                                 for r, v in llm_usage["by_role"].items()}},
        "per_hour": {"llm_calls": _per_hour(llm["calls"], media),
                     "llm_tokens_in": _per_hour(llm["tokens_in"], media),
                     "llm_tokens_out": _per_hour(llm["tokens_out"], media)},
    }


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def ingest_table(rows: list[dict]) -> str:
    """The Markdown table of :func:`file_row` rows: footage seconds, real-time tier seconds
    and RTF, RTF per stage, LLM tier seconds, RTF, seconds per clip, calls and tokens."""
    head = ("| file | footage s | real-time s | RT RTF | " + " | ".join(
        f"{s} RTF" for s in SHOWN) + " | LLM tier s | LLM RTF | s/clip | LLM calls "
        "| tokens in / out |")
    lines = [head, "|" + "---|" * (9 + len(SHOWN))]
    for r in rows:
        rt, lt = r["realtime"], r["llm_tier"]
        cells = [_fmt((rt["stages"].get(s) or {}).get("rtf")) for s in SHOWN]
        lines.append(f"| {r['file']} | {r['media_seconds']:.1f} | {rt['wall_seconds']:.1f} | "
                     f"{_fmt(rt['rtf'])} | " + " | ".join(cells)
                     + f" | {lt['wall_seconds']:.1f} | {_fmt(lt['rtf'])} | "
                     f"{_fmt(lt['seconds_per_clip'], '.1f')} | {lt['llm_calls']} | "
                     f"{lt['llm_tokens_in']} / {lt['llm_tokens_out']} |")
    return "\n".join(lines)


def load_models(hub, llm_tier: bool) -> float:
    """Load the real-time tier's models (and the memory LLM with ``llm_tier``) before the
    clock starts; the seconds it took."""
    t0 = time.perf_counter()
    for role in ("transcriber", "captioner", "embedder"):
        hub.get(role)
    if llm_tier:
        hub.llm("memory_llm")
    return time.perf_counter() - t0


def ingest_one(hub, path: Path, memory_path: Path, pyramid: bool, llm_tier: bool = True,
               say: Say = lambda _line: None) -> dict:
    """Both tiers of one file (the real-time tier only without ``llm_tier``) into a fresh
    memory at ``memory_path``; the file's :func:`file_row` plus ``status`` and the private
    ``_stage_seconds``/``_rt_records``/``_build_records`` that :func:`total_row` consumes."""
    from edge.build.pyramid import PyramidOptions
    from edge.build.run import BuildReport, build
    from edge.ingest.memory_writer import Deferred
    from edge.ingest.run import IngestOptions, ingest_paths
    from edge.store import Memory
    from edge.timeline import parse_moment

    with Memory(memory_path) as memory:
        mark = hub.usage.mark()
        t0 = time.perf_counter()
        report = ingest_paths(memory, hub, [path],
                              IngestOptions(start=parse_moment("2025-03-01 09:00")),
                              deferred=Deferred(pyramid=pyramid))
        rt_wall = time.perf_counter() - t0
        memory.record_calls("ingest", hub.usage.records[mark:], run_id=report.run_id)
        mark_llm = hub.usage.mark()
        t1 = time.perf_counter()
        built = build(memory, hub, options=PyramidOptions()) if llm_tier else BuildReport()
        llm_wall = time.perf_counter() - t1
        llm_usage = hub.usage.summary(mark_llm)
        build_records = hub.usage.records[mark_llm:]
        memory.record_calls("build", build_records)
    failed = [r.message for r in report.results if r.status == "failed"]
    if failed:
        say(f"{path.name}: failed: {failed[0]}")
    row = file_row(path.name, report.media_seconds, rt_wall, report.stages, llm_wall,
                   built.built, llm_usage)
    row["status"] = report.results[0].status if report.results else "none"
    row["_stage_seconds"] = {s: v["seconds"] for s, v in report.stages.items()}
    row["_rt_records"] = hub.usage.records[mark:mark_llm]
    row["_build_records"] = build_records
    say(f"{path.name}: {report.media_seconds:.1f} s footage: real-time tier {rt_wall:.1f} s, "
        f"LLM tier {llm_wall:.1f} s ({built.built} clips)")
    return row


def total_row(rows: list[dict]) -> dict:
    """The ``**all**`` row over ``rows`` from :func:`ingest_one` (their private keys are
    consumed): stage seconds summed and RTF over the summed footage."""
    media = sum(r["media_seconds"] for r in rows)
    stage_s: dict[str, float] = {}
    for r in rows:
        for st, v in r.pop("_stage_seconds").items():
            stage_s[st] = stage_s.get(st, 0.0) + v
    by_role = _meter([rec for r in rows for rec in r.pop("_rt_records")]).summary()["by_role"]
    builds = _meter([rec for r in rows for rec in r.pop("_build_records")]).summary()
    return file_row("**all**", media, sum(r["realtime"]["wall_seconds"] for r in rows),
                    stage_report(stage_s, media, by_role),
                    sum(r["llm_tier"]["wall_seconds"] for r in rows),
                    sum(r["llm_tier"]["clips"] for r in rows), builds)


def measure_ingest(hub, files: list[Path], workdir: Path, *, pyramid: bool = True,
                   llm_tier: bool = True, say: Say = lambda _line: None) -> dict:
    """Ingest each of ``files`` into its own memory under ``workdir`` with ``hub``'s models
    (loaded first, not timed) and measure both tiers. Returns ``{"pyramid", "llm_tier",
    "models", "threads", "model_load_seconds", "files": [rows], "total": row,
    "merit_table6_per_hour", "day_backlog"}`` (rows: :func:`file_row`; the backlog is
    ``None`` without an LLM tier)."""
    load_s = load_models(hub, llm_tier)
    rows = [ingest_one(hub, f, workdir / f"m{i}.db", pyramid, llm_tier, say)
            for i, f in enumerate(files)]
    total = total_row(rows)
    lt = total["llm_tier"]
    backlog = (day_backlog(total["realtime"]["rtf"], lt["rtf"], lt["seconds_per_clip"])
               if lt["rtf"] and lt["seconds_per_clip"] else None)
    return {"pyramid": pyramid, "llm_tier": llm_tier,
            "models": {role: spec.name for role, spec in hub.profile.roles.items()},
            "threads": hub.threads, "model_load_seconds": round(load_s, 2),
            "files": rows, "total": total, "merit_table6_per_hour": merit_per_hour(),
            "day_backlog": backlog}


def ingest_note(result: dict, profile: str, cpus: int | None) -> str:
    """The lines under the table: profile and tier, threads, model load seconds, LLM-tier
    calls and tokens per hour beside MERIT Table 6, and the 16-hour day's backlog."""
    m6 = result["merit_table6_per_hour"]
    ph = result["total"]["per_hour"]
    note = (f"Profile {profile} ({'pyramid' if result['pyramid'] else 'keys only'}"
            f"{'' if result['llm_tier'] else ', real-time tier only'}); {cpus} CPUs, "
            f"{result['threads']} threads per model; models loaded in "
            f"{result['model_load_seconds']:.1f} s (not counted).\nLLM tier per hour of "
            f"footage: {ph['llm_calls']} calls, {ph['llm_tokens_in']} tokens in / "
            f"{ph['llm_tokens_out']} out (MERIT Table 6, GPT-5 keys: {m6['llm_calls']} calls, "
            f"{m6['tokens_in']} in / {m6['tokens_out']} out).\n")
    b = result["day_backlog"]
    if b:
        note += (f"A 16-hour day: {b['built_during_day']:.0%} built while recording "
                 f"(slack {b['slack_seconds_per_clip']} s per clip), backlog "
                 f"{b['backlog_hours']} h of footage ({b['backlog_clips']} clips), "
                 f"{b['drain_hours']} h to build: "
                 f"{'drained' if b['drained_by_morning'] else 'NOT drained'} in an "
                 f"8-hour night.\n")
    return note
