"""Whether the character tier runs, and with what: a profile's ``characters`` setting
(default on; ``characters = false`` in a profile of ``profiles.toml`` turns it off, e.g. on a
device that must keep no biometric data), the frames searched per clip, and the face and
voice models, loaded once through the hub (``ModelHub.faces``, ``ModelHub.voices``).

A model that cannot be loaded (dlib not installed, the voice encoder not converted) turns
its half of the tier off for the run with one warning per source, naming the fix: footage
is never refused because a person could not be recognised in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

FACE_FRAMES = 6
"""Frames of a clip searched for faces (evenly spread over it: every 6 s of a 30 s clip
sampled at 1 fps). Measured on the shared footage, 2 quiet cores, tiny profile
(benchmarks/people_costs.py: 640-px detection without upsampling, 0.047 s a frame): the
faces stage costs 0.013× real time and the whole real-time tier 0.144× (10 frames: 0.022×
and 0.151×, over the 0.15× budget). A person seen in one frame joins an identity already
known; starting one takes two (about 10 s on screen)."""


def characters_enabled(hub) -> bool:
    """Whether ``hub``'s profile runs the character tier (``Profile.characters``; a hub
    without a profile, such as a test's stand-in, runs none)."""
    profile = getattr(hub, "profile", None)
    return bool(getattr(profile, "characters", False))


@dataclass
class PeopleTier:
    """The character tier of one ingest run: the hub its models come from, the frames
    searched per clip (``frames``), and ``off``: the half of the tier
    (``face``/``voice``) that could not load, with why."""

    hub: Any
    frames: int = FACE_FRAMES
    off: dict[str, str] = field(default_factory=dict)

    @cached_property
    def thresholds(self):
        """The measured match thresholds (:class:`edge.people.online.Thresholds`)."""
        from edge.people.online import Thresholds

        return Thresholds.measured()

    @classmethod
    def for_hub(cls, hub) -> PeopleTier | None:
        """The tier for ``hub``'s profile, or ``None`` when the profile turns it off."""
        return cls(hub, frames=FACE_FRAMES) if characters_enabled(hub) else None

    def model(self, kind: str, warnings: list[str] | None = None):
        """The loaded ``face`` (``FaceEmbedder``) or ``voice`` (``VoiceEncoder``) model, or
        ``None`` when it cannot load — said once in ``warnings`` (then that half of the
        tier stays off for the run)."""
        if kind in self.off:
            return None
        try:
            import sklearn.cluster  # noqa: F401  (grouping; imported here, charged to load)

            return self.hub.faces if kind == "face" else self.hub.voices
        except Exception as e:  # a missing optional model never stops the footage
            self.off[kind] = f"{e.__class__.__name__}: {e}"
            if warnings is not None:
                warnings.append(f"character tier: {kind}s not recognised ({self.off[kind]}); "
                                "`bash scripts/setup.sh` installs the models, `edge doctor` "
                                "checks them")
            return None
