"""The local VLM captioner through llama.cpp's libmtmd, with a random-weight projector.

These are plumbing tests: the projector's weights are random (tests/plumbing_vlm.py), so
they prove that frames are encoded into image tokens and text comes back through the GGUF's
own chat template — not that the caption is any good.
"""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from edge.cli import main
from edge.config import models_dir
from models import load_manifest, resolve_weights
from models.captioner import Frame
from models.usage import UsageMeter
from models.vlm import FrameBudget, LlamaCppVLMCaptioner, caption_messages, pick_frames
from tests.conftest import FOOTAGE, shared
from tests.plumbing_vlm import write_random_projector

SMOLLM2_EMBD = 576


@pytest.fixture(scope="module")
def smollm2():
    return resolve_weights(load_manifest().model("smollm2-135m-instruct"), models_dir())


@pytest.fixture(scope="module")
def projector(tmp_path_factory):
    return write_random_projector(tmp_path_factory.mktemp("vlm") / "mmproj-plumbing.gguf",
                                  SMOLLM2_EMBD)


def _frames(n: int, h: int = 480, w: int = 640) -> list[Frame]:
    rng = np.random.default_rng(1)
    return [Frame(float(i), rng.integers(0, 255, (h, w, 3), dtype=np.uint8)) for i in range(n)]


def test_pick_frames_is_even_and_bounded():
    fr = _frames(10, 8, 8)
    assert [f.t for f in pick_frames(fr, 4)] == [0.0, 3.0, 6.0, 9.0]
    assert [f.t for f in pick_frames(fr, 1)] == [5.0]
    assert len(pick_frames(fr, 50)) == 10 and pick_frames(fr, 0) == []


def test_frame_budget_caps_image_size_in_the_prompt():
    import base64

    import cv2

    msgs = caption_messages(_frames(2, 720, 1280), "hello  there", 30.0,
                            FrameBudget(image_max_side=200))
    urls = [p["image_url"]["url"] for p in msgs[1]["content"] if p["type"] == "image_url"]
    assert len(urls) == 2
    img = cv2.imdecode(np.frombuffer(base64.b64decode(urls[0].split(",", 1)[1]), np.uint8),
                       cv2.IMREAD_COLOR)
    assert img.shape[:2] == (112, 200)  # 1280×720 shrunk to a 200-pixel longer side
    assert 'Speech heard in the clip: "hello there"' in msgs[1]["content"][-1]["text"]


def test_image_parts_from_keyframe_files(tmp_path):
    import cv2

    from models.vlm import image_parts

    f = tmp_path / "k.jpg"
    cv2.imwrite(str(f), _frames(1, 600, 800)[0].image)
    (part,) = image_parts([f], max_side=100)
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/jpeg")
    with pytest.raises(ValueError, match="not a readable image"):
        image_parts([tmp_path / "missing.jpg"])


@pytest.mark.slow
def test_plumbing_vlm_encodes_images_and_text_comes_back(smollm2, projector):
    usage = UsageMeter()
    vlm = LlamaCppVLMCaptioner(smollm2, projector, name="plumbing-vlm", n_ctx=2048,
                               usage=usage, budget=FrameBudget(max_frames=3), max_tokens=12)
    try:
        # the same text with one and with two images: exactly 16 more prompt tokens
        # ((32 px / 8 px patches)² = 16 image tokens per frame)
        one, two = (caption_messages(_frames(k), "", 30.0, FrameBudget()) for k in (1, 2))
        two[1]["content"][0] = one[1]["content"][0]  # same header text
        _, tin1, _, _ = vlm.describe(one)
        _, tin2, _, _ = vlm.describe(two)
        assert tin2 - tin1 == 16
        cap = vlm.caption(_frames(8), "put the cup down", 30.0)
        assert cap.signals["frames"] == 3 and cap.signals["vlm"] == "plumbing-vlm"
        assert not cap.signals["vlm_empty"]  # random weights, but text comes back
        assert cap.text.endswith('Speech: "put the cup down"')
        assert len(cap.text) > len('Speech: "put the cup down"') + 5
        assert [r.role for r in usage.records] == ["captioner"] * 3
        assert usage.records[-1].tokens_in >= 3 * 16 and usage.records[-1].tokens_out > 0
    finally:
        vlm.close()


@pytest.mark.slow
def test_plumbing_vlm_halves_frames_until_the_prompt_fits(smollm2, projector):
    vlm = LlamaCppVLMCaptioner(smollm2, projector, n_ctx=200, max_tokens=8,
                               budget=FrameBudget(max_frames=8))
    assert vlm.n_ctx == 256  # rounded up as llama.cpp pads it
    try:
        cap = vlm.caption(_frames(8, 64, 64), "", 30.0)  # ~150 text + 8 × 16 image tokens
        assert cap.signals["frames"] == 4  # halved once
        assert cap.signals["tokens_in"] <= 256
    finally:
        vlm.close()


@pytest.mark.slow
def test_plumbing_vlm_ingests_shared_footage_through_a_user_profile(tmp_path, monkeypatch,
                                                                     smollm2, projector):
    src = shared(FOOTAGE / "tiny_drawing_noaudio.mp4")
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(f"""
[models."plumbing-vlm"]
backend = "llama.cpp-vlm"
description = "SmolLM2-135M + a random-weight projector (plumbing only)"
source = "path"
path = {json.dumps(str(smollm2))}
mmproj_path = {json.dumps(str(projector))}
n_ctx = 2048
max_frames = 2
max_tokens = 24

[profiles.vlm-plumbing]
base = "tiny"
[profiles.vlm-plumbing.roles]
captioner = "plumbing-vlm"
memory_llm = "smollm2-135m-instruct"
""")
    monkeypatch.setenv("EDGE_MODELS_DIR", str(models_dir()))
    monkeypatch.setenv("EDGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("EDGE_PROFILES", str(profiles))
    db = tmp_path / "m.db"
    r = CliRunner().invoke(main, ["--memory", str(db), "--profile", "vlm-plumbing", "ingest",
                                  str(src), "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    report = json.loads(r.output[r.output.index("{"):])
    assert report["clips_added"] >= 1
    assert report["usage"]["by_role"]["captioner"]["calls"] == report["clips_added"]
    from edge.store import Memory

    with Memory(db, create=False) as m:
        rows = m.db.execute("SELECT caption FROM clips").fetchall()
        calls = m.db.execute("SELECT model FROM calls WHERE role='captioner'").fetchall()
    assert rows and all(c[0].endswith("No speech heard.") and len(c[0]) > 20 for c in rows)
    assert calls and {c[0] for c in calls} == {"plumbing-vlm"}
