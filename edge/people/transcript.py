"""A clip's transcript with who spoke: ``Alice: shall we leave at six?`` lines from its voice
appearances (:meth:`edge.store.Memory.speakers_of`).

The clip's stored ``transcript`` stays the plain words (what BM25, the keys, the entity index
and the answer loop's quotes read); the speakers live in the appearances, so naming, merging
or forgetting a person changes these lines at once and leaves no name behind in the text
indexes."""

from __future__ import annotations

from collections.abc import Sequence


def speaker_lines(turns: Sequence, *, unnamed: str = "person {id}") -> list[str]:
    """``"NAME: words"`` per voice turn (:class:`edge.store.people_read.Appearance`, in time
    order), consecutive turns of one speaker joined; an unnamed speaker is
    ``unnamed.format(id=...)``; turns without words are left out."""
    lines: list[tuple[int, str, list[str]]] = []
    for t in turns:
        if not t.text.strip():
            continue
        who = t.name or unnamed.format(id=t.identity_id)
        if lines and lines[-1][0] == t.identity_id:
            lines[-1][2].append(t.text.strip())
        else:
            lines.append((t.identity_id, who, [t.text.strip()]))
    return [f"{who}: {' '.join(words)}" for _, who, words in lines]


def clip_transcript(memory, clip) -> str:
    """The clip's transcript with its speakers, one line per turn (:func:`speaker_lines`),
    or its plain ``transcript`` when no voice in it was recognised."""
    lines = speaker_lines(memory.speakers_of(clip.id))
    return "\n".join(lines) if lines else clip.transcript
