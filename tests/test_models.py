"""Each model role for real: embedder, ASR on the shared narrated speech, OCR on a real
frame, the memory LLM with a JSON schema (and its marked fallback)."""

import numpy as np
import pytest

from edge.keys import extract_keys, extractive_keys
from edge.media import iter_clips, load_audio, probe
from models.llm import LLMOutputError
from tests.conftest import EGOLIFE_DAY1, FOOTAGE, SHARED, shared

pytestmark = pytest.mark.slow


def test_embedder_gives_unit_384d_vectors_that_rank_meaning(hub):
    v = hub.embedder.embed(["I put the black power bank in my bag",
                            "where did I leave the power bank?",
                            "a dog runs across the beach", ""])
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > v[2] @ v[1] + 0.2
    # order-independent: length-sorted batching must not change any row
    np.testing.assert_allclose(hub.embedder.embed(["a dog runs across the beach"])[0], v[2],
                               atol=1e-5)


def test_asr_on_shared_narrated_speech(hub):
    audio = load_audio(shared(SHARED / "audio" / "narrated_speech_17s.mp3"))
    segs = hub.transcriber.transcribe(audio)
    text = " ".join(s.text for s in segs).lower()
    for phrase in ("new york times", "july 21st, 1969", "front page", "moon"):
        assert phrase in text
    assert segs[0].start < 1.0 and segs[-1].end > 15.0


def test_asr_on_silence_is_empty(hub):
    assert hub.transcriber.transcribe(np.zeros(16000 * 5, dtype=np.float32)) == []


def test_ocr_reads_burnt_in_subtitles_of_a_real_frame(hub):
    info = probe(shared(FOOTAGE / "ego_classroom_vfr_audio.mp4"))
    (clip,) = list(iter_clips(info))
    frame = min(clip.frames, key=lambda f: abs(f.t - 18.0)).image
    lines = hub.captioner.reader.read(frame)
    assert any("世界" in line.text or "终点" in line.text for line in lines), lines


def test_perception_caption_says_only_what_was_observed(hub):
    info = probe(shared(FOOTAGE / "ego_classroom_vfr_audio.mp4"))
    (clip,) = list(iter_clips(info))
    cap = hub.captioner.caption(clip.frames, "hello there", clip.duration)
    assert cap.text.startswith("Video, 27 s")
    assert "Visible text:" in cap.text and 'Speech: "hello there"' in cap.text
    assert cap.signals["frames"] == len(clip.frames) and cap.signals["text"]


def test_keys_through_the_real_llm_with_schema(hub):
    import json

    rec = json.loads(shared(EGOLIFE_DAY1).read_text())[12]
    keys = extract_keys(hub.llm("memory_llm"), rec["text"])
    assert keys.origin == "llm"
    for k in ("event", "dialogue", "object", "summary"):
        assert getattr(keys, k).strip() and "_" not in getattr(keys, k)
    assert "glass" in (keys.object + keys.summary + keys.dialogue).lower()


def test_broken_llm_json_falls_back_to_marked_extractive_keys(hub):
    caption = 'Video, 30 s: the view is mostly still. Visible text: "EXIT". Speech: "hi there"'
    llm = hub.llm("memory_llm")
    # 3 tokens cannot hold the JSON object: the reply is cut, the repair is cut too
    with pytest.raises(LLMOutputError):
        llm.chat_json([{"role": "user", "content": caption}], role="memory_llm",
                      schema={"type": "object", "properties": {"a": {"type": "string"}},
                              "required": ["a"]}, max_tokens=3)
    keys = extract_keys(llm, caption, max_tokens=3)
    assert keys == extractive_keys(caption)
    assert keys.origin == "extractive" and keys.dialogue == "hi there"
    assert '"EXIT"' in keys.object
