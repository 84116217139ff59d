"""What faces cost on the shared footage: detection per frame at each detector size and
upsampling, alignment and descriptor per face, and what a 30 s clip costs with faces run
on N of its frames (models/faces.py).

Frames come from the project's decoder (``edge.ingest.media.iter_clips``, 1 fps, long side
1280 as ``edge ingest`` samples them), downscaled to the size the character tier gives the
embedder (``--side``, default 640). Each setting's detector runs on every frame; faces are
aligned and described once. Wall-clock and CPU seconds are both reported: on a machine
shared with other work the CPU seconds are what one free core would take.

    .venv/bin/python benchmarks/face_cost.py                     # all shared footage
    .venv/bin/python benchmarks/face_cost.py --files ego_classroom_vfr_audio.mp4 --frames 10

Writes ``benchmarks/results/face_cost.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.ingest.media import iter_clips, probe  # noqa: E402
from edge.ingest.run import find_media  # noqa: E402
from models.faces import FaceEmbedder  # noqa: E402
from models.vision import downscale  # noqa: E402

SETTINGS = [(480, 0), (640, 0), (960, 0), (640, 1)]
"""(detect_side, upsample) pairs measured: the smallest face found is about
80 / 2**upsample px at detect_side (the frame resized to it)."""


def sample_frames(files: list[Path], side: int) -> list:
    """Every 1 fps frame of ``files`` (BGR), downscaled to ``side`` px on the long side."""
    frames = []
    for path in files:
        info = probe(path)
        for span in iter_clips(info, clip_seconds=30.0):
            frames.extend(downscale(f.image, side) for f in span.frames)
    return frames


def timed(fn, *args) -> tuple[object, float, float]:
    """``(result, wall seconds, CPU seconds)`` of ``fn(*args)``."""
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - w, time.process_time() - c


def measure(frames: list, n_frames: int) -> dict:
    """Detection per frame per setting, then align/describe per face at 640 up 1."""
    emb = FaceEmbedder()
    rows = []
    for side, up in SETTINGS:
        emb.detect_side, emb.upsample = side, up
        emb.seconds = dict.fromkeys(emb.seconds, 0.0)
        emb.counts = dict.fromkeys(emb.counts, 0)
        _faces, wall, cpu = timed(lambda: [f for im in frames for f in emb.faces(im)])
        det = emb.seconds["detect"] / len(frames)
        align = emb.seconds["align"] / max(1, emb.counts["faces"])
        describe = emb.seconds["describe"] / max(1, emb.counts["descriptors"])
        rows.append({"detect_side": side, "upsample": up, "frames": len(frames),
                     "faces": emb.counts["faces"], "usable": emb.counts["descriptors"],
                     "detect_s": round(det, 4), "align_s_per_face": round(align, 4),
                     "describe_s_per_face": round(describe, 4),
                     "cpu_s_per_frame": round(cpu / len(frames), 4),
                     "wall_s_per_frame": round(wall / len(frames), 4),
                     "clip_s": round(n_frames * wall / len(frames), 3),
                     "clip_cpu_s": round(n_frames * cpu / len(frames), 3),
                     "rtf": round(n_frames * wall / len(frames) / 30.0, 4)})
    return {"settings": rows, "frames_per_clip": n_frames, "per_face": per_face(emb)}


def per_face(emb: FaceEmbedder, runs: int = 20) -> dict:
    """CPU and wall seconds of one descriptor (the ResNet on an aligned chip) and of the
    whole pipeline on a 640×512 photo with one face, averaged over ``runs``."""
    import cv2

    photo = cv2.imread(str(ROOT.parent / "shared/data/faces/obama_1.jpg"))
    photo = downscale(photo, 640)
    emb.detect_side, emb.upsample = 640, 0
    crop = emb.faces(photo)[0].crop
    _, d_wall, d_cpu = timed(lambda: [emb.describe(crop) for _ in range(runs)])
    _, p_wall, p_cpu = timed(lambda: [emb.faces(photo) for _ in range(runs)])
    return {"describe_wall_s": round(d_wall / runs, 4), "describe_cpu_s": round(d_cpu / runs, 4),
            "photo_wall_s": round(p_wall / runs, 4), "photo_cpu_s": round(p_cpu / runs, 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--footage", type=Path, default=ROOT.parent / "shared/data/footage")
    ap.add_argument("--files", nargs="*", default=None)
    ap.add_argument("--side", type=int, default=640, help="frames given to the embedder (px)")
    ap.add_argument("--frames", type=int, default=10, help="frames per 30 s clip (N)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/face_cost.json")
    args = ap.parse_args()
    files = ([args.footage / f for f in args.files] if args.files
             else find_media([args.footage]))
    frames = sample_frames(files, args.side)
    res = measure(frames, args.frames) | {"side": args.side,
                                          "files": [f.name for f in files]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2))
    print(f"{len(frames)} frames at {args.side} px; N = {args.frames} frames per 30 s clip\n")
    print("| detect_side | upsample | detect s/frame | faces | usable | align s/face | "
          "describe s/face | CPU s/frame | clip s (N frames) | clip CPU s | RTF |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in res["settings"]:
        print(f"| {r['detect_side']} | {r['upsample']} | {r['detect_s']:.3f} | {r['faces']} | "
              f"{r['usable']} | {r['align_s_per_face']:.3f} | {r['describe_s_per_face']:.3f} | "
              f"{r['cpu_s_per_frame']:.3f} | {r['clip_s']:.2f} | {r['clip_cpu_s']:.2f} | "
              f"{r['rtf']:.4f} |")
    pf = res["per_face"]
    print(f"\none descriptor: {pf['describe_cpu_s']:.3f} s CPU ({pf['describe_wall_s']:.3f} s "
          f"wall); a 640x512 photo with one face, end to end: {pf['photo_cpu_s']:.3f} s CPU "
          f"({pf['photo_wall_s']:.3f} s wall)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
