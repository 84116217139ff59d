"""The memory store: one SQLite file (WAL) with sqlite-vec for key and fact vectors.

Schema changes are named, append-only migrations recorded in ``_migrations`` (simonw/llm
style): never edit a shipped step, add a new one. A clip, its keys and their vectors are
written in one transaction, so a killed process leaves either the whole clip or nothing.
m003 adds the PyraVid pyramid (§3.2): fact nodes (with vectors in ``fact_vec`` and text in
FTS), clip nodes, versioned global nodes and links, written with the clip (facts, clip node,
fact→clip links) or by :mod:`edge.build.pyramid` (relational links, global versions).

The package, in reading order:

- ``records``: key types, ``EMBED_DIM`` and the dataclasses (Clip, Source, Fact, ClipNode,
  GlobalNode, Link).
- ``migrations``: the migrations m001–m010, their SQL as shipped (:data:`MIGRATIONS`;
  m010's in ``people_schema``).
- ``schema``: ``connect``, the write transaction, applying the migrations,
  ``sqlite_versions`` (for ``edge doctor``).
- ``memory``: :class:`Memory`, the façade; it inherits the methods below.
- ``clips`` (sources, clips), ``vectors`` (KNN over keys and facts), ``keyindex`` (the
  whole-history key index beside SQLite for large memories), ``text`` (BM25),
  ``graph`` (the pyramid), ``entities`` (the entity-time index: people, objects, places
  per clip with its times), ``queue`` (the deferred LLM tier's work per clip and the build
  log), ``accounting`` (calls, runs, stats), ``spaces`` (which embedder wrote the vectors;
  re-embedding).
- ``people`` / ``people_read``: the character memory (issue 43): identities (person nodes),
  their face and voice appearances with sqlite-vec vectors, naming, merging, forgetting;
  :class:`Person`, :class:`Appearance`, :class:`ClipPerson` (``people_schema``: m010).
- ``entity_extract``: the rules that fill the entity-time index (no model), and
  ``embedding``: the embedder a memory is searched and written with (its vectors' own).
- ``scope``: :func:`time_scope`, the ``(after, before]`` constraint of every KNN/BM25 query,
  and :func:`~edge.store.scope.day_scope`, the ``key_vec`` day partitions it spans.
"""

from edge.errors import StoreError
from edge.store.entities import EntityRow
from edge.store.memory import Memory, ReadOnlyMemoryError, same_file, writable, write_error
from edge.store.migrations import MIGRATIONS
from edge.store.people_read import Appearance, ClipPerson, Person
from edge.store.queue import BuildResult, QueueItem
from edge.store.records import (
    EMBED_DIM,
    INDEX_TYPES,
    KEY_TYPES,
    Clip,
    ClipNode,
    Fact,
    GlobalNode,
    Link,
    Source,
)
from edge.store.schema import apply_migrations, connect, sqlite_versions
from edge.store.scope import time_scope

__all__ = [
    "Appearance",
    "ClipPerson",
    "EMBED_DIM",
    "INDEX_TYPES",
    "KEY_TYPES",
    "MIGRATIONS",
    "Clip",
    "ClipNode",
    "EntityRow",
    "Fact",
    "GlobalNode",
    "Link",
    "BuildResult",
    "Memory",
    "Person",
    "QueueItem",
    "ReadOnlyMemoryError",
    "Source",
    "StoreError",
    "apply_migrations",
    "connect",
    "same_file",
    "sqlite_versions",
    "time_scope",
    "writable",
    "write_error",
]
