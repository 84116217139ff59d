"""Quantize a GGUF file with llama.cpp's own quantizer (``llama_model_quantize`` in
llama-cpp-python), refusing what would silently cost quality.

The module is not called ``gguf`` so that ``import gguf`` (the reader/writer package) inside
this package can never resolve to it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

# Output types: name -> llama_cpp.LLAMA_FTYPE_* constant. Left out: the IQ1/IQ2 and Q2_K_S
# types (llama.cpp refuses them without an importance matrix, which this command does not
# compute) and the special-purpose MXFP4_MOE, NVFP4, TQ*, Q1_0/Q2_0.
QUANT_TYPES: dict[str, str] = {
    "F32": "LLAMA_FTYPE_ALL_F32",
    "F16": "LLAMA_FTYPE_MOSTLY_F16",
    "BF16": "LLAMA_FTYPE_MOSTLY_BF16",
    "Q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0",
    "Q6_K": "LLAMA_FTYPE_MOSTLY_Q6_K",
    "Q5_K_M": "LLAMA_FTYPE_MOSTLY_Q5_K_M",
    "Q5_K_S": "LLAMA_FTYPE_MOSTLY_Q5_K_S",
    "Q5_1": "LLAMA_FTYPE_MOSTLY_Q5_1",
    "Q5_0": "LLAMA_FTYPE_MOSTLY_Q5_0",
    "Q4_K_M": "LLAMA_FTYPE_MOSTLY_Q4_K_M",
    "Q4_K_S": "LLAMA_FTYPE_MOSTLY_Q4_K_S",
    "Q4_1": "LLAMA_FTYPE_MOSTLY_Q4_1",
    "Q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0",
    "IQ4_NL": "LLAMA_FTYPE_MOSTLY_IQ4_NL",
    "IQ4_XS": "LLAMA_FTYPE_MOSTLY_IQ4_XS",
    "Q3_K_L": "LLAMA_FTYPE_MOSTLY_Q3_K_L",
    "Q3_K_M": "LLAMA_FTYPE_MOSTLY_Q3_K_M",
    "Q3_K_S": "LLAMA_FTYPE_MOSTLY_Q3_K_S",
    "Q2_K": "LLAMA_FTYPE_MOSTLY_Q2_K",
}

#: tensor types of an unquantized source
FLOAT_TYPES = ("F32", "F16", "BF16")

REQUANTIZE_WHY = (
    "requantizing costs quality: the weights were already rounded once to {src}, and "
    "quantizing them again to {dst} compounds the two rounding errors. Quantize from an "
    "F16/F32 source instead (for the embedder: `python -m quantize convert`), or pass "
    "--allow-requantize to accept the loss."
)


class QuantizeError(Exception):
    """A quantization that cannot or must not run: bad input, unknown type, existing output,
    a requantization not allowed, or llama.cpp failing (its message included)."""


class RequantizeRefused(QuantizeError):
    """The input is already quantized and ``allow_requantize`` was not given."""


@dataclass(frozen=True)
class QuantizeResult:
    """One finished quantization: paths, type names, sizes in bytes, wall seconds."""

    src: Path
    dst: Path
    src_type: str
    dst_type: str
    src_bytes: int
    dst_bytes: int
    seconds: float


@dataclass(frozen=True)
class GGUFType:
    """What a GGUF file holds: ``file_type`` (``general.file_type`` as a name such as
    ``Q4_1``, or the commonest tensor type when the key is absent) and whether any tensor is
    quantized (a type other than F32/F16/BF16)."""

    file_type: str
    quantized: bool


def read_gguf_type(path: Path) -> GGUFType:
    """The type of GGUF ``path``, read with ``gguf.GGUFReader`` (memory-mapped, no tensor
    data read). Raises :class:`QuantizeError` for a missing file or one that is not GGUF."""
    import gguf

    path = Path(path)
    if not path.is_file():
        raise QuantizeError(f"{path}: no such file")
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise QuantizeError(f"{path} is not a GGUF file (it does not start with 'GGUF')")
    try:
        reader = gguf.GGUFReader(path)
    except (ValueError, OSError, IndexError) as e:
        raise QuantizeError(f"{path} is a damaged or truncated GGUF file ({e})") from None
    tensor_types = [t.tensor_type.name for t in reader.tensors]
    quantized = any(t not in FLOAT_TYPES for t in tensor_types)
    field = reader.fields.get("general.file_type")
    if field is not None:
        value = int(field.parts[field.data[0]][0])
        try:
            name = gguf.LlamaFileType(value).name
        except ValueError:
            name = f"file type {value}"
        name = name.removeprefix("MOSTLY_").removeprefix("ALL_")
    elif tensor_types:
        name = Counter(t for t in tensor_types).most_common(1)[0][0]
    else:
        name = "unknown"
    return GGUFType(name, quantized or name not in FLOAT_TYPES)


def ftype_of(qtype: str) -> int:
    """The ``llama_cpp.LLAMA_FTYPE_*`` value of type name ``qtype`` (case-insensitive).
    Raises :class:`QuantizeError` listing the known names for an unknown one."""
    import llama_cpp

    key = qtype.upper()
    if key not in QUANT_TYPES:
        raise QuantizeError(f"unknown type {qtype!r}; known types: {', '.join(QUANT_TYPES)}")
    return int(getattr(llama_cpp, QUANT_TYPES[key]))


def check_output(dst: Path, *, force: bool) -> None:
    """Refuse an output that exists (unless ``force``) or whose folder does not."""
    dst = Path(dst)
    if dst.exists() and not force:
        raise QuantizeError(f"{dst} exists; pass --force to overwrite it")
    if not dst.parent.is_dir():
        raise QuantizeError(f"{dst.parent}: no such folder for the output")


@contextlib.contextmanager
def staged_output(dst: Path):
    """Yield a temporary path next to ``dst``; on success it is renamed to ``dst``, on any
    error (or interrupt) removed, so ``dst`` is never a half-written file."""
    fd, tmp = tempfile.mkstemp(dir=Path(dst).parent, prefix=f".{Path(dst).name}.",
                               suffix=".part")
    os.close(fd)
    try:
        yield Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 is not what a plain write gives
        os.replace(tmp, dst)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _run_llama_quantize(src: Path, dst: Path, ftype: int, *, allow_requantize: bool,
                        threads: int) -> None:
    """``llama_model_quantize(src, dst)``; its log goes to the ``llama_cpp`` logger and the
    warnings/errors it logged become the :class:`QuantizeError` message when it fails."""
    import llama_cpp

    from models.llama_session import keep_std_streams

    keep_std_streams()  # llama.cpp's log -> the Python logger, not the terminal
    params = llama_cpp.llama_model_quantize_default_params()
    params.nthread = threads
    params.ftype = ftype
    params.allow_requantize = allow_requantize
    collect = _Collect()
    log = logging.getLogger("llama_cpp")
    log.addHandler(collect)
    try:
        rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(),
                                            llama_cpp.byref(params))
    finally:
        log.removeHandler(collect)
    if rc != 0:
        detail = "; ".join(line.strip() for line in collect.lines if line.strip())
        raise QuantizeError(f"llama.cpp could not quantize {src}: {detail or f'code {rc}'}")


def quantize_gguf(src: Path, dst: Path, qtype: str, *, allow_requantize: bool = False,
                  threads: int = 2, force: bool = False) -> QuantizeResult:
    """Quantize GGUF ``src`` to type ``qtype`` (a :data:`QUANT_TYPES` name, e.g. ``Q8_0``)
    into ``dst`` with llama.cpp's quantizer, ``threads`` CPU threads.

    Tensors llama.cpp keeps in higher precision stay so (norms, 1-D tensors); a k-quant
    (``*_K*``) needs rows that are a multiple of 256 wide, and llama.cpp falls back per
    tensor (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0) where they are not (384-wide MiniLM).

    Raises :class:`QuantizeError` for a missing or non-GGUF ``src``, an unknown type, an
    existing ``dst`` without ``force``, or llama.cpp failing; :class:`RequantizeRefused` when
    ``src`` is already quantized and ``allow_requantize`` is false. ``dst`` appears only
    complete (written next to it under a temporary name, then renamed).
    """
    src, dst = Path(src), Path(dst)
    ftype = ftype_of(qtype)
    have = read_gguf_type(src)
    check_output(dst, force=force)
    if have.quantized and not allow_requantize:
        raise RequantizeRefused(
            f"{src} is already quantized ({have.file_type}); "
            + REQUANTIZE_WHY.format(src=have.file_type, dst=qtype.upper()))
    t0 = time.perf_counter()
    with staged_output(dst) as tmp:
        _run_llama_quantize(src, tmp, ftype, allow_requantize=allow_requantize,
                            threads=threads)
    return QuantizeResult(src, dst, have.file_type, qtype.upper(), src.stat().st_size,
                          dst.stat().st_size, time.perf_counter() - t0)
