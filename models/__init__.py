"""Model roles and their backends; knows nothing about clips or memory.

Public API: the manifest (profiles, roles, model specs), the weight resolver, the
:class:`ModelHub` that loads each role once, and the usage meter that counts every call.
"""

from models.hub import ModelHub, default_threads
from models.registry import (
    ROLES,
    Manifest,
    ModelSpec,
    Profile,
    UnknownModelError,
    load_manifest,
)
from models.resolve import WeightsCorruptError, WeightsMissingError, resolve_weights
from models.usage import CallRecord, UsageMeter

__all__ = [
    "ROLES",
    "CallRecord",
    "Manifest",
    "ModelHub",
    "ModelSpec",
    "Profile",
    "UnknownModelError",
    "UsageMeter",
    "WeightsCorruptError",
    "WeightsMissingError",
    "default_threads",
    "load_manifest",
    "resolve_weights",
]
