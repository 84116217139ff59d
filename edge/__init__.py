"""edge: on-device episodic memory for egocentric footage.

media → perception → memory → recall → answer. The public API used by the CLI and the TUI:
:class:`Memory` (the store), :func:`ingest_paths` / :func:`ingest_caption_file` (memory
construction), :func:`max_sim_retrieve` (MERIT retrieval) and :func:`ask` (the answer loop).
Nothing here imports Textual.
"""

from edge.answer import Answer, AskError, Moment, ask
from edge.captions import ingest_caption_file
from edge.ingest import IngestOptions, IngestReport, ingest_paths
from edge.retrieval import ScoredClip, max_sim_retrieve
from edge.store import KEY_TYPES, Clip, Memory, StoreError

__all__ = [
    "KEY_TYPES",
    "Answer",
    "AskError",
    "Clip",
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
]
