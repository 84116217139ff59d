"""Cost accounting: every model call counted (role, model, tokens in/out, seconds)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass

LLM_ROLES = frozenset({"memory_llm", "solver"})


@dataclass(frozen=True)
class CallRecord:
    """One model call. Tokens are the backend's own counts; seconds are wall-clock."""

    role: str
    model: str
    tokens_in: int
    tokens_out: int
    seconds: float


class UsageMeter:
    """Collects :class:`CallRecord` objects; thread-safe; listeners see each call as it ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[CallRecord] = []
        self._listeners: list[Callable[[CallRecord], None]] = []

    def add_listener(self, fn: Callable[[CallRecord], None]) -> None:
        """Call ``fn(record)`` after every later call is recorded (on the recording thread)."""
        self._listeners.append(fn)

    def record(self, rec: CallRecord) -> None:
        """Count one call and tell the listeners."""
        with self._lock:
            self.records.append(rec)
        for fn in self._listeners:
            fn(rec)

    def mark(self) -> int:
        """A position to pass to :meth:`summary` to count only later calls."""
        return len(self.records)

    def summary(self, since: int = 0) -> dict:
        """Totals of the calls after position ``since``.

        Returns ``{"calls", "tokens_in", "tokens_out", "seconds", "by_role": {role: ...},
        "llm": {...}}``; ``llm`` totals only the LLM roles (memory LLM, solver), whose tokens
        are LLM tokens (the embedder counts its own WordPiece tokens).
        """
        recs = self.records[since:]
        by_role: dict[str, dict] = {}
        for r in recs:
            d = by_role.setdefault(r.role, {"calls": 0, "tokens_in": 0, "tokens_out": 0,
                                            "seconds": 0.0})
            d["calls"] += 1
            d["tokens_in"] += r.tokens_in
            d["tokens_out"] += r.tokens_out
            d["seconds"] = round(d["seconds"] + r.seconds, 3)
        llm = [r for r in recs if r.role.split(".")[0] in LLM_ROLES]  # memory_llm.links too
        return {
            "llm": {
                "calls": len(llm),
                "tokens_in": sum(r.tokens_in for r in llm),
                "tokens_out": sum(r.tokens_out for r in llm),
                "seconds": round(sum(r.seconds for r in llm), 3),
            },
            "calls": len(recs),
            "tokens_in": sum(r.tokens_in for r in recs),
            "tokens_out": sum(r.tokens_out for r in recs),
            "seconds": round(sum(r.seconds for r in recs), 3),
            "by_role": by_role,
        }

    def as_dicts(self, since: int = 0) -> list[dict]:
        """The calls after position ``since`` as plain dicts (the :class:`CallRecord` fields)."""
        return [asdict(r) for r in self.records[since:]]
