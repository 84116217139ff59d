"""Where ingest time goes on the shared footage, per tier: real-time factor (RTF) per stage.

Each file is ingested on its own into a fresh temporary memory with the chosen profile
(models loaded once, before the clock starts, so loading is not charged to the first file),
as `edge ingest` does it (issue 13's two tiers):

- the *real-time tier* (``ingest_paths(..., deferred=...)``): decode, ASR, caption, embed,
  store — per stage the seconds and RTF (stage seconds / footage seconds; below 1 keeps up
  with real time on this device);
- the *LLM tier* (:func:`edge.build.build`): MERIT keys and, unless ``--no-pyramid``, the
  PyraVid facts, clip node, links and global nodes — wall seconds, RTF, seconds per clip,
  memory-LLM calls and tokens.

For the total: LLM-tier calls and tokens per hour of footage beside MERIT Table 6's (GPT-5
building the EgoLifeQA memory: 6,223 calls, 815K tokens in, 288K out for 6,223 clips, i.e.
one call per 30 s clip), and the backlog a 16-hour day leaves for the night (see
:func:`day_backlog`).

    .venv/bin/python benchmarks/ingest_stages.py                      # all shared footage
    .venv/bin/python benchmarks/ingest_stages.py --profile small --files ego_fisheye_b_noaudio.mp4

Writes ``benchmarks/results/ingest_stages.json`` and ``.md`` (Markdown tables, also
printed). Timings depend on the machine and its load: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.build import BuildReport, build  # noqa: E402
from edge.config import models_dir  # noqa: E402
from edge.ingest import IngestOptions, find_media, ingest_paths  # noqa: E402
from edge.memory_writer import Deferred  # noqa: E402
from edge.pyramid import PyramidOptions  # noqa: E402
from edge.stages import STAGES, stage_report  # noqa: E402
from edge.store import Memory  # noqa: E402
from edge.timeline import parse_moment  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402
from models.usage import UsageMeter  # noqa: E402

SHOWN = [s for s in STAGES if s not in ("load", "memory_llm")]
CLIP_SECONDS = 30.0
MERIT_TABLE6 = {"clips": 6223, "llm_calls": 6223, "tokens_in": 815_000, "tokens_out": 288_000}
"""MERIT Table 6: the memory construction cost of MERIT's keys with GPT-5 (EgoLifeQA)."""


def merit_per_hour() -> dict:
    """MERIT Table 6 per hour of footage (its clips are 30 s: 120 per hour)."""
    hours = MERIT_TABLE6["clips"] * CLIP_SECONDS / 3600.0
    return {k: round(MERIT_TABLE6[k] / hours, 1) for k in ("llm_calls", "tokens_in",
                                                            "tokens_out")}


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


def _meter(records: list) -> UsageMeter:
    """A meter holding ``records`` only (to sum a slice of the hub's calls)."""
    meter = UsageMeter()
    for rec in records:
        meter.record(rec)
    return meter


def _per_hour(value: float, media_seconds: float) -> float | None:
    return round(value * 3600.0 / media_seconds, 1) if media_seconds > 0 else None


def _row(name: str, media: float, rt_wall: float, stages: dict, llm_wall: float,
         clips_built: int, llm_usage: dict) -> dict:
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


def _markdown(rows: list[dict]) -> str:
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


def _ingest_one(hub, path: Path, memory_path: Path, pyramid: bool, llm_tier: bool = True
                ) -> dict:
    """Both tiers of one file (the real-time tier only without ``llm_tier``) into a fresh
    memory; the file's row."""
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
        print(f"{path.name}: failed: {failed[0]}", file=sys.stderr)
    row = _row(path.name, report.media_seconds, rt_wall, report.stages, llm_wall,
               built.built, llm_usage)
    row["status"] = report.results[0].status if report.results else "none"
    row["_stage_seconds"] = {s: v["seconds"] for s, v in report.stages.items()}
    row["_rt_records"] = hub.usage.records[mark:mark_llm]
    row["_build_records"] = build_records
    print(f"{path.name}: {report.media_seconds:.1f} s footage: real-time tier {rt_wall:.1f} s, "
          f"LLM tier {llm_wall:.1f} s ({built.built} clips)", file=sys.stderr)
    return row


def _total(rows: list[dict], usage_llm: dict) -> dict:
    media = sum(r["media_seconds"] for r in rows)
    stage_s: dict[str, float] = {}
    for r in rows:
        for st, v in r.pop("_stage_seconds").items():
            stage_s[st] = stage_s.get(st, 0.0) + v
    by_role = _meter([rec for r in rows for rec in r.pop("_rt_records")]).summary()["by_role"]
    return _row("**all**", media, sum(r["realtime"]["wall_seconds"] for r in rows),
                stage_report(stage_s, media, by_role),
                sum(r["llm_tier"]["wall_seconds"] for r in rows),
                sum(r["llm_tier"]["clips"] for r in rows), usage_llm)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--footage", type=Path, default=ROOT.parent / "shared/data/footage")
    ap.add_argument("--files", nargs="*", default=None,
                    help="file names inside --footage (default: every media file there)")
    ap.add_argument("--profile", default="small")
    ap.add_argument("--no-pyramid", action="store_true",
                    help="LLM tier: keys only (edge ingest --no-pyramid); default: the pyramid")
    ap.add_argument("--realtime-only", action="store_true",
                    help="measure the real-time tier only (the LLM tier is left queued)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/ingest_stages.json")
    args = ap.parse_args()

    files = ([args.footage / f for f in args.files] if args.files
             else find_media([args.footage]))
    missing = [f for f in files if not f.exists()]
    if missing:
        print(f"not found: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    hub = ModelHub(load_manifest().profile(args.profile), models_dir())
    t_load = time.perf_counter()
    for role in ("transcriber", "captioner", "embedder"):
        hub.get(role)
    if not args.realtime_only:
        hub.llm("memory_llm")
    load_s = time.perf_counter() - t_load

    rows = []
    with tempfile.TemporaryDirectory(prefix="edge-bench-") as tmp:
        for i, f in enumerate(files):
            rows.append(_ingest_one(hub, f, Path(tmp) / f"m{i}.db", not args.no_pyramid,
                                    not args.realtime_only))
    builds = _meter([rec for r in rows for rec in r.pop("_build_records")])
    total = _total(rows, builds.summary())
    lt = total["llm_tier"]
    backlog = (day_backlog(total["realtime"]["rtf"], lt["rtf"], lt["seconds_per_clip"])
               if lt["rtf"] and lt["seconds_per_clip"] else None)
    hub.close()
    result = {
        "profile": args.profile, "pyramid": not args.no_pyramid,
        "models": {role: spec.name for role, spec in hub.profile.roles.items()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "threads": hub.threads},
        "model_load_seconds": round(load_s, 2),
        "files": rows, "total": total, "merit_table6_per_hour": merit_per_hour(),
        "day_backlog": backlog,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    md = _markdown([*rows, total])
    m6 = result["merit_table6_per_hour"]
    ph = total["per_hour"]
    note = (f"\nProfile {args.profile} ({'pyramid' if not args.no_pyramid else 'keys only'}); "
            f"{os.cpu_count()} CPUs, {hub.threads} threads per model; models loaded in "
            f"{load_s:.1f} s (not counted).\nLLM tier per hour of footage: {ph['llm_calls']} "
            f"calls, {ph['llm_tokens_in']} tokens in / {ph['llm_tokens_out']} out "
            f"(MERIT Table 6, GPT-5 keys: {m6['llm_calls']} calls, {m6['tokens_in']} in / "
            f"{m6['tokens_out']} out).\n")
    if backlog:
        note += (f"A 16-hour day: {backlog['built_during_day']:.0%} built while recording "
                 f"(slack {backlog['slack_seconds_per_clip']} s per clip), backlog "
                 f"{backlog['backlog_hours']} h of footage ({backlog['backlog_clips']} clips), "
                 f"{backlog['drain_hours']} h to build: "
                 f"{'drained' if backlog['drained_by_morning'] else 'NOT drained'} in an "
                 f"8-hour night.\n")
    args.out.with_suffix(".md").write_text(md + "\n" + note)
    print(md + "\n" + note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
