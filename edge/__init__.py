"""edge: on-device episodic memory for egocentric footage.

The stages, one package each, in the order the data flows: :mod:`edge.ingest` (media,
perception, the memory writer: the real-time tier) → :mod:`edge.build` (the LLM tier: keys,
pyramid) → :mod:`edge.store` → :mod:`edge.recall` → :mod:`edge.answer`, then
:mod:`edge.report`, :mod:`edge.bench`, :mod:`edge.record` and :mod:`edge.cli`; the modules
at this root (config, errors, prompts, stages, timeline) are shared by all of them.

The public API used by the CLI and the TUI:
:class:`Memory` (the store), :func:`ingest_paths` / :func:`ingest_caption_file` (memory
construction, both through the memory writer: :func:`write_clip`, or
:func:`edge.ingest.memory_writer.write_clips` for caption batches without a pyramid),
:func:`max_sim_retrieve` (MERIT retrieval), :func:`ask` with :class:`AskOptions` (the answer
loop) and :data:`USER_ERRORS` (what to show as one line). Nothing here imports Textual.
"""

from edge.answer import Answer, AskError, AskOptions, Moment, ask
from edge.errors import USER_ERRORS, EdgeError
from edge.ingest.captions import ingest_caption_file
from edge.ingest.memory_writer import write_clip
from edge.ingest.run import IngestOptions, IngestReport, ingest_paths
from edge.recall.retrieval import ScoredClip, max_sim_retrieve
from edge.store import KEY_TYPES, Clip, Memory, StoreError

__all__ = [
    "KEY_TYPES",
    "USER_ERRORS",
    "Answer",
    "AskError",
    "AskOptions",
    "Clip",
    "EdgeError",
    "IngestOptions",
    "IngestReport",
    "Memory",
    "Moment",
    "ScoredClip",
    "StoreError",
    "ask",
    "ingest_caption_file",
    "ingest_paths",
    "max_sim_retrieve",
    "write_clip",
]
