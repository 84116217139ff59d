"""Where edge keeps things: one user directory (``EDGE_HOME`` overrides it), like simonw/llm.

- memory database: ``$EDGE_HOME/memory.db`` unless ``--memory``/``EDGE_MEMORY`` says otherwise;
  keyframes are written beside it in ``<memory>.frames/``;
- assembled model files: ``$EDGE_HOME/models`` (``EDGE_MODELS_DIR`` overrides it);
- caches that can be rebuilt (benchmark memories outside a checkout): ``$EDGE_CACHE`` or the
  user cache dir;
- the profile: ``small`` unless ``--profile``/``EDGE_PROFILE`` says otherwise;
- the user's own models and profiles (remote roles, pulled VLMs): ``$EDGE_HOME/profiles.toml``
  (``EDGE_PROFILES`` overrides it), merged over the shipped ``models/manifest.toml``.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

DEFAULT_PROFILE = "small"


def home() -> Path:
    """The user directory for edge (created on demand by whoever writes into it)."""
    env = os.environ.get("EDGE_HOME")
    return Path(env).expanduser() if env else platformdirs.user_data_path("edge")


def default_memory_path() -> Path:
    """The memory file when ``--memory`` is not given: ``$EDGE_MEMORY`` or
    ``$EDGE_HOME/memory.db``."""
    env = os.environ.get("EDGE_MEMORY")
    return Path(env).expanduser() if env else home() / "memory.db"


def cache_dir() -> Path:
    """Rebuildable caches: ``$EDGE_CACHE`` or the user cache dir (created by the writer)."""
    env = os.environ.get("EDGE_CACHE")
    return Path(env).expanduser() if env else platformdirs.user_cache_path("edge")


def models_dir() -> Path:
    """Where model files live: ``$EDGE_MODELS_DIR`` or ``$EDGE_HOME/models``."""
    env = os.environ.get("EDGE_MODELS_DIR")
    return Path(env).expanduser() if env else home() / "models"


def default_profile() -> str:
    """The profile when ``--profile`` is not given: ``$EDGE_PROFILE`` or ``small``."""
    return os.environ.get("EDGE_PROFILE", DEFAULT_PROFILE)


def frames_dir(memory_path: Path) -> Path:
    """Keyframes of a memory live beside its database file."""
    memory_path = Path(memory_path)
    return memory_path.with_name(memory_path.name + ".frames")


def user_profiles_file() -> Path:
    """The user's profiles TOML (may not exist): ``$EDGE_PROFILES`` or
    ``$EDGE_HOME/profiles.toml``."""
    env = os.environ.get("EDGE_PROFILES")
    return Path(env).expanduser() if env else home() / "profiles.toml"
