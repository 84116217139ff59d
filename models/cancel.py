"""Cancelling model calls: a ``threading.Event`` that the caller sets to stop them.

``with cancel_scope(event):`` makes every LLM call that the current thread starts inside the
block stop soon after ``event`` is set (the chat's Esc and Ctrl+Q): the call raises
:class:`GenerationCancelled` instead of returning. The scope is per thread, so a question
cancelled in the chat never stops a call that another thread makes on the same shared model.
How each backend stops: :class:`models.llama_chat.LlamaCppLLM` aborts llama.cpp's decoding between
two graph nodes (prompt reading and generation alike); :class:`models.remote.RemoteLLM`
stops waiting for the server (:func:`run_cancellable`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_local = threading.local()


class GenerationCancelled(Exception):
    """A model call stopped because the cancel event of its :func:`cancel_scope` was set.

    Deliberately not a ``ValueError``: the answer loop's fallbacks for a bad reply
    (``LLMOutputError``, ``ContextOverflowError``) must not swallow it."""


@contextmanager
def cancel_scope(event: threading.Event | None) -> Iterator[threading.Event | None]:
    """Model calls this thread makes inside the block raise :class:`GenerationCancelled`
    soon after ``event`` is set (``None``: not cancellable). Scopes nest; the inner one
    wins until it ends."""
    outer = getattr(_local, "event", None)
    _local.event = event
    try:
        yield event
    finally:
        _local.event = outer


def current_cancel() -> threading.Event | None:
    """The cancel event of this thread's innermost :func:`cancel_scope`, or ``None``."""
    return getattr(_local, "event", None)


def raise_if_cancelled(event: threading.Event | None, what: str) -> None:
    """Raise :class:`GenerationCancelled` (naming ``what``, e.g. the model) when ``event``
    is set."""
    if event is not None and event.is_set():
        raise GenerationCancelled(f"{what}: cancelled")


def run_cancellable(fn: Callable[[], T], event: threading.Event | None, what: str, *,
                    poll: float = 0.05) -> T:
    """``fn()``'s result (or its exception), but with ``event`` given it runs on a daemon
    thread and :class:`GenerationCancelled` is raised within ``poll`` seconds of ``event``
    being set. ``fn`` then goes on in the background (a blocking request cannot be
    interrupted from outside) and its result is dropped; being a daemon thread, it never
    keeps the process from exiting."""
    if event is None:
        return fn()
    raise_if_cancelled(event, what)
    box: dict = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the caller below
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=target, name=f"cancellable {what}", daemon=True).start()
    while not done.wait(poll):
        raise_if_cancelled(event, what)
    if "error" in box:
        raise box["error"]
    return box["value"]
