"""What repeated co-occurrence says (pure: clip sets in, decisions out): a face identity and
a voice identity that keep appearing in the same clips are one person (M3-Agent links a face
and a voice that co-occur), and a name said again and again while only one face is on screen
is that face's name — a suggestion only, never applied without the user (Frigate's face
library is taught by its user, not by guesses)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

MIN_CLIPS = 3
"""Clips of repeated evidence a join or a name suggestion needs."""
SHARE = 0.6
"""Of each side's clips, the share the co-occurrence must cover to join a face and a voice:
the wearer's own voice, heard beside every face, covers a small share of each face's."""


def face_voice_pairs(face_clips: Mapping[int, set[int]], voice_clips: Mapping[int, set[int]],
                     *, min_clips: int = MIN_CLIPS, share: float = SHARE
                     ) -> list[tuple[int, int]]:
    """``(face identity, voice identity)`` pairs to join: ``face_clips`` and
    ``voice_clips`` map identities with only faces, and only voices, to the clips they
    appear in. A pair joins when they share at least ``min_clips`` clips, the shared clips
    are at least ``share`` of each one's clips, and the voice has no rival face as strong
    as half of that (a voice heard beside two faces alike is left alone). Each identity
    joins at most once, the closest pairs first (the shared clips over all the clips of
    either: the wearer's voice, heard beside a face as often as that face's own voice but
    in other clips too, comes second)."""
    scored = []
    for v, vc in voice_clips.items():
        counts = sorted(((len(vc & fc), f) for f, fc in face_clips.items() if vc & fc),
                        reverse=True)
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
