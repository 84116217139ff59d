"""Every prompt and JSON schema the models are given, in one place.

Memory construction (role ``memory_llm``): MERIT key extraction (MERIT §3.3, Eq. 5;
Appendix 0.F, in our words), the PyraVid per-clip call (keys + fact nodes + scene, PyraVid
App. B.1), relational-link judging and global-node updates (PyraVid App. B.3).
Recall and answer (role ``solver``): MARQUIS query decomposition (§3.1), MERIT neighbor
filtering (§3.4, Eq. 9), PyraVid pruning (§3.3, App. B.4), the per-round sufficiency
decision and the final answer of the agent loop (MERIT Appendix 0.A).

Schemas bound every string so llama.cpp's grammar closes the JSON inside ``max_tokens``.
Changing a prompt changes what is stored and answered: measure before and after
(``benchmarks/``).
"""

from __future__ import annotations

# ---- memory construction: MERIT keys -------------------------------------------------------

# Length caps keep the whole object inside the token budget (4 × 150 characters ≈ 160
# English tokens < max_tokens), so the grammar closes the JSON instead of being cut off.
KEY_SCHEMA = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "minLength": 1, "maxLength": 150},
        "dialogue": {"type": "string", "minLength": 1, "maxLength": 150},
        "object": {"type": "string", "minLength": 1, "maxLength": 150},
        "summary": {"type": "string", "minLength": 1, "maxLength": 100},
    },
    "required": ["event", "dialogue", "object", "summary"],
    "additionalProperties": False,
}

KEYS_PROMPT = """You write retrieval keys for one ~30-second clip of a person's day, \
from the clip's description. Use only what the description states; never invent.
Return a JSON object with exactly these four keys:
- "event": the physical actions or happenings, in one short sentence (use names if given; \
"I" for the camera wearer).
- "dialogue": what was said, asked or mentioned, in one short sentence; "no speech" if none.
- "object": the objects or visible text that were handled, shown or referred to, and their \
state, in one short sentence.
- "summary": 3 to 8 keywords taken from the description, separated by spaces.
Keep every key short and grounded in the description; if it says nothing for a key, \
write "none"."""

# One worked example (not from any test data). Measured on the 0.5B model: without it the
# keys echo the instructions ("people, actions, objects, place"); with an example close to
# real input the model copies the example's content instead, so it stays deliberately bland.
EXAMPLE_IN = ('Video, 30 s: the view moves somewhat. Visible text: "OPEN 9-5". Up to 2 faces '
              'visible. Speech: "Is the bakery open today?"')
EXAMPLE_OUT = ('{"event": "The view moves past a sign while two people are visible", '
               '"dialogue": "Someone asks whether the bakery is open today", '
               '"object": "A sign reading OPEN 9-5", '
               '"summary": "bakery sign open 9-5 question"}')


# ---- memory construction: the PyraVid pyramid ---------------------------------------------

def clip_schema(*, with_keys: bool, max_facts: int = 3) -> dict:
    """JSON schema of the per-clip memory call: [keys +] facts (plain sentences) + scene.

    Length caps keep the whole object inside ``max_tokens`` so llama.cpp's grammar closes
    the JSON instead of being cut off (as in :data:`KEY_SCHEMA`).
    """
    props: dict = dict(KEY_SCHEMA["properties"]) if with_keys else {}
    props["facts"] = {"type": "array", "minItems": 1, "maxItems": max_facts,
                      "items": {"type": "string", "minLength": 3, "maxLength": 140}}
    props["scene"] = {"type": "string", "minLength": 1, "maxLength": 80}
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


CLIP_PROMPT = """You build the memory of one ~30-second clip of a person's day from the \
clip's description. Use only what the description states; never invent. "I" is the camera \
wearer; use names when the description gives them.
Return a JSON object with these fields:{keys}
- "facts": the separate things that happen, in the order they happen, at most {max_facts}; \
each one short sentence (under 20 words) saying who did or said what.
- "scene": where it takes place, in a few words ("unknown" if not stated)."""
# Issue 13: the reply is most of the LLM tier's time on the device (~0.1 s a generated token
# on 2 cores). Facts were objects with a "kind" and the "names" in them, and a separate
# "clip_summary" followed: ~16 tokens of JSON per fact and ~25 for the summary. Now the kind
# and the persons of a fact come from rules (edge.build.pyramid.clip_memory) and the clip node's
# summary from the event and dialogue keys.

KEYS_HELP = """
- "event": the physical actions or happenings, in one short sentence.
- "dialogue": what was said, asked or mentioned, in one short sentence; "no speech" if none.
- "object": the objects or visible text handled, shown or referred to, in one short sentence.
- "summary": 3 to 8 keywords taken from the description, separated by spaces."""

# The same deliberately bland worked example as EXAMPLE_OUT (see there why it is bland),
# split so the keys can be left out when a caption file provides them.
EXAMPLE_CLIP_KEYS = EXAMPLE_OUT[1:-1] + ", "
EXAMPLE_CLIP_REST = ('"facts": ["The view moves past a sign reading OPEN 9-5", "Someone asks '
                     'whether the bakery is open today"], "scene": "unknown"}')

LINK_PROMPT = """You link memories of a person's day. Each numbered pair has a NEW fact and \
an EARLIER fact. A pair is related when there is a clear relation between them: the same \
activity continued, cause and effect, the same object, place or plan referred to again, a \
question and its answer, the same person doing related things. Similar wording alone is not \
a relation. Reply with a JSON object that lists only the related pairs, each with a few \
words naming the relation: {"links": [{"pair": 2, "relation": "same plan"}]}, or \
{"links": []} when no pair is related."""
# Asking for a verdict on every pair cost ~10 output tokens a pair (61 for a typical clip's
# six); most pairs are unrelated, so listing only the related ones keeps the reply short.

GLOBAL_PROMPT = """You keep a running summary of {what} of a person's life ("I" is the \
camera wearer). You get the summary so far and new events. Write the updated summary: keep \
what still matters, add the new events in time order with their times, under {words} words. \
Reply with the updated summary only, as plain sentences."""
# Measured on Qwen2.5-0.5B: with the instructions and material in one unlabelled message
# the model echoed the message ("Summary so far: ..."); labelled sections ending in
# "UPDATED SUMMARY:" give a summary.


def link_schema(n: int) -> dict:
    """Schema of the batched relation call: ``{"links": [{"pair": 1…n, "relation": str}]}``,
    the related pairs only (at most ``n``)."""
    return {
        "type": "object",
        "properties": {"links": {
            "type": "array", "maxItems": n,
            "items": {
                "type": "object",
                "properties": {"pair": {"type": "integer", "minimum": 1, "maximum": n},
                               "relation": {"type": "string", "minLength": 1,
                                            "maxLength": 60}},
                "required": ["pair", "relation"],
                "additionalProperties": False,
            }}},
        "required": ["links"],
        "additionalProperties": False,
    }


# ---- recall: decomposition, neighbor filtering, pruning --------------------------------------

DECOMPOSE_PROMPT = """You turn a question about a person's day into search phrases for \
their video memory notes. Split the question into at most {n} atomic search phrases, each \
about ONE thing to find (an action, a person, an object, something said), 3-10 words, \
keeping names and objects exactly as written. Do not answer the question. Reply with a JSON \
object {{"queries": [...]}}."""


REWRITE_PROMPT = """You help search a person's video memory. Its notes are written in the \
first person, plain past events, e.g. "I pick up the cardboard box while Shure talks about \
dinner." or "Alice says the cake needs more cream." Rewrite the question as {n} short \
statements in that style that the notes holding the answer could contain: guess the likely \
actions, objects, places and words said, keep every name the question uses. Do not answer \
the question with certainty; write plausible notes. Reply with a JSON object \
{{"queries": [...]}}."""


def decompose_schema(max_queries: int) -> dict:
    """``{"queries": [str, …]}`` with 0…``max_queries`` phrases of ≤ 120 characters."""
    return {
        "type": "object",
        "properties": {"queries": {"type": "array", "maxItems": max_queries,
                                   "items": {"type": "string", "maxLength": 120}}},
        "required": ["queries"],
        "additionalProperties": False,
    }


FILTER_PROMPT = """You extract the information relevant to a question from notes about a \
person's day. Each numbered clip comes with the notes just before and after it (before_2, \
before_1, center, after_1, after_2), each about 30 seconds; "I" is the person. For every \
clip, write in 1-3 short sentences only what helps answer the question (who, what, where, \
when; keep names and objects exact). Write "" for a clip with nothing relevant. Never \
invent. Reply with a JSON object with one key per clip: "clip_1", "clip_2", …"""


def filter_schema(n: int, max_chars: int = 300) -> dict:
    """``{"clip_1": str, …, "clip_n": str}``, every key required."""
    props = {f"clip_{i}": {"type": "string", "maxLength": max_chars} for i in range(1, n + 1)}
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


PRUNE_PROMPT = """You select evidence for a question about a person's day. Below are \
numbered facts from their memory, each with its time; "I" is the person. Keep only the \
facts that help answer the question (who, what, where, when, what was said). Reply with a \
JSON object {"keep": [numbers]}; an empty list when none helps."""


def prune_schema(n: int) -> dict:
    """``{"keep": [1…n, …]}`` with at most ``n`` distinct numbers."""
    return {"type": "object",
            "properties": {"keep": {"type": "array", "maxItems": n, "uniqueItems": True,
                                    "items": {"type": "integer", "minimum": 1,
                                              "maximum": max(1, n)}}},
            "required": ["keep"], "additionalProperties": False}


# ---- answer: the agent loop's decisions and the final answer -------------------------------

_CITED = {"type": "array", "items": {"type": "integer", "minimum": 1}, "maxItems": 6}
_SEARCH = {"type": "string", "maxLength": 150}

SOLVER_SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "maxLength": 600},
        "cited": _CITED,
        "sufficient": {"type": "boolean"},
        "search": _SEARCH,
    },
    "required": ["answer", "cited", "sufficient", "search"],
    "additionalProperties": False,
}
"""One call answers and decides (``loop="single"``)."""

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": SOLVER_SCHEMA["properties"]["answer"], "cited": _CITED},
    "required": ["answer", "cited"],
    "additionalProperties": False,
}
"""The final answer call of ``loop="merit"``."""

SUFFICIENCY_SCHEMA = {
    "type": "object",
    "properties": {"sufficient": {"type": "boolean"}, "search": _SEARCH},
    "required": ["sufficient", "search"],
    "additionalProperties": False,
}
"""The per-round decision of ``loop="merit"``: enough evidence, else the next query."""


def choice_schema(letters: list[str], *, decide: bool = True,
                  reason_first: bool = False) -> dict:
    """The answer schema for a multiple-choice question: ``answer`` is one of ``letters``
    plus a one-sentence ``reason`` (written before the letter with ``reason_first``);
    ``decide`` adds ``sufficient``/``search``."""
    answer = {"type": "string", "enum": letters}
    reason = {"type": "string", "maxLength": 160}
    props = ({"reason": reason, "answer": answer} if reason_first
             else {"answer": answer, "reason": reason}) | {"cited": _CITED}
    if decide:
        props |= {"sufficient": {"type": "boolean"}, "search": _SEARCH}
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


SOLVER_SYSTEM = """You answer questions about the user's own day from memory notes. Each \
note describes a ~30-second moment of the user's first-person video and is numbered [n] \
with its time; "I" in a note is the user. Use only the notes. Reply with the JSON object \
the instruction after the question asks for."""
"""The one system prompt of every solver step of the agent loop. Each step's own instruction
ends the user turn (:data:`ANSWER_INSTRUCTION`, :data:`DECIDE_INSTRUCTION`,
:data:`SUFFICIENCY_INSTRUCTION`), so consecutive calls of one question share their prefix —
system prompt, question, notes — and llama.cpp reuses its KV cache for it (issue 12)."""

ANSWER_FIELD = """- "answer": a direct answer to the question in one or two sentences;"""
CHOICE_FIELDS = """- "answer": the letter of the one best choice;
- "reason": one sentence saying why;"""
REASON_FIRST_FIELDS = """- "reason": one sentence on what the notes show that decides between \
the choices;
- "answer": the letter of the one best choice;"""
""":data:`CHOICE_FIELDS` with the reason written before the letter (``AskOptions.reason_first``)."""


def for_choices(instruction: str, *, reason_first: bool = False) -> str:
    """:data:`DECIDE_INSTRUCTION` or :data:`ANSWER_INSTRUCTION` for a multiple-choice
    question: the "answer" line asks for the letter and a "reason" line follows (precedes
    it with ``reason_first``). Said to every question, the 1.5B answered open questions
    with a letter; said in a sentence after the list of fields, a reply written without the
    grammar left "reason" out."""
    return instruction.replace(ANSWER_FIELD,
                               REASON_FIRST_FIELDS if reason_first else CHOICE_FIELDS)


DECIDE_INSTRUCTION = """

Reply with a JSON object:
""" + ANSWER_FIELD + """
- "cited": the numbers of the notes the answer relies on;
- "sufficient": true if the notes contain what the question needs, false otherwise;
- "search": when not sufficient, a short search query for what is missing; else ""."""
"""One call answers and decides (``loop="single"`` and ``"adaptive"``)."""

ANSWER_INSTRUCTION = """

Reply with a JSON object:
""" + ANSWER_FIELD + """
- "cited": the numbers of the notes the answer relies on."""
"""The final answer call of ``loop="merit"``."""

_QUOTES = {"type": "array", "maxItems": 2, "items": {
    "type": "object",
    "properties": {"note": {"type": "integer", "minimum": 1},
                   "text": {"type": "string", "minLength": 1, "maxLength": 120}},
    "required": ["note", "text"], "additionalProperties": False}}

OPEN_SCHEMA = {
    "type": "object",
    "properties": {
        "quotes": _QUOTES,
        "answer": SOLVER_SCHEMA["properties"]["answer"],
        "sufficient": {"type": "boolean"},
        "search": _SEARCH,
    },
    "required": ["quotes", "answer", "sufficient", "search"],
    "additionalProperties": False,
}
"""An open question's answer-and-decide reply (issue 42): the quotes first, then the answer
taken from them (:mod:`edge.answer.quotes` checks the quotes against the clips)."""

OPEN_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"quotes": _QUOTES, "answer": SOLVER_SCHEMA["properties"]["answer"]},
    "required": ["quotes", "answer"],
    "additionalProperties": False,
}
"""The final answer call of ``loop="merit"`` for an open question: quotes, then answer."""

QUOTE_FIELDS = """- "quotes": one or two quotes, each the few words of a note that state the \
answer (at most 15 words, copied exactly), as {"note": its number, "text": "the copied \
words"}; [] when no note answers it;
- "answer": a short, direct answer taken from the quotes: name exactly what they name (who, \
what, where, how many), and all of them when they list several;"""
"""The open answer's fields (issue 42): short quotes first, then the answer taken from them.
Measured on the hard set's 40 one-day dev questions (1.5B): quotes of whole sentences (up
to 3 × 240 characters) answered 0.45 by the bench's judge with ~130 tokens written; these
short ones 0.475 with ~85, the answer itself shorter and as specific."""


def for_open(instruction: str) -> str:
    """:data:`DECIDE_INSTRUCTION` or :data:`ANSWER_INSTRUCTION` for an open question: the
    quotes first, then the answer taken from them; the numbers of the notes cited are the
    quotes' (no "cited" field)."""
    out = instruction.replace(ANSWER_FIELD, QUOTE_FIELDS)
    return out.replace("""
- "cited": the numbers of the notes the answer relies on;""", "").replace("""
- "cited": the numbers of the notes the answer relies on.""", "")


SUFFICIENCY_INSTRUCTION = """

Do not answer the question yet. Check whether the notes are enough to answer it. Reply \
with a JSON object:
- "sufficient": true if the notes contain what the question needs, false otherwise;
- "search": when not sufficient, a short search query (3-10 words) for the missing \
information, different from the queries already tried; else "".
Queries already tried: {tried}"""
"""The per-round sufficiency call of ``loop="merit"`` (``{tried}``: the queries so far)."""
