"""MERIT multi-key extraction (MERIT §3.3, Eq. 5; prompt after Appendix 0.F, in our words).

One memory-LLM call per clip turns the caption text into four short retrieval keys. The
call is constrained by a JSON schema; if the model still fails, the keys are taken
extractively from the caption and marked ``origin="extractive"`` so nothing is silently
empty and the fallback is visible in the store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from edge.prompts import EXAMPLE_IN, EXAMPLE_OUT, KEY_SCHEMA, KEYS_PROMPT
from models.llm import ContextOverflowError, LLMOutputError


@dataclass(frozen=True)
class ClipKeys:
    """The four MERIT keys of a clip (MERIT Eq. 5): what happens (``event``), what is said
    (``dialogue``), what is seen (``object``) and a one-line ``summary``; each is embedded
    as its own 384-d vector. ``origin`` is ``llm``, ``extractive`` or ``file``."""

    event: str
    dialogue: str
    object: str
    summary: str
    origin: str

    def as_dict(self) -> dict[str, str]:
        """The four keys by type (without ``origin``)."""
        return {"event": self.event, "dialogue": self.dialogue, "object": self.object,
                "summary": self.summary}


def clean_text(text: str) -> str:
    """Model output as one line: underscores to spaces, runs of white space to one space."""
    return " ".join(str(text).replace("_", " ").split())


_SENTENCE_END = r"(?<=[.!?。])\s+"
_SENTENCE_END_OR_QUOTE = r"(?<=[.!?。”\"])\s+"


def split_sentences(text: str, *, after_quotes: bool = False, min_chars: int = 1) -> list[str]:
    """The sentences of a caption, stripped, in order.

    A sentence ends at ``.``, ``!``, ``?`` or ``。`` followed by white space; with
    ``after_quotes`` also at a closing quote (``”`` or ``"``) followed by white space. Pieces
    shorter than ``min_chars`` characters are dropped. The two callers keep their historic
    settings, which differ: MERIT extractive keys split at sentence ends and keep every
    non-empty piece (defaults); PyraVid extractive facts also split after quotes (a quoted
    utterance is its own fact) and drop pieces under 3 characters.
    """
    pattern = _SENTENCE_END_OR_QUOTE if after_quotes else _SENTENCE_END
    pieces = (s.strip() for s in re.split(pattern, text))
    return [s for s in pieces if s and len(s) >= min_chars]


def extractive_keys(caption: str) -> ClipKeys:
    """Keys cut from the caption itself, without a model (the marked fallback,
    ``origin="extractive"``): the first sentence (event), the quoted speech (dialogue), the
    visible text or second sentence (object), the caption's distinct longer words
    (summary); each at most 200 characters (summary 120)."""
    sents = split_sentences(caption) or [caption.strip() or "(empty clip)"]
    quoted = re.findall(r"[\"“]([^\"”]+)[\"”]", caption)
    speech = re.search(r'Speech: "(.*)"', caption)
    dialogue = (speech.group(1) if speech else " ".join(quoted[:2])) or "no speech"
    visible = re.search(r"Visible text: (.*?\.)(?:\s|$)", caption)
    obj = visible.group(1) if visible else sents[min(1, len(sents) - 1)]
    words = re.findall(r"[\w']+", caption.lower())
    summary = " ".join(dict.fromkeys(w for w in words if len(w) > 3))[:120] or sents[0][:120]
    return ClipKeys(sents[0][:200], dialogue[:200], obj[:200], summary, "extractive")


def extract_keys(llm, caption: str, *, max_caption_tokens: int = 1500,
                 max_tokens: int = 300) -> ClipKeys:
    """Four MERIT keys for ``caption`` from the memory LLM (MERIT Eq. 5): one call with role
    ``memory_llm``, validated against :data:`edge.prompts.KEY_SCHEMA`, the caption cut to
    ``max_caption_tokens``.

    Falls back to :func:`extractive_keys` (``origin="extractive"``) when the model's output
    is invalid twice (the call and its retry), a key comes back empty, or the caption does
    not fit the context. Raises nothing for bad model output; the backend's setup errors
    (:data:`edge.errors.MODEL_ERRORS`) propagate.
    """
    text = llm.truncate(caption, max_caption_tokens)
    messages = [
        {"role": "system", "content": KEYS_PROMPT},
        {"role": "user", "content": f"Description: {EXAMPLE_IN}"},
        {"role": "assistant", "content": EXAMPLE_OUT},
        {"role": "user", "content": f"Description: {text}"},
    ]
    try:
        obj = llm.chat_json(messages, role="memory_llm", schema=KEY_SCHEMA,
                            max_tokens=max_tokens, keep_prefix=True)
    except (LLMOutputError, ContextOverflowError):
        return extractive_keys(caption)
    clean = {k: clean_text(obj[k]) for k in KEY_SCHEMA["required"]}
    if not all(clean.values()):
        return extractive_keys(caption)
    return ClipKeys(**clean, origin="llm")
