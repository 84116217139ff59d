"""Captioner role on a vision-language model: a dense caption per clip from its frames.

Two backends share one prompt (:func:`caption_messages`, OpenAI chat format with images as
``data:`` URLs):

- :class:`LlamaCppVLMCaptioner` runs a GGUF language model plus its ``mmproj`` projector
  through llama.cpp's libmtmd (``MTMDChatHandler``), which renders the chat template stored
  in the GGUF;
- :class:`models.remote.RemoteCaptioner` sends the same messages to an OpenAI-compatible
  server, only when the user allowed frames to leave the device.

A clip's frames are thinned to a *frame budget* (evenly spaced) and each image is shrunk so
its longer side fits an *image size cap*; both are manifest options because what fits
depends on the model's context and its projector's tokens per image. If the prompt still
overflows the context, the frame count is halved until it fits (down to a text-only call).
The transcript is appended verbatim (``Speech: "..."``, as the perception captioner does) so
the dialogue key never depends on the VLM reading lips.
"""

from __future__ import annotations

import base64
import ctypes
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from models.captioner import Caption, Frame
from models.usage import CallRecord, UsageMeter

os.environ.setdefault("GGML_NO_BACKTRACE", "1")  # a ggml assert otherwise forks gdb

CAPTION_PROMPT = (
    "You caption first-person (egocentric) video for a personal memory. You see frames of "
    "one clip in time order. Write one dense paragraph: where the wearer is, what they and "
    "others do, objects handled or in view (with colours and places), any visible text, and "
    "how the scene changes. Say only what the frames show; do not guess names or intentions."
)


@dataclass(frozen=True)
class FrameBudget:
    """How much of a clip a VLM sees.

    ``max_frames``: frames per clip, evenly spaced (≥ 1). ``image_max_side``: pixels of the
    longer side after shrinking (never enlarged). ``jpeg_quality``: 1–100.
    ``transcript_chars``: the transcript is cut to this many characters in the prompt.
    """

    max_frames: int = 4
    image_max_side: int = 448
    jpeg_quality: int = 85
    transcript_chars: int = 1200

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> FrameBudget:
        """Read ``max_frames`` / ``image_max_side`` / ``jpeg_quality`` / ``transcript_chars``
        from manifest options. Raises ``ValueError`` for ``max_frames`` < 1,
        ``image_max_side`` < 16 or ``jpeg_quality`` outside 1–100."""
        b = cls(int(options.get("max_frames", cls.max_frames)),
                int(options.get("image_max_side", cls.image_max_side)),
                int(options.get("jpeg_quality", cls.jpeg_quality)),
                int(options.get("transcript_chars", cls.transcript_chars)))
        if b.max_frames < 1 or b.image_max_side < 16 or not 1 <= b.jpeg_quality <= 100:
            raise ValueError(f"bad frame budget {b}: max_frames ≥ 1, image_max_side ≥ 16, "
                             "jpeg_quality 1–100")
        return b


def pick_frames(frames: list[Frame], n: int) -> list[Frame]:
    """``n`` frames evenly spaced over ``frames`` (first and last included), in time order."""
    if n <= 0 or not frames:
        return []
    if len(frames) <= n:
        return list(frames)
    if n == 1:
        return [frames[len(frames) // 2]]
    idx = sorted({round(i * (len(frames) - 1) / (n - 1)) for i in range(n)})
    return [frames[i] for i in idx]


def image_data_url(image: np.ndarray, max_side: int, quality: int = 85) -> str:
    """A BGR uint8 frame (H×W×3) as a ``data:image/jpeg;base64,...`` URL, longer side ≤
    ``max_side`` pixels (aspect ratio kept; area interpolation). Raises ``ValueError`` when
    the frame cannot be JPEG-encoded."""
    import cv2

    h, w = image.shape[:2]
    scale = min(1.0, max_side / max(h, w))
    if scale < 1.0:
        image = cv2.resize(image, (max(1, round(w * scale)), max(1, round(h * scale))),
                           interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError(f"could not JPEG-encode a frame of shape {image.shape}")
    return "data:image/jpeg;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def image_parts(paths: list[Path], max_side: int = 448, quality: int = 85) -> list[dict]:
    """Chat content parts (``{"type": "image_url", ...}``) for image files such as stored
    keyframes, each shrunk to ``max_side`` pixels; for a VLM solver (send them only to a
    backend whose ``accepts_frames`` is true). Raises ``ValueError`` naming an unreadable
    file."""
    import cv2

    parts = []
    for path in paths:
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError(f"{path}: not a readable image")
        parts.append({"type": "image_url",
                      "image_url": {"url": image_data_url(image, max_side, quality)}})
    return parts


def caption_messages(frames: list[Frame], transcript: str, duration: float,
                     budget: FrameBudget) -> list[dict[str, Any]]:
    """The chat messages asking for a caption of one clip (OpenAI format, images inline).

    ``frames`` are used as given (thin them with :func:`pick_frames` first); ``duration`` in
    seconds.
    """
    content: list[dict[str, Any]] = [{"type": "text", "text": (
        f"{len(frames)} frame(s) of a {duration:.0f} s clip"
        + (" at " + ", ".join(f"{f.t:.0f} s" for f in frames) if frames else "") + ":")}]
    for f in frames:
        content.append({"type": "image_url", "image_url": {
            "url": image_data_url(f.image, budget.image_max_side, budget.jpeg_quality)}})
    said = " ".join(transcript.split())[: budget.transcript_chars]
    content.append({"type": "text", "text": (
        f'\nSpeech heard in the clip: "{said}"' if said else "\nNo speech was heard.")
        + "\nDescribe the clip."})
    return [{"role": "system", "content": CAPTION_PROMPT}, {"role": "user", "content": content}]


def compose_caption(description: str, transcript: str, *, model: str, frames: int,
                    duration: float, extra: dict | None = None) -> Caption:
    """The stored caption: the VLM's description plus the verbatim transcript.

    An empty description is never stored silently: the caption says the VLM returned none.
    """
    text = " ".join(description.split())
    signals = {"duration": round(duration, 2), "frames": frames, "vlm": model,
               "vlm_empty": not text, **(extra or {})}
    if not text:
        text = f"Video, {duration:.0f} s (the vision model {model} returned no description)."
    said = transcript.strip()
    signals["speech"] = bool(said)
    text += f' Speech: "{said}"' if said else " No speech heard."
    return Caption(text, signals)


def _quiet_mtmd() -> None:
    """Route libmtmd's per-image logging to the Python logger ``llama_cpp``
    (:func:`models.llama_session.llama_log_callback`), not the terminal."""
    import llama_cpp.mtmd_cpp as mtmd

    from models.llama_session import llama_log_callback

    mtmd.mtmd_log_set(llama_log_callback(), ctypes.c_void_p(0))
    mtmd.mtmd_helper_log_set(llama_log_callback(), ctypes.c_void_p(0))


def _template_safe_handler(mmproj: Path):
    """An ``MTMDChatHandler`` whose messages reach the GGUF chat template as plain strings.

    libmtmd's handler passes list content (text parts + image parts) to the template; many
    templates (Qwen2.5, SmolLM2) concatenate ``message.content`` as a string and fail on a
    list (MODELS.md). Flattening each list into one string with the media marker where the
    image was keeps every template working and the images in place.
    """
    from llama_cpp.llama_chat_format import MTMDChatHandler

    class TemplateSafeMTMDHandler(MTMDChatHandler):
        @classmethod
        def _convert_message_for_template(cls, message, media_marker):
            out = dict(message)
            content = out.get("content")
            if isinstance(content, list):
                out["content"] = "".join(
                    media_marker if isinstance(p, dict) and p.get("type") == "image_url"
                    else (p.get("text", "") if isinstance(p, dict) else str(p))
                    for p in content)
            return out

    return TemplateSafeMTMDHandler(clip_model_path=str(mmproj), verbose=False, use_gpu=False)


class LlamaCppVLMCaptioner:
    """A local VLM captioner: GGUF language model + ``mmproj`` projector on llama.cpp.

    Args:
        model_path: the language model ``.gguf``. mmproj_path: the projector ``.gguf``.
        n_ctx: context tokens, rounded up to a multiple of 256 (images cost the projector's
            tokens per image each).
        budget: frames per clip and image size cap. max_tokens: caption length cap.
    Raises ``ValueError`` (from libmtmd) when the projector does not match the model.
    """

    def __init__(self, model_path: Path, mmproj_path: Path, *, name: str = "vlm",
                 n_ctx: int = 4096, threads: int = 2, seed: int = 0,
                 budget: FrameBudget | None = None, max_tokens: int = 160,
                 usage: UsageMeter | None = None) -> None:
        from llama_cpp import Llama

        from models.llama_session import keep_std_streams

        keep_std_streams()
        _quiet_mtmd()
        self.name = name
        # llama.cpp pads the context to a multiple of 256 while llama-cpp-python sizes its token
        # buffer to the requested value; a mismatch breaks libmtmd's n_ctx check (measured).
        self.n_ctx = n_ctx = -(-n_ctx // 256) * 256
        self.budget = budget or FrameBudget()
        self.max_tokens = max_tokens
        self.usage = usage
        self._lock = threading.Lock()
        self._llm = Llama(model_path=str(model_path), chat_handler=_template_safe_handler(
            Path(mmproj_path)), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
            seed=seed, verbose=False)

    def describe(self, messages: list[dict[str, Any]], *, role: str = "captioner",
                 max_tokens: int | None = None) -> tuple[str, int, int, float]:
        """One completion over chat ``messages`` (images allowed); returns ``(text,
        tokens_in, tokens_out, seconds)``, counted under ``role``. Raises ``ValueError``
        ("Prompt exceeds n_ctx") when the prompt does not fit."""
        t0 = time.perf_counter()
        with self._lock:
            out = self._llm.create_chat_completion(
                messages=messages, max_tokens=max_tokens or self.max_tokens, temperature=0.0,
                repeat_penalty=1.1)
        seconds = time.perf_counter() - t0
        usage = out.get("usage") or {}
        tin, tout = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        if self.usage is not None:
            self.usage.record(CallRecord(role, self.name, tin, tout, seconds))
        return out["choices"][0]["message"].get("content") or "", tin, tout, seconds

    def caption(self, frames: list[Frame], transcript: str, duration: float) -> Caption:
        """A dense caption of one clip from at most ``budget.max_frames`` of its frames."""
        n = min(self.budget.max_frames, len(frames))
        while True:
            picked = pick_frames(frames, n)
            try:
                text, tin, tout, _ = self.describe(
                    caption_messages(picked, transcript, duration, self.budget))
                break
            except ValueError as e:  # libmtmd: "Prompt exceeds n_ctx: ..."
                if "n_ctx" not in str(e) or n == 0:
                    raise
                n //= 2  # halve the frames until the prompt fits, down to text only
        return compose_caption(text, transcript, model=self.name, frames=len(picked),
                               duration=duration, extra={"tokens_in": tin})

    def close(self) -> None:
        """Free the llama.cpp context and the projector (call explicitly; MODELS.md)."""
        llm = getattr(self, "_llm", None)
        if llm is not None:
            llm.close()
            self._llm = None
