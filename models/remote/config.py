"""Settings of a remote role (the table in :mod:`models.remote`) and the remote errors.

A role's settings come from its ``[models.NAME]`` options, each overridden by
``EDGE_<ROLE>_<KEY>`` in the environment; :func:`env_remote_spec` makes a role remote from
the environment alone.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from models.registry import ConfigError, ModelSpec

JSON_MODES = ("json_schema", "json_object", "none")
"""The ``response_format`` forms tried, in this order, when ``json_mode = "auto"``."""
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class RemoteUnavailableError(ConfigError):
    """The remote server could not be reached (or kept failing) after the retries."""


class RemoteError(RuntimeError):
    """The remote server answered with an error that retrying does not fix."""


def env_prefix(role: str) -> str:
    """``EDGE_SOLVER_`` for role ``solver``: the prefix of a role's environment overrides."""
    return f"EDGE_{role.upper()}_"


@dataclass(frozen=True)
class RemoteConfig:
    """Where and how one role talks to an OpenAI-compatible server (see the table in
    :mod:`models.remote`): ``timeout`` in seconds per request, ``n_ctx`` in tokens.
    ``base_url``: one server root, or several serving the same model, comma-separated
    (:attr:`base_urls`; each thread talks to one of them)."""

    role: str
    base_url: str
    model: str
    api_key: str = "none"
    timeout: float = 60.0
    max_retries: int = 2
    n_ctx: int = 8192
    json_mode: str = "auto"
    allow_frames: bool = False

    @property
    def base_urls(self) -> list[str]:
        """The server roots of :attr:`base_url`, in order."""
        return self.base_url.split(",")

    @classmethod
    def from_spec(cls, spec: ModelSpec | None, role: str,
                  environ: Mapping[str, str] | None = None) -> RemoteConfig:
        """Settings from ``spec``'s options with ``EDGE_<ROLE>_*`` overrides from ``environ``
        (default ``os.environ``). Raises :class:`ConfigError` naming the missing or bad key."""
        env = os.environ if environ is None else environ
        opts = dict(spec.options) if spec is not None else {}
        pre = env_prefix(role)
        where = f"model {spec.name!r}" if spec is not None else "the environment"

        def get(key: str, default: Any = None) -> Any:
            return env.get(pre + key.upper(), opts.get(key, default))

        base_url, model = _endpoint(role, get, pre, where)
        try:
            cfg = cls(role=role, base_url=base_url.rstrip("/"), model=model,
                      api_key=_api_key(env, opts, pre),
                      timeout=float(get("timeout", 60.0)),
                      max_retries=int(get("max_retries", 2)), n_ctx=int(get("n_ctx", 8192)),
                      json_mode=str(get("json_mode", "auto")),
                      allow_frames=_flag(get("allow_frames", False)))
        except ValueError as e:
            raise ConfigError(
                f"role {role}: bad remote setting in {where} or {pre}*: {e}") from None
        if cfg.json_mode not in ("auto", *JSON_MODES):
            raise ConfigError(f"role {role}: json_mode {cfg.json_mode!r} is not one of auto, "
                              + ", ".join(JSON_MODES))
        if cfg.timeout <= 0 or cfg.max_retries < 0 or cfg.n_ctx < 256:
            raise ConfigError(f"role {role}: timeout must be > 0, max_retries ≥ 0, n_ctx ≥ 256")
        return cfg


def _endpoint(role: str, get, pre: str, where: str) -> tuple[str, str]:
    """The base URL and model name, both required; raises :class:`ConfigError`."""
    base_url = ",".join(u.strip().rstrip("/") for u in str(get("base_url") or "").split(",")
                        if u.strip())
    model = str(get("model") or "").strip()
    if not base_url:
        raise ConfigError(f"role {role}: remote backend without a base URL; set base_url "
                          f"in {where} or {pre}BASE_URL (e.g. http://127.0.0.1:8080/v1)")
    for url in base_url.split(","):
        if urlparse(url).scheme not in ("http", "https"):
            raise ConfigError(f"role {role}: base URL {url!r} must start with http:// or "
                              "https://")
    if not model:
        raise ConfigError(f"role {role}: remote backend at {base_url} without a model "
                          f"name; set model in {where} or {pre}MODEL")
    return base_url, model


def _api_key(env: Mapping[str, str], opts: dict, pre: str) -> str:
    """``EDGE_<ROLE>_API_KEY``, else the variable ``api_key_env`` names, else ``api_key``,
    else ``"none"``."""
    key = env.get(pre + "API_KEY")
    if key is None and opts.get("api_key_env"):
        key = env.get(str(opts["api_key_env"]))
    if key is None:
        key = opts.get("api_key")
    return str(key) if key else "none"


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"allow_frames={value!r}: use true or false")


def env_remote_spec(role: str, environ: Mapping[str, str] | None = None) -> ModelSpec | None:
    """A remote model spec for ``role`` when ``EDGE_<ROLE>_BASE_URL`` is set, else ``None``.

    This is how a role goes remote without a profile file; the remaining settings come from
    the other ``EDGE_<ROLE>_*`` variables.
    """
    env = os.environ if environ is None else environ
    if not env.get(env_prefix(role) + "BASE_URL"):
        return None
    model = env.get(env_prefix(role) + "MODEL", "")
    return ModelSpec(name=f"remote-{role}" + (f" ({model})" if model else ""),
                     backend="openai", source="none",
                     description=f"remote OpenAI-compatible {role} from {env_prefix(role)}*")
