"""Where ingest time goes on the shared footage: real-time factor (RTF) per stage.

Each file is ingested on its own into a fresh temporary memory with the chosen profile
(models loaded once, before the clock starts, so loading is not charged to the first file).
For every file and for the total: footage seconds, wall seconds, and per stage (decode,
ASR, caption, memory LLM, embed, store) the seconds, the RTF (stage seconds / footage
seconds; below 1 keeps up with real time on this device), the model calls and their tokens
in and out; plus memory-construction cost per hour of footage (calls, tokens).

    .venv/bin/python benchmarks/ingest_stages.py                      # all shared footage
    .venv/bin/python benchmarks/ingest_stages.py --files tiny_drawing_speech.mp3

Writes ``benchmarks/results/ingest_stages.json`` and ``.md`` (a Markdown table, also
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

from edge.config import models_dir  # noqa: E402
from edge.ingest import IngestOptions, find_media, ingest_paths  # noqa: E402
from edge.pyramid import Pyramid, PyramidOptions  # noqa: E402
from edge.stages import STAGES, stage_report  # noqa: E402
from edge.store import Memory  # noqa: E402
from edge.timeline import parse_moment  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402

SHOWN = [s for s in STAGES if s != "load"]


def _per_hour(value: float, media_seconds: float) -> float | None:
    return round(value * 3600.0 / media_seconds, 1) if media_seconds > 0 else None


def _row(name: str, media: float, wall: float, stages: dict, usage: dict) -> dict:
    llm = usage["llm"]
    return {
        "file": name, "media_seconds": round(media, 2), "wall_seconds": round(wall, 2),
        "rtf": round(wall / media, 4) if media > 0 else None, "stages": stages,
        "calls": usage["calls"], "llm_calls": llm["calls"],
        "llm_tokens_in": llm["tokens_in"], "llm_tokens_out": llm["tokens_out"],
        "per_hour": {"llm_calls": _per_hour(llm["calls"], media),
                     "llm_tokens_in": _per_hour(llm["tokens_in"], media),
                     "llm_tokens_out": _per_hour(llm["tokens_out"], media)},
    }


def _markdown(rows: list[dict]) -> str:
    head = ("| file | footage s | wall s | RTF | " + " | ".join(f"{s} RTF" for s in SHOWN)
            + " | LLM calls | tokens in / out |")
    sep = "|" + "---|" * (6 + len(SHOWN))
    lines = [head, sep]
    for r in rows:
        cells = []
        for s in SHOWN:
            st = r["stages"].get(s)
            cells.append(f"{st['rtf']:.3f}" if st and st["rtf"] is not None else "-")
        rtf = f"{r['rtf']:.3f}" if r["rtf"] is not None else "-"
        lines.append(f"| {r['file']} | {r['media_seconds']:.1f} | {r['wall_seconds']:.1f} | "
                     f"{rtf} | " + " | ".join(cells)
                     + f" | {r['llm_calls']} | {r['llm_tokens_in']} / {r['llm_tokens_out']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--footage", type=Path, default=ROOT.parent / "shared/data/footage")
    ap.add_argument("--files", nargs="*", default=None,
                    help="file names inside --footage (default: every media file there)")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--no-pyramid", action="store_true",
                    help="keys only (edge ingest --no-pyramid); default: the PyraVid pyramid")
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
    hub.llm("memory_llm")
    load_s = time.perf_counter() - t_load

    rows, total_stage_s, total_media, total_wall = [], {}, 0.0, 0.0
    mark_all = hub.usage.mark()
    with tempfile.TemporaryDirectory(prefix="edge-bench-") as tmp:
        for i, f in enumerate(files):
            with Memory(Path(tmp) / f"m{i}.db") as memory:
                mark = hub.usage.mark()
                t0 = time.perf_counter()
                pyramid = None if args.no_pyramid else Pyramid(memory, hub, PyramidOptions())
                report = ingest_paths(memory, hub, [f],
                                      IngestOptions(start=parse_moment("2025-03-01 09:00")),
                                      pyramid=pyramid)
                wall = time.perf_counter() - t0
                memory.record_calls("ingest", hub.usage.records[mark:], run_id=report.run_id)
                seconds = {s: v["seconds"] for s, v in report.stages.items()}
            failed = [r.message for r in report.results if r.status == "failed"]
            if failed:
                print(f"{f.name}: failed: {failed[0]}", file=sys.stderr)
            row = _row(f.name, report.media_seconds, wall, report.stages, report.usage)
            row["status"] = report.results[0].status if report.results else "none"
            rows.append(row)
            print(f"{f.name}: {report.media_seconds:.1f} s footage in {wall:.1f} s",
                  file=sys.stderr)
            total_media += report.media_seconds
            total_wall += wall
            for s, v in seconds.items():
                total_stage_s[s] = total_stage_s.get(s, 0.0) + v
    usage_all = hub.usage.summary(mark_all)
    total = _row("**all**", total_media, total_wall,
                 stage_report(total_stage_s, total_media, usage_all["by_role"]), usage_all)
    hub.close()
    result = {
        "profile": args.profile,
        "models": {role: spec.name for role, spec in hub.profile.roles.items()},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "threads": hub.threads},
        "model_load_seconds": round(load_s, 2),
        "files": rows, "total": total,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    md = _markdown([*rows, total])
    note = (f"\nProfile {args.profile}; {os.cpu_count()} CPUs, {hub.threads} threads per "
            f"model; models loaded in {load_s:.1f} s (not counted). Per hour of footage: "
            f"{total['per_hour']['llm_calls']} LLM calls, {total['per_hour']['llm_tokens_in']} "
            f"tokens in / {total['per_hour']['llm_tokens_out']} out.\n")
    args.out.with_suffix(".md").write_text(md + "\n" + note)
    print(md + "\n" + note)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
