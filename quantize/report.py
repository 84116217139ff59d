"""``python -m quantize report``: what each model artifact costs and what it loses.

Per artifact — file size, load time, speed (embeddings/s for an embedder; prompt and
generation tokens/s for an LLM) and the peak RSS of a fresh process that loaded it and ran
the measurement — and its quality against a reference artifact (the larger or unquantized
model):

- **embedders**: cosine agreement of the vectors of the same texts (mean and minimum over
  the EgoLife keys, and captions if asked) and the retrieval hit rate on the hard question
  set — the question's text against every clip's four keys (max-sim over keys, MERIT
  Eq. 6–7), the clips up to the question's time, a hit when one of the top ``k``
  lies within ±2 clips of a target clip (the bench's hit@Δ2);
- **LLMs**: perplexity on a fixed text (EgoLife captions, scored by llama.cpp's logits)
  and agreement with the reference on the key-extraction prompt (:func:`edge.build.keys.
  extract_keys` on real captions; word-F1 of each of the four keys, averaged).

Every artifact runs in its own spawned process, so its peak RSS is its own (the parent's
imports and other models are not counted). Results are printed as a table and written as
JSON.
"""

from __future__ import annotations

import json
import multiprocessing
import queue as queue_mod
import re
import resource
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

KEY_FIELDS = ("event_key", "dialogue_key", "object_key", "sum_key")
"""The caption file's four key fields, embedded beside the caption text."""


@dataclass(frozen=True)
class Artifact:
    """One model file to measure: ``kind`` is ``"llm"`` (a llama.cpp GGUF) or
    ``"embedder"`` (a GGUF through llama.cpp, or an ONNX file through onnxruntime, told
    apart by the file's suffix); ``name`` labels it in the report."""

    name: str
    path: Path
    kind: str

    @property
    def backend(self) -> str:
        """``llama.cpp``, ``llama.cpp-embedder`` or ``onnx-embedder`` (the manifest's names)."""
        if self.kind == "llm":
            return "llama.cpp"
        return "onnx-embedder" if self.path.suffix == ".onnx" else "llama.cpp-embedder"


def peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(queue: Any, fn: Callable[..., dict], args: tuple) -> None:
    try:
        out = fn(*args)
        out["peak_rss_mb"] = round(peak_rss_mb(), 1)
        queue.put(("ok", out))
    except BaseException as e:  # noqa: BLE001 - reported to the parent as text
        queue.put(("error", f"{type(e).__name__}: {e}"))


def isolated(fn: Callable[..., dict], *args: Any) -> dict:
    """``fn(*args)`` in a fresh spawned process, with that process's peak RSS
    (``peak_rss_mb``) added. Raises :class:`RuntimeError` with the child's error, or when
    it died without an answer (killed, out of memory)."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(queue, fn, args))
    proc.start()
    try:
        while True:
            try:
                status, out = queue.get(timeout=1.0)
                break
            except queue_mod.Empty:
                if not proc.is_alive():  # killed (e.g. out of memory) before answering
                    raise RuntimeError(f"the measuring process died (exit code "
                                       f"{proc.exitcode})") from None
    finally:
        proc.join()
    if status != "ok":
        raise RuntimeError(out)
    return out


# ---- embedders ------------------------------------------------------------------------

def load_embedder(artifact: Artifact, threads: int = 2):
    """An embedder object for ``artifact`` (``embed(texts) -> (n, 384) float32``): the
    ONNX one takes the shipped MiniLM tokenizer."""
    if artifact.backend == "onnx-embedder":
        from models import load_manifest
        from models.embedder import OnnxEmbedder
        from models.resolve import resolve_tokenizer

        spec = load_manifest().model("minilm-l6-int8")
        return OnnxEmbedder(artifact.path, resolve_tokenizer(spec), name=artifact.name,
                            threads=threads)
    from models.embedder import LlamaCppEmbedder

    emb = LlamaCppEmbedder(artifact.path, name=artifact.name, threads=threads)
    if emb.architecture == "gemma-embedding":  # its prompts, as the manifest gives them
        from models import load_manifest

        spec = load_manifest().model("embeddinggemma-300m")
        emb.query_prefix = spec.option("query_prefix", "")
        emb.document_prefix = spec.option("document_prefix", "")
    return emb


def embedder_run(artifact: Artifact, texts: list[str], queries: list[str],
                 threads: int = 2) -> dict:
    """(In the child) load time, embeddings/s over ``texts`` and the vectors of ``texts``
    and ``queries`` (float32 ``(n, dim)`` as lists, for the parent to compare)."""
    t0 = time.perf_counter()
    emb = load_embedder(artifact, threads)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    vecs = emb.embed(texts)
    seconds = time.perf_counter() - t0
    qvecs = emb.embed(queries, query=True)
    close = getattr(emb, "close", None)
    if callable(close):
        close()
    return {"load_s": round(load_s, 3), "embed_s": round(seconds, 2),
            "per_s": round(len(texts) / seconds, 1), "vectors": vecs, "queries": qvecs}


@dataclass(frozen=True)
class RetrievalSet:
    """The hard question set against its caption file: every clip's texts (caption and
    four keys; ``texts[i]`` belongs to clip ``owner[i]``), each clip's start on the
    timeline (seconds), and per question its text, time (seconds) and target clips."""

    texts: list[str]
    owner: np.ndarray
    clip_at: np.ndarray
    questions: list[str]
    question_at: list[float]
    targets: list[list[int]]


def retrieval_set(split: str = "test", clips: int | None = None, *,
                  captions: bool = False) -> RetrievalSet:
    """The hard set's ``split`` questions (``test``: the half nothing was tuned on) and
    its caption file (``$EDGE_SHARED_DATA``): every clip's four keys, and its caption
    text when ``captions`` (5× the tokens to embed); only the first ``clips`` clips when
    given, and the questions whose targets lie among them. Raises
    :class:`edge.errors.BenchError` when the files are missing."""
    from edge.bench.questions import load_questions, resolve_set, select
    from edge.timeline import day_clock, egolife_time

    qpath, cpath, _ = resolve_set("hard")
    records = json.loads(Path(cpath).read_text("utf-8"))
    qs = select(load_questions(qpath, len(records)), split)
    n = len(records) if clips is None else min(clips, len(records))
    texts, owner = [], []
    for i, c in enumerate(records[:n]):
        for field in ("text", *KEY_FIELDS) if captions else KEY_FIELDS:
            if str(c.get(field, "")).strip():
                texts.append(str(c[field]))
                owner.append(i)
    at = np.asarray([day_clock(int(re.sub(r"\D", "", c["date"])), egolife_time(c["start_time"]))
                     for c in records[:n]])
    qs = [q for q in qs if q.target_clips and max(q.target_clips) < n]
    return RetrievalSet(texts, np.asarray(owner), at, [q.question for q in qs],
                        [q.at for q in qs], [list(q.target_clips) for q in qs])


def hit_rate(rs: RetrievalSet, vectors: np.ndarray, queries: np.ndarray, k: int = 5,
             delta: int = 2) -> float:
    """Share of ``rs``'s questions (0–1) with a target within ±``delta`` clips of one of
    the top ``k`` clips: a clip's score is the max cosine of the question's vector over
    the clip's texts (``vectors``, unit rows aligned with ``rs.texts``; MERIT Eq. 6–7),
    clips after the question's time left out."""
    n_clips = len(rs.clip_at)
    sims = queries @ vectors.T  # (questions, texts)
    hits = 0
    for qi, targets in enumerate(rs.targets):
        best = np.full(n_clips, -np.inf)
        np.maximum.at(best, rs.owner, sims[qi])
        best[rs.clip_at > rs.question_at[qi]] = -np.inf
        top = np.argsort(-best)[:k]
        hits += any(abs(int(t) - g) <= delta for t in top for g in targets)
    return hits / len(rs.targets) if rs.targets else float("nan")


def embedder_report(artifacts: list[Artifact], rs: RetrievalSet, *, threads: int = 2,
                    k: int = 5, run: Callable[..., dict] = isolated) -> list[dict]:
    """One row per embedder: size (MB), load s, embeddings/s, peak RSS (MiB), cosine to
    the first artifact (the reference) over ``rs.texts`` — mean and min — and hit@k±2
    on ``rs``'s questions. Raises :class:`RuntimeError` when an artifact fails to load."""
    rows, ref = [], None
    for a in artifacts:
        out = run(embedder_run, a, rs.texts, rs.questions, threads)
        vecs, qvecs = np.asarray(out.pop("vectors")), np.asarray(out.pop("queries"))
        if ref is None:
            ref = vecs
        cos = np.einsum("ij,ij->i", vecs, ref)
        rows.append({"name": a.name, "backend": a.backend,
                     "size_mb": round(a.path.stat().st_size / 1e6, 1), **out,
                     "texts": len(rs.texts), "cosine_mean": round(float(cos.mean()), 5),
                     "cosine_min": round(float(cos.min()), 5),
                     f"hit@{k}": round(hit_rate(rs, vecs, qvecs, k), 3),
                     "questions": len(rs.questions)})
    return rows


# ---- LLMs ------------------------------------------------------------------------------

def llm_keys_run(artifact: Artifact, captions: list[str], threads: int = 2) -> dict:
    """(In the child) load time, the four MERIT keys of each caption from the
    key-extraction prompt (:func:`edge.build.keys.extract_keys`; ``origin`` says whether the
    model's reply was usable), and prompt/generation tokens per second from llama.cpp's
    own counters over those calls."""
    import llama_cpp

    from edge.build.keys import extract_keys
    from models.llama_chat import LlamaCppLLM

    t0 = time.perf_counter()
    llm = LlamaCppLLM(artifact.path, name=artifact.name, threads=threads)
    load_s = time.perf_counter() - t0
    ctx = llm._llm._ctx.ctx
    llama_cpp.llama_perf_context_reset(ctx)
    keys = []
    for caption in captions:
        k = extract_keys(llm, caption)
        keys.append({**k.as_dict(), "origin": k.origin})
    perf = llama_cpp.llama_perf_context(ctx)
    llm.close()
    return {"load_s": round(load_s, 3),
            "prompt_tok_s": round(perf.n_p_eval / max(perf.t_p_eval_ms / 1e3, 1e-9), 1),
            "gen_tok_s": round(perf.n_eval / max(perf.t_eval_ms / 1e3, 1e-9), 1),
            "keys": keys}


def llm_perplexity_run(artifact: Artifact, text: str, window: int = 512,
                       threads: int = 2) -> dict:
    """(In the child) perplexity of ``text`` under the model: the text's tokens in
    non-overlapping ``window``-token windows, each token after a window's first quarter
    scored from llama.cpp's logits (as llama.cpp's ``perplexity`` tool scores the later
    part of each chunk); ``exp(mean negative log-likelihood)``."""
    from llama_cpp import Llama

    from models.llama_session import keep_std_streams

    keep_std_streams()
    llm = Llama(model_path=str(artifact.path), n_ctx=window, n_batch=window,
                n_threads=threads, n_threads_batch=threads, logits_all=True, verbose=False)
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True)
    nll, scored = 0.0, 0
    for lo in range(0, len(tokens) - window + 1, window):
        chunk = tokens[lo:lo + window]
        llm.reset()
        llm.eval(chunk)
        first = window // 4
        pred = llm.scores[first - 1:window - 1]  # float32 view, (positions, vocab)
        top = pred.max(axis=1, keepdims=True)
        logz = np.log(np.exp(pred - top).sum(axis=1, dtype=np.float64)) + top[:, 0]
        nll += float((logz - pred[np.arange(len(pred)), chunk[first:window]]).sum())
        scored += len(pred)
    llm.close()
    if not scored:
        raise ValueError(f"the text has {len(tokens)} tokens, fewer than one {window}-token "
                         "window")
    return {"perplexity": round(float(np.exp(nll / scored)), 3), "ppl_tokens": scored}


def key_agreement(keys: list[dict], ref: list[dict]) -> float:
    """Mean word-F1 (0–1) between ``keys`` and the reference's ``ref`` over the four keys
    of every caption (lowercased words; two empty keys agree)."""
    from models.repeats import norm_words

    scores = []
    for a, b in zip(keys, ref, strict=True):
        for field in ("event", "dialogue", "object", "summary"):
            wa, wb = set(norm_words(a[field])), set(norm_words(b[field]))
            if not wa and not wb:
                scores.append(1.0)
                continue
            common = len(wa & wb)
            scores.append(0.0 if not common else
                          2 * common / (len(wa) + len(wb)))
    return sum(scores) / len(scores) if scores else float("nan")


def llm_report(artifacts: list[Artifact], captions: list[str], text: str, *,
               threads: int = 2, run: Callable[..., dict] = isolated) -> list[dict]:
    """One row per LLM: size (MB), load s, prompt and generation tokens/s, peak RSS (MiB)
    of the key-extraction run, perplexity on ``text`` (its own process), the share of
    usable key replies and key agreement with the first artifact (the reference).
    Raises :class:`RuntimeError` when an artifact fails to load or run."""
    rows, ref = [], None
    for a in artifacts:
        out = run(llm_keys_run, a, captions, threads)
        keys = out.pop("keys")
        ppl = run(llm_perplexity_run, a, text, 512, threads)
        ref = keys if ref is None else ref
        rows.append({"name": a.name, "backend": a.backend,
                     "size_mb": round(a.path.stat().st_size / 1e6, 1), **out,
                     "perplexity": ppl["perplexity"], "ppl_tokens": ppl["ppl_tokens"],
                     "ppl_peak_rss_mb": ppl["peak_rss_mb"],
                     "keys_usable": round(sum(k["origin"] == "llm" for k in keys) / len(keys), 3),
                     "key_agreement": round(key_agreement(keys, ref), 3),
                     "captions": len(captions), "keys": keys})
    return rows


def day1_captions() -> list[dict]:
    """The records of the one-day EgoLife caption file (``$EDGE_SHARED_DATA``)."""
    from edge.bench.questions import shared_data

    return json.loads((shared_data() / "egolife" / "A1_JAKE_day1_captions.json")
                      .read_text("utf-8"))


def caption_sample(n: int, *, offset: int = 0) -> list[str]:
    """``n`` caption texts of the one-day EgoLife file, spread evenly from ``offset``."""
    caps = day1_captions()
    step = max(1, (len(caps) - offset) // max(n, 1))
    return [c["text"] for c in caps[offset::step][:n]]


def perplexity_text(tokens_hint: int = 1100) -> str:
    """The fixed text perplexity is measured on: consecutive EgoLife day-1 captions from
    the middle of the day, about ``tokens_hint`` tokens (4 characters a token)."""
    caps = day1_captions()
    out, size = [], 0
    for c in caps[len(caps) // 2:]:
        out.append(c["text"])
        size += len(c["text"])
        if size > tokens_hint * 4:
            break
    return "\n".join(out)


def write_json(path: Path, payload: dict) -> None:
    """``payload`` as indented JSON at ``path`` (folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", "utf-8")


def as_row(a: Artifact) -> dict:
    """An artifact as plain JSON."""
    return {**asdict(a), "path": str(a.path)}
