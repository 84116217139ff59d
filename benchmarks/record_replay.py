"""Issue 13's recorder check: `edge record --url FILE --realtime` replaying a long file in
real time keeps its real-time backlog at ≤ 1 clip, and the LLM backlog drains after the
stream ends.

1. A ~``--minutes`` test file is built from the shared footage (the five long files,
   repeated as needed) with ffmpeg: 640x360, 30 fps, H.264 with a keyframe every 2 s (so
   clips are cut near 30 s), and the real narrated speech of
   ``audio/narrated_speech_17s.mp3`` looped as its audio track. It lives in a temporary
   folder (never the repository), cached by a hash of its inputs.
2. ``python -m edge.cli --memory M record --url FILE --realtime`` runs as a subprocess into
   a fresh memory; the status file ``M.record.json`` is sampled every 0.5 s (state, queue,
   lag_seconds, clips_ingested, ingesting). The stream has ended when the recorder logs
   ``end of FILE`` or its state becomes ``ingesting``. Then the memory's LLM backlog
   (:meth:`edge.store.Memory.backlog`) is sampled every few seconds: with ``--drain`` until
   the recorder exits by itself; with ``--no-drain`` it is sent SIGTERM once the last clip's
   real-time tier is stored (the backlog left is reported).
3. Prints a summary and writes it into ``benchmarks/results/record_replay.json`` (one entry
   per profile/minutes/drain, with the time series): the real-time backlog (``queue``
   while the stream ran: max, p95), ``lag_seconds`` (max/p50/p95), LLM-tier clips built
   during the stream, the LLM backlog at stream end, seconds to drain it, slack builds
   cancelled (``paused: a new clip came in`` lines), the exit code, the machine and its load.

    .venv/bin/python benchmarks/record_replay.py --minutes 10 --no-drain
    .venv/bin/python benchmarks/record_replay.py --minutes 2 --drain --profile tiny

Timings depend on the machine and its load (the load average at start and end is recorded).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edge.record.status import read_status, status_path  # noqa: E402
from edge.store import Memory  # noqa: E402

SHARED = Path(os.environ.get("EDGE_SHARED_DATA", ROOT.parent / "shared" / "data"))
FOOTAGE = ["ego_fisheye_phone_noaudio.mp4", "ego_classroom_vfr_audio.mp4",
           "exo_grid_hevc_aac.mp4", "ego_fisheye_b_noaudio.mp4", "exo_room_131s_noaudio.mp4"]
SPEECH = "audio/narrated_speech_17s.mp3"
ENCODE = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "28", "-g", "60",
          "-keyint_min", "60", "-sc_threshold", "0", "-force_key_frames",
          "expr:gte(t,n_forced*2)", "-c:a", "aac", "-b:a", "64k", "-movflags", "+faststart"]
VIDEO = "scale=640:360:force_original_aspect_ratio=decrease,pad=640:360:(ow-iw)/2:(oh-ih)/2," \
        "setsar=1,fps=30,format=yuv420p"
PAUSED = "paused: a new clip came in"
STOPPED = "paused: the recorder is stopping"
INGESTED = re.compile(r"ingested \S+ into memory \(.*, ([\d.]+) s\)")
SAMPLE_SECONDS = 0.5
BACKLOG_SECONDS = 3.0


def duration(path: Path) -> float:
    """A media file's duration in seconds (ffprobe). Raises CalledProcessError."""
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration",
                          "-of", "csv=p=0", str(path)], check=True, capture_output=True,
                         text=True).stdout
    return float(out.strip())


def test_file(minutes: float, cache: Path) -> Path:
    """The ~``minutes`` test file in ``cache``, built once per set of inputs (ffmpeg at
    ``nice`` 10, one thread). Raises SystemExit when shared footage is missing or ffmpeg
    fails."""
    files = [SHARED / "footage" / f for f in FOOTAGE]
    speech = SHARED / SPEECH
    missing = [str(p) for p in [*files, speech] if not p.is_file()]
    if missing:
        raise SystemExit(f"shared data missing: {', '.join(missing)} (set EDGE_SHARED_DATA)")
    target = minutes * 60.0
    key = hashlib.sha256(json.dumps([target, VIDEO, ENCODE, *[
        (p.name, p.stat().st_size, p.stat().st_mtime) for p in [*files, speech]]]).encode())
    out = cache / f"replay-{minutes:g}min-{key.hexdigest()[:12]}.mp4"
    if out.exists():
        return out
    picked, total = [], 0.0
    while total < target:  # the files in turn, repeated, until the target is covered
        f = files[len(picked) % len(files)]
        picked.append(f)
        total += duration(f)
    args = ["nice", "-n", "10", "ffmpeg", "-hide_banner", "-loglevel", "error", "-y"]
    for f in picked:
        args += ["-threads", "1", "-i", str(f)]
    args += ["-stream_loop", "-1", "-i", str(speech)]
    chains = ";".join(f"[{i}:v]{VIDEO}[v{i}]" for i in range(len(picked)))
    concat = "".join(f"[v{i}]" for i in range(len(picked)))
    graph = f"{chains};{concat}concat=n={len(picked)}:v=1:a=0[v]"
    part = out.with_suffix(".part.mp4")
    args += ["-filter_complex", graph, "-filter_threads", "1", "-map", "[v]",
             "-map", f"{len(picked)}:a", "-t", f"{target:.1f}", "-threads", "1", *ENCODE,
             str(part)]
    print(f"building the {minutes:g}-minute test file from {len(picked)} pieces of footage "
          f"(cached as {out}) ...", flush=True)
    t0 = time.perf_counter()
    if subprocess.run(args).returncode != 0:
        raise SystemExit("ffmpeg failed to build the test file")
    part.replace(out)
    print(f"  built in {time.perf_counter() - t0:.0f} s", flush=True)
    return out


def llm_backlog(memory: Path) -> dict | None:
    """The memory's LLM backlog (clips, hours, eta) and the LLM-tier builds done so far;
    ``None`` while the memory does not exist or cannot be read (logged in the sample)."""
    if not memory.exists() or memory.stat().st_size == 0:
        return None
    try:
        with Memory(memory, create=False) as m:
            b = m.backlog()
            n, secs = m.db.execute("SELECT count(*), coalesce(sum(seconds), 0) "
                                   "FROM builds").fetchone()
    except Exception as e:  # noqa: BLE001 (the recorder holds the file: try again later)
        return {"error": f"{e.__class__.__name__}: {e}"}
    return {**b, "built": n, "build_seconds": round(secs, 1)}


class Run:
    """One recorder subprocess and what was sampled from it (times: seconds since start)."""

    def __init__(self, args: argparse.Namespace, source: Path, work: Path) -> None:
        self.args, self.source = args, source
        self.memory = work / "replay.db"
        self.log_path = work / "record.stderr.log"
        self.samples: list[dict] = []
        self.backlog: list[dict] = []
        self.t_end: float | None = None      # the stream ended
        self.t_rt_done: float | None = None  # the last clip's real-time tier stored
        self.t_drained: float | None = None  # the LLM backlog reached 0 clips
        self.t_term: float | None = None
        self.cancelled = 0
        self.cancelled_by_stop = 0
        self.t_exit: float | None = None
        self.ingest_seconds: list[float] = []  # the real-time tier per clip (its log)
        self._log_pos = 0

    def command(self) -> list[str]:
        a = self.args
        cmd = [sys.executable, "-m", "edge.cli", "--memory", str(self.memory)]
        if a.profile:
            cmd += ["--profile", a.profile]
        return cmd + ["record", "--url", str(self.source), "--realtime",
                      "--min-free", a.min_free, *a.record_args]

    def _read_log(self) -> list[str]:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            f.seek(self._log_pos)
            text = f.read()
        cut = text.rfind("\n") + 1  # whole lines only
        self._log_pos += len(text[:cut].encode("utf-8", errors="replace"))
        lines = text[:cut].splitlines()
        self.cancelled += sum(PAUSED in line for line in lines)
        self.cancelled_by_stop += sum(STOPPED in line for line in lines)  # by the SIGTERM
        self.ingest_seconds += [float(m.group(1)) for m in map(INGESTED.search, lines) if m]
        return lines

    def _sample(self, t: float) -> dict | None:
        try:
            s = read_status(status_path(self.memory))
        except ValueError:
            return None
        if s is None:
            return None
        row = {"t": round(t, 2), **{k: s.get(k) for k in (
            "state", "queue", "lag_seconds", "clips_recorded", "clips_ingested", "ingesting")}}
        self.samples.append(row)
        return row

    def _note_backlog(self, t: float, force: bool = False) -> None:
        if force or not self.backlog or t - self.backlog[-1]["t"] >= BACKLOG_SECONDS:
            b = llm_backlog(self.memory)
            if b is not None:
                self.backlog.append({"t": round(t, 2), **b})
                if self.t_end is not None and self.t_drained is None and b.get("clips") == 0:
                    self.t_drained = t

    def execute(self) -> int:
        """Run the recorder to its end (or SIGTERM it, ``--no-drain``); its exit code."""
        a = self.args
        end_line = f"end of {self.source}"
        with open(self.log_path, "w") as logf:
            proc = subprocess.Popen(self.command(), stdout=logf, stderr=subprocess.STDOUT,
                                    cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        t0 = time.monotonic()
        deadline = t0 + a.timeout
        while proc.poll() is None:
            time.sleep(SAMPLE_SECONDS)
            t = round(time.monotonic() - t0, 2)  # as the samples store it
            lines = self._read_log()
            row = self._sample(t)
            if self.t_end is None and (any(end_line in ln for ln in lines)
                                       or (row and row["state"] == "ingesting")):
                self.t_end = t
                self._note_backlog(t, force=True)
            if self.t_end is None:
                continue
            if self.t_rt_done is None and row and row["queue"] == 0 and not row["ingesting"]:
                self.t_rt_done = t
                self._note_backlog(t, force=True)
            else:
                self._note_backlog(t)
            late = self.t_end is not None and t - self.t_end > a.rt_wait
            if not a.drain and self.t_term is None and (self.t_rt_done is not None or late):
                self.t_term = t
                proc.send_signal(signal.SIGTERM)
            if time.monotonic() > deadline:
                print(f"timeout after {a.timeout:.0f} s: killing the recorder", flush=True)
                proc.kill()
        code = proc.wait()
        self.t_exit = round(time.monotonic() - t0, 2)
        self._read_log()
        self._sample(self.t_exit)
        self._note_backlog(time.monotonic() - t0, force=True)
        return code


def percentile(values: list[float], q: float) -> float | None:
    """The ``q``-th percentile (nearest rank) of ``values``; ``None`` when empty."""
    if not values:
        return None
    v = sorted(values)
    return v[max(0, min(len(v) - 1, math.ceil(q / 100.0 * len(v)) - 1))]


def at_or_before(rows: list[dict], t: float | None) -> dict | None:
    """The last row sampled at or before ``t`` (None if none)."""
    if t is None:
        return None
    before = [r for r in rows if r["t"] <= t and "clips" in r]
    return before[-1] if before else None


def summary(run: Run, code: int, footage: float, load: tuple[str, str]) -> dict:
    """The report of one run (see the module docstring)."""
    a = run.args
    during = [r for r in run.samples if run.t_end is None or r["t"] <= run.t_end]
    queue = [r["queue"] for r in during if r["queue"] is not None]
    lag = [r["lag_seconds"] for r in during if r["lag_seconds"] is not None]
    end = at_or_before(run.backlog, run.t_end) or (run.backlog[0] if run.backlog else None)
    rt = at_or_before(run.backlog, run.t_rt_done)
    last = run.backlog[-1] if run.backlog else None
    final = run.samples[-1] if run.samples else {}
    rt_ok = bool(queue) and max(queue) <= 1
    return {
        "profile": a.profile or os.environ.get("EDGE_PROFILE", "small"),
        "minutes": a.minutes, "drain": a.drain, "footage_seconds": round(footage, 1),
        "clips": final.get("clips_recorded"), "clips_ingested": final.get("clips_ingested"),
        "queue_max": max(queue, default=None), "queue_p95": percentile(queue, 95),
        "lag_max": max(lag, default=None), "lag_p50": percentile(lag, 50),
        "lag_p95": percentile(lag, 95),
        "realtime_tier_seconds_per_clip": {
            "p50": percentile(run.ingest_seconds, 50), "max": max(run.ingest_seconds,
                                                               default=None)},
        "stream_end_s": run.t_end,
        "llm_built_during_stream": end.get("built") if end else None,
        "llm_backlog_at_stream_end": end.get("clips") if end else None,
        "realtime_done_after_end_s": None if run.t_rt_done is None or run.t_end is None
        else round(run.t_rt_done - run.t_end, 1),
        "llm_backlog_when_realtime_done": rt.get("clips") if rt else None,
        "llm_backlog_left": last.get("clips") if last else None,
        "llm_built_total": last.get("built") if last else None,
        "drain_seconds_after_end": None if run.t_drained is None or run.t_end is None
        else round(run.t_drained - run.t_end, 1),
        "exit_after_end_s": None if run.t_end is None else round(run.t_exit - run.t_end, 1),
        "sigterm_at_s": run.t_term, "slack_builds_cancelled": run.cancelled,
        "builds_cancelled_by_sigterm": run.cancelled_by_stop,
        "exit_code": code,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "loadavg_start": load[0], "loadavg_end": load[1],
                    "note": "cores shared with other work while it ran"},
        "realtime_backlog_le_1_clip": rt_ok,
        "command": " ".join(run.command()),
        "series": run.samples, "llm_backlog_series": run.backlog,
    }


def report(s: dict) -> None:
    """Print the summary, ending with the verdict line."""
    skip = {"series", "llm_backlog_series", "machine"}
    for k, v in s.items():
        if k not in skip:
            print(f"  {k}: {v}")
    m = s["machine"]
    print(f"  machine: {m['cpus']} cpus, {m['platform']}; load {m['loadavg_start']} -> "
          f"{m['loadavg_end']} ({m['note']})")
    print(f"real-time backlog ≤ 1 clip: {'yes' if s['realtime_backlog_le_1_clip'] else 'no'}")


def save(s: dict, out: Path, log_path: Path) -> None:
    """Merge this run into ``out`` (one entry per profile/minutes/drain) and keep the
    recorder's whole log beside it (``<out stem>-<entry>.log``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(out.read_text()) if out.exists() else {}
    label = f"{s['profile']}-{s['minutes']:g}min-{'drain' if s['drain'] else 'no-drain'}"
    log_copy = out.with_name(f"{out.stem}-{label}.log")
    log_copy.write_text(log_path.read_text(encoding="utf-8", errors="replace"))
    data[label] = {**s, "recorder_log": str(log_copy)}
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out} and {log_copy}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=10.0, help="test file length (10)")
    p.add_argument("--profile", default=None, help="model profile (default: small)")
    p.add_argument("--drain", action=argparse.BooleanOptionalAction, default=True,
                   help="wait for the LLM backlog to drain (default) or SIGTERM the "
                        "recorder once the stream's real-time tier is stored")
    p.add_argument("--min-free", default="50MB", help="the recorder's --min-free (50MB)")
    p.add_argument("--rt-wait", type=float, default=180.0,
                   help="--no-drain: SIGTERM at most this long after the stream end (180)")
    p.add_argument("--timeout", type=float, default=None,
                   help="kill the recorder after this many seconds (default: 3x footage "
                        "+ 10 min)")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "edge-replay",
                   help="where the test file is cached (a temporary folder)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" /
                   "record_replay.json")
    p.add_argument("record_args", nargs="*", help="more `edge record` options, after --")
    a = p.parse_args(argv)
    if a.timeout is None:
        a.timeout = 3 * a.minutes * 60 + 600
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    a.cache.mkdir(parents=True, exist_ok=True)
    source = test_file(a.minutes, a.cache)
    footage = duration(source)
    with tempfile.TemporaryDirectory(prefix="record-replay-", dir=a.cache) as work:
        run = Run(a, source, Path(work))
        print(f"$ {' '.join(run.command())}", flush=True)
        load0 = Path("/proc/loadavg").read_text().strip()
        code = run.execute()
        load1 = Path("/proc/loadavg").read_text().strip()
        if code != 0:
            print(Path(run.log_path).read_text()[-3000:])
        s = summary(run, code, footage, (load0, load1))
        report(s)
        save(s, a.out, run.log_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
