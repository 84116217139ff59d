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
    """The four MERIT keys of a clip; ``origin`` is ``llm``, ``extractive`` or ``file``."""

    event: str
    dialogue: str
    object: str
    summary: str
    origin: str

    def as_dict(self) -> dict[str, str]:
        return {"event": self.event, "dialogue": self.dialogue, "object": self.object,
                "summary": self.summary}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?。])\s+", text) if s.strip()]


def extractive_keys(caption: str) -> ClipKeys:
    """Keys cut from the caption itself, without a model (the marked fallback)."""
    sents = _sentences(caption) or [caption.strip() or "(empty clip)"]
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
    """Four MERIT keys for ``caption`` from the memory LLM (one schema-constrained call).

    Falls back to :func:`extractive_keys` (``origin="extractive"``) when the model's output
    is invalid twice or the caption does not fit the context.
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
                            max_tokens=max_tokens)
    except (LLMOutputError, ContextOverflowError):
        return extractive_keys(caption)
    clean = {k: " ".join(str(obj[k]).replace("_", " ").split()) for k in KEY_SCHEMA["required"]}
    if not all(clean.values()):
        return extractive_keys(caption)
    return ClipKeys(**clean, origin="llm")
