"""The captioner role on a remote VLM: frames leave the device only when the role allows it."""

from __future__ import annotations

from models.captioner import Caption, Frame
from models.llm import ContextOverflowError
from models.registry import ConfigError
from models.remote.config import env_prefix
from models.remote.llm import RemoteLLM
from models.vlm import FrameBudget, caption_messages, compose_caption, pick_frames


class RemoteCaptioner:
    """Captioner role on a remote VLM: the prompt of :func:`models.vlm.caption_messages`
    with frames as JPEG ``data:`` URLs.

    Args:
        llm: the role's client; its config must allow frames. budget: frames per clip and
        their size. max_tokens: caption length cap in tokens.

    Raises :class:`ConfigError` at construction unless the role's config allows frames to
    leave the device (``allow_frames``).
    """

    def __init__(self, llm: RemoteLLM, *, budget: FrameBudget | None = None,
                 max_tokens: int = 200) -> None:
        if not llm.config.allow_frames:
            pre = env_prefix(llm.config.role)
            raise ConfigError(
                f"role {llm.config.role} points at the remote server {llm.config.base_url}, "
                "but frames never leave this device unless you allow it: set allow_frames = "
                f"true for that model in your profile (or {pre}ALLOW_FRAMES=1), or use a "
                "local captioner")
        self.llm = llm
        self.name = llm.name
        self.budget = budget or FrameBudget()
        self.max_tokens = max_tokens

    def caption(self, frames: list[Frame], transcript: str, duration: float) -> Caption:
        """A dense caption of one clip (``duration`` in seconds) from at most
        ``budget.max_frames`` of its frames; halves the frames while the server reports a
        context overflow, re-raising :class:`ContextOverflowError` once none are left.
        Raises the errors of :meth:`RemoteLLM.chat` otherwise."""
        n = min(self.budget.max_frames, len(frames))
        while True:
            picked = pick_frames(frames, n)
            try:
                res = self.llm.chat(caption_messages(picked, transcript, duration, self.budget),
                                    role="captioner", max_tokens=self.max_tokens)
                break
            except ContextOverflowError:
                if n == 0:
                    raise
                n //= 2
        return compose_caption(res.text, transcript, model=self.name, frames=len(picked),
                               duration=duration, extra={"tokens_in": res.tokens_in,
                                                         "remote": self.llm.config.base_url})

    def close(self) -> None:
        """Close the client's HTTP connection pool."""
        self.llm.close()
