"""Which LLM should extract MERIT keys on the device? Speed and quality per model.

For N captions of the shared EgoLife day (evenly spaced), each model extracts the four keys
with the production prompt and schema: ``--call keys`` the keys-only call
(``edge.build.keys.extract_keys``, ``edge ingest --no-pyramid``), ``--call clip`` the pyramid's
per-clip call that also writes the fact nodes (``edge.build.pyramid.extract_clip_memory``, what
``edge build`` runs by default). ``--grammar`` picks when llama.cpp's JSON grammar
constrains the reply (``models.llama_chat.LlamaCppLLM``). Quality is agreement
with the file's reference keys (written by GPT-5-mini in the MERIT repository): the cosine
similarity of MiniLM embeddings, per key type. Also reported: the share of calls that gave
valid JSON (the rest fall back to extractive keys), the calls, tokens evaluated and
generated per caption (a second call is a retry under the grammar, or a repair), and the
median seconds per caption.

    .venv/bin/python benchmarks/keys_models.py --n 20 \
        --models smollm2-135m-instruct qwen2.5-coder-0.5b-instruct
    .venv/bin/python benchmarks/keys_models.py --n 24 --call clip \
        --models qwen2.5-coder-1.5b-instruct --grammar always

Writes ``benchmarks/results/keys_models.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.build.keys import extract_keys  # noqa: E402
from edge.build.pyramid import extract_clip_memory  # noqa: E402
from edge.config import models_dir  # noqa: E402
from edge.ingest.captions import read_caption_file  # noqa: E402
from edge.store import KEY_TYPES  # noqa: E402
from models import ModelHub, Profile, load_manifest  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--captions", type=Path,
                    default=ROOT.parent / "shared/data/egolife/A1_JAKE_day1_captions.json")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--models", nargs="+",
                    default=["smollm2-135m-instruct", "qwen2.5-coder-0.5b-instruct"])
    ap.add_argument("--call", choices=["keys", "clip"], default="keys",
                    help="keys: the keys-only call; clip: the pyramid's per-clip call")
    ap.add_argument("--grammar", choices=["on_failure", "always"], default="on_failure",
                    help="when the JSON grammar constrains the reply (default: the product's)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/keys_models.json")
    args = ap.parse_args()

    records = read_caption_file(args.captions)
    step = max(1, len(records) // args.n)
    sample = records[::step][: args.n]
    manifest = load_manifest()
    embed_hub = ModelHub(manifest.profile("tiny"), models_dir())
    embedder = embed_hub.embedder
    ref = {k: embedder.embed([r.keys[k] for r in sample]) for k in KEY_TYPES}

    results = []
    for name in args.models:
        spec = manifest.model(name)
        hub = ModelHub(Profile("bench", "", {"memory_llm": spec}), models_dir())
        t_load = time.perf_counter()
        llm = hub.llm("memory_llm")
        llm.grammar = args.grammar
        load_s = time.perf_counter() - t_load
        secs, keys, facts = [], [], []
        for r in sample:
            t0 = time.perf_counter()
            if args.call == "clip":
                cm = extract_clip_memory(llm, r.text, t_start=r.t_start, t_end=r.t_end)
                keys.append(cm.keys)
                facts.append(len(cm.facts))
            else:
                keys.append(extract_keys(llm, r.text))
            secs.append(time.perf_counter() - t0)
            print(f"  {name}: caption {len(secs)}/{len(sample)} {secs[-1]:.1f} s "
                  f"({keys[-1].origin})", file=sys.stderr, flush=True)
        valid = sum(k.origin == "llm" for k in keys) / len(keys)
        cos = {}
        for kt in KEY_TYPES:
            got = embedder.embed([getattr(k, kt) for k in keys])
            cos[kt] = float(np.mean(np.sum(got * ref[kt], axis=1)))
        usage = hub.usage.summary()
        n = len(sample)
        results.append({
            "model": name, "call": args.call, "grammar": args.grammar,
            "captions": n, "load_s": round(load_s, 2),
            "median_s_per_caption": round(statistics.median(secs), 2),
            "valid_json": round(valid, 3),
            "cosine_to_reference": {k: round(v, 3) for k, v in cos.items()},
            "mean_cosine": round(float(np.mean(list(cos.values()))), 3),
            "tokens_in": usage["tokens_in"], "tokens_out": usage["tokens_out"],
            "calls_per_caption": round(usage["calls"] / n, 3),
            "tokens_evaluated_per_caption": round(usage["tokens_evaluated"] / n, 1),
            "tokens_out_per_caption": round(usage["tokens_out"] / n, 1),
            "facts_per_caption": round(sum(facts) / n, 2) if facts else None,
            "examples": [k.as_dict() for k in keys[:3]],
        })
        hub.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"results": results, "captions": str(args.captions)},
                                   indent=2, ensure_ascii=False))
    print("| model | call | grammar | s/caption (median) | calls | evaluated | out | valid JSON "
          "| event | dialogue | object | summary | mean cos |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        c = r["cosine_to_reference"]
        print(f"| {r['model']} | {r['call']} | {r['grammar']} | {r['median_s_per_caption']} | "
              f"{r['calls_per_caption']} | {r['tokens_evaluated_per_caption']} | "
              f"{r['tokens_out_per_caption']} | {r['valid_json']:.0%} | "
              f"{c['event']} | {c['dialogue']} | {c['object']} | {c['summary']} | "
              f"{r['mean_cosine']} |")
    print(f"\nwritten {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
