"""What the character tier costs per stage on the shared footage (issue 43: the real-time tier
must stay ≤ 0.15× real time on 2 cores with it on).

Each file is ingested on its own into a fresh temporary memory through the real-time tier
(``edge ingest --later``'s path: no memory-LLM call) with the chosen profile, models loaded
once before the clock starts. Per file and in total: the real-time factor of every stage
(``faces``: detection + alignment + descriptors + grouping; ``voices``: speaker turns;
``people``: matching identities and writing appearances and crops), the face embedder's own
split (detect, align, describe), and ``edge build``'s re-clustering of the memory.

    .venv/bin/python benchmarks/people_costs.py                       # all shared footage
    .venv/bin/python benchmarks/people_costs.py --frames 4 --files exo_grid_hevc_aac.mp4

Timings depend on the machine and its load: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.config import models_dir  # noqa: E402
from edge.ingest.memory_writer import Deferred  # noqa: E402
from edge.ingest.run import find_media, ingest_paths  # noqa: E402
from edge.people import tier as people_tier  # noqa: E402
from edge.people.rebuild import rebuild_people  # noqa: E402
from edge.store import Memory  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402

STAGES = ("decode", "asr", "caption", "voices", "faces", "people", "embed", "store")


def measure(hub, path: Path) -> dict:
    """Ingest ``path`` into a fresh memory (real-time tier); its stage seconds, the face
    embedder's split, the people found and the re-clustering's seconds."""
    before = dict(hub.faces.seconds)
    with tempfile.TemporaryDirectory() as d, Memory(Path(d) / "m.db") as m:
        cpu, t0 = time.process_time(), time.perf_counter()
        report = ingest_paths(m, hub, [path], deferred=Deferred())
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu
        rebuild = rebuild_people(m)
        people = m.persons()
    return {"file": path.name, "media_seconds": report.media_seconds, "wall": wall,
            "cpu": cpu, "stages": {k: v["seconds"] for k, v in report.stages.items()},
            "face_steps": {k: hub.faces.seconds[k] - before[k] for k in before},
            "people": len(people), "appearances": sum(p.faces + p.voices for p in people),
            "rebuild_seconds": rebuild.seconds}


def table(rows: list[dict]) -> list[str]:
    """Markdown: per file and in total, each stage's RTF and the face steps' seconds."""
    head = ("| file | s | RTF all | " + " | ".join(STAGES) + " | detect s | align s | "
            "describe s | people | rebuild s |")
    lines = [head, "|" + "---|" * (8 + len(STAGES))]
    total = {"file": "**all**", "media_seconds": 0.0, "wall": 0.0, "stages": {},
             "face_steps": {}, "people": 0, "rebuild_seconds": 0.0}
    for r in rows:
        total["media_seconds"] += r["media_seconds"]
        total["wall"] += r["wall"]
        total["people"] += r["people"]
        total["rebuild_seconds"] += r["rebuild_seconds"]
        for key in ("stages", "face_steps"):
            for k, v in r[key].items():
                total[key][k] = total[key].get(k, 0.0) + v
    for r in [*rows, total]:
        media = r["media_seconds"] or float("nan")
        rt = sum(r["stages"].get(s, 0.0) for s in STAGES)
        cells = [f"{r['stages'].get(s, 0.0) / media:.4f}" for s in STAGES]
        steps = [f"{r['face_steps'].get(k, 0.0):.2f}" for k in ("detect", "align", "describe")]
        lines.append(f"| {r['file']} | {r['media_seconds']:.0f} | {rt / media:.3f} | "
                     + " | ".join(cells) + " | " + " | ".join(steps)
                     + f" | {r['people']} | {r['rebuild_seconds']:.2f} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--footage", type=Path, default=ROOT.parent / "shared/data/footage")
    ap.add_argument("--files", nargs="*", default=None)
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--frames", type=int, default=people_tier.FACE_FRAMES,
                    help="frames searched for faces per clip")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/people_costs.json")
    args = ap.parse_args()
    people_tier.FACE_FRAMES = args.frames  # read by PeopleTier.for_hub at each ingest
    hub = ModelHub(load_manifest().profile(args.profile), models_dir())
    hub.captioner, hub.embedder, hub.transcriber, hub.faces, hub.voices  # noqa: B018
    files = [args.footage / f for f in args.files] if args.files else find_media([args.footage])
    rows = []
    for f in files:
        rows.append(measure(hub, f))
        print(json.dumps(rows[-1]), flush=True)
    lines = table(rows)
    print("\n".join(lines))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"frames": args.frames, "profile": args.profile,
                                    "rows": rows}, indent=2))
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
