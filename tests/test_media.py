"""Real decoding of every shared file, and bad inputs that must fail clearly."""

import pytest

from edge.ingest.media import MediaError, clip_bounds, iter_clips, load_audio, probe
from tests.conftest import FOOTAGE, shared

# file -> (has_audio, number of 30 s clips)
EXPECTED = {
    "ego_fisheye_phone_noaudio.mp4": (False, 3),
    "ego_classroom_vfr_audio.mp4": (True, 1),
    "exo_grid_hevc_aac.mp4": (True, 4),
    "exo_room_131s_noaudio.mp4": (False, 5),
    "everyday_cooking.avi": (False, 1),
    "tiny_drawing_speech.mp3": (True, 1),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shared_files_probe_and_cut_into_clips(name):
    info = probe(shared(FOOTAGE / name))
    has_audio, n_clips = EXPECTED[name]
    assert info.has_audio is has_audio
    warnings: list[str] = []
    clips = list(iter_clips(info, warnings=warnings))
    assert warnings == []
    assert len(clips) == n_clips
    assert clips[-1].end == pytest.approx(info.duration)
    for c in clips:
        if info.has_video:
            # 1 fps sampling by presentation time: about one frame per second of clip
            assert abs(len(c.frames) - c.duration) <= 2
            assert all(0 <= f.t <= c.duration + 1e-3 for f in c.frames)
            assert c.frames[0].image.ndim == 3 and c.frames[0].image.shape[2] == 3
        else:
            assert c.frames == []


@pytest.mark.slow
def test_vfr_frames_follow_presentation_time():
    info = probe(shared(FOOTAGE / "ego_classroom_vfr_audio.mp4"))
    (clip,) = list(iter_clips(info))
    times = [f.t for f in clip.frames]
    assert times == sorted(times)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert max(gaps) < 1.5 and min(gaps) > 0.5


def test_creation_time_is_read_from_the_container():
    info = probe(shared(FOOTAGE / "ego_classroom_vfr_audio.mp4"))
    assert info.creation_time == 1740079852.0  # 2025-02-20T19:30:52Z
    assert probe(shared(FOOTAGE / "exo_room_131s_noaudio.mp4")).creation_time is None


@pytest.mark.slow
def test_no_audio_stream_is_normal():
    assert load_audio(shared(FOOTAGE / "ego_fisheye_b_noaudio.mp4")) is None
    audio = load_audio(shared(FOOTAGE / "tiny_drawing_speech.mp3"))
    assert audio is not None and abs(audio.size / 16000 - 5.04) < 0.1


def test_clip_bounds_merge_a_short_tail():
    assert clip_bounds(131.2) == [(0, 30), (30, 60), (60, 90), (90, 120), (120, 131.2)]
    assert clip_bounds(120.128) == [(0, 30), (30, 60), (60, 90), (90, 120.128)]
    assert clip_bounds(0) == []


def test_zero_byte_file(tmp_path):
    p = tmp_path / "empty.mp4"
    p.write_bytes(b"")
    with pytest.raises(MediaError, match="empty"):
        probe(p)


def test_non_video_file(tmp_path):
    p = tmp_path / "notes.mp4"
    p.write_text("not a video at all\n" * 50)
    with pytest.raises(MediaError, match="not a readable video"):
        probe(p)


@pytest.mark.parametrize("name, kept", [("everyday_reading.mp4", 1 / 3),
                                        ("exo_room_131s_noaudio.mp4", 1 / 2)])
def test_phone_mp4_cut_before_its_index_says_so(tmp_path, name, kept):
    """Phones and cameras write the MP4 index (moov) last: a copy cut short loses it, and the
    message says the file was cut off instead of a bare 'invalid data'. (A cut file whose
    index is up front decodes up to the cut: test_media_robust.)"""
    src = shared(FOOTAGE / name).read_bytes()
    p = tmp_path / "cut.mp4"
    p.write_bytes(src[: int(len(src) * kept)])
    with pytest.raises(MediaError, match=r"cut\.mp4: the file ends before its index"):
        probe(p)
    (tmp_path / "text.mp4").write_text("hello\n")
    with pytest.raises(MediaError, match="not a readable video"):
        probe(tmp_path / "text.mp4")
