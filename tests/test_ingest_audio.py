"""``edge ingest`` as a user runs it: a video with its sound in a separate file (non-ASCII
names with spaces), per-stage cost in ``--json`` and ``edge stats``, and the skipped-files
summary of a folder of broken files."""

import json
import shutil

import pytest

from edge.stages import STAGES
from edge.store import Memory
from tests.conftest import FOOTAGE, SHARED, shared


@pytest.mark.slow
def test_audio_from_a_separate_file_and_stage_costs(run, tmp_path):
    d = tmp_path / "téléphone vidéos"
    d.mkdir()
    video = d / "dessin à l'été 01.mp4"
    audio = d / "son 音声 01.mp3"
    shutil.copy(shared(FOOTAGE / "tiny_drawing_noaudio.mp4"), video)
    shutil.copy(shared(FOOTAGE / "tiny_drawing_speech.mp3"), audio)
    mem = tmp_path / "m.db"
    res = run("--memory", mem, "ingest", video, "--audio", audio, "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["clips_added"] == 1 and report["media_seconds"] == pytest.approx(5.0)
    stages = report["stages"]
    assert [s for s in STAGES if s in stages] == list(stages)
    for name in ("decode", "asr", "caption", "embed", "store"):  # the real-time tier
        assert stages[name]["seconds"] > 0
        assert stages[name]["rtf"] == pytest.approx(stages[name]["seconds"] / 5.0, abs=1e-3)
    assert "memory_llm" not in stages  # the LLM tier's calls are counted apart (below)
    assert stages["asr"]["calls"] == 1
    assert stages["embed"]["tokens_in"] > 0
    with Memory(mem, create=False) as m:
        (clip,) = m.all_clips()
        # the speech lives only in the separate file: it reached the video's clip
        assert "drawing" in clip.transcript.lower()
        info = json.loads(m.db.execute("SELECT info FROM sources").fetchone()[0])
        assert info["audio_file"].endswith("son 音声 01.mp3") and info["has_audio"]
        # the LLM tier was built right after (no --later), its calls stored under `ingest`
        assert not m.queued()
        llm = [c for c in m.call_totals()
               if c["command"] == "ingest" and c["role"].startswith("memory_llm")]
        assert llm and llm[0]["calls"] >= 1 and llm[0]["tokens_in"] > 0

    stats = json.loads(run("--memory", mem, "stats", "--json").stdout)
    cost = stats["ingest_cost"]
    assert cost["runs"] == 1 and cost["clips_added"] == 1
    assert cost["stages"]["asr"]["calls"] == stages["asr"]["calls"]
    assert cost["stages"]["asr"]["rtf"] == pytest.approx(stages["asr"]["rtf"], abs=1e-3)
    text = run("--memory", mem, "stats").output
    assert "asr" in text and "RTF" in text

    again = json.loads(run("--memory", mem, "ingest", video, "--audio", audio, "--json").stdout)
    assert again["sources"][0]["status"] == "skipped" and again["clips_added"] == 0


def test_audio_that_does_not_fit_the_video_is_a_clear_error(run, tmp_path):
    video = shared(FOOTAGE / "tiny_drawing_noaudio.mp4")
    res = run("--memory", tmp_path / "m.db", "ingest", video, "--audio",
              shared(SHARED / "audio" / "narrated_speech_17s.mp3"))
    assert res.exit_code == 1
    assert "differ by" in res.output and "--audio-offset" in res.output
    res = run("--memory", tmp_path / "m.db", "ingest", video, video, "--audio",
              shared(FOOTAGE / "tiny_drawing_speech.mp3"))
    assert res.exit_code == 1 and "exactly one video" in res.output
    res = run("--memory", tmp_path / "m.db", "ingest", video, "--audio-offset", "2")
    assert res.exit_code == 1 and "only applies together with --audio" in res.output


def test_folder_summary_lists_every_skipped_file_with_its_reason(run, tmp_path):
    d = tmp_path / "camera dump ä"
    d.mkdir()
    (d / "empty clip.mp4").write_bytes(b"")
    (d / "notes.mp4").write_text("not a video\n" * 40)
    src = shared(FOOTAGE / "everyday_reading.mp4").read_bytes()
    (d / "cut.mp4").write_bytes(src[:3000])
    res = run("--memory", tmp_path / "m.db", "ingest", d, "--json")
    assert res.exit_code == 1  # failures are reported, and the exit code says so
    report = json.loads(res.stdout)
    reasons = {s["path"].rsplit("/", 1)[-1]: s["reason"] for s in report["skipped"]}
    assert set(reasons) == {"empty clip.mp4", "notes.mp4", "cut.mp4"}
    assert "empty" in reasons["empty clip.mp4"]
    assert "not a readable video" in reasons["notes.mp4"]
    assert "cut.mp4" in reasons["cut.mp4"]
    text = run("--memory", tmp_path / "m.db", "ingest", d).output
    assert text.count(" ! failed") == 3 and "3 file(s) could not be ingested" in text
