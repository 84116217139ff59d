"""The PyraVid memory pyramid, built online clip by clip (PyraVid §3.2, Appendix B.1, B.3).

Per clip, ONE memory-LLM call (role ``memory_llm``, :mod:`edge.build.pyramid.clip_memory`) returns,
validated against a JSON schema: the four MERIT keys (MERIT Eq. 5; left out of the schema
when the caption file provides keys), the clip's **fact nodes** (fine-grained events in the
order they happen) and its **clip node** (summary + scene). The memory writer
(:func:`edge.ingest.memory_writer.write_clip`) embeds them and writes the clip, keys, fact nodes,
clip node, hierarchical fact→clip links, key and fact vectors and FTS rows in one
transaction (:meth:`edge.store.Memory.add_clip`).

Then (:class:`Pyramid`, :mod:`edge.build.pyramid.builder`), optionally and bounded (it costs
calls): **relational links**. Each new fact's top-K most similar earlier facts (fact
vectors, KNN limited to earlier clips, above a similarity floor) are candidates; ONE call per
clip (role ``memory_llm.links``) judges all of the clip's candidates, and only accepted pairs
are stored, with the clip→clip links they induce (PyraVid App. B.3 "Fact Memory Graph" /
"Clip Memory Graph").

Less often: the **global node** of each day is updated every K clips (role
``memory_llm.global``) from its previous text and the new clip summaries, versioned, with a
hierarchical clip→global link per integrated clip; :meth:`Pyramid.finalize` integrates the
rest and updates the overall (``all``) node at the end of an ingest run. PyraVid updates the
global node on every clip (App. B.3); every K clips is our cost bound.

Output discipline: a reply validated against its schema, one retry under the schema's
grammar (:meth:`models.llama_chat.LlamaCppLLM.chat_json`), then a marked fallback: extractive keys
(``origin='extractive'``) and facts cut from the caption's sentences (``origin='extractive'``)
— never a crash, never silently empty.

Modules, in reading order: :mod:`~edge.build.pyramid.options` (:class:`PyramidOptions`,
:class:`PyramidCounts`, the usage-meter roles), :mod:`~edge.build.pyramid.clip_memory` (the
per-clip call and its fallback), :mod:`~edge.build.pyramid.builder` (:class:`Pyramid`: relational
links and global nodes). Import the names from here.
"""

from edge.build.pyramid.builder import Pyramid, summary_text
from edge.build.pyramid.clip_memory import ClipMemory, extract_clip_memory, extractive_clip_memory
from edge.build.pyramid.options import (
    ROLE_CLIP,
    ROLE_GLOBAL,
    ROLE_LINKS,
    PyramidCounts,
    PyramidOptions,
)

__all__ = [
    "ROLE_CLIP", "ROLE_GLOBAL", "ROLE_LINKS", "ClipMemory", "Pyramid", "PyramidCounts",
    "PyramidOptions", "extract_clip_memory", "extractive_clip_memory", "summary_text",
]
