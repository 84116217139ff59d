"""What the memory cost and holds: model calls, ingest runs with wall seconds per stage
(issue 3 item 6, for ``edge stats`` real-time factors), and overall counts. A mixin of
:class:`edge.store.Memory` (uses ``self.db``, ``self._write``, ``self.pyramid_stats``)."""

from __future__ import annotations

import time
from collections.abc import Iterable


class Accounting:
    """Model calls, runs and their stages, and :meth:`stats`."""

    def record_calls(self, command: str, records: Iterable, run_id: int | None = None) -> None:
        """Persist model call records (``models.CallRecord``: ``role``, ``model``,
        ``tokens_in``, ``tokens_out``, ``seconds``) under ``command`` (and the ``runs`` row
        they belong to, when known), all stamped with the current Unix time."""
        now = time.time()
        with self._write():
            for r in records:
                self.db.execute(
                    "INSERT INTO calls(at, command, role, model, tokens_in, tokens_out, seconds,"
                    " run_id) VALUES(?,?,?,?,?,?,?,?)",
                    (now, command, r.role, r.model, r.tokens_in, r.tokens_out, r.seconds,
                     run_id))

    def call_totals(self) -> list[dict]:
        """Model calls so far per command and role: dicts with ``command``, ``role``,
        ``calls``, ``tokens_in``, ``tokens_out`` and ``seconds``, sorted by command, role."""
        rows = self.db.execute(
            "SELECT command, role, count(*), sum(tokens_in), sum(tokens_out), sum(seconds) "
            "FROM calls GROUP BY command, role ORDER BY command, role").fetchall()
        return [dict(zip(("command", "role", "calls", "tokens_in", "tokens_out", "seconds"),
                         row)) for row in rows]

    def add_run(self, *, command: str, started_at: float, seconds: float,
                media_seconds: float, clips_added: int, sources: int, status: str,
                stages: dict[str, float]) -> int:
        """Record one run (an ingest) and its wall seconds per stage in one transaction;
        returns the run id. ``started_at`` is Unix seconds; the rest are seconds."""
        with self._write():
            self.db.execute(
                "INSERT INTO runs(command, started_at, seconds, media_seconds, clips_added,"
                " sources, status) VALUES(?,?,?,?,?,?,?)",
                (command, started_at, seconds, media_seconds, clips_added, sources, status))
            run_id = self.db.last_insert_rowid()
            for stage, secs in stages.items():
                self.db.execute("INSERT INTO run_stages(run_id, stage, seconds) VALUES(?,?,?)",
                                (run_id, stage, float(secs)))
            return run_id

    def stage_costs(self, command: str = "ingest") -> dict:
        """Totals over every recorded run of ``command``: ``runs``, ``clips_added``,
        ``media_seconds``, ``hours`` and ``stages`` — per stage ``seconds``, ``rtf`` (stage
        seconds / footage seconds) and the calls and tokens of its model roles (calls linked
        to those runs). Empty ``stages`` when nothing was recorded."""
        from edge.stages import stage_report

        q = self.db.execute
        runs, clips, media = q(
            "SELECT count(*), coalesce(sum(clips_added), 0), coalesce(sum(media_seconds), 0)"
            " FROM runs WHERE command = ?", (command,)).fetchone()
        seconds = dict(q(
            "SELECT s.stage, sum(s.seconds) FROM run_stages s JOIN runs r ON r.id = s.run_id"
            " WHERE r.command = ? GROUP BY s.stage", (command,)))
        by_role = {
            role: {"calls": n, "tokens_in": tin or 0, "tokens_out": tout or 0}
            for role, n, tin, tout in q(
                "SELECT c.role, count(*), sum(c.tokens_in), sum(c.tokens_out) FROM calls c"
                " JOIN runs r ON r.id = c.run_id WHERE r.command = ? GROUP BY c.role",
                (command,))}
        return {"runs": runs, "clips_added": clips, "media_seconds": round(media, 3),
                "hours": round(media / 3600.0, 4),
                "stages": stage_report(seconds, media, by_role)}

    def stats(self) -> dict:
        """Counts: ``sources``, ``clips``, ``keys`` (not caption vectors), ``hours`` covered,
        ``days``, ``first``/``last`` (timeline seconds), ``last_ingest`` (Unix time of the
        last source registered or clip stored),
        ``partial_sources`` (paths not ``done``), ``pyramid`` (:meth:`pyramid_stats`),
        ``backlog`` (the deferred LLM tier's: :meth:`~edge.store.queue.BuildQueue.backlog`)
        and ``vectors``: the embedder and width of the memory's vectors, and of a
        re-embedding under way with its progress (:mod:`edge.store.spaces`)."""
        q = self.db.execute
        n_clips, secs, first, last = q(
            "SELECT count(*), coalesce(sum(t_end - t_start), 0), min(t_start), max(t_end)"
            " FROM clips").fetchone()
        return {
            "sources": q("SELECT count(*) FROM sources").fetchone()[0],
            "clips": n_clips,
            "keys": q("SELECT count(*) FROM keys WHERE type != 'caption'").fetchone()[0],
            "hours": round(secs / 3600.0, 3),
            "days": [r[0] for r in q("SELECT DISTINCT day FROM clips ORDER BY day")],
            "first": first,
            "last": last,
            "last_ingest": q("SELECT max((SELECT max(added_at) FROM sources),"
                             " coalesce((SELECT max(added_at) FROM clips), 0))").fetchone()[0],
            "partial_sources": [r[0] for r in q(
                "SELECT path FROM sources WHERE status != 'done' ORDER BY id")],
            "pyramid": self.pyramid_stats(),
            "backlog": self.backlog(),
            "vectors": self._vector_stats(),
        }

    def _vector_stats(self) -> dict:
        """``{"embedder", "dim", "reembedding": None | {"embedder", "dim", "done",
        "total"}}``."""
        space, building = self.vector_space(), self.vector_space("building")
        out = {"embedder": space.embedder, "dim": space.dim, "reembedding": None}
        if building is not None:
            done, total = self.reembed_progress(building)
            out["reembedding"] = {"embedder": building.embedder, "dim": building.dim,
                                  "done": done, "total": total}
        return out
