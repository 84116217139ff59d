"""The per-clip PyraVid call: a clip's keys, fact nodes and clip node from its caption
(PyraVid App. B.1 extraction; MERIT Eq. 5 keys), or the marked extractive fallback.

To keep the reply short on the device (issue 13), the model writes the facts as plain
sentences and the scene; a fact's kind (``speech`` when it quotes or reports words, else
``action``) and its persons (:func:`edge.store.entity_extract.acting_names`) come from rules, and
the clip node's summary is the clip's event key plus its dialogue key (:func:`clip_summary`).

Timestamps: a caption has no times inside the clip, so fact nodes (returned in the order
they happen) get consecutive equal shares of the clip's span; each gets the clip keyframe
nearest its midpoint. This is an approximation, documented as such.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from edge.build.keys import ClipKeys, clean_text, extractive_keys, split_sentences
from edge.build.pyramid.options import ROLE_CLIP, PyramidOptions
from edge.prompts import (
    CLIP_PROMPT,
    EXAMPLE_CLIP_KEYS,
    EXAMPLE_CLIP_REST,
    EXAMPLE_IN,
    KEYS_HELP,
    clip_schema,
)
from edge.store import KEY_TYPES, Fact
from edge.store.entity_extract import acting_names, shown_name
from models.llm import ContextOverflowError, LLMOutputError


@dataclass
class ClipMemory:
    """What the per-clip call (or its fallback) yields for one clip: the four ``keys``, the
    fact nodes ``facts`` (timed inside the clip, in timeline seconds), the clip node's
    ``summary`` and ``scene``, and ``origin`` (``llm`` or ``extractive``) of facts + clip node.
    """

    keys: ClipKeys
    facts: list[Fact]
    summary: str
    scene: str
    origin: str


def _timed(facts: list[Fact], t_start: float, t_end: float,
           keyframes: Sequence[str]) -> list[Fact]:
    """Give facts (in order) consecutive equal shares of ``[t_start, t_end]`` and the keyframe
    nearest each share's midpoint (keyframes are spread evenly over the clip)."""
    n = len(facts)
    span = max(0.0, t_end - t_start)
    for i, f in enumerate(facts):
        f.t_start = t_start + span * i / n
        f.t_end = t_start + span * (i + 1) / n
        if keyframes:
            mid = (i + 0.5) / n
            f.keyframe = keyframes[round(mid * (len(keyframes) - 1))]
    return facts


def extractive_clip_memory(caption: str, *, t_start: float, t_end: float,
                           keyframes: Sequence[str] = (), file_keys: ClipKeys | None = None,
                           max_facts: int = 3) -> ClipMemory:
    """The marked fallback, without a model: fact nodes are the caption's sentences (split
    after quotes too, pieces under 3 characters dropped; the tail merged into the last of
    ``max_facts``; ``origin='extractive'``), the clip summary its first sentence and the
    scene ``unknown``; keys from the file if given, else :func:`edge.build.keys.extractive_keys`.
    ``t_start``/``t_end``: the clip's span in timeline seconds."""
    sents = (split_sentences(caption, after_quotes=True, min_chars=3)
             or [caption.strip() or "(empty clip)"])
    if len(sents) > max_facts:  # merge the tail so nothing is dropped
        sents = [*sents[:max_facts - 1], " ".join(sents[max_facts - 1:])]
    facts = [Fact(s[:300], "speech" if re.search(r"[\"“”]", s) else "action", 0.0, 0.0,
                  "extractive") for s in sents]
    summary = sents[0][:240]
    return ClipMemory(file_keys or extractive_keys(caption),
                      _timed(facts, t_start, t_end, keyframes), summary, "unknown",
                      "extractive")


def extract_clip_memory(llm, caption: str, *, t_start: float, t_end: float,
                        keyframes: Sequence[str] = (), file_keys: ClipKeys | None = None,
                        options: PyramidOptions | None = None) -> ClipMemory:
    """Keys, fact nodes and scene for one clip from ONE memory-LLM call (role
    ``memory_llm``; PyraVid App. B.1 extraction; MERIT Eq. 5 keys), validated against
    :func:`edge.prompts.clip_schema`.

    With ``file_keys`` the keys are kept and the call asks only for facts and scene. The
    clip node's summary is :func:`clip_summary` of the keys.
    Falls back to :func:`extractive_clip_memory` (marked ``extractive``) when the reply is
    invalid after its retry, the caption does not fit the context, or the reply has no
    facts or no summary. Never raises for bad model output. ``t_start``/``t_end``: the
    clip's span in timeline seconds; ``keyframes``: its keyframe paths, spread over the clip.
    """
    o = options or PyramidOptions()
    with_keys = file_keys is None
    schema = clip_schema(with_keys=with_keys, max_facts=o.max_facts)
    system = CLIP_PROMPT.format(keys=KEYS_HELP if with_keys else "", max_facts=o.max_facts)
    example = "{" + (EXAMPLE_CLIP_KEYS if with_keys else "") + EXAMPLE_CLIP_REST
    try:
        text = llm.truncate(caption, o.max_caption_tokens)
        obj = llm.chat_json(
            [{"role": "system", "content": system},
             {"role": "user", "content": f"Description: {EXAMPLE_IN}"},
             {"role": "assistant", "content": example},
             {"role": "user", "content": f"Description: {text}"}],
            role=ROLE_CLIP, schema=schema, max_tokens=o.max_tokens, keep_prefix=True)
    except (LLMOutputError, ContextOverflowError):
        return extractive_clip_memory(caption, t_start=t_start, t_end=t_end,
                                      keyframes=keyframes, file_keys=file_keys,
                                      max_facts=o.max_facts)
    keys = file_keys
    if keys is None:
        clean = {k: clean_text(obj[k]) for k in KEY_TYPES}
        keys = ClipKeys(**clean, origin="llm") if all(clean.values()) else extractive_keys(
            caption)
    facts = _facts_of_reply(obj["facts"])
    summary, scene = clip_summary(keys), clean_text(obj["scene"]) or "unknown"
    if not facts or not summary:
        return extractive_clip_memory(caption, t_start=t_start, t_end=t_end,
                                      keyframes=keyframes, file_keys=keys,
                                      max_facts=o.max_facts)
    return ClipMemory(keys, _timed(facts, t_start, t_end, keyframes), summary, scene, "llm")


_SPEECH = re.compile(r"[\"“”]|^[^:]{1,30}:\s|\b(?:say|says|said|ask|asks|asked|tell|tells|"
                     r"told|reply|replies|replied|mention|mentions|mentioned|explain|"
                     r"explains|explained)\b", re.IGNORECASE)


def fact_kind(text: str) -> str:
    """``speech`` for a fact that quotes or reports words ("Lucia: ok", "Alice asks…"),
    else ``action`` (rules)."""
    return "speech" if _SPEECH.search(text) else "action"


def clip_summary(keys: ClipKeys) -> str:
    """The clip node's summary: the event key, then the dialogue key unless it says there
    was no speech (``"I pick up the box; Alice asks where the tape is"``)."""
    event, dialogue = keys.event.rstrip(" ."), keys.dialogue.rstrip(" .")
    if not dialogue or re.fullmatch(r"(?i)(no speech( heard)?|none|n/?a|nothing)", dialogue):
        return event
    return f"{event}; {dialogue}" if event else dialogue


def _facts_of_reply(items: list[str]) -> list[Fact]:
    """The reply's facts, cleaned, in order, each text once (case-insensitive), untimed,
    with their rule-made kind and persons."""
    seen: set[str] = set()
    facts = []
    for item in items:
        t = clean_text(item)
        if t and t.lower() not in seen:
            seen.add(t.lower())
            facts.append(Fact(t, fact_kind(t), 0.0, 0.0, "llm",
                              [shown_name(n) for n in acting_names(t)]))
    return facts
