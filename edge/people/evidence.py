"""What repeated co-occurrence says (pure: clip sets and times in, decisions out): a face
identity and a voice identity that keep meeting — the face on screen while the voice speaks,
in clip after clip — are one person (M3-Agent links a face and a voice that co-occur), and a
name said again and again while only one face is on screen is that face's name — a
suggestion only, never applied without the user (Frigate's face library is taught by its
user, not by guesses)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

MIN_CLIPS = 3
"""Clips of repeated evidence a join or a name suggestion needs."""
ON_SCREEN_MARGIN = 3.0
"""Seconds a face counts as on screen before its first and after its last sighting in a
clip: half the gap between the frames the character tier reads (6 of a 30 s clip, about 6 s
apart; ``edge.people.tier.FACE_FRAMES``)."""
SHARE = 0.6
"""Of each side's clips, the share the co-occurrence must cover to join a face and a voice:
the wearer's own voice, heard beside every face, covers a small share of each face's."""


Spans = Mapping[int, Sequence[tuple[float, float]]]
"""``{clip id: [(t, t_end), ...]}``: when an identity was seen or heard in each clip."""


def together(face: Spans, voice: Spans, margin: float = ON_SCREEN_MARGIN) -> set[int]:
    """The clips in which a voice turn of ``voice`` overlaps a sighting span of ``face``
    widened by ``margin`` seconds on each side: the face on screen while the voice spoke."""
    return {clip for clip in face.keys() & voice.keys()
            if any(a - margin < y and x < b + margin
                   for a, b in face[clip] for x, y in voice[clip])}


def face_voice_pairs(face_spans: Mapping[int, Spans], voice_spans: Mapping[int, Spans], *,
                     min_clips: int = MIN_CLIPS, share: float = SHARE,
                     margin: float = ON_SCREEN_MARGIN) -> list[tuple[int, int]]:
    """``(face identity, voice identity)`` pairs to join: ``face_spans`` and
    ``voice_spans`` map identities with only faces, and only voices, to when they were
    seen or heard in each clip (:data:`Spans`). They meet in a clip when the voice speaks
    while the face is on screen (:func:`together`; the same clip at other moments does not
    count). A pair joins when they meet in at least ``min_clips`` clips, at least ``share``
    of each one's clips, and the voice meets no rival face as often as half of that (a voice
    heard beside two faces alike is left alone). Each identity joins at most once, the
    closest pairs first (the clips they meet in over all the clips of either: the wearer's
    voice, heard beside a face as often as that face's own voice but in other clips too,
    comes second)."""
    face_clips = {f: set(s) for f, s in face_spans.items()}
    scored = []
    for v, spans in voice_spans.items():
        vc = set(spans)
        counts = sorted(((len(together(face_spans[f], spans, margin)), f)
                         for f, fc in face_clips.items() if vc & fc), reverse=True)
        counts = [c for c in counts if c[0]]
        if not counts:
            continue
        n, f = counts[0]
        rival = counts[1][0] if len(counts) > 1 else 0
        if n >= min_clips and n >= share * len(vc) and n >= share * len(face_clips[f]) \
                and 2 * rival < n:
            scored.append((n / len(vc | face_clips[f]), n, f, v))
    pairs, used = [], set()
    for _j, _n, f, v in sorted(scored, key=lambda s: (-s[0], -s[1], s[2], s[3])):
        if ("f", f) in used or ("v", v) in used:
            continue
        used |= {("f", f), ("v", v)}
        pairs.append((f, v))
    return pairs


def suggested_names(clip_faces: Mapping[int, set[int]], clip_names: Mapping[int, set[str]],
                    *, taken: set[str] = frozenset(), min_clips: int = MIN_CLIPS
                    ) -> dict[int, tuple[str, int]]:
    """``{identity: (name, clips)}``: for each face identity, the name said (in the
    captions or transcript: the entity index's proper names, ``clip_names``) in at least
    ``min_clips`` of the clips where it was the only face on screen (``clip_faces``: clip →
    face identities), more often than any other name there; names in ``taken`` (lowercased:
    already given to someone) are never suggested."""
    counts: dict[int, Counter] = {}
    for clip, faces in clip_faces.items():
        if len(faces) != 1:
            continue
        (ident,) = faces
        for name in clip_names.get(clip, ()):
            if name.lower() not in taken:
                counts.setdefault(ident, Counter())[name] += 1
    out = {}
    for ident, c in counts.items():
        ranked = c.most_common(2)
        name, n = ranked[0]
        if n >= min_clips and (len(ranked) == 1 or ranked[1][1] < n):
            out[ident] = (name, n)
    return out
