"""Which width of EmbeddingGemma's Matryoshka vectors to store (issue 25): hit rate, ms per
query and bytes per clip, from ONE embedding pass.

EmbeddingGemma is trained so that the first 512/256/128 values of its 768-d vector, cut and
re-normalised, are vectors of their own. So a memory embedded once at 768-d gives every
narrower width without running the model again: this copies the memory (SQLite backup),
re-embeds each copy into a vector space of the cut width through the product's own
re-embedding path (:meth:`edge.store.Memory.start_reembed` / ``add_reembedded`` /
``finish_reembed``, the vectors cut from the 768-d ones instead of a model call), then runs
``edge bench qa`` on each copy with a user profile whose embedder is the same GGUF at that
width. Bytes per clip: the copy's file size after VACUUM, per clip.

    .venv/bin/edge --profile small bench qa --questions hard --split dev \\
        --memory /tmp/days-gemma768.db                 # the 768-d memory, once
    PYTHONPATH=$PWD .venv/bin/python benchmarks/embedder_dims.py /tmp/days-gemma768.db \\
        --dims 512,256,128 --split dev

Writes ``benchmarks/results/embedder_dims_<split>.json`` and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.store import Memory  # noqa: E402

MODEL = "embeddinggemma-300m"


def cut_copy(src: Path, dim: int, name: str) -> Path:
    """A copy of the memory ``src`` whose vectors are its 768-d ones cut to ``dim`` and
    re-normalised, in a vector space of the embedder ``name``; VACUUMed."""
    dst = src.with_name(f"{src.stem}-{dim}.db")
    for p in (dst, Path(f"{dst}-wal"), Path(f"{dst}-shm")):
        p.unlink(missing_ok=True)
    with Memory(src, create=False) as m:
        full = m.vector_space()
        m.backup_to(dst)

    def cut(table: str, id_col: str, ids: list[int]) -> np.ndarray:
        if not ids:
            return np.zeros((0, dim), np.float32)
        marks = ",".join("?" * len(ids))
        rows = dict(m.db.execute(f"SELECT {id_col}, embedding FROM {table} WHERE {id_col} "
                                 f"IN ({marks})", ids))
        v = np.stack([np.frombuffer(rows[i], np.float32)[:dim] for i in ids])
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    with Memory(dst) as m:
        space = m.start_reembed(name, dim)
        while True:
            keys, facts = m.reembed_todo(space, 2048)
            if not keys and not facts:
                break
            space = m.add_reembedded(space, keys, cut(full.key_table, "key_id",
                                                      [k.id for k in keys]),
                                     facts, cut(full.fact_table, "fact_id",
                                                [f.id for f in facts]))
        assert m.finish_reembed() is not None
        m.db.execute("VACUUM")
    return dst


def profiles_file(dims: list[int], folder: Path) -> Path:
    """A user profiles file with one model and one profile per width: ``eg<dim>`` (the
    shipped GGUF and prompts at ``dim``) and ``small-<dim>`` (small with that embedder)."""
    from models import load_manifest

    spec = load_manifest().model(MODEL)
    from edge.config import models_dir

    lines = []
    for d in dims:
        lines += [f'[models."eg{d}"]', 'backend = "llama.cpp-embedder"', 'source = "path"',
                  f'path = "{models_dir() / spec.option("file")}"', f"dim = {d}",
                  f'max_tokens = {spec.option("max_tokens")}',
                  f'query_prefix = "{spec.option("query_prefix")}"',
                  f'document_prefix = "{spec.option("document_prefix")}"', "",
                  f'[profiles."small-{d}"]', 'base = "small"', f'[profiles."small-{d}".roles]',
                  f'embedder = "eg{d}"', ""]
    path = folder / "profiles.toml"
    path.write_text("\n".join(lines))
    return path


def bench(memory: Path, profile: str, split: str, env: dict | None, out: Path,
          flags: list[str] = ()) -> dict:
    """``edge bench qa`` of the hard set's ``split`` on ``memory`` with ``profile`` and the
    extra bench ``flags`` (``--set KEY=VALUE`` …); its JSON result."""
    subprocess.run([str(ROOT / ".venv/bin/edge"), "--profile", profile, "bench", "qa",
                    "--questions", "hard", "--split", split, "--memory", str(memory),
                    "--out", str(out), *flags], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def summary(result: dict) -> dict:
    """hit@5 Δ2 alone / with options, all Δ2 alone, nDCG@10 alone, ms p50 alone / with
    options, and the multi-day part's hit alone / with options (``None`` for a mode the
    result does not hold)."""
    r = result["retrieval"]

    def get(mode: str, key: str, part: str | None = None):
        if mode not in r:
            return None
        tot = r[mode]["total"] if part is None else r[mode]["by_part"].get(part, {})
        return tot.get(key)

    return {"hit2_alone": get("question", "hit@Δ2"), "hit2_options": get("choices", "hit@Δ2"),
            "all2_alone": get("question", "all@Δ2"), "ndcg10_alone": get("question", "nDCG@10"),
            "multi_alone": get("question", "hit@Δ2", "multi-day"),
            "multi_options": get("choices", "hit@Δ2", "multi-day"),
            "ms_p50_alone": get("question", "ms_median"),
            "ms_p50_options": get("choices", "ms_median")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("memory", type=Path, help="a memory embedded at 768-d by " + MODEL)
    ap.add_argument("--dims", default="512,256,128")
    ap.add_argument("--split", default="dev", choices=["dev", "test"])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    dims = [int(d) for d in args.dims.split(",")]
    with Memory(args.memory, create=False) as m:
        space = m.vector_space()
        clips = m.count_clips()
    if (space.embedder, space.dim) != (MODEL, 768):
        raise SystemExit(f"{args.memory}: its vectors are {space.embedder}'s at {space.dim}-d")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "EDGE_PROFILES": str(profiles_file(dims, Path(tmp)))}
        for d in [768, *dims]:
            memory = args.memory if d == 768 else cut_copy(args.memory, d, f"eg{d}")
            profile = "small" if d == 768 else f"small-{d}"
            res = bench(memory, profile, args.split, env, Path(tmp) / f"{d}.json")
            size = memory.stat().st_size
            rows.append({"dim": d, "bytes_per_clip": round(size / clips),
                         "vector_bytes_per_clip": 5 * d * 4, **summary(res)})
            print(json.dumps(rows[-1]), flush=True)
    out = args.out or ROOT / "benchmarks" / "results" / f"embedder_dims_{args.split}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"memory": str(args.memory), "clips": clips, "rows": rows},
                              indent=1))
    print("\n".join(table(rows, "dim", extra=("bytes/clip (file)", "bytes_per_clip"))))
    return 0


def table(rows: list[dict], first: str, extra: tuple[str, str] | None = None, *,
          ms_options: bool = False) -> list[str]:
    """Markdown lines of :func:`summary` rows: the ``first`` key's value, hit@5(±2) alone /
    with the options, the multi-day part of each, all ±2 alone, nDCG@10, ms p50 (alone, and
    with the options when ``ms_options``), and an ``extra`` ``(header, key)`` column
    (thousands separated). A value a row lacks is ``–``."""
    def cell(v, fmt: str = "") -> str:
        return "–" if v is None else format(v, fmt)

    head = [first, "hit@5 Δ2 alone / options", "multi-day alone / options", "all Δ2 alone",
            "nDCG@10", "ms p50" + (" alone / options" if ms_options else ""),
            *([extra[0]] if extra else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ms = cell(r["ms_p50_alone"]) + (f" / {cell(r['ms_p50_options'])}" if ms_options else "")
        cells = [cell(r[first]), f"{cell(r['hit2_alone'])} / {cell(r['hit2_options'])}",
                 f"{cell(r['multi_alone'])} / {cell(r['multi_options'])}",
                 cell(r["all2_alone"]), cell(r["ndcg10_alone"]), ms,
                 *([cell(r[extra[1]], ",")] if extra else [])]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    sys.exit(main())
