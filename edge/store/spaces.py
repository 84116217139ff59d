"""Which embedder wrote a memory's vectors, and re-embedding a memory with another one.

Every key and fact vector of a memory lives in its *active* vector space (m009,
``vector_spaces``): the embedder's manifest name, the width, and the two vec0 tables. A
query must be embedded by that same model, so readers ask :meth:`VectorSpaces.vector_space`
first. A memory that holds no vectors yet takes the writer's embedder
(:meth:`VectorSpaces.adopt_embedder`); one that holds vectors keeps its embedder until a
re-embedding finishes: :meth:`start_reembed` adds a *building* space with tables of the new
width, :meth:`reembed_todo` / :meth:`add_reembedded` fill it in id order (each batch one
transaction, so a killed process loses at most the batch in progress and the next run goes
on from ``key_upto``/``fact_upto``), and :meth:`finish_reembed` swaps the spaces in one
transaction once every key and fact has its vector. Clips stored meanwhile are written in
the active space (by the active embedder) and caught up by the same id order.

A mixin of :class:`edge.store.Memory` (uses ``self.db`` and ``self._write()``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edge.store.migrations import fact_vec_sql, key_vec_sql
from edge.store.records import VectorSpace
from edge.store.scope import day_of

_COLS = "id, embedder, dim, key_table, fact_table, state, key_upto, fact_upto"


@dataclass(frozen=True)
class ReembedItem:
    """A key or fact to embed again: its id, text, and where its vector goes (key type,
    the clip's day label and end, timeline seconds)."""

    id: int
    text: str
    clip_end: float
    key_type: str = ""
    day: str = ""


class VectorSpaces:
    """The embedder and width of the memory's vectors; re-embedding (see the module doc)."""

    def vector_space(self, state: str = "active") -> VectorSpace | None:
        """The ``active`` space (every memory has one) or the ``building`` one (``None``
        when no re-embedding is under way)."""
        import apsw

        try:
            row = self.db.execute(f"SELECT {_COLS} FROM vector_spaces WHERE state = ?",
                                  (state,)).fetchone()
        except apsw.SQLError:  # a read-only memory from before m009: MiniLM's, as then
            if not getattr(self, "readonly", False):
                raise
            row = (1, "minilm-l6-int8", 384, "key_vec", "fact_vec", "active", 0, 0) if (
                state == "active") else None
        return VectorSpace(*row) if row else None

    def holds_vectors(self) -> bool:
        """Whether any key or fact (and so any vector) is stored."""
        return bool(self.db.execute(
            "SELECT EXISTS(SELECT 1 FROM keys) OR EXISTS(SELECT 1 FROM facts)").fetchone()[0])

    def adopt_embedder(self, embedder: str, dim: int) -> bool:
        """Make ``embedder`` (``dim``-d vectors) the active space's if the memory holds no
        vector yet (new tables of that width replace the empty ones, in one transaction);
        returns whether the active space is now ``embedder``'s at ``dim``. A memory that
        holds vectors is left as it is (False unless it already matches). Writes nothing
        (takes no lock) when the space already matches, as on every clip of an ingest."""
        space = self.vector_space()
        if (space.embedder, space.dim) == (embedder, dim):
            return True
        with self._write():
            space = self.vector_space()
            if (space.embedder, space.dim) == (embedder, dim):
                return True
            if self.holds_vectors():
                return False
            self._drop_space(self.vector_space("building"))
            self._drop_space(space)
            self._create_space(embedder, dim, "active")
            return True

    def start_reembed(self, embedder: str, dim: int) -> VectorSpace:
        """The building space for ``embedder`` at ``dim`` (created empty, or the one a
        killed run left, which goes on where it stopped). A building space of another
        embedder or width is dropped first. Raises ``ValueError`` when ``embedder`` at
        ``dim`` is already the active space."""
        with self._write():
            active = self.vector_space()
            if (active.embedder, active.dim) == (embedder, dim):
                raise ValueError(f"the memory's vectors are already {embedder}'s ({dim}-d)")
            building = self.vector_space("building")
            if building is not None and (building.embedder, building.dim) == (embedder, dim):
                return building
            self._drop_space(building)
            return self._create_space(embedder, dim, "building")

    def reembed_todo(self, space: VectorSpace, limit: int
                     ) -> tuple[list[ReembedItem], list[ReembedItem]]:
        """The next keys and facts (id order, at most ``limit`` of each) that ``space``
        has no vector for yet."""
        keys = [ReembedItem(i, text, end, key_type=kt) for i, text, end, kt in self.db.execute(
            "SELECT k.id, k.text, c.t_end, k.type FROM keys k JOIN clips c ON c.id = k.clip_id"
            " WHERE k.id > ? ORDER BY k.id LIMIT ?", (space.key_upto, limit))]
        facts = [ReembedItem(i, text, end, day=day) for i, text, end, day in self.db.execute(
            "SELECT f.id, f.text, c.t_end, c.day FROM facts f JOIN clips c ON c.id = f.clip_id"
            " WHERE f.id > ? ORDER BY f.id LIMIT ?", (space.fact_upto, limit))]
        return keys, facts

    def reembed_progress(self, space: VectorSpace) -> tuple[int, int]:
        """``(vectors done, vectors in all)`` of a building ``space`` (keys + facts)."""
        done, total = self.db.execute(
            "SELECT (SELECT count(*) FROM keys WHERE id <= ?) + "
            "(SELECT count(*) FROM facts WHERE id <= ?), "
            "(SELECT count(*) FROM keys) + (SELECT count(*) FROM facts)",
            (space.key_upto, space.fact_upto)).fetchone()
        return int(done), int(total)

    def add_reembedded(self, space: VectorSpace, keys: Sequence[ReembedItem],
                       key_vectors: np.ndarray, facts: Sequence[ReembedItem],
                       fact_vectors: np.ndarray) -> VectorSpace:
        """Store one batch of re-embedded vectors (``(len(keys), dim)`` and
        ``(len(facts), dim)`` float32) in ``space``'s tables and move its watermarks past
        them, in ONE transaction; returns the space as updated. Raises ``ValueError`` on a
        vector of the wrong width (nothing stored)."""
        for items, vecs in ((keys, key_vectors), (facts, fact_vectors)):
            vecs = np.asarray(vecs, dtype=np.float32)
            if len(items) and vecs.shape != (len(items), space.dim):
                raise ValueError(f"vectors have shape {vecs.shape}, expected "
                                 f"({len(items)}, {space.dim})")
        with self._write():
            for item, vec in zip(keys, np.asarray(key_vectors, dtype=np.float32)):
                self.db.execute(
                    f"INSERT OR REPLACE INTO {space.key_table}(key_id, key_type, day, clip_end,"
                    " embedding) VALUES(?,?,?,?,?)",
                    (item.id, item.key_type, day_of(item.clip_end), float(item.clip_end),
                     vec.tobytes()))
            for item, vec in zip(facts, np.asarray(fact_vectors, dtype=np.float32)):
                self.db.execute(
                    f"INSERT OR REPLACE INTO {space.fact_table}(fact_id, day, clip_end, "
                    "embedding) VALUES(?,?,?,?)",
                    (item.id, item.day, float(item.clip_end), vec.tobytes()))
            key_upto = max([space.key_upto, *(k.id for k in keys)])
            fact_upto = max([space.fact_upto, *(f.id for f in facts)])
            self.db.execute("UPDATE vector_spaces SET key_upto = ?, fact_upto = ? WHERE id = ?",
                            (key_upto, fact_upto, space.id))
        return self.vector_space("building")

    def finish_reembed(self) -> VectorSpace | None:
        """Make the building space the active one if it has every key and fact (the old
        space's tables dropped, in ONE transaction); returns the new active space, or
        ``None`` when vectors are still missing (or nothing is building)."""
        with self._write():
            building = self.vector_space("building")
            if building is None:
                return None
            left = self.db.execute(
                "SELECT EXISTS(SELECT 1 FROM keys WHERE id > ?) OR "
                "EXISTS(SELECT 1 FROM facts WHERE id > ?)",
                (building.key_upto, building.fact_upto)).fetchone()[0]
            if left:
                return None
            self._drop_space(self.vector_space())
            self.db.execute("UPDATE vector_spaces SET state = 'active' WHERE id = ?",
                            (building.id,))
        return self.vector_space()

    # -- inside a write transaction
    def _create_space(self, embedder: str, dim: int, state: str) -> VectorSpace:
        """A new space's row and empty vec0 tables (``key_vec_<id>``, ``fact_vec_<id>``; the
        id is never reused, so neither is a table name, nor a key index file's)."""
        self.db.execute(
            "INSERT INTO vector_spaces(embedder, dim, key_table, fact_table, state, "
            "created_at) VALUES(?, ?, '-', '--', ?, ?)", (embedder, dim, state, time.time()))
        sid = self.db.last_insert_rowid()
        key_table, fact_table = f"key_vec_{sid}", f"fact_vec_{sid}"
        self.db.execute(key_vec_sql(key_table, dim))
        self.db.execute(fact_vec_sql(fact_table, dim))
        self.db.execute("UPDATE vector_spaces SET key_table = ?, fact_table = ? WHERE id = ?",
                        (key_table, fact_table, sid))
        return self.vector_space(state)

    def _drop_space(self, space: VectorSpace | None) -> None:
        """Drop a space's tables and row (``None``: nothing)."""
        if space is None:
            return
        self.db.execute(f"DROP TABLE IF EXISTS {space.key_table}")
        self.db.execute(f"DROP TABLE IF EXISTS {space.fact_table}")
        self.db.execute("DELETE FROM vector_spaces WHERE id = ?", (space.id,))
