"""Model files the user made (a quantized GGUF, a converted embedder), registered in the user
profiles file so profiles can name them.

:func:`register_artifact` (``edge models add``) checks the file's format against the backend,
records its absolute path, size and sha256 (plus where it came from and its quantization) in a
``[models.NAME]`` table of the user file, and keeps everything else in that file (other tables,
comments: tomlkit edits the document in place). The write is atomic: a killed write leaves the
old file. Before every load the resolver compares the recorded size and a GGUF's magic bytes
(:func:`models.resolve.check_registered`); :func:`artifact_rows` with ``full=True``
(``edge models verify``) hashes the file again.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from models.registry import ConfigError, ModelSpec, load_manifest, merge_user_tables
from models.resolve import (
    GGUF_MAGIC,
    WeightsCorruptError,
    WeightsMissingError,
    check_sha256,
    resolve_weights,
    sha256_file,
)

GGUF_BACKENDS: tuple[str, ...] = ("llama.cpp", "llama.cpp-embedder")
ONNX_BACKENDS: tuple[str, ...] = ("onnx-embedder",)
BACKENDS: tuple[str, ...] = GGUF_BACKENDS + ONNX_BACKENDS
"""The backends a registered file can be for (``edge models add --backend``)."""

INHERITED: dict[str, tuple[str, ...]] = {
    "llama.cpp": ("n_ctx", "chat_format", "grammar"),
    "llama.cpp-embedder": ("dim", "max_tokens", "n_ctx"),
    "onnx-embedder": ("dim", "max_tokens", "tokenizer_module", "tokenizer_path_function",
                      "tokenizer_file"),
}
"""Options a registered file takes from the model it was made from (``derived_from``), per
backend, unless given: the context of a quantized LLM, an embedder's width and tokenizer."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class RegisterError(ConfigError):
    """A file that cannot be registered: bad name, wrong format, a name already taken."""


def check_format(path: Path, backend: str) -> None:
    """Raise :class:`RegisterError` unless ``path`` is a file ``backend`` loads: a GGUF (magic
    bytes) for the llama.cpp backends, an ONNX graph that onnxruntime can open for
    ``onnx-embedder``."""
    if backend not in BACKENDS:
        raise RegisterError(f"unknown backend {backend!r}; one of: {', '.join(BACKENDS)}")
    if not path.is_file():
        raise RegisterError(f"{path} is not a file")
    if backend in GGUF_BACKENDS:
        with open(path, "rb") as f:
            if f.read(4) != GGUF_MAGIC:
                raise RegisterError(f"{path} is not a GGUF file (bad magic), but backend "
                                    f"{backend!r} loads GGUF files")
        return
    import onnxruntime as ort

    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own Fail/InvalidProtobuf classes
        raise RegisterError(f"{path} is not an ONNX model onnxruntime can load "
                            f"(backend {backend!r}): {e}") from None


def _table(path: Path, backend: str, base: ModelSpec | None, *, description: str,
           quant_type: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """The ``[models.NAME]`` entries of a registered file, in the order they are written."""
    table: dict[str, Any] = {"backend": backend, "source": "path", "path": str(path),
                             "size": path.stat().st_size, "sha256": sha256_file(path)}
    if description:
        table["description"] = description
    if base is not None:
        table["derived_from"] = base.name
        if base.license:
            table["license"] = base.license
    if quant_type:
        table["quant"] = quant_type.upper()
    inherited = {k: base.options[k] for k in INHERITED[backend]
                 if base is not None and k in base.options}
    table.update({**inherited, **{k: v for k, v in options.items() if v is not None}})
    if backend == "onnx-embedder" and "tokenizer_module" not in table:
        raise RegisterError("an onnx-embedder needs a tokenizer: name the model the file was "
                            "made from (--from MODEL) to use its tokenizer")
    return table


def _read_document(user_file: Path):
    """The user file as a tomlkit document (an empty one when the file does not exist)."""
    import tomlkit

    if not user_file.exists():
        return tomlkit.document()
    try:
        return tomlkit.parse(user_file.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomlkit.exceptions.ParseError) as e:
        raise ConfigError(f"{user_file}: cannot read the user profiles file: {e}") from None


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` through a temporary file in the same folder and a
    rename, so a write killed half way leaves the old file whole; keeps the old file's
    permission bits (0644 for a new file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def register_artifact(user_file: Path, name: str, path: Path, *, backend: str,
                      description: str = "", derived_from: str | None = None,
                      quant_type: str | None = None, options: dict[str, Any] | None = None,
                      force: bool = False) -> ModelSpec:
    """Register the file at ``path`` as model ``name`` in ``user_file`` (``[models.NAME]``)
    and return its :class:`ModelSpec` as profiles will see it.

    Records ``backend``, ``source = "path"``, the absolute ``path``, ``size`` (bytes),
    ``sha256``, ``description``, ``derived_from`` (a known model; its backend options listed
    in :data:`INHERITED` are copied unless ``options`` gives them), ``quant`` (e.g. Q8_0)
    and ``options`` (``n_ctx``, ``dim``, ``max_tokens``...; ``None`` values are left out).
    Raises :class:`RegisterError` for a name that is not a plain word, a shipped model's
    name, a model already in the user file (unless ``force``), a file of the wrong format,
    or an unknown ``derived_from``; :class:`ConfigError` when the user file cannot be read
    or would no longer load. The user file is unchanged on any error.
    """
    if not _NAME.fullmatch(name):
        raise RegisterError(f"model name {name!r}: use letters, digits, '.', '_' and '-'")
    if name in load_manifest().models:
        raise RegisterError(f"{name!r} is a shipped model's name; choose another name")
    path = Path(path).expanduser().resolve()
    check_format(path, backend)
    user_file = Path(user_file)
    doc = _read_document(user_file)
    if name in doc.get("models", {}) and not force:
        raise RegisterError(f"{user_file} already has a model {name!r}; "
                            "replace it with --force")
    base = None
    if derived_from:  # a shipped or user model; the profiles may still name this new one
        models_only = {"models": doc.unwrap().get("models", {})}
        base = merge_user_tables(models_only, user_file).model(derived_from)
    table = _table(path, backend, base, description=description, quant_type=quant_type,
                   options=options or {})
    return _write_model(user_file, doc, name, table)


def _write_model(user_file: Path, doc, name: str, table: dict[str, Any]) -> ModelSpec:
    """Put ``table`` under ``[models.NAME]`` of ``doc``, check that the result loads, and
    write it atomically."""
    import tomlkit

    if "models" not in doc:
        doc.add("models", tomlkit.table(is_super_table=True))
    entry = tomlkit.table()
    for key, value in table.items():
        entry.add(key, value)
    doc["models"][name] = entry
    text = tomlkit.dumps(doc)
    try:
        manifest = merge_user_tables(tomllib.loads(text), user_file)
    except ConfigError as e:
        raise RegisterError(f"{e}; nothing was written: fix that first") from None
    write_atomic(user_file, text)
    return manifest.model(name)


def user_artifacts(user_file: Path) -> list[ModelSpec]:
    """The models of ``user_file`` whose weights are a file of the user's (``source =
    "path"``), in file order; empty when the file does not exist."""
    if not Path(user_file).exists():
        return []
    try:
        names = list(tomllib.loads(Path(user_file).read_text("utf-8")).get("models", {}))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{user_file}: cannot read the user profiles file: {e}") from None
    from models.registry import load_manifest_with_user

    manifest = load_manifest_with_user(user_file)
    return [manifest.models[n] for n in names if manifest.models[n].source == "path"]


def artifact_row(spec: ModelSpec, models_dir: Path, *, full: bool) -> dict[str, Any]:
    """One model's state: name, backend, path, size, quant, derived_from, the recorded sha256
    and ``state``: ``"sha256 ok"`` (``full``: hashed again), ``"size ok"`` (the cheap check),
    ``"no checksum recorded"``, or the error (``ok`` false) — missing, resized, re-hashed
    to something else."""
    row = {"name": spec.name, "backend": spec.backend, "path": spec.option("path"),
           "size": spec.option("size"), "quant": spec.option("quant"),
           "derived_from": spec.option("derived_from"), "sha256": spec.option("sha256"),
           "ok": False, "state": ""}
    try:
        path = resolve_weights(spec, models_dir)
        row["path"] = str(path) if path else None
        if path is None or not path.is_file():
            row.update(ok=True, state="no file to check")
        elif not row["sha256"] or row["sha256"] == "unverified":
            row.update(ok=True, state="no checksum recorded")
        elif full:
            check_sha256(spec, path)
            row.update(ok=True, state="sha256 ok")
        else:
            row.update(ok=True, state="size ok" if row["size"] is not None else "found")
    except (WeightsMissingError, WeightsCorruptError) as e:
        row["state"] = str(e)
    return row
