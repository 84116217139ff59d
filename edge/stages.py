"""Where ingest time goes: wall-clock seconds per stage and the real-time factor (RTF).

The stages of building memory from footage: ``decode`` (video frames and audio samples),
``asr`` (transcription), ``caption``, the character tier's ``voices`` (speaker turns),
``faces`` (detection, descriptors, grouping per clip) and ``people`` (matching identities,
writing appearances and face crops), ``memory_llm`` (keys, facts), ``embed``,
``store`` (keyframes and the SQLite transaction), plus ``load`` (models loaded on first
use, so that it does not count against the first clip's stage). RTF = stage seconds /
seconds of footage processed; below 1 the stage keeps up with real time on this device.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

STAGES: tuple[str, ...] = ("load", "decode", "asr", "caption", "voices", "faces", "people",
                           "memory_llm", "embed", "store")
"""Stage names in pipeline order."""

STAGE_ROLES: dict[str, tuple[str, ...]] = {
    "asr": ("transcriber",),
    "caption": ("captioner", "ocr"),
    "voices": ("voices",),  # the GE2E encoder's runs (models/voices.py)
    "memory_llm": ("memory_llm", "memory_llm.links", "memory_llm.global"),  # PyraVid calls
    "embed": ("embedder",),
}
"""The model roles (as counted by ``models.UsageMeter``) whose calls belong to each stage."""

T = TypeVar("T")


class StageClock:
    """Accumulates ``time.perf_counter`` seconds per stage.

    ``with clock.stage("asr"): ...`` adds the block's wall time to ``asr`` (also when it
    raises); :meth:`timed` does the same for each ``next()`` of an iterator (a decoder).
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Add the block's wall-clock seconds to ``seconds[name]``, also when it raises."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

    def timed(self, name: str, items: Iterable[T]) -> Iterator[T]:
        """Yield from ``items``, charging the time spent producing each item to ``name``."""
        it = iter(items)
        while True:
            with self.stage(name):
                try:
                    item = next(it)
                except StopIteration:
                    return
            yield item


def stage_report(seconds: dict[str, float], media_seconds: float,
                 by_role: dict[str, dict] | None = None) -> dict[str, dict]:
    """Per stage: ``seconds``, ``rtf`` (seconds / ``media_seconds``; ``None`` without
    footage) and the ``calls``/``tokens_in``/``tokens_out`` of the model roles behind it
    (from ``UsageMeter.summary()['by_role']``). Stages appear in :data:`STAGES` order,
    unknown ones after them; stages never entered are left out."""
    by_role = by_role or {}
    names = [s for s in STAGES if s in seconds] + sorted(set(seconds) - set(STAGES))
    out: dict[str, dict] = {}
    for name in names:
        secs = seconds[name]
        row = {"seconds": round(secs, 3),
               "rtf": round(secs / media_seconds, 4) if media_seconds > 0 else None,
               "calls": 0, "tokens_in": 0, "tokens_out": 0}
        for role in STAGE_ROLES.get(name, ()):
            r = by_role.get(role)
            if r:
                row["calls"] += r["calls"]
                row["tokens_in"] += r["tokens_in"]
                row["tokens_out"] += r["tokens_out"]
        out[name] = row
    return out
