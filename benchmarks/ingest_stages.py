"""Where ingest time goes on the shared footage, per tier: real-time factor (RTF) per stage.

A thin wrapper of :mod:`edge.bench.ingest_speed` (``edge bench speed --only ingest`` measures
the same, per profile, beside answer latency, KNN latency and peak RSS): each file is
ingested on its own into a fresh temporary memory with the chosen profile (models loaded
once, before the clock starts), the real-time tier per stage and the LLM tier (keys and,
unless ``--no-pyramid``, the PyraVid pyramid) with its calls and tokens per hour beside
MERIT Table 6, and the backlog a 16-hour day leaves for the night.

    .venv/bin/python benchmarks/ingest_stages.py                      # all shared footage
    .venv/bin/python benchmarks/ingest_stages.py --profile small --files ego_fisheye_b_noaudio.mp4

Writes ``benchmarks/results/ingest_stages.json`` and ``.md`` (Markdown tables, also
printed). Timings depend on the machine and its load: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.bench.ingest_speed import ingest_note, ingest_table, measure_ingest  # noqa: E402
from edge.bench.measure import environment  # noqa: E402
from edge.config import models_dir  # noqa: E402
from edge.ingest.run import find_media  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402


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
    say = lambda line: print(line, file=sys.stderr)  # noqa: E731
    try:
        with tempfile.TemporaryDirectory(prefix="edge-bench-") as tmp:
            res = measure_ingest(hub, files, Path(tmp), pyramid=not args.no_pyramid,
                                 llm_tier=not args.realtime_only, say=say)
    finally:
        hub.close()
    env = environment()
    result = {"profile": args.profile, **res,
              "machine": env["machine"] | {"cpus": env["machine"]["cores"],
                                           "threads": res["threads"]},
              "packages": env["packages"], "at": env["at"]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False))
    text = (ingest_table([*res["files"], res["total"]]) + "\n\n"
            + ingest_note(res, args.profile, env["machine"]["cores"]))
    args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
