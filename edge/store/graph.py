"""The PyraVid pyramid (PyraVid §3.2, App. B.3): fact nodes, clip nodes, versioned global
nodes and the links between them. Facts and the clip node are written with their clip
(:meth:`~edge.store.Memory.add_clip`); relational links and global versions by
:mod:`edge.build.pyramid`; :mod:`edge.recall.expansion` walks the links (PyraVid B.4). A mixin of
:class:`edge.store.Memory` (uses ``self.db``, ``self._write``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence

import numpy as np

from edge.store.records import (
    CLIP_COLS_C,
    FACT_COLS,
    Clip,
    ClipNode,
    Fact,
    GlobalNode,
    Link,
    clip_from_row,
    fact_from_row,
    id_marks,
)

_GLOBAL_COLS = "id, scope, day, version, text, clip_count, t_upto, origin, updated"


class Graph:
    """Fact nodes, clip nodes, global nodes and links."""

    # -- fact nodes
    def _add_facts(self, clip_id: int, day: str, clip_end: float, facts: Sequence[Fact],
                   vectors: np.ndarray | None) -> None:
        """Inside :meth:`add_clip`'s transaction: each fact's row, its vector in the active
        space's fact table (``fact_vec`` before a re-embedding; metadata: day, clip end),
        its ``fact_text`` FTS row and its hierarchical fact→clip link; sets
        ``f.id``/``f.clip_id``. ``ValueError`` unless ``vectors`` is ``(len(facts), dim)``
        (the space's width)."""
        if not facts:
            return
        space = self.vector_space()
        vecs = np.asarray(vectors if vectors is not None else (), dtype=np.float32)
        if vecs.shape != (len(facts), space.dim):
            raise ValueError(f"fact vectors have shape {vecs.shape}, expected "
                             f"({len(facts)}, {space.dim})")
        for f, vec in zip(facts, vecs):
            self.db.execute(
                "INSERT INTO facts(clip_id, t_start, t_end, text, kind, names, keyframe, origin)"
                " VALUES(?,?,?,?,?,?,?,?)",
                (clip_id, float(f.t_start), float(f.t_end), f.text, f.kind,
                 json.dumps(list(f.names), ensure_ascii=False), f.keyframe, f.origin))
            fid = self.db.last_insert_rowid()
            f.id, f.clip_id = fid, clip_id
            self.db.execute(f"INSERT INTO {space.fact_table}(fact_id, day, clip_end, "
                            "embedding) VALUES(?,?,?,?)",
                            (fid, day, float(clip_end), vec.tobytes()))
            self.db.execute("INSERT INTO fact_text(rowid, text) VALUES(?,?)", (fid, f.text))
            self.db.execute(
                "INSERT INTO links(src_kind, src_id, dst_kind, dst_id, kind) "
                "VALUES('fact', ?, 'clip', ?, 'hierarchical')", (fid, clip_id))

    def facts(self, ids: Iterable[int]) -> dict[int, Fact]:
        """Fact nodes by id (missing ids are absent)."""
        ids, marks = id_marks(ids)
        if not ids:
            return {}
        return {r[0]: fact_from_row(r) for r in self.db.execute(
            f"SELECT {FACT_COLS} FROM facts WHERE id IN ({marks})", ids)}

    def facts_of(self, clip_ids: Iterable[int]) -> dict[int, list[Fact]]:
        """The fact nodes of each clip in time order, ``{clip_id: [Fact, ...]}`` (a clip
        without facts maps to ``[]``). PyraVid B.4: a clip seed expands to all its facts."""
        ids, marks = id_marks(clip_ids)
        out: dict[int, list[Fact]] = {i: [] for i in ids}
        if not ids:
            return out
        for r in self.db.execute(f"SELECT {FACT_COLS} FROM facts WHERE clip_id IN "
                                 f"({marks}) ORDER BY clip_id, t_start, id", ids):
            out[r[1]].append(fact_from_row(r))
        return out

    def has_facts(self) -> bool:
        """Whether any clip has PyraVid fact nodes (the pyramid was built for some clips)."""
        return self.db.execute("SELECT 1 FROM facts LIMIT 1").fetchone() is not None

    # -- clip nodes
    def clip_nodes(self, clip_ids: Iterable[int]) -> dict[int, ClipNode]:
        """Clip nodes (summary, scene) by clip id; clips built without the pyramid are absent."""
        ids, marks = id_marks(clip_ids)
        if not ids:
            return {}
        return {r[0]: ClipNode(*r) for r in self.db.execute(
            f"SELECT clip_id, summary, scene, origin FROM nodes_clip WHERE clip_id IN ({marks})",
            ids)}

    def count_clip_nodes(self) -> int:
        """How many clips have a PyraVid clip node."""
        return self.db.execute("SELECT count(*) FROM nodes_clip").fetchone()[0]

    # -- links
    def links_from(self, kind: str, ids: Iterable[int], *, link_kind: str | None = None,
                   both: bool = True) -> list[Link]:
        """Links touching the ``kind`` nodes (``fact``, ``clip`` or ``global``) ``ids``.

        With ``both`` (default) links where the nodes are the destination come back too
        (relational links are stored once, newer → older, but mean "related" both ways).
        ``link_kind`` keeps only ``hierarchical`` or ``relational`` links. PyraVid B.4
        expansion walks these. In storage order.
        """
        ids, marks = id_marks(ids)
        if not ids:
            return []
        cond = f"(src_kind = ? AND src_id IN ({marks}))"
        args: list = [kind, *ids]
        if both:
            cond += f" OR (dst_kind = ? AND dst_id IN ({marks}))"
            args += [kind, *ids]
        sql = ("SELECT src_kind, src_id, dst_kind, dst_id, kind, weight, relation FROM links "
               f"WHERE ({cond})")
        if link_kind is not None:
            sql += " AND kind = ?"
            args.append(link_kind)
        return [Link(*r) for r in self.db.execute(sql + " ORDER BY id", args)]

    def add_relational_links(self, pairs: Sequence[tuple[int, int, str]]) -> None:
        """Store accepted fact→fact relations ``(fact_id, earlier_fact_id, relation)`` and the
        clip→clip links they induce (weight = number of fact links), in one transaction
        (PyraVid App. B.3 "Clip Memory Graph"). A pair already stored is skipped."""
        if not pairs:
            return
        with self._write():
            for src, dst, relation in pairs:
                self.db.execute(
                    "INSERT OR IGNORE INTO links(src_kind, src_id, dst_kind, dst_id, kind,"
                    " relation) VALUES('fact', ?, 'fact', ?, 'relational', ?)",
                    (src, dst, relation))
                if self.db.changes() == 0:
                    continue
                a, b = (self.db.execute("SELECT clip_id FROM facts WHERE id = ?",
                                        (fid,)).fetchone()[0] for fid in (src, dst))
                if a == b:
                    continue
                self.db.execute(
                    "INSERT INTO links(src_kind, src_id, dst_kind, dst_id, kind, weight) "
                    "VALUES('clip', ?, 'clip', ?, 'relational', 1) "
                    "ON CONFLICT(src_kind, src_id, dst_kind, dst_id, kind) "
                    "DO UPDATE SET weight = weight + 1", (a, b))

    # -- global nodes
    def global_node(self, day: str = "", before: float | None = None) -> GlobalNode | None:
        """The latest global node of ``day`` (a day label; ``''`` = the overall node), or the
        latest version that only integrates clips ending by ``before`` (timeline seconds), so a
        question asked at time t never sees a summary of later footage. ``None`` if none."""
        scope = "all" if not day else "day"
        sql = f"SELECT {_GLOBAL_COLS} FROM nodes_global WHERE scope = ? AND day = ?"
        args: list = [scope, day]
        if before is not None:
            sql += " AND t_upto <= ?"
            args.append(float(before))
        row = self.db.execute(sql + " ORDER BY version DESC LIMIT 1", args).fetchone()
        return GlobalNode(*row) if row else None

    def clips_without_global(self, day: str) -> list[Clip]:
        """Clips of ``day`` that have a clip node but no clip→global link yet, in time order
        (those the next global update integrates)."""
        return [clip_from_row(r) for r in self.db.execute(
            f"SELECT {CLIP_COLS_C} "
            "FROM clips c JOIN nodes_clip n ON n.clip_id = c.id WHERE c.day = ? AND NOT EXISTS("
            "SELECT 1 FROM links l WHERE l.src_kind = 'clip' AND l.src_id = c.id AND "
            "l.dst_kind = 'global' AND l.kind = 'hierarchical') ORDER BY c.t_start, c.id",
            (day,))]

    def add_global_version(self, *, day: str, text: str, origin: str,
                           clip_ids: Sequence[int], t_upto: float,
                           clip_count: int | None = None) -> GlobalNode:
        """Store the next version of a global node (``day=''`` for the overall node) and the
        hierarchical clip→global links of the ``clip_ids`` it integrated, in one transaction.
        ``clip_count`` defaults to the previous version's count plus ``len(clip_ids)``;
        ``t_upto`` (timeline seconds) never goes below the previous version's. Returns the
        new version."""
        scope = "all" if not day else "day"
        with self._write():
            prev = self.global_node(day)
            version = prev.version + 1 if prev else 1
            count = clip_count if clip_count is not None else (
                (prev.clip_count if prev else 0) + len(clip_ids))
            t_upto = max(float(t_upto), prev.t_upto if prev else float("-inf"))
            self.db.execute(
                "INSERT INTO nodes_global(scope, day, version, text, clip_count, t_upto, origin,"
                " updated) VALUES(?,?,?,?,?,?,?,?)",
                (scope, day, version, text, count, t_upto, origin, time.time()))
            gid = self.db.last_insert_rowid()
            if scope == "day":
                for cid in clip_ids:
                    self.db.execute(
                        "INSERT OR IGNORE INTO links(src_kind, src_id, dst_kind, dst_id, kind) "
                        "VALUES('clip', ?, 'global', ?, 'hierarchical')", (cid, gid))
            return self.global_node(day)

    def pyramid_stats(self) -> dict:
        """Pyramid counts: facts (and how many extractive), clip nodes, global nodes per day
        (versions and latest clip count), links by kind and node kinds."""
        q = self.db.execute
        links: dict[str, int] = {}
        for kind, sk, dk, n in q("SELECT kind, src_kind, dst_kind, count(*) FROM links "
                                 "GROUP BY kind, src_kind, dst_kind ORDER BY 1, 2, 3"):
            links[f"{kind} {sk}->{dk}"] = n
        globals_ = {}
        for day, versions, clips in q(
                "SELECT day, count(*), max(clip_count) FROM nodes_global GROUP BY day "
                "ORDER BY day"):
            globals_[day or "all"] = {"versions": versions, "clips": clips}
        return {
            "facts": q("SELECT count(*) FROM facts").fetchone()[0],
            "facts_extractive": q("SELECT count(*) FROM facts WHERE origin = 'extractive'"
                                  ).fetchone()[0],
            "clip_nodes": q("SELECT count(*) FROM nodes_clip").fetchone()[0],
            "global_nodes": globals_,
            "links": links,
        }
