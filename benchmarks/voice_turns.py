"""How well speaker turns are found and named on stitched conversations of the shared
LibriSpeech speakers (issue 43), with and without joining fragments again
(:func:`models.voice_turns.join_fragments`, :data:`models.voice_turns.REJOIN`).

Random triples of the ten speakers: utterances 3–5 of each, cut into 2.5/3.5/4.5 s pieces,
taken in turns with 0.3 s gaps and cut into three ASR-like segments
(``tests/test_voices.py``'s ``_stitch``); the speakers are enrolled from utterances 0–2. Per
setting: the share of true changes found within 0.8 s, of turns nearest the right enrolled
speaker and above ``VOICE_MATCH`` to it, each turn's purity (its share spoken by its
speaker), and turns per true turn. Writes ``benchmarks/results/voice_turns.json``.

    .venv/bin/python benchmarks/voice_turns.py            # 16 triples, rejoin 0.65 / off / 0.7
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import models.voice_turns as vt  # noqa: E402
from edge.config import models_dir  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402
from models.voice_features import VOICE_MATCH, cosine, load_audio_file, mean_vector  # noqa: E402
from tests.test_voices import LIBRISPEECH, _speaker_at, _stitch  # noqa: E402


def measure(encoder, utterances: dict, enrolled: dict, triples: list) -> dict:
    """The shares above over ``triples`` with the current :data:`vt.REJOIN`."""
    n = dict(changes=0, found=0, turns=0, right=0, named=0, truth=0, purity=0.0)
    for trip in triples:
        wav, truth, segments = _stitch(utterances, trip)
        turns = encoder.speaker_turns(wav, segments)
        changes = [(p[1] + q[0]) / 2 for p, q in zip(truth, truth[1:])]
        found = [t.start for t in turns[1:]]
        n["changes"] += len(changes)
        n["found"] += sum(min(abs(f - c) for f in found) <= 0.8 for c in changes)
        n["turns"] += len(turns)
        n["truth"] += len(truth)
        for t in turns:
            true = _speaker_at(truth, t.start, t.end)
            best = max(enrolled, key=lambda e: cosine(t.vector, enrolled[e]))
            n["right"] += best == true
            n["named"] += best == true and cosine(t.vector, enrolled[best]) > VOICE_MATCH
            spoken = sum(max(0.0, min(e, t.end) - max(s, t.start))
                         for s, e, who in truth if who == true)
            n["purity"] += spoken / (t.end - t.start)
    return {"changes_found_0.8s": round(n["found"] / n["changes"], 3),
            "turns_right": round(n["right"] / n["turns"], 3),
            "turns_named": round(n["named"] / n["turns"], 3),
            "purity": round(n["purity"] / n["turns"], 3),
            "turns_per_true_turn": round(n["turns"] / n["truth"], 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--triples", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rejoin", type=float, nargs="*", default=[0.65, 2.0, 0.7],
                    help="REJOIN settings to compare (2.0 = never join)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/voice_turns.json")
    a = ap.parse_args()
    manifest = load_manifest()
    encoder = ModelHub(manifest.profile("tiny"), models_dir(), manifest=manifest).voices
    utterances = {p.name: [load_audio_file(f) for f in sorted(p.glob("*.flac"))]
                  for p in sorted(LIBRISPEECH.iterdir()) if p.is_dir()}
    enrolled = {s: mean_vector([encoder.embed_utterance(w) for w in ws[:3]])
                for s, ws in utterances.items()}
    rng = random.Random(a.seed)
    triples = [tuple(rng.sample(sorted(utterances), 3)) for _ in range(a.triples)]
    results = {}
    for r in a.rejoin:
        vt.REJOIN = r  # read by join_fragments at each call
        results[str(r)] = measure(encoder, utterances, enrolled, triples)
        print(f"rejoin {r}: {results[str(r)]}", flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"triples": triples, "seed": a.seed, "results": results},
                                indent=1))
    print(f"written {a.out}")


if __name__ == "__main__":
    main()
