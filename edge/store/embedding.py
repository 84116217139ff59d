"""The embedder a memory is searched and written with: the one that wrote its vectors.

A memory records the embedder of its vectors (:mod:`edge.store.spaces`). A query embedded
by another model matches nothing, so every reader and writer takes its embedder from here,
not from the profile directly: the profile's embedder when the memory's vectors are its
(or the memory holds none yet and a writer adopts it), else the memory's own embedder,
loaded by name, until ``edge build`` has re-embedded the memory with the profile's
(:func:`reembed_note` says so to the user).
"""

from __future__ import annotations

from typing import Any


def profile_space(hub) -> tuple[str, int]:
    """``(model name, width)`` the profile's embedder writes: the manifest's ``dim`` (a
    Matryoshka cut for EmbeddingGemma), 384 when the manifest says none."""
    spec = hub.spec("embedder")
    return spec.name, int(spec.option("dim", 384))


def memory_embedder(memory, hub, *, adopt: bool = False) -> Any:
    """The embedder for ``memory``'s vectors (``embed(texts, query=False) -> (n, dim)``
    unit rows, ``embed_one``). ``adopt`` (writers): a memory without any vector yet takes
    the profile's embedder and width first (:meth:`~edge.store.Memory.adopt_embedder`).

    Raises :class:`models.registry.UnknownModelError` when the memory's embedder is not a
    known model, what :meth:`models.ModelHub.get` raises when its weights are missing, and
    ``ValueError`` when the loaded model's width is not the memory's."""
    name, dim = profile_space(hub)
    if adopt:
        memory.adopt_embedder(name, dim)
    space = memory.vector_space()
    if (space.embedder, space.dim) == (name, dim):
        return hub.embedder
    embedder = hub.embedder_named(space.embedder)
    if getattr(embedder, "dim", space.dim) != space.dim:
        raise ValueError(f"the memory's vectors are {space.dim}-d but {space.embedder} "
                         f"embeds {embedder.dim}-d: its manifest entry changed")
    return embedder


def reembed_note(memory, hub) -> str | None:
    """One line for the user when the profile's embedder is not the one that wrote the
    memory's vectors (``None`` when it is): what the memory is searched with meanwhile and
    the command that re-embeds it, with the progress of a re-embedding under way."""
    name, dim = profile_space(hub)
    space = memory.vector_space()
    if (space.embedder, space.dim) == (name, dim) or not memory.holds_vectors():
        return None
    building = memory.vector_space("building")
    progress = ""
    if building is not None and (building.embedder, building.dim) == (name, dim):
        done, total = memory.reembed_progress(building)
        progress = f" ({done:,} of {total:,} vectors done)"
    return (f"this memory's vectors are {space.embedder}'s ({space.dim}-d) and are searched "
            f"with it; the {hub.profile.name} profile embeds with {name} ({dim}-d): "
            f"`edge build` re-embeds the memory{progress}")
