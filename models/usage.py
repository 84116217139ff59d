"""Cost accounting: every model call counted (role, model, tokens in/out, seconds, and the
prompt tokens really evaluated, i.e. not reused from a KV cache)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

LLM_ROLES = frozenset({"memory_llm", "solver"})


@dataclass(frozen=True)
class CallRecord:
    """One model call. Tokens are the backend's own counts; seconds are wall-clock.

    ``tokens_evaluated``: the prompt tokens the model really evaluated, ``tokens_in`` minus
    those served from the KV cache of the previous call (llama.cpp reuses the longest common
    prefix). A backend that cannot know leaves it out: it then equals ``tokens_in``.
    ``retry``: the call asked again for a JSON reply the previous call got wrong (the
    grammar-constrained retry or the repair of ``chat_json``); counted, and also totalled
    apart as ``retries``.
    """

    role: str
    model: str
    tokens_in: int
    tokens_out: int
    seconds: float
    tokens_evaluated: int | None = None
    retry: bool = False

    def __post_init__(self) -> None:
        if self.tokens_evaluated is None:
            object.__setattr__(self, "tokens_evaluated", self.tokens_in)


class UsageMeter:
    """Collects :class:`CallRecord` objects; thread-safe; listeners see each call as it ends.

    Inside :meth:`thread_scope` a thread also keeps its own calls apart, and :meth:`mark`,
    :meth:`summary` and :meth:`as_dicts` on that thread count only them: several questions
    answered at once on threads (``edge bench qa --workers``) each count their own calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[CallRecord] = []
        self._listeners: list[Callable[[CallRecord], None]] = []
        self._local = threading.local()

    @contextmanager
    def thread_scope(self) -> Iterator[list[CallRecord]]:
        """Count this thread's calls apart until the block ends (they still go to
        :attr:`records`); yields the list they are kept in. Not re-entrant."""
        self._local.records = own = []
        try:
            yield own
        finally:
            self._local.records = None

    def _view(self) -> list[CallRecord]:
        """This thread's calls inside :meth:`thread_scope`, else every call."""
        own = getattr(self._local, "records", None)
        return self.records if own is None else own

    def add_listener(self, fn: Callable[[CallRecord], None]) -> None:
        """Call ``fn(record)`` after every later call is recorded (on the recording thread)."""
        self._listeners.append(fn)

    def record(self, rec: CallRecord) -> None:
        """Count one call and tell the listeners."""
        with self._lock:
            self.records.append(rec)
        own = getattr(self._local, "records", None)
        if own is not None:
            own.append(rec)
        for fn in self._listeners:
            fn(rec)

    def mark(self) -> int:
        """A position to pass to :meth:`summary` to count only later calls (of this thread
        inside :meth:`thread_scope`)."""
        return len(self._view())

    def summary(self, since: int = 0) -> dict:
        """Totals of the calls after position ``since``.

        Returns ``{"calls", "retries", "tokens_in", "tokens_evaluated", "tokens_out", "seconds",
        "by_role": {role: ...}, "llm": {...}}`` (the same keys in each); ``llm`` totals only
        the LLM roles (memory LLM, solver), whose tokens are LLM tokens (the embedder counts
        its own WordPiece tokens). ``tokens_evaluated`` ≤ ``tokens_in``: the prompt tokens
        not served from a KV cache (:class:`CallRecord`); ``retries`` ≤ ``calls``: the calls
        that asked again for a reply the previous one got wrong.
        """
        recs = self._view()[since:]
        by_role: dict[str, list[CallRecord]] = {}
        for r in recs:
            by_role.setdefault(r.role, []).append(r)
        llm = [r for r in recs if r.role.split(".")[0] in LLM_ROLES]  # memory_llm.links too
        return {"llm": _totals(llm), **_totals(recs),
                "by_role": {role: _totals(rs) for role, rs in by_role.items()}}

    def as_dicts(self, since: int = 0) -> list[dict]:
        """The calls after position ``since`` as plain dicts (the :class:`CallRecord` fields)."""
        return [asdict(r) for r in self._view()[since:]]


def _totals(recs: list[CallRecord]) -> dict:
    return {
        "calls": len(recs),
        "retries": sum(1 for r in recs if r.retry),
        "tokens_in": sum(r.tokens_in for r in recs),
        "tokens_evaluated": sum(r.tokens_evaluated for r in recs),
        "tokens_out": sum(r.tokens_out for r in recs),
        "seconds": round(sum(r.seconds for r in recs), 3),
    }
