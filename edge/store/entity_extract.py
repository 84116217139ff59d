"""Who, what and where, per clip: cheap entity extraction for the entity-time index.

The index (``entities`` table, migration m006; :mod:`edge.store.entities`) holds one row
per ``(entity, kind, clip)`` with the clip's times, filled in the clip's own write
transaction (:meth:`~edge.store.Memory.store_clip`), so it keeps up with ingest; memories
built before it are filled when m006 is applied on open. EGAgent (Meta 2026) answers
EgoLifeQA's who / with whom / first / last / how often questions from such an entity scene
graph in SQL; the queries over it are in :mod:`edge.recall.entities`. This module is pure (no
store, no model) so the store can call it inside a clip's write transaction.

Extraction is rules only (no model, ~0.1 ms a clip; no hard-coded name list):

- **names** (``person`` / ``name``): runs of capitalized words in the caption, transcript
  and keys that stand mid-sentence, or at a sentence's start when a person verb follows
  ("Katrina passes", "Shure asks", "Lucia:"), less :data:`COMMON_WORDS` (capitalized common
  words: "I", "Okay", "What", weekdays…) and single letters. A name is a ``person`` in a clip
  where it speaks or acts (a third-person verb, a colon or a quote follows it, or "and I");
  elsewhere it is a ``name`` (WeChat, Beijing — or a person only mentioned). A name counts
  as a person memory-wide when any clip holds it as one. The wearer is "I": never an
  entity. Names the memory LLM listed in PyraVid fact nodes (``Fact.names``) are persons.
- **objects**: the subject of the MERIT object key ("Small tripod is picked up" →
  ``tripod``; "Cling film and tart shells are…" → ``cling film``, ``tart shell``),
  determiners, possessives, size words and generic words ("item") dropped, the last word
  singular; a subject that is a name of the clip ("Katrina is handed…") is not an object.
- **places**: the phrases of :data:`PLACE_WORDS` (a small room/venue vocabulary) found in
  the caption and keys, under one label each (upstairs → ``second floor``).

Entities are stored lowercased (``alice``, ``power bank``); :func:`shown_name` capitalizes
a name for display.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

KINDS = ("person", "name", "object", "place")
"""Entity kinds: a ``name`` is a proper name not seen acting in that clip (a brand, a city,
or a person only mentioned)."""

COMMON_WORDS = frozenset("""
a about above after again against ah ahh all almost also although always am an and another
any anyway are aren't around as at aw aww be because been before being below between both
but by can can't could couldn't did didn't do does doesn't don't done down during each
either else even ever every everyone everybody everything exactly few first for from gee
get go god gosh got great ha haha hahaha hahahaha had hadn't has hasn't have haven't he
he's hello her here hers herself hey hi him himself his hm hmm how huh i i'd i'll i'm i've
if in indeed into is isn't it it's its itself just last later let let's like look maybe me
mine mm mmm more most much must my myself nah naw never next no nobody none nor not
nothing now o oh ok okay on once one only oops or other others otherwise our ours ourselves
out over own please pretty quite rather really right same see she she's should shouldn't
so some somebody someone something sorry still such sure than thank thanks that that's the
their theirs them themselves then there there's these they they're this those though
through thus to too uh uh-huh um under until up upon us very wait was wasn't we we'll we're
we've well were weren't what what's whatever when where where's whether which while who
who's whom whose why will with without won't wow would wouldn't wow yay yeah yep yes yet
you you'd you'll you're you've your yours yourself
monday tuesday wednesday thursday friday saturday sunday january february march april may
june july august september october november december today tomorrow yesterday tonight
morning afternoon evening night day days time pm am mr mrs ms dr unknown anyone
zero two three four five six seven eight nine ten many different
aren isn don didn doesn won wasn weren couldn shouldn wouldn haven hasn hadn
""".split())
"""Capitalized tokens that are not names: function words, pronouns (the wearer's "I"),
interjections and calendar words, lowercased."""

ACT_VERBS = frozenset("""
says asks replies answers adds tells shouts laughs nods smiles responds explains suggests
mentions agrees remarks jokes chimes calls whispers sings reads notes points looks watches
walks comes goes runs sits stands leans turns moves enters leaves returns follows joins
hands passes gives takes picks puts places holds grabs carries brings opens closes pours
cuts eats drinks cooks washes wipes cleans writes draws plays shows helps starts finishes
tries uses checks makes sets wears raises lifts waves claps glances stares continues keeps
seems appears stops waits sighs nods hugs teases interrupts reminds instructs confirms
said asked replied answered added laughed nodded smiled shouted called told
""".split())
"""Words that, right after a name, make it a person acting: speech and everyday action
verbs (third person, or past tense for speech), as captions describe people."""

_WORD = r"[A-Z][A-Za-z]+(?:-[A-Za-z]+)*"
_NAME = re.compile(rf"(?<![A-Za-z'’]){_WORD}(?:[ ]{_WORD})*")
_POSSESSIVE = re.compile(r"['’]s\b")
_INITIAL_BEFORE = set(".!?…:;“”\"‘’([{") | {"'"}
_AFTER = re.compile(r"(?P<poss>['’]s\b)?\s*(?P<punct>[:,]\s*[“\"]?|[“\"])?(?P<word>[a-z][a-z'’]*)?")

PLACE_WORDS: dict[str, str] = {
    "living room": "living room", "kitchen": "kitchen", "bedroom": "bedroom",
    "bathroom": "bathroom", "restroom": "bathroom", "toilet": "bathroom",
    "dining room": "dining room", "courtyard": "yard", "yard": "yard", "backyard": "yard",
    "garden": "yard", "balcony": "balcony", "terrace": "balcony", "hallway": "hallway",
    "corridor": "hallway", "entrance": "entrance", "doorway": "entrance",
    "front door": "entrance", "stairs": "stairs", "stairway": "stairs",
    "staircase": "stairs", "upstairs": "second floor", "second floor": "second floor",
    "downstairs": "first floor", "first floor": "first floor", "third floor": "third floor",
    "elevator": "elevator", "lobby": "lobby", "office": "office", "studio": "studio",
    "supermarket": "supermarket", "mall": "mall", "store": "store", "shop": "store",
    "market": "market", "restaurant": "restaurant", "cafe": "cafe", "bakery": "store",
    "pharmacy": "store", "arcade": "arcade", "park": "park", "street": "street",
    "road": "street", "alley": "street", "car": "car", "taxi": "car", "subway": "subway",
    "school": "school", "campus": "school", "hotel": "hotel", "hospital": "hospital",
    "gym": "gym", "lake": "lake", "river": "river", "bridge": "bridge", "outdoors": "outdoors",
}
"""Place phrases → the place label they are indexed under. Deliberately small: the rooms and
venues of everyday footage; generic words ("room", "outside", "counter") are left out."""
_PLACE = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, PLACE_WORDS), key=len,
                                               reverse=True)) + r")\b")

_COPULA = re.compile(
    r"\b(?:is|are|was|were|gets|get|got|being|been|has|have|had|remains|remain|stays|"
    r"appears|seems|lies|sits|stands|hangs)\b")
_DROP_OBJ = frozenset("""
a an the my his her their our your its some any two three four several other another this
that these those each every both many few more no own same small big large little new old
item items object objects thing things something stuff one ones
""".split())
_PRONOUN_START = frozenset("i we it there he she they someone everyone nobody no you".split())


@dataclass(frozen=True)
class Mention:
    """One entity of a clip: ``entity`` lowercased, ``kind`` one of :data:`KINDS`,
    ``count`` how many times the clip's texts mention it (≥ 1)."""

    entity: str
    kind: str
    count: int = 1


def norm_entity(text: str) -> str:
    """An entity as stored: lowercased, possessive ``'s`` dropped, spaces collapsed."""
    return " ".join(_POSSESSIVE.sub("", text).lower().split())


def shown_name(entity: str) -> str:
    """A stored name for display: each word capitalized (``alice`` → ``Alice``)."""
    return " ".join(w[:1].upper() + w[1:] for w in entity.split())


def singular(word: str) -> str:
    """A crude singular for index matching (``shells`` → ``shell``, ``berries`` →
    ``berry``, ``boxes`` → ``box``); applied alike to stored objects and question words."""
    if len(word) <= 3 or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    return word[:-1] if word.endswith("s") else word


def _names(text: str) -> tuple[Counter, set[str]]:
    """Names in ``text`` with their counts, and those seen acting (see the module doc)."""
    counts: Counter = Counter()
    acting: set[str] = set()
    for m in _NAME.finditer(text):
        words = m.group().split(" ")
        while words and words[0].lower() in COMMON_WORDS:  # "Okay Tasha" → "Tasha"
            words.pop(0)
        while words and words[-1].lower() in COMMON_WORDS:
            words.pop()
        if not words:
            continue
        lead = text[:m.start()].rstrip()
        trimmed = m.group().startswith(words[0]) is False
        initial = not trimmed and (not lead or lead[-1] in _INITIAL_BEFORE)
        nxt = _AFTER.match(text, m.end())
        word = (nxt.group("word") or "") if nxt else ""
        punct = (nxt.group("punct") or "") if nxt else ""
        acts = not (nxt and nxt.group("poss")) and (
                ":" in punct or "“" in punct or '"' in punct
                or (not punct and word in ACT_VERBS)
                or text[m.end():m.end() + 6] == " and I")
        if initial and not acts:
            continue
        name = norm_entity(" ".join(words))
        if len(name) < 2:
            continue
        counts[name] += 1
        if acts:
            acting.add(name)
    return counts, acting


def acting_names(text: str) -> list[str]:
    """The names seen speaking or acting in ``text`` (rules of the module doc), lowercased,
    in order of first appearance: the persons of a fact node."""
    counts, acting = _names(text)
    return [n for n in counts if n in acting]


def _objects(object_key: str) -> list[str]:
    """The subject phrase(s) of a MERIT object key (see the module doc)."""
    m = _COPULA.search(object_key)
    if not m:
        return []
    out = []
    for part in re.split(r",|\band\b|\bor\b", object_key[:m.start()].lower()):
        words = [w for w in re.findall(r"[a-z][a-z\-]*(?:['’]s)?", part)]
        if not words or words[0] in _PRONOUN_START:
            continue
        words = [w for w in words if w not in _DROP_OBJ and not _POSSESSIVE.search(w)]
        if words:
            words = words[-3:]
            out.append(" ".join([*words[:-1], singular(words[-1])]))
    return out


def extract_entities(caption: str, transcript: str = "",
                     keys: Mapping[str, str] | None = None,
                     names: Iterable[str] = ()) -> list[Mention]:
    """The people, names, objects and places of one clip (rules only; module doc).

    Args:
        caption: the clip's caption; transcript: its speech transcript ("" if none).
        keys: key type → text (``event``, ``dialogue``, ``object``, ``summary``; any may
            be missing); the ``object`` key gives the objects.
        names: people the memory LLM named (PyraVid ``Fact.names``), indexed as persons.
    Returns:
        One :class:`Mention` per ``(entity, kind)``, sorted by kind then entity.
    """
    keys = dict(keys or {})
    texts = [caption, transcript, *(v for k, v in keys.items() if k != "caption")]
    counts: Counter = Counter()
    acting: set[str] = set()
    for t in texts:
        if t:
            c, a = _names(t)
            counts.update(c)
            acting |= a
    for n in names:
        if norm_entity(n) and norm_entity(n) not in COMMON_WORDS:
            counts[norm_entity(n)] += 1
            acting.add(norm_entity(n))
    out = [Mention(n, "person" if n in acting else "name", c) for n, c in counts.items()]
    objects = Counter(o for o in _objects(keys.get("object", "")) if o not in counts)
    out += [Mention(o, "object", c) for o, c in objects.items()]
    places = Counter(PLACE_WORDS[p] for t in texts if t for p in _PLACE.findall(t.lower()))
    out += [Mention(p, "place", c) for p, c in places.items()]
    return sorted(out, key=lambda m: (KINDS.index(m.kind), m.entity))
