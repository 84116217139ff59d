"""Split transcript segments where the speaker changes (:meth:`VoiceEncoder.speaker_turns`).

A transcript segment is what the ASR heard between pauses, and people answer each other
within half a second, so one segment may hold two voices. Every :data:`TURN_STEP` seconds
of a segment's voiced part (its silent ends left out) the 1.6 s before that moment and the
1.6 s after it are embedded (GE2E partials; at the segment's ends a side is cut to the
segment, never under :data:`EDGE_SECONDS`); where the two sides' cosine dips under
:data:`CHANGE_BELOW`, the segment is split at the dip's centre (:func:`change_points`), and
two changes are at least :data:`MIN_TURN` apart. A segment is first cut to the speech it
holds (Silero VAD, pauses of 1 s or more left out: whisper's segment times may run over a
pause). A turn's vector is the mean of the windows inside it; a turn shorter than a window
takes the vector of the window that overlaps it most. Adjacent turns whose vectors still
match (:data:`models.voice_features.VOICE_MATCH`) are joined again, and so is a fragment
under 3 s with its neighbour above :data:`REJOIN`.

Measured on other utterances of LibriSpeech speakers stitched in turns of 2.5–4.5 s with
0.3 s gaps, cut into three segments (tests/test_voices.py, and 16 random triples of the ten
speakers): 99 % of the changes found within 0.8 s and 95 % within 0.5 s; 92 % of the cuts
are real changes; every turn but one in 250 is closest to the right enrolled speaker (before
fragments were joined again: see :data:`REJOIN` for what that costs).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.voice_features import (
    PARTIAL_SECONDS,
    SAMPLE_RATE,
    SILENCE_DBFS,
    TURN_STEP,
    VOICE_MATCH,
    SpeakerTurn,
    VoiceWindow,
    cosine,
    dbfs,
    mean_vector,
    window_starts,
)

CHANGE_BELOW = 0.6
"""Cosine between the 1.6 s before and after a moment under which the speaker changed
there. Measured on the stitched LibriSpeech: the lowest score at a change 0.29–0.53; more
than 1.6 s from any change 5 % of scores under 0.59–0.68 and the lowest 0.47 (with the
lowest point as the cut, 0.55 and 0.5 found 94 % and 79 % of the changes within 0.8 s,
0.6 97 %)."""
EDGE_SECONDS = 1.2
"""The shortest side window at a segment's end: no change is looked for closer to it (a
0.8 s side, zero-padded to a partial, split off the interview's first 0.8 s)."""
MIN_TURN = 1.2
"""Seconds between two changes at least: a shorter turn's 1.6 s windows hold its neighbours'
voices too (measured with the lowest point as the cut: allowing 0.8 s turns made 7.8 % of
turns fail to match their speaker at 0.8 against 3.1 %, and found no more changes)."""
REJOIN = 0.65
"""Cosine above which a fragment (a turn under :data:`FRAGMENT_SECONDS`) and the adjacent turn
of its segment are joined again (:func:`join_fragments`): a weak dip (0.57–0.6) split Kyle
Gass's 0–5.5 s of the interview into 2.7 s and 2.4 s turns (0.67 to each other, 0.87 and 0.90
to his whole span); joined, the turn is 0.97 to it and starts his identity. On 16 random
triples of the stitched LibriSpeech speakers (``benchmarks/voice_turns.py``), never joining
→ joining at 0.65: changes found within 0.8 s 0.961 → 0.961, turns nearest the right
speaker 1.000 → 1.000, named above VOICE_MATCH 0.898 → 0.897 (before segments were cut to
their speech, :func:`spoken_parts`, it cost 0.965 → 0.952 and 1.000 → 0.987)."""
PAUSE_SECONDS = 1.0
"""A pause at least this long (Silero VAD) ends a stretch of speech: a turn never spans it
(:func:`spoken_parts`). On the 16 stitched triples, cutting segments so (0.3 s gaps: cuts
only where whisper's segment ends run over the audio's silent edges) moved changes found
within 0.8 s 0.952 → 0.961, turns nearest the right speaker 0.987 → 1.000, their purity
0.883 → 0.900, named above VOICE_MATCH 0.910 → 0.897."""
FRAGMENT_SECONDS = 3.0
"""A turn shorter than this is a fragment, joined to a like neighbour (:func:`join_fragments`;
the character tier starts no identity from under 5 s of one voice in a clip,
``edge.people.online.MIN_NEW_SPEECH``)."""


def split_turns(encoder, wav: np.ndarray, segments: Sequence[tuple[float, float]],
                step: float = TURN_STEP) -> list[SpeakerTurn]:
    """The speaker turns of ``segments`` (seconds into ``wav``, 16 kHz mono float32) with
    ``encoder`` (:class:`models.voices.VoiceEncoder`), in time order; silent segments give
    none. Changes are looked for every ``step`` seconds of a segment's voiced part (its
    silent ends left out), at least :data:`EDGE_SECONDS` from its ends; see the module's
    docstring for how."""
    turns: list[SpeakerTurn] = []
    duration = len(wav) / SAMPLE_RATE
    regions = speech_regions(wav)
    for index, (seg_start, seg_end) in enumerate(segments):
        seg_start, seg_end = max(0.0, float(seg_start)), min(duration, float(seg_end))
        for start, end in spoken_parts(seg_start, seg_end, regions):
            voiced = voiced_range(wav, start, end)
            if voiced is None:
                continue
            a, b = voiced
            times = np.arange(a + EDGE_SECONDS, b - EDGE_SECONDS + 1e-6, step)
            scores, windows = side_scores(encoder, wav, a, b, times)
            cuts = change_points(times, scores)
            full = [w for w in windows if w.end - w.start >= PARTIAL_SECONDS - 1e-6]
            if not full:  # too short for a change: one turn from the windows over it
                full = encoder.embed_spans(wav, _windows_over(a, b, duration, step))
            if full:
                turns += join_fragments(join_alike(turns_between([start, *cuts, end], full,
                                                                 index)))
    return turns


def speech_regions(wav: np.ndarray) -> list[tuple[float, float]]:
    """Where ``wav`` (16 kHz mono float32) holds speech, ``(start, end)`` seconds: Silero
    VAD as faster-whisper ships and runs it (``faster_whisper.vad``), a pause of
    :data:`PAUSE_SECONDS` or more ending a region, each padded by 0.2 s. About 0.003 s a
    second of audio on 2 cores (0.36 s for the 128 s interview)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    found = get_speech_timestamps(wav, VadOptions(
        min_silence_duration_ms=int(PAUSE_SECONDS * 1000), speech_pad_ms=200))
    return [(r["start"] / SAMPLE_RATE, r["end"] / SAMPLE_RATE) for r in found]


def spoken_parts(start: float, end: float, regions: Sequence[tuple[float, float]]
                 ) -> list[tuple[float, float]]:
    """A transcript segment ``start``–``end`` (seconds) cut to the speech ``regions`` it
    overlaps (:func:`speech_regions`): whisper's segment times may run over a long pause (a
    3 s sentence stored as 14.0–23.2 s when the next voice starts at 22.4 s), and a turn
    must hold speech, not the silence after it. Parts under 0.05 s are dropped; a segment
    overlapping no region is kept whole (the VAD missed what whisper heard)."""
    parts = [(max(start, a), min(end, b)) for a, b in regions
             if min(end, b) - max(start, a) >= 0.05]
    return parts or [(start, end)]


def voiced_range(wav: np.ndarray, start: float, end: float,
                 block: float = 0.1) -> tuple[float, float] | None:
    """``(start, end)`` seconds narrowed to its first and last ``block`` louder than
    :data:`models.voice_features.SILENCE_DBFS`; ``None`` when it is all silence."""
    n = int(round(block * SAMPLE_RATE))
    a0, b0 = _span(start, end)
    loud = [k for k in range(a0, b0, n) if dbfs(wav[k:min(k + n, b0)]) >= SILENCE_DBFS]
    if not loud:
        return None
    return loud[0] / SAMPLE_RATE, min(end, (loud[-1] + n) / SAMPLE_RATE)


def _windows_over(a: float, b: float, duration: float, step: float) -> list[tuple[int, int]]:
    """Sample spans of 1.6 s windows over ``a``–``b`` every ``step`` seconds, or the one
    window centred on it (within the audio) when it is shorter than a window."""
    size = PARTIAL_SECONDS
    if b - a < size:
        first = max(0.0, min((a + b - size) / 2, duration - size))
        return [_span(first, min(duration, first + size))]
    first, last = _span(a, b)
    n = int(round(size * SAMPLE_RATE))
    return [(first + k, first + k + n)
            for k in window_starts(last - first, n, int(round(step * SAMPLE_RATE)))]


def _span(a: float, b: float) -> tuple[int, int]:
    return int(round(a * SAMPLE_RATE)), int(round(b * SAMPLE_RATE))


def side_scores(encoder, wav, start: float, end: float, times: np.ndarray
                ) -> tuple[np.ndarray, list[VoiceWindow]]:
    """For each moment of ``times`` the cosine between the 1.6 s before it and the 1.6 s
    after it (cut to the segment ``start``–``end``; 1.0 where a side is silent), and the
    windows embedded for it."""
    def side(t: float, before: bool) -> tuple[int, int]:
        return _span(max(start, t - PARTIAL_SECONDS), t) if before else \
            _span(t, min(end, t + PARTIAL_SECONDS))

    spans = sorted({side(t, b) for t in times for b in (True, False)})
    windows = encoder.embed_spans(wav, spans)
    found = {_span(w.start, w.end): w.vector for w in windows}
    scores = np.ones(len(times))
    for k, t in enumerate(times):
        left, right = found.get(side(t, True)), found.get(side(t, False))
        if left is not None and right is not None:
            scores[k] = cosine(left, right)
    return scores, windows


def change_points(times: np.ndarray, scores: np.ndarray,
                  below: float = CHANGE_BELOW, radius: float = MIN_TURN) -> list[float]:
    """Where the speaker changed: for each dip of ``scores`` (the cosine of the audio before
    and after each moment of ``times``, seconds) under ``below`` whose lowest point is the
    lowest within ``radius`` seconds, the dip's centre — the mean of its moments within
    ``radius`` of that point, weighted by how far each is under ``below``. The windows are
    1.6 s wide, so a change makes a broad, flat dip; its lowest point alone wanders."""
    cuts: list[float] = []
    for k, (t, s) in enumerate(zip(times, scores)):
        near = np.abs(times - t) <= radius + 1e-9
        if not (s < below and s <= scores[near].min()):
            continue
        lo = hi = k
        while lo > 0 and scores[lo - 1] < below and t - times[lo - 1] <= radius + 1e-9:
            lo -= 1
        while hi + 1 < len(times) and scores[hi + 1] < below and times[hi + 1] - t <= radius + 1e-9:
            hi += 1
        weight = below - scores[lo:hi + 1]
        centre = float(np.sum(times[lo:hi + 1] * weight) / np.sum(weight))
        if not cuts or centre - cuts[-1] > radius:
            cuts.append(centre)
    return cuts


def turns_between(bounds: list[float], windows: list[VoiceWindow],
                  index: int) -> list[SpeakerTurn]:
    """One turn between each two consecutive ``bounds`` (seconds): the mean of the
    ``windows`` inside it, or the vector of the window overlapping it most. (Keeping the
    windows 0.2–0.4 s off the changes was measured: fewer windows, noisier vectors.)"""
    turns = []
    for a, b in zip(bounds, bounds[1:]):
        inside = [w.vector for w in windows if w.start >= a - 1e-6 and w.end <= b + 1e-6]
        if not inside:
            best = max(windows, key=lambda w: min(w.end, b) - max(w.start, a))
            inside = [best.vector]
        turns.append(SpeakerTurn(a, b, mean_vector(inside), index))
    return turns


def join_alike(turns: list[SpeakerTurn], match: float = VOICE_MATCH) -> list[SpeakerTurn]:
    """``turns`` with each run of adjacent turns whose vectors match (cosine above
    ``match``) joined into one (its vector the length-weighted mean)."""
    out: list[SpeakerTurn] = []
    for t in turns:
        if out and cosine(out[-1].vector, t.vector) > match:
            out[-1] = _joined(out[-1], t)
        else:
            out.append(t)
    return out


def join_fragments(turns: list[SpeakerTurn], match: float | None = None) -> list[SpeakerTurn]:
    """``turns`` (one segment's, in order) with each fragment joined to the adjacent turn
    before it when their vectors' cosine is above ``match`` (default :data:`REJOIN`; the
    joined vector the length-weighted mean): a change point found at a weak dip inside one
    speaker's speech leaves two fragments that start no identity."""
    match = REJOIN if match is None else match
    out: list[SpeakerTurn] = []
    for t in turns:
        p = out[-1] if out else None
        if p is not None and min(p.end - p.start, t.end - t.start) < FRAGMENT_SECONDS \
                and cosine(p.vector, t.vector) > match:
            out[-1] = _joined(p, t)
        else:
            out.append(t)
    return out


def _joined(p: SpeakerTurn, t: SpeakerTurn) -> SpeakerTurn:
    """One turn from ``p`` to ``t``'s end, its vector the length-weighted mean."""
    w = np.array([p.end - p.start, t.end - t.start])
    v = (p.vector * w[0] + t.vector * w[1]) / w.sum()
    return SpeakerTurn(p.start, t.end, (v / np.linalg.norm(v)).astype(np.float32), p.segment)
