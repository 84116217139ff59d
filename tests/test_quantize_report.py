"""``python -m quantize report`` on the shipped models with tiny inputs: each artifact is
measured in its own process and compared with the first (the reference)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from quantize.__main__ import main
from quantize.report import RetrievalSet, hit_rate, isolated, key_agreement


def _report(tmp_path, *args: str) -> dict:
    out = tmp_path / "report.json"
    res = CliRunner().invoke(main, ["report", *args, "--out", str(out)])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())


def _exits() -> dict:
    import os

    os._exit(3)


def _answers() -> dict:
    return {"answer": 42}


def test_each_measurement_runs_in_its_own_process_and_a_dead_one_is_an_error():
    """The child's result comes back with its own peak RSS; a child that dies without
    answering (killed, out of memory) raises instead of hanging the report."""
    out = isolated(_answers)
    assert out["answer"] == 42 and out["peak_rss_mb"] > 0
    with pytest.raises(RuntimeError, match="exit code 3"):
        isolated(_exits)


def test_hit_rate_counts_a_target_within_two_clips_of_the_top_k_before_the_question():
    """Max-sim over a clip's texts; clips after the question's time never rank."""
    vecs = np.eye(4, dtype=np.float32)[[0, 1, 2, 3, 3]]  # clip 3 has two texts
    rs = RetrievalSet(["a", "b", "c", "d", "d2"], np.array([0, 1, 2, 3, 3]),
                      np.array([0.0, 30.0, 60.0, 90.0]), ["q1", "q2"], [100.0, 50.0],
                      [[3], [3]])
    q = np.array([[0, 0, 0, 1], [0, 0.6, 0, 0.8]], dtype=np.float32)  # both near clip 3
    assert hit_rate(rs, vecs, q, k=1, delta=0) == 0.5  # q2 is asked before clip 3 ...
    assert hit_rate(rs, vecs, q, k=1, delta=2) == 1.0  # ... and finds clip 1, within 2


def test_key_agreement_is_word_f1_over_the_four_keys():
    ref = [{"event": "I cut the cake", "dialogue": "", "object": "knife", "summary": "cake"}]
    same = key_agreement(ref, ref)
    half = key_agreement([{**ref[0], "object": "knife fork", "summary": "bread"}], ref)
    assert same == 1.0 and math.isclose(half, (1 + 1 + 2 / 3 + 0) / 4)


def test_report_compares_a_q8_gguf_embedder_with_the_shipped_onnx_one(tmp_path):
    """The converted Q8_0 MiniLM against the shipped int8 ONNX (reference) on the first
    clips of the hard set's caption file: sizes, speeds and peak RSS are measured, the
    reference agrees with itself and the Q8_0 nearly so."""
    gguf = tmp_path / "minilm-q8.gguf"
    res = CliRunner().invoke(main, ["convert", str(gguf), "--type", "Q8_0"])
    assert res.exit_code == 0, res.output
    rep = _report(tmp_path, "--embedder", "minilm-l6-int8", "--embedder", f"q8={gguf}",
                  "--clips", "60", "--split", "all")
    ref, q8 = rep["embedders"]["rows"]
    assert (ref["backend"], q8["backend"]) == ("onnx-embedder", "llama.cpp-embedder")
    assert ref["cosine_min"] > 0.9999 and 0.99 < q8["cosine_mean"] <= 1.0001
    assert ref["texts"] == q8["texts"] >= 60 * 3 and ref["questions"] >= 1
    assert all(r["per_s"] > 0 and r["peak_rss_mb"] > 50 and 0 <= r["hit@5"] <= 1
               for r in (ref, q8))
    assert abs(q8["size_mb"] - gguf.stat().st_size / 1e6) < 0.1


@pytest.mark.slow
def test_report_compares_a_requantized_llm_with_its_shipped_quant(tmp_path):
    """SmolLM2's shipped Q4_1 (reference) against a Q4_0 made from it: perplexity on the
    fixed EgoLife text, tokens/s, peak RSS and key agreement (1.0 for the reference)."""
    from edge.config import models_dir
    from models import load_manifest, resolve_weights
    from quantize.ggufq import quantize_gguf

    src = resolve_weights(load_manifest().model("smollm2-135m-instruct"), models_dir())
    q40 = tmp_path / "smol-q4_0.gguf"
    quantize_gguf(src, q40, "Q4_0", allow_requantize=True)
    rep = _report(tmp_path, "--llm", "smollm2-135m-instruct", "--llm", f"q4_0={q40}",
                  "--captions", "1")
    ref, low = rep["llms"]["rows"]
    assert ref["key_agreement"] == 1.0 and 0 <= low["key_agreement"] <= 1
    assert all(1 < r["perplexity"] < 1000 and r["ppl_tokens"] >= 384 and r["prompt_tok_s"] > 0
               and r["gen_tok_s"] > 0 and r["peak_rss_mb"] > 50 for r in (ref, low))
    assert low["size_mb"] < ref["size_mb"]
