"""ASR hygiene on real audio: VAD makes silence and noise empty, repeated-phrase loops are
cut, and every segment carries a language (detected per segment by the multilingual whisper
base, fixed "en" for tiny.en)."""

import shutil
import subprocess

import numpy as np
import pytest

from edge.ingest.media import load_audio
from models.transcriber import TranscriptSegment, collapse_loops, suppress_repeats
from tests.conftest import SHARED, shared


def test_collapse_loops_cuts_a_looping_phrase_to_one():
    assert collapse_loops("Thank you. Thank you. Thank you. Thank you.") == "Thank you."
    assert (collapse_loops("I said go go go now, then we left")
            == "I said go now, then we left")
    text = "The black power bank is on the table, next to the window."
    assert collapse_loops(text) == text
    assert collapse_loops("yes yes") == "yes yes"  # two is speech, three is a loop


def test_a_clip_transcript_labels_speech_in_another_language():
    from edge.ingest.perception import transcript_for

    segs = [TranscriptSegment(0.0, 2.0, "Good morning.", "en", 0.9),
            TranscriptSegment(2.0, 4.0, "Guten Morgen.", "de", 0.8),
            TranscriptSegment(4.0, 5.0, "Okay.", "", 0.0),
            TranscriptSegment(31.0, 33.0, "Later.", "fr", 0.7)]
    assert transcript_for(segs, 0.0, 30.0) == "Good morning. [de] Guten Morgen. Okay."
    assert transcript_for(segs, 30.0, 60.0) == "[fr] Later."


def test_suppress_repeats_keeps_real_repetition_and_drops_loops():
    seg = [TranscriptSegment(float(i), i + 1.0, t) for i, t in enumerate(
        ["Where are my keys?", "Yes.", "Yes.", "Thank you.", "Thank you.", "Thank you.",
         "Thank you.", "...", "Subscribe subscribe subscribe subscribe"])]
    out = suppress_repeats(seg)
    assert [s.text for s in out] == ["Where are my keys?", "Yes.", "Yes.", "Thank you.",
                                     "Thank you.", "Subscribe"]
    assert out[-1].start == 8.0  # times are unchanged


@pytest.mark.slow
def test_silence_and_noise_give_no_segments(hub):
    rng = np.random.default_rng(0)
    silence = np.zeros(16000 * 20, dtype=np.float32)
    hum = (0.01 * np.sin(np.arange(16000 * 20) * 2 * np.pi * 50 / 16000)
           + 0.002 * rng.normal(size=16000 * 20)).astype(np.float32)
    assert hub.transcriber.transcribe(silence) == []
    assert hub.transcriber.transcribe(hum) == []


@pytest.mark.slow
def test_english_only_model_labels_segments_en(hub):
    audio = load_audio(shared(SHARED / "audio" / "narrated_speech_17s.mp3"))
    segs = hub.transcriber.transcribe(audio)
    assert segs and not hub.transcriber.multilingual
    assert {s.language for s in segs} == {"en"}


def _speak(voice: str, text: str, path) -> np.ndarray:
    subprocess.run(["espeak-ng", "-v", voice, "-s", "140", "-w", str(path), text], check=True)
    return load_audio(path)


@pytest.mark.slow
def test_multilingual_model_detects_language_per_segment(tmp_path):
    """English then German in one recording (espeak-ng voices): whisper base decodes and
    labels each segment in its own language. Needs the whisper-base packages (the manifest's
    ``whisper-base`` model) and espeak-ng."""
    from edge.config import models_dir
    from models import ModelHub, Profile, WeightsMissingError, load_manifest

    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (scripts/setup.sh installs it)")
    spec = load_manifest().model("whisper-base")
    hub = ModelHub(Profile("multilingual", "", {"transcriber": spec}), models_dir())
    try:
        transcriber = hub.transcriber
    except WeightsMissingError as e:
        pytest.skip(str(e))
    assert transcriber.multilingual
    en = _speak("en", "Hello, I left the black power bank on the kitchen table next to the "
                "window.", tmp_path / "en.wav")
    de = _speak("de", "Guten Morgen, ich habe die schwarze Powerbank auf dem Küchentisch "
                "neben dem Fenster liegen lassen.", tmp_path / "de.wav")
    pause = np.zeros(16000 * 2, dtype=np.float32)
    segs = transcriber.transcribe(np.concatenate([en, pause, de]))
    first = segs[0]
    assert first.language == "en" and "power bank" in first.text.lower()
    german = [s for s in segs if s.language == "de"]
    assert german and german[0].start >= 3.5
    assert "morgen" in german[0].text.lower()
    hub.close()
