"""Each model role for real: embedder, ASR on the shared narrated speech, OCR on a real
frame, the memory LLM with a JSON schema (and its marked fallback)."""

import numpy as np
import pytest

from edge.build.keys import extract_keys, extractive_keys
from edge.ingest.media import iter_clips, load_audio, probe
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


def test_embedder_batches_are_bounded_in_padded_tokens_and_embed_as_one_at_a_time(hub):
    """Length-sorted batches: at most ``batch_size`` texts and ``batch_tokens`` padded
    tokens (32 captions padded to 256 tokens took the process to ~1 GB), every text once
    in order; rows equal those embedded one by one."""
    from models.embedder import _batches

    lengths = [5] * 40 + [100] * 30 + [256] * 9
    batches = _batches(list(range(len(lengths))), lengths, 32, 2048)
    assert [i for b in batches for i in b] == list(range(len(lengths)))
    assert all(len(b) <= 32 and len(b) * max(lengths[i] for i in b) <= 2048 for b in batches)
    assert [len(b) for b in batches] == [32, 20, 18, 8, 1]  # 20 × 100 ≤ 2048 < 21 × 100
    texts = [" ".join(["word"] * n) for n in (3, 120, 40, 250)]
    rows = hub.embedder.embed(texts)
    ones = np.stack([hub.embedder.embed([t])[0] for t in texts])
    np.testing.assert_allclose(rows, ones, atol=1e-5)


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


def _cancel_after(llm, messages, delay: float, max_tokens: int) -> tuple[object, float, float]:
    """Run ``llm.chat`` in a thread inside a cancel scope and set the event after ``delay``
    seconds: ``(what the call returned or raised, seconds from the cancel to the call's
    end, seconds the call ran)``."""
    import threading
    import time

    from models import GenerationCancelled, cancel_scope

    event, box = threading.Event(), {}

    def work():
        box["start"] = time.monotonic()
        with cancel_scope(event):
            try:
                box["out"] = llm.chat(messages, role="solver", max_tokens=max_tokens)
            except GenerationCancelled as e:
                box["out"] = e
        box["end"] = time.monotonic()

    thread = threading.Thread(target=work)
    thread.start()
    time.sleep(delay)
    cancelled = time.monotonic()
    event.set()
    thread.join(120)
    assert not thread.is_alive()
    return box["out"], box["end"] - cancelled, box["end"] - box["start"]


def test_a_cancelled_llm_call_stops_while_reading_and_while_writing(hub):
    """The chat's Esc: setting the scope's event stops the llama.cpp call within a moment,
    whether it is still reading a long prompt or generating a long reply; nothing is
    counted, and the next call answers exactly as before (the aborted state is not reused)."""
    from models import GenerationCancelled

    llm = hub.llm("solver")
    hello = [{"role": "user", "content": "Say hello."}]
    before = llm.chat(hello, role="solver", max_tokens=12).text
    calls = hub.usage.mark()
    reading = [{"role": "user", "content": "Summarize: " + "The cat sat on the mat. " * 300}]
    writing = [{"role": "user", "content": "Count from 1 to 500, separated by commas."}]
    for messages, delay in ((reading, 1.0), (writing, 3.0)):
        out, latency, ran = _cancel_after(llm, messages, delay, max_tokens=1000)
        # uncancelled, the 1900-token prompt or the 1000-token reply takes far longer
        assert isinstance(out, GenerationCancelled), out
        assert latency < 3.0, f"the call ended {latency:.2f} s after the cancel"
        assert ran < delay + 3.0
    assert hub.usage.records[calls:] == []
    assert llm.chat(hello, role="solver", max_tokens=12).text == before
    # a scope whose event is already set stops the call before it starts
    import threading

    from models import cancel_scope

    done = threading.Event()
    done.set()
    with cancel_scope(done), pytest.raises(GenerationCancelled):
        llm.chat(hello, role="solver", max_tokens=12)
