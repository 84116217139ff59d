"""Health checks behind ``edge doctor`` and ``edge models list``: each role resolves its
weights, loads, and does one small real piece of work."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models import ROLES, WeightsCorruptError, WeightsMissingError, resolve_weights
from models.hub import REMOTE_BACKEND
from models.resolve import check_sha256


@dataclass(frozen=True)
class Check:
    """One line of ``edge doctor``: what was checked, whether it passed, the detail."""

    name: str
    ok: bool
    detail: str


def _text_image(text: str) -> np.ndarray:
    import cv2

    img = np.full((120, 480, 3), 255, dtype=np.uint8)
    cv2.putText(img, text, (20, 80), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (0, 0, 0), 3, cv2.LINE_AA)
    return img


def _exercise(hub, role: str) -> str:
    """Do one small real job with ``role``; returns a detail line, raises on failure."""
    if role in ("embedder", "sentence_embedder"):
        emb, dim = hub.get(role), int(spec_of(hub, role).option("dim", 384))
        v = emb.embed(["a cup of tea on the kitchen table", "a bicycle in the garage"])
        if v.shape != (2, dim) or abs(float(np.linalg.norm(v[0])) - 1.0) > 1e-3:
            raise RuntimeError(f"unexpected embedding shape {v.shape}, expected (2, {dim})")
        q = emb.embed_one("where did I leave my tea?", query=True)
        if float(v[0] @ q) <= float(v[1] @ q):
            raise RuntimeError("a question about tea is closer to a bicycle than to tea: "
                               "the embedder's weights or prompts are wrong")
        return f"{dim}-d unit vectors; a question finds its sentence"
    if role == "transcriber":
        segs = hub.transcriber.transcribe(np.zeros(16_000, dtype=np.float32))
        return f"transcribed 1 s of silence ({len(segs)} segments)"
    if role == "captioner" and spec_of(hub, role).backend != "perception":
        from models.captioner import Frame

        cap = hub.captioner.caption([Frame(0.0, _text_image("EDGE 42"))], "", 1.0)
        if cap.signals.get("vlm_empty", True):
            raise RuntimeError(f"the VLM returned no description: {cap.text!r}")
        return f"captioned a rendered frame ({cap.signals.get('tokens_in', '?')} tokens in)"
    if role == "captioner":
        from models.captioner import Frame

        cap = hub.captioner.caption([Frame(0.0, _text_image("EDGE 42"))], "", 1.0)
        if "EDGE" not in cap.text.upper():
            raise RuntimeError(f"OCR did not read a rendered 'EDGE 42': {cap.text!r}")
        return "read rendered text 'EDGE 42'"
    llm = hub.llm(role)
    res = llm.chat([{"role": "user", "content": "Reply with the word ok."}], role=role,
                   max_tokens=4)
    detail = f"generated {res.tokens_out} tokens in {res.seconds:.1f} s (n_ctx {llm.n_ctx}"
    if spec_of(hub, role).backend.startswith("llama.cpp"):
        from models.llama_session import cpu_build

        detail += f", llama.cpp {cpu_build()} build"
    return detail + ")"


def spec_of(hub, role: str):
    """The spec serving ``role`` (an ``EDGE_<ROLE>_BASE_URL`` override included), or None."""
    if hasattr(hub, "spec") and role in ROLES:
        try:
            return hub.spec(role)
        except KeyError:
            return None
    return hub.profile.roles.get(role)


def _check_remote(hub, role: str, spec, row: dict, load: bool) -> None:
    """A remote role: its settings are valid and, with ``load``, the server answers."""
    from models.remote import RemoteConfig, RemoteLLM

    cfg = RemoteConfig.from_spec(spec, role)
    row["weights"] = f"remote {cfg.base_url} model {cfg.model}"
    if not load:
        row["ok"] = True
        return
    t0 = time.perf_counter()
    probe = RemoteLLM(cfg)
    try:
        served = probe.ping()
    finally:
        probe.close()
    listed = "lists it" if cfg.model in served else f"does not list it (serves {served})"
    row["detail"] = (f"reachable in {time.perf_counter() - t0:.1f} s; the server {listed}"
                     + ("; frames allowed" if cfg.allow_frames else ""))
    if role == "captioner":
        hub.get(role)  # refuses a remote captioner whose frames are not allowed
    row["loaded"] = row["ok"] = True


def check_roles(hub, *, load: bool = True) -> list[dict]:
    """One row per role: model, backend, weights path, whether it loads and works.

    A remote role (backend ``openai``) is checked by asking its server for its models
    (``GET /models``, one try, 3 s); an unreachable server is a failed row, not a crash.
    """
    rows = []
    for role in ROLES:
        spec = spec_of(hub, role)
        row = {"role": role, "model": spec.name if spec else "-",
               "backend": spec.backend if spec else "-",
               "license": (spec.license or "-") if spec else "-", "weights": None, "ok": False,
               "loaded": False, "detail": "", "error": ""}
        if spec is None:
            row["error"] = "not set in this profile"
            rows.append(row)
            continue
        try:
            if spec.backend == REMOTE_BACKEND:
                _check_remote(hub, role, spec, row, load)
                rows.append(row)
                continue
            path = resolve_weights(spec, hub.models_dir)
            if spec.backend == "llama.cpp-vlm":
                from models.resolve import resolve_mmproj

                resolve_mmproj(spec, hub.models_dir)
            row["weights"] = str(path) if path else "(none needed)"
            if load and spec.source == "path" and spec.option("sha256") and path.is_file():
                check_sha256(spec, path)  # a file of the user's: still what was registered?
            if load:
                t0 = time.perf_counter()
                row["detail"] = _exercise(hub, role)
                row["detail"] += f"; {time.perf_counter() - t0:.1f} s"
                row["loaded"] = True
            row["ok"] = True
        except Exception as e:  # a doctor reports, it does not crash
            row["error"] = failure(e)
        rows.append(row)
    return rows


def run_checks(hub, memory_path: Path) -> list[Check]:
    """Everything ``edge doctor`` prints, one :class:`Check` per line."""
    checks: list[Check] = []
    try:
        from edge.store import sqlite_versions

        vv, sv = sqlite_versions()
        checks.append(Check("sqlite-vec", True, f"{vv} on SQLite {sv} (apsw)"))
    except Exception as e:
        checks.append(Check("sqlite-vec", False, f"{e.__class__.__name__}: {e}"))
    try:
        import av

        missing = [c for c in ("h264", "hevc", "aac", "mp3") if c not in av.codecs_available]
        checks.append(Check("video decoding", not missing,
                            f"PyAV {av.__version__}" + (f"; missing decoders {missing}"
                                                        if missing else "; h264 hevc aac mp3")))
    except Exception as e:
        checks.append(Check("video decoding", False, f"{e.__class__.__name__}: {e}"))
    for row in check_roles(hub, load=True):
        detail = row["error"] or f"{row['model']} ({row['backend']}): {row['detail']}"
        checks.append(Check(f"role {row['role']}", row["ok"], detail))
    checks.append(character_check(hub))
    if getattr(getattr(hub, "profile", None), "characters", True):
        checks.append(voice_check(hub))
        checks.append(face_check(hub))
    checks.append(_memory_check(Path(memory_path)))
    return checks


def character_check(hub) -> Check:
    """The character tier's line: on or off in this profile (``characters``), and where
    that is set. Its face and voice models have lines of their own."""
    profile = getattr(hub, "profile", None)
    name = getattr(profile, "name", "?")
    if getattr(profile, "characters", False):
        return Check("character tier", True,
                     f"on in profile {name!r}: faces and voices in footage become people "
                     "(`edge people`); `characters = false` in a profile turns it off")
    return Check("character tier", True,
                 f"off in profile {name!r} (characters = false): no faces or voices are "
                 "kept")


def voice_check(hub) -> Check:
    """The voice encoder's line (GE2E, ``ModelHub.voices``): its ONNX file has the sha256
    the manifest records, it loads, and 2 s of a synthetic voiced sound give a 256-d unit
    vector while 2 s of silence give none (:class:`models.voices.VoiceError`)."""
    from models.hub import VOICE_MODEL
    from models.registry import load_manifest
    from models.resolve import sha256_file
    from models.voices import VOICE_DIM, VoiceError

    try:
        spec = (getattr(hub, "manifest", None) or load_manifest()).model(VOICE_MODEL)
        path = resolve_weights(spec, hub.models_dir)
        digest = sha256_file(path)
        if digest != spec.option("sha256"):
            raise WeightsCorruptError(
                f"{path}: sha256 {digest[:12]}…, expected {spec.option('sha256')[:12]}…; "
                f"delete it and run `python -m quantize install {VOICE_MODEL}`")
        t0 = time.perf_counter()
        t = np.arange(32_000) / 16_000
        voiced = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 12))
        v = hub.voices.embed_utterance((0.1 * voiced * (1 + np.sin(2 * np.pi * 3 * t)))
                                       .astype(np.float32))
        if v.shape != (VOICE_DIM,) or abs(float(np.linalg.norm(v)) - 1.0) > 1e-3:
            raise RuntimeError(f"unexpected voice vector shape {v.shape}")
        try:
            hub.voices.embed_utterance(np.zeros(32_000, np.float32))
            raise RuntimeError("silence was given a voice vector")
        except VoiceError:
            pass
        return Check("voices", True, f"{VOICE_MODEL} ({spec.license}): {VOICE_DIM}-d unit "
                                     f"vectors, sha256 as recorded, silence refused; "
                                     f"{time.perf_counter() - t0:.1f} s")
    except Exception as e:  # a doctor reports, it does not crash
        return Check("voices", False, failure(e))


def failure(e: Exception) -> str:
    """A failed check's words: a missing or corrupt weights file says what to do itself;
    anything else is named by its class."""
    if isinstance(e, WeightsMissingError | WeightsCorruptError):
        return str(e)
    return f"{e.__class__.__name__}: {e}"


def face_check(hub) -> Check:
    """The face models' line (``ModelHub.faces``, :mod:`models.faces`): the two dlib model
    files have the size and sha256 recorded in ``models.faces.WEIGHTS`` (hashed again here),
    they load, a blank frame has no face and an aligned chip gives a finite 128-d vector."""
    try:
        from models.faces import CHIP_SIZE, FACE_DIM, FACE_MATCH, model_files

        t0 = time.perf_counter()
        files = model_files()
        faces = hub.faces
        if faces.faces(np.full((360, 640, 3), 128, np.uint8)):
            raise RuntimeError("the detector found a face in a blank frame")
        v = faces.describe(np.full((CHIP_SIZE, CHIP_SIZE, 3), 128, np.uint8))
        if v.shape != (FACE_DIM,) or not np.isfinite(v).all():
            raise RuntimeError(f"unexpected face descriptor shape {v.shape}")
        return Check("faces", True, f"dlib HOG + 5-point + ResNet ({len(files)} files, "
                                    f"sha256 as recorded): {FACE_DIM}-d descriptors, one "
                                    f"person under {FACE_MATCH}; {time.perf_counter() - t0:.1f} s")
    except Exception as e:  # a doctor reports, it does not crash
        return Check("faces", False, failure(e))


def _memory_check(memory_path: Path) -> Check:
    """The memory's line: its clips and hours (read-only, said so, where it cannot be
    written: the doctor writes nothing into it), why it cannot be opened, or that it is
    not created yet."""
    if not memory_path.exists():
        return Check("memory", True, f"{memory_path} not created yet (edge ingest makes it)")
    from edge.store import Memory, ReadOnlyMemoryError

    try:
        try:
            m, how = Memory(memory_path, create=False), ""
        except ReadOnlyMemoryError:
            m, how = Memory(memory_path, create=False, readonly=True), " (read-only here)"
        with m:
            s = m.stats()
        return Check("memory", True, f"{memory_path}: {s['clips']} clips, "
                                     f"{s['hours']:.2f} h{how}")
    except Exception as e:
        return Check("memory", False, f"{memory_path}: {e}")
