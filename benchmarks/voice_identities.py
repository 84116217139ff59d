"""How many voice identities the online character tier makes of recordings nobody is
enrolled in (issue 43), by how an identity is compared (its centroid, as shipped, or the
average pairwise distance to its turns) and how much speech starts a new one
(:data:`edge.people.online.MIN_NEW_SPEECH`).

Replays the tier's decisions on real turns: per 30 s clip, the clip's turns are grouped by
speaker (:func:`edge.people.match.group` at ``VOICE_MATCH``, split where turns clearly lean
to different identities: :func:`edge.people.match.split_by_preference`), each group joins
the nearest identity under the threshold (:func:`edge.people.online.linkage`, every
identity compared: the store's 16-vector KNN is left out) or starts one when it spoke long
enough.

- ``interview``: ``voices/interview_three_speakers.mp3`` transcribed and split into turns
  as ``edge ingest`` does (:func:`edge.people.observe.source_turns`). Truth exists for its
  first 25 s only (Kyle 0–5.5 s, Sean 6.5–12 s, Jack 17–25 s); a later turn is labelled with
  the man whose reference span it is nearest — a weak label, so ``mixed`` here is indicative.
- ``libri``: stitched LibriSpeech conversations (``tests/test_voices.py``'s ``_stitch``:
  random triples of the ten speakers, utterances rotated per clip, turns of 2.5–4.5 s), one
  clip each, in three sets (seeds 7, 11, 3; 16, 16, 24 clips).

First, how good a sample of a voice a short turn is: pieces of 2–8 s of each LibriSpeech
speaker's utterances 3–5, the share under ``VOICE_MATCH`` to the centroid of their own
speaker's utterances 0–2.

Per setting: identities made and true speakers, ``mixed`` (share of attributed speech in an
identity whose majority speaker is someone else), ``unattributed`` (share of speech that
joined no identity: a voice too short to start one that matched no one). Writes
``benchmarks/results/voice_identities.json``.

    .venv/bin/python benchmarks/voice_identities.py
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.config import models_dir  # noqa: E402
from edge.people.match import centroid, distances, group, split_by_preference  # noqa: E402
from edge.people.observe import source_turns, turns_in  # noqa: E402
from edge.people.online import PREFER_FLOOR, PREFER_MARGIN, linkage  # noqa: E402
from models import ModelHub, load_manifest  # noqa: E402
from models.voice_features import (  # noqa: E402
    SAMPLE_RATE,
    VOICE_MATCH,
    cosine,
    load_audio_file,
    mean_vector,
)
from tests.test_voices import LIBRISPEECH, _speaker_at, _stitch  # noqa: E402

INTERVIEW = ROOT.parent / "shared" / "data" / "voices" / "interview_three_speakers.mp3"
REFERENCES = {"Kyle": (0.0, 5.5), "Sean": (6.5, 12.0), "Jack": (17.0, 25.0)}


def average(vector, members, enrolled, kind):
    """The alternative: the average pairwise distance to the identity's vectors."""
    return float(distances(vector, members, kind).mean())


def replay(clips, link, min_speech: float) -> dict:
    """The identities the online tier makes of ``clips`` (each a list of ``(seconds, vector,
    truth)`` turns) comparing with ``link``; what each holds."""
    identities: list[tuple[list, dict]] = []  # (vectors, {speaker: seconds})
    lost = total = 0.0
    no_enrolled = np.zeros(0, bool)
    for turns in clips:
        if not turns:
            continue
        vectors = np.stack([v for _, v, _ in turns])

        def preferred(v):
            scored = sorted(((1.0 - link(v, np.stack(vs), np.zeros(len(vs), bool), "voice"), i)
                             for i, (vs, _) in enumerate(identities)), reverse=True)
            if not scored or scored[0][0] < PREFER_FLOOR or (
                    len(scored) > 1 and scored[0][0] - scored[1][0] < PREFER_MARGIN):
                return None
            return scored[0][1]

        labels = split_by_preference(group(vectors, 1.0 - VOICE_MATCH, "voice"),
                                     [preferred(v) for v in vectors], [s for s, _, _ in turns])
        for k in sorted(set(labels.tolist())):
            members = [t for t, lab in zip(turns, labels) if lab == k]
            speech = sum(s for s, _, _ in members)
            total += speech
            c = centroid(vectors[labels == k], "voice")
            scored = [(link(c, np.stack(vs), np.zeros(len(vs), bool) if len(vs) else no_enrolled,
                            "voice"), i) for i, (vs, _) in enumerate(identities)]
            dist, best = min(scored, default=(np.inf, None))
            if best is None or dist >= 1.0 - VOICE_MATCH:
                if speech < min_speech:
                    lost += speech
                    continue
                identities.append(([], {}))
                best = len(identities) - 1
            vs, held = identities[best]
            for s, v, who in members:
                vs.append(v)
                held[who] = held.get(who, 0.0) + s
    kept = sum(sum(h.values()) for _, h in identities)
    mixed = sum(sum(h.values()) - max(h.values()) for _, h in identities)
    speakers = {who for turns in clips for _, _, who in turns}
    return {"identities": len(identities), "speakers": len(speakers),
            "mixed": round(mixed / max(kept, 1e-9), 3),
            "unattributed": round(lost / max(total, 1e-9), 3),
            "held": [{k: round(v, 1) for k, v in h.items()} for _, h in identities]}


def interview_clips(hub) -> list:
    """The interview's turns per 30 s clip, labelled by the nearest reference span."""
    wav = load_audio_file(INTERVIEW)
    refs = {who: hub.voices.embed_utterance(wav[int(a * SAMPLE_RATE):int(b * SAMPLE_RATE)])
            for who, (a, b) in REFERENCES.items()}
    turns = source_turns(hub.voices, wav, hub.transcriber.transcribe(wav))
    clips = []
    for start in np.arange(0.0, len(wav) / SAMPLE_RATE, 30.0):
        clips.append([(t.end - t.start, t.vector,
                       max(refs, key=lambda w: cosine(t.vector, refs[w])))
                      for t in turns_in(turns, start, start + 30.0)])
    return clips


def libri_clips(encoder, utterances: dict, n: int, seed: int) -> list:
    """``n`` stitched conversations of random triples, one clip each."""
    rng = random.Random(seed)
    clips = []
    for _ in range(n):
        trip = tuple(rng.sample(sorted(utterances), 3))
        rotated = {}
        for s, ws in utterances.items():
            k = rng.randrange(len(ws))
            rotated[s] = ws[k:] + ws[:k]
        wav, truth, segments = _stitch(rotated, trip)
        clips.append([(t.end - t.start, t.vector, _speaker_at(truth, t.start, t.end))
                      for t in encoder.speaker_turns(wav, segments)])
    return clips


def short_turns(encoder, utterances: dict) -> dict:
    """``{seconds: share of pieces that long under VOICE_MATCH to their own speaker}``."""
    own = {s: mean_vector([encoder.embed_utterance(w) for w in ws[:3]])
           for s, ws in utterances.items()}
    shares = {}
    for d in (2, 3, 4, 5, 6, 8):
        n, scores = int(d * SAMPLE_RATE), []
        for s, ws in utterances.items():
            scores += [cosine(encoder.embed_utterance(w[i:i + n]), own[s])
                       for w in ws[3:] for i in range(0, len(w) - n + 1, n)]
        shares[str(d)] = {"pieces": len(scores),
                          "under_match": round(float(np.mean(np.array(scores) <= VOICE_MATCH)), 3)}
        print(f"{d} s pieces: {shares[str(d)]}", flush=True)
    return shares


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-speech", type=float, nargs="*", default=[3.0, 4.0, 5.0, 6.0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/voice_identities.json")
    a = ap.parse_args()
    manifest = load_manifest()
    hub = ModelHub(manifest.profile("tiny"), models_dir(), manifest=manifest)
    utterances = {p.name: [load_audio_file(f) for f in sorted(p.glob("*.flac"))]
                  for p in sorted(LIBRISPEECH.iterdir()) if p.is_dir()}
    results: dict = {"short_turns": short_turns(hub.voices, utterances)}
    sets = {"interview": interview_clips(hub)}
    for seed, n in ((7, 16), (11, 16), (3, 24)):
        sets[f"libri_seed{seed}"] = libri_clips(hub.voices, utterances, n, seed)
    for name, clips in sets.items():
        for how, link in (("centroid", linkage), ("average", average)):
            for ms in a.min_speech:
                r = replay(clips, link, ms)
                results.setdefault(name, {}).setdefault(how, {})[str(ms)] = r
                held = f"  {r['held']}" if name == "interview" else ""
                print(f"{name:16} {how:8} {ms:3.0f} s: {r['identities']:2d} identities / "
                      f"{r['speakers']} speakers, mixed {r['mixed']:.3f}, unattributed "
                      f"{r['unattributed']:.3f}{held}", flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"voice_match": VOICE_MATCH, "results": results}, indent=1))
    print(f"written {a.out}")


if __name__ == "__main__":
    main()
