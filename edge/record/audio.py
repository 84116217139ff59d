"""A silent source: each finished clip's audio level, and a warning (log and ``edge
status``) when the source's audio stays below :data:`SILENCE_DBFS` for ``--silent-after``.

A muted, unplugged or broken microphone leaves memory without speech, which is easy to miss
in an unattended recording; a source without an audio track is shown as such, not warned
about. The level is measured on the clip as ASR hears it (16 kHz mono, :func:`edge.ingest.media.
load_audio`), in the capture thread, once per clip (a few milliseconds per 30 s).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

log = logging.getLogger("edge.record")

SILENCE_DBFS = -60.0
"""A clip whose audio RMS is below this (dB relative to full scale) is silent. Measured on
the shared footage: speech -16 to -26 dBFS, a quiet room -48 dBFS (its quietest second -54);
a muted microphone gives digital silence or hiss far below -60."""

FLOOR_DBFS = -120.0
"""The level reported for digital silence (RMS 0; JSON has no -inf)."""


def audio_level(path: Path) -> float | None:
    """The RMS level of a clip's audio in dBFS (at least :data:`FLOOR_DBFS`), or ``None``
    when the clip has no audio stream. Raises :class:`edge.errors.MediaError` when the
    audio cannot be decoded."""
    import numpy as np

    from edge.ingest.media import load_audio

    samples = load_audio(path)
    if samples is None or samples.size == 0:
        return None
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    return max(FLOOR_DBFS, 20.0 * math.log10(rms)) if rms > 0 else FLOOR_DBFS


class SilenceWatch:
    """Consecutive silent footage of one recording, fed clip by clip (source order).

    ``silent_after``: seconds of silence before the warning (``None``: never warn);
    ``threshold``: dBFS below which a clip is silent. :meth:`status` is the status file's
    ``audio`` entry. Thread-safe enough for one writer (the capture thread) and readers of
    plain attributes.
    """

    def __init__(self, silent_after: float | None, threshold: float = SILENCE_DBFS) -> None:
        self.silent_after = silent_after
        self.threshold = threshold
        self.level: float | None = None     # the newest clip's level, dBFS
        self.has_audio: bool | None = None  # None: no clip measured yet
        self.silent_since: float | None = None  # Unix seconds the silent stretch began
        self.silent_seconds = 0.0
        self.warning: str | None = None

    def check_clip(self, path: Path, start: float, duration: float) -> None:
        """Measure a finished clip (``start`` Unix seconds, ``duration`` seconds) and update
        the silent stretch; errors are logged, never raised."""
        from edge.errors import MediaError

        try:
            level = audio_level(path)
        except (MediaError, OSError) as e:
            log.warning("cannot measure the audio of %s: %s", path.name, e)
            return
        self.add(start, duration, level)

    def add(self, start: float, duration: float, level: float | None) -> None:
        """One clip's level (``None``: no audio stream). Logs once that the source has no
        audio track (when that is first seen, and again if it comes back without one), the
        warning once per silent stretch, when it reaches ``silent_after``, and when the sound
        is back."""
        if level is None and self.has_audio is not False:
            log.info("the source has no audio track: its clips are remembered without a "
                     "transcript (speech cannot be searched)")
        self.level, self.has_audio = level, level is not None
        if level is None or level >= self.threshold:
            if self.warning is not None:
                log.info("the source's audio is back (%.0f dBFS)", level or FLOOR_DBFS)
            self.silent_since, self.silent_seconds, self.warning = None, 0.0, None
            return
        if self.silent_since is None:
            self.silent_since = start
        self.silent_seconds = start + duration - self.silent_since
        if (self.warning is None and self.silent_after is not None
                and self.silent_seconds >= self.silent_after):
            from humanfriendly import format_timespan

            self.warning = (f"the source's audio has been silent (below {self.threshold:.0f} "
                            f"dBFS) for {format_timespan(round(self.silent_seconds))}: check "
                            "the microphone (muted, unplugged, or not recording sound)")
            log.warning("%s", self.warning)

    def status(self) -> dict:
        """The ``audio`` entry of the status file: ``level_dbfs`` (newest clip), ``has_audio``,
        ``silent_seconds``, ``silent_since``, ``silent_after``, ``threshold_dbfs``,
        ``warning``."""
        return {"level_dbfs": None if self.level is None else round(self.level, 1),
                "has_audio": self.has_audio, "silent_seconds": round(self.silent_seconds, 1),
                "silent_since": self.silent_since, "silent_after": self.silent_after,
                "threshold_dbfs": self.threshold, "warning": self.warning}
