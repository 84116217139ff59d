"""Remote OpenAI-compatible backend for any LLM role, and for the captioner.

Three modules, one concern each: :mod:`models.remote.config` (the settings table below,
read from a profile and ``EDGE_<ROLE>_*``; the errors), :mod:`models.remote.llm`
(:class:`RemoteLLM`, the chat-completions client) and :mod:`models.remote.captioner`
(:class:`RemoteCaptioner`, frames to a remote VLM). Import the names from here.

Remote use is opt-in per role (DESIGN.md): a role goes remote only when its profile names a
model with ``backend = "openai"`` or ``EDGE_<ROLE>_BASE_URL`` is set. Frames never leave the
device unless that role also allows it (``allow_frames = true`` or
``EDGE_<ROLE>_ALLOW_FRAMES=1``). Any server that speaks the chat-completions API works: a
vLLM box, ``llama-server``, llama-cpp-python's ``python -m llama_cpp.server``, a frontier
API.

Settings per role (a ``[models.NAME]`` table in a user profile file; each key also has an
environment override ``EDGE_<ROLE>_<KEY>`` that wins, ROLE being SOLVER, MEMORY_LLM or
CAPTIONER):

======================  ==========================================================  =========
key                     meaning                                                     default
======================  ==========================================================  =========
``base_url``            server root including ``/v1``; several, comma-separated,    required
                        serve the same model (each thread uses one: ``edge bench
                        qa --workers`` spreads over them)
``model``               model name the server serves                                required
``api_key_env``         environment variable holding the API key                    —
``api_key``             the key itself (env ``EDGE_<ROLE>_API_KEY``)                "none"
``timeout``             seconds per request                                         60
``max_retries``         retries with exponential backoff (connection errors,        2
                        408/409/429/5xx; the ``openai`` SDK's own)
``n_ctx``               context tokens the prompt budget assumes                    8192
``json_mode``           ``auto``, ``json_schema``, ``json_object`` or ``none``      auto
``allow_frames``        captioner/VLM solver may send frames                        false
======================  ==========================================================  =========

Structured output and call counting: see :mod:`models.remote.llm`.
"""


from models.remote.captioner import RemoteCaptioner
from models.remote.config import (
    JSON_MODES,
    RemoteConfig,
    RemoteError,
    RemoteUnavailableError,
    env_prefix,
    env_remote_spec,
)
from models.remote.llm import RemoteLLM

__all__ = [
    "JSON_MODES",
    "RemoteCaptioner",
    "RemoteConfig",
    "RemoteError",
    "RemoteLLM",
    "RemoteUnavailableError",
    "env_prefix",
    "env_remote_spec",
]
