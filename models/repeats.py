"""Repeated-phrase loops in generated text (whisper over silence, a small LLM's answer or
search query), cut down to one copy."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)


def norm_words(text: str) -> list[str]:
    """The lowercased words of ``text`` (punctuation and spacing dropped)."""
    return _WORD.findall(text.lower())


def collapse_loops(text: str, *, min_repeats: int = 3, max_ngram: int = 8) -> str:
    """Cut a phrase of 1 to ``max_ngram`` words repeated ``min_repeats`` or more times in a
    row down to one occurrence ("thank you thank you thank you" → "thank you"), the loop
    whisper falls into over silence or music. Text without such a loop is returned as is."""
    tokens = text.split()
    if len(tokens) < min_repeats:
        return text
    keys = [" ".join(norm_words(t)) for t in tokens]
    out: list[str] = []
    i = 0
    changed = False
    while i < len(tokens):
        best = None
        for n in range(1, max_ngram + 1):
            if i + n * min_repeats > len(tokens):
                break
            unit = keys[i:i + n]
            if not any(unit):
                continue
            reps = 1
            while keys[i + reps * n:i + (reps + 1) * n] == unit:
                reps += 1
            if reps >= min_repeats:
                best = (n, reps)
                break
        if best:
            n, reps = best
            out.extend(tokens[i:i + n])
            i += n * reps
            changed = True
        else:
            out.append(tokens[i])
            i += 1
    return " ".join(out) if changed else text
