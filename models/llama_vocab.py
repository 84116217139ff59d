"""A llama.cpp model's tokenizer alone: the GGUF's vocabulary loaded without its weights
(llama.cpp's ``vocab_only``), to count a text's tokens where the model itself is not
needed — ``edge search`` checks that a question fits the solver as ``edge ask`` does,
without loading the solver (about half a second and a few MB instead of seconds and a GB).
"""

from __future__ import annotations

from pathlib import Path


class LlamaVocab:
    """Counts tokens exactly as :meth:`models.llama_session.LlamaSession.count_tokens` does
    for the same GGUF (the same vocabulary; no BOS, no special tokens).

    Args:
        model_path: the ``.gguf`` file. name: the model's name. n_ctx: the context window
            (tokens) the model runs with for its role, for callers that budget a prompt.

    Raises ``ValueError`` when llama.cpp cannot read the file's vocabulary.
    """

    def __init__(self, model_path: Path, *, name: str, n_ctx: int) -> None:
        import llama_cpp
        from llama_cpp._internals import LlamaModel

        from models.llama_session import keep_std_streams

        keep_std_streams()
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self._model = LlamaModel(path_model=str(model_path), params=params, verbose=False)
        self.name = name
        self.n_ctx = n_ctx

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` costs with this model's tokenizer."""
        return len(self._model.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def close(self) -> None:
        """Free the vocabulary."""
        self._model.close()
