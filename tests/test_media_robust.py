"""Bad and unusual media made in the test from real footage: rotation metadata, odd frame
sizes, corrupt bytes in the middle, a truncated file with its index up front, a separate
audio file (``--audio``) and its duration check. ffmpeg (scripts/setup.sh) writes the
variants; PyAV decodes them (slow: real footage is transcoded and decoded)."""

import shutil
import subprocess
from pathlib import Path

import av
import numpy as np
import pytest

from edge.ingest.media import (
    MediaError,
    check_audio_alignment,
    iter_clips,
    probe,
)
from tests.conftest import FOOTAGE, SHARED, shared


def _ffmpeg(*args: str) -> None:
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed (scripts/setup.sh installs it)")
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", *args], check=True)


@pytest.fixture(scope="module")
def pattern(tmp_path_factory) -> Path:
    """A 4 s 320×240 test pattern (asymmetric, so a rotation shows)."""
    p = tmp_path_factory.mktemp("pattern") / "pattern.mp4"
    _ffmpeg("-f", "lavfi", "-i", "testsrc=size=320x240:rate=10:duration=4",
            "-c:v", "libx264", "-pix_fmt", "yuv420p", str(p))
    return p


@pytest.mark.slow
@pytest.mark.parametrize("degrees", [90, 270])
def test_rotation_metadata_gives_upright_frames(pattern, tmp_path, degrees):
    rotated = tmp_path / f"phone rotated {degrees}.mp4"
    # what a phone held upright writes: the pixels stay landscape, a display matrix says turn
    _ffmpeg("-i", str(pattern), "-c", "copy", "-metadata:s:v", f"rotate={degrees}",
            str(rotated))
    # ffmpeg's own autorotate is the reference for "upright"
    ref_png = tmp_path / "upright.png"
    _ffmpeg("-i", str(rotated), "-frames:v", "1", str(ref_png))
    import cv2

    ref = cv2.imread(str(ref_png))
    assert ref.shape == (320, 240, 3)
    (clip,) = list(iter_clips(probe(rotated)))
    first = clip.frames[0].image
    assert first.shape == (320, 240, 3), "a rotated phone video must come out portrait"
    assert np.abs(first.astype(int) - ref.astype(int)).mean() < 3.0
    (plain,) = list(iter_clips(probe(pattern)))
    assert plain.frames[0].image.shape == (240, 320, 3)


@pytest.mark.slow
def test_odd_frame_size_decodes_and_keeps_its_size(tmp_path):
    odd = tmp_path / "odd size 641x479.mkv"
    src = shared(FOOTAGE / "everyday_reading.mp4")
    _ffmpeg("-i", str(src), "-t", "6", "-vf", "scale=641:479", "-c:v", "libx264",
            "-pix_fmt", "yuv444p", "-an", str(odd))
    info = probe(odd)
    assert (info.width, info.height) == (641, 479)
    warnings: list[str] = []
    (clip,) = list(iter_clips(info, warnings=warnings))
    assert warnings == []
    assert abs(len(clip.frames) - 6) <= 1
    assert all(f.image.shape == (479, 641, 3) for f in clip.frames)


@pytest.mark.slow
def test_corrupt_bytes_in_the_middle_skip_packets_not_the_rest(tmp_path):
    src = shared(FOOTAGE / "exo_room_131s_noaudio.mp4").read_bytes()
    data = bytearray(src)
    n = len(data)
    rng = np.random.default_rng(0)
    data[n // 3: n // 3 + 200_000] = rng.integers(0, 256, 200_000, dtype=np.uint8).tobytes()
    bad = tmp_path / "corrupt middle.mp4"
    bad.write_bytes(bytes(data))
    info = probe(bad)
    warnings: list[str] = []
    clips = list(iter_clips(info, warnings=warnings))
    # decoding resumes after the damaged stretch: the clips after it still have frames
    assert len(clips) == 5
    assert all(c.frames for c in clips)
    assert clips[-1].frames[-1].t + clips[-1].start > 125
    assert any("corrupt video packet" in w for w in warnings)


@pytest.mark.slow
def test_truncated_file_with_index_up_front_keeps_the_clips_before_the_cut(tmp_path):
    # a camera that writes its index first (faststart), then stops writing: the tail is cut
    front = tmp_path / "faststart.mp4"
    _ffmpeg("-i", str(shared(FOOTAGE / "exo_room_131s_noaudio.mp4")), "-c", "copy",
            "-movflags", "+faststart", str(front))
    data = front.read_bytes()
    cut = tmp_path / "cut in half.mp4"
    cut.write_bytes(data[: len(data) // 2])
    info = probe(cut)
    assert info.duration > 130  # the index still promises the whole length
    warnings: list[str] = []
    clips = list(iter_clips(info, warnings=warnings))
    assert 1 <= len(clips) < 5
    assert all(c.frames for c in clips)
    assert warnings, "a cut file must say so"


def test_separate_audio_duration_check():
    video = probe(shared(FOOTAGE / "tiny_drawing_noaudio.mp4"))
    same = probe(shared(FOOTAGE / "tiny_drawing_speech.mp3"))
    assert check_audio_alignment(video, same) == ""  # 5.0 s vs 5.04 s: the same recording
    longer = probe(shared(SHARED / "audio" / "narrated_speech_17s.mp3"))
    with pytest.raises(MediaError, match="differ by 1[12].* s.*--audio-offset"):
        check_audio_alignment(video, longer)
    with pytest.raises(MediaError, match="no audio stream"):
        check_audio_alignment(video, video)
    with pytest.raises(MediaError, match="outside the video"):
        check_audio_alignment(video, same, offset=9.0)


@pytest.mark.slow
def test_every_stream_is_decoded_once_per_clip():
    """iter_clips demuxes only the video stream (audio is decoded once, separately, for
    ASR): each video packet is decoded exactly once for the whole file."""
    path = shared(FOOTAGE / "exo_grid_hevc_aac.mp4")
    with av.open(str(path)) as c:
        n_video_frames = sum(1 for _ in c.decode(video=0))
    info = probe(path)
    clips = list(iter_clips(info, fps=1000.0))  # sample every frame to count them
    assert sum(len(c.frames) for c in clips) == n_video_frames
