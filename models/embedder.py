"""Text embedder role: all-MiniLM-L6-v2 (int8 ONNX) through onnxruntime + tokenizers, or a
BERT GGUF (`python -m quantize convert`) through llama.cpp (:class:`LlamaCppEmbedder`).

The shipped ONNX graph outputs ``last_hidden_state``; sentence-transformers' pooling is
mean over non-padding tokens followed by L2 normalisation, which we do here, so a dot
product between two vectors is their cosine similarity.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from models.usage import CallRecord, UsageMeter


class OnnxEmbedder:
    """Sentence embeddings: ``embed(texts) -> float32 array (len(texts), dim)``, unit L2 norm.

    Args:
        model_path: the ONNX file. tokenizer_path: a HuggingFace ``tokenizer.json``.
        dim: output width (384 for MiniLM-L6). max_tokens: truncation length (256).
        threads: intra-op threads for onnxruntime (default 2, the edge budget).
        batch_size, batch_tokens: a batch holds at most ``batch_size`` texts and, padded
            to its longest, ``batch_tokens`` tokens — 32 captions padded to 256 tokens
            took the process to ~1 GB peak RSS (activations of 8,192 tokens), ~0.4 GB
            at 2,048 tokens, with short keys still batched 32 at a time.
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        name: str = "embedder",
        dim: int = 384,
        max_tokens: int = 256,
        threads: int = 2,
        batch_size: int = 32,
        batch_tokens: int = 2048,
        usage: UsageMeter | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(model_path), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._input_names = {i.name for i in self._session.get_inputs()}
        self._tok = Tokenizer.from_file(str(tokenizer_path))
        self._tok.enable_truncation(max_length=max_tokens)
        self._tok.no_padding()
        self.name = name
        self.dim = dim
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.usage = usage

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Embed ``texts``; returns ``(n, dim)`` float32 rows of unit length (zeros for n=0).
        ``query`` is accepted for the interface's sake: MiniLM has no query prompt."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        t0 = time.perf_counter()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        # Batches are padded to their longest text: embedding in length order keeps short
        # keys out of batches padded to a 256-token caption (3x faster on mixed input).
        encodings = self._tok.encode_batch([t if t.strip() else " " for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        n_tokens = 0
        for idx in _batches(order, [len(encodings[i].ids) for i in order], self.batch_size,
                            self.batch_tokens):
            width = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                e = encodings[i]
                n = len(e.ids)
                ids[row, :n] = e.ids
                mask[row, :n] = 1
            n_tokens += int(mask.sum())
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]  # (b, seq, dim)
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[idx] = pooled / np.clip(norms, 1e-12, None)
        if self.usage is not None:
            self.usage.record(
                CallRecord("embedder", self.name, n_tokens, 0, time.perf_counter() - t0)
            )
        return out

    def embed_one(self, text: str, *, query: bool = False) -> np.ndarray:
        """Embed one text; returns a ``(dim,)`` float32 unit vector."""
        return self.embed([text], query=query)[0]


class LlamaCppEmbedder:
    """Sentence embeddings from an embedding GGUF on llama.cpp: MiniLM converted to a BERT
    GGUF, or EmbeddingGemma-300M (``gemma-embedding``, mean pooling and its two Dense layers
    inside llama.cpp); both written by ``python -m quantize convert``. The same interface
    as :class:`OnnxEmbedder`.

    llama.cpp tokenizes (with the model's BOS/EOS or [CLS]/[SEP]), pools over each text's
    tokens (the GGUF's pooling); we cut to ``dim`` and L2-normalise. Texts are packed whole
    into batches of at most ``batch_tokens`` tokens (one ``llama_decode`` per batch; each
    text's tokens attend only to its own).

    Args:
        model_path: the GGUF. dim: output width: the model's (the default; 384 for
            MiniLM-L6, 768 for EmbeddingGemma) or, for a Matryoshka model, a prefix of it
            (EmbeddingGemma is trained for 512/256/128): the first ``dim`` values,
            re-normalised.
        max_tokens: truncation length in tokens, BOS/EOS included (256).
        threads: llama.cpp threads (default 2). batch_tokens: tokens per decode (default and
            minimum ``max_tokens``; attention spans the whole batch, masked per text, so
            larger batches are slower: 80 / 65 / 47 short MiniLM captions/s at 256 / 512 /
            1024 on 2 threads).
        query_prefix, document_prefix: the model's prompts, put before each text
            (EmbeddingGemma: ``task: search result | query: `` for what a user asks,
            ``title: none | text: `` for what memory stores); empty for MiniLM.
    Raises ``ValueError`` when the GGUF is not an embedding model at least ``dim`` wide.
    """

    def __init__(
        self,
        model_path: Path,
        *,
        name: str = "embedder",
        dim: int | None = None,
        max_tokens: int = 256,
        threads: int = 2,
        batch_tokens: int | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        usage: UsageMeter | None = None,
    ) -> None:
        import llama_cpp

        from models.llama_session import keep_std_streams

        keep_std_streams()
        batch_tokens = max(batch_tokens or max_tokens, max_tokens)
        self._llm = llama_cpp.Llama(
            model_path=str(model_path), embedding=True,
            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, n_ctx=batch_tokens,
            n_batch=batch_tokens, n_ubatch=batch_tokens, n_threads=threads,
            n_threads_batch=threads, verbose=False)
        self.n_embd = self._llm.n_embd()
        self.architecture = self._llm.metadata.get("general.architecture", "")
        dim = dim or self.n_embd
        if self.n_embd < dim:
            self.close()
            raise ValueError(f"{model_path}: embeddings are {self.n_embd}-d, not {dim}-d")
        self._sep = self._llm.token_eos()
        self.name = name
        self.dim = dim
        self.max_tokens = max_tokens
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.usage = usage
        self._lock = threading.Lock()  # a llama.cpp context serves one call at a time

    def _tokens(self, text: str) -> list[int]:
        toks = self._llm.tokenize((text if text.strip() else " ").encode("utf-8"),
                                  add_bos=True, special=False)
        if len(toks) > self.max_tokens:  # as the HF tokenizer truncates: [SEP] stays last
            toks = toks[: self.max_tokens - 1] + [self._sep]
        return toks

    def _decode(self, seqs: list[list[int]]) -> np.ndarray:
        """Mean-pooled embeddings of ``seqs`` decoded in one batch, ``(len(seqs), n_embd)``."""
        import llama_cpp

        llm = self._llm
        llm._batch.reset()
        for i, toks in enumerate(seqs):
            llm._batch.add_sequence(toks, i, True)
        llm._ctx.kv_cache_clear()
        llm._ctx.decode(llm._batch)
        out = np.empty((len(seqs), self.dim), dtype=np.float32)
        for i in range(len(seqs)):
            ptr = llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, i)
            out[i] = np.ctypeslib.as_array(ptr, shape=(self.n_embd,))[: self.dim]
        return out

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Embed ``texts`` as stored documents (or, ``query=True``, as what a user asks:
        the model's query prompt); returns ``(n, dim)`` float32 rows of unit length (zeros
        for n=0)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        t0 = time.perf_counter()
        prefix = self.query_prefix if query else self.document_prefix
        tokens = [self._tokens(prefix + t) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            self._embed_into(tokens, out)
        out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        if self.usage is not None:
            self.usage.record(CallRecord("embedder", self.name, sum(map(len, tokens)), 0,
                                         time.perf_counter() - t0))
        return out

    def _embed_into(self, tokens: list[list[int]], out: np.ndarray) -> None:
        """Fill ``out`` with the pooled embeddings of ``tokens``, batches packed in order."""
        n_batch, n_seq_max = self._llm.n_batch, self._llm.context_params.n_seq_max
        idx: list[int] = []
        used = 0
        for i in [*range(len(tokens)), None]:
            if idx and (i is None or used + len(tokens[i]) > n_batch or len(idx) >= n_seq_max):
                out[idx] = self._decode([tokens[j] for j in idx])
                idx, used = [], 0
            if i is not None:
                idx.append(i)
                used += len(tokens[i])

    def embed_one(self, text: str, *, query: bool = False) -> np.ndarray:
        """Embed one text (:meth:`embed`); returns a ``(dim,)`` float32 unit vector."""
        return self.embed([text], query=query)[0]

    def close(self) -> None:
        """Free the llama.cpp model and context (call explicitly; MODELS.md)."""
        with getattr(self, "_lock", threading.Lock()):
            llm = getattr(self, "_llm", None)
            if llm is not None:
                llm.close()
                self._llm = None


def _batches(order: list[int], lengths: list[int], max_texts: int,
             max_tokens: int) -> list[list[int]]:
    """``order`` (text indices sorted by token length, ``lengths`` aligned with it) cut
    into consecutive batches of at most ``max_texts`` texts whose padded size (texts ×
    longest) stays within ``max_tokens`` (a single longer text is a batch of its own)."""
    out: list[list[int]] = []
    cur: list[int] = []
    width = 0
    for i, n in zip(order, lengths, strict=True):
        w = max(width, n)
        if cur and (len(cur) >= max_texts or (len(cur) + 1) * w > max_tokens):
            out.append(cur)
            cur, w = [], n
        cur.append(i)
        width = w
    if cur:
        out.append(cur)
    return out
