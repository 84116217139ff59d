"""Measuring helpers of ``edge bench speed`` and ``edge bench report``: percentiles, one
command's wall seconds and peak resident memory (RSS), and the machine and package versions
that produced a result.

Peak RSS is the kernel's own count for that one process: :func:`run_measured` has a small
launcher fork the command and reap it with :func:`os.wait4`, whose ``ru_maxrss`` is the
command's high-water mark (and its own reaped children's) — not the maximum over every child
as ``getrusage(RUSAGE_CHILDREN)`` gives, and not inflated by the measuring process's own
size (see :data:`_LAUNCHER`).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

PACKAGES = ("edge-memory", "numpy", "apsw", "sqlite-vec", "faiss-cpu", "onnxruntime",
            "tokenizers", "faster-whisper", "ctranslate2", "llama_cpp_python", "ir_measures",
            "matplotlib")
"""The distributions whose versions a result records (:func:`package_versions`)."""

MB = 1e6
"""Bytes in a megabyte as the bench reports it (10^6, as ``benchmarks/knn_scale.py`` did)."""


def percentiles(values: Iterable[float], qs: Sequence[int] = (50, 95),
                digits: int = 3) -> dict[str, float | None]:
    """``{"p50": …, "p95": …}`` of ``values`` by numpy's default linear interpolation
    between closest ranks (``np.percentile``), rounded to ``digits`` (0: a whole ``int``);
    ``None`` for each when there is no value. Units are the values' own (seconds, ms)."""
    vals = [float(v) for v in values]
    if not vals:
        return {f"p{q}": None for q in qs}
    return {f"p{q}": round(float(np.percentile(vals, q)), digits or None) for q in qs}


@dataclass
class CommandRun:
    """One command run by :func:`run_measured`: its ``argv``, exit code ``rc`` (negative:
    killed by that signal), wall ``seconds`` (start to reaped), ``peak_rss_mb`` (MB,
    10^6 bytes; ``None`` when it was killed), its ``stdout``/``stderr`` text and whether it
    ``timed_out``."""

    argv: list[str]
    rc: int
    seconds: float
    peak_rss_mb: float | None
    stdout: str
    stderr: str
    timed_out: bool = False

    def summary(self) -> dict:
        """The run without its output text (what a result JSON keeps)."""
        d = asdict(self)
        d.pop("stdout")
        d["stderr_tail"] = self.stderr.strip().splitlines()[-3:] if self.rc else []
        d.pop("stderr")
        return d


def _maxrss_mb(ru_maxrss: int) -> float:
    """``ru_maxrss`` in MB: kilobytes on Linux, bytes on macOS."""
    scale = 1 if sys.platform == "darwin" else 1024
    return round(ru_maxrss * scale / MB, 1)


_LAUNCHER = """
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as e:
        sys.stderr.write(f"cannot run {sys.argv[2]}: {e}\\n")
    os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{usage.ru_maxrss} {time.perf_counter() - t0} {os.waitstatus_to_exitcode(status)}")
"""
"""Runs the command as its own child and writes its ``ru_maxrss``, seconds and exit code.
The command must not be a child of ``edge`` itself: Linux starts a forked child's peak
RSS at the parent's (the parent's memory is mapped into the child until ``exec``, which
keeps the old high-water mark), so ``edge bench speed``, holding models, would read its
own size for every command. Forked from this small launcher, the command's peak is its
own."""


def run_measured(argv: Sequence[str], *, env: dict[str, str] | None = None,
                 cwd: Path | None = None, timeout: float | None = None) -> CommandRun:
    """Run ``argv`` to its end and measure it: wall seconds (fork to reaped) and the peak
    RSS of that process (``ru_maxrss`` from :func:`os.wait4`, read by :data:`_LAUNCHER`).
    Output goes to temporary files (no pipe to fill); a run past ``timeout`` seconds is
    killed with its process group (``timed_out``; its peak RSS is then ``None``)."""
    with tempfile.TemporaryDirectory(prefix="edge-measure-") as tmp:
        stats, out, err = (Path(tmp) / n for n in ("stats", "out", "err"))
        with out.open("wb") as fo, err.open("wb") as fe:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, str(stats), *argv],
                                    stdout=fo, stderr=fe, env=env, cwd=cwd,
                                    start_new_session=True)
            timed_out = False
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                os.killpg(proc.pid, 9)  # the launcher's own session: it and the command
                proc.wait()
        seconds = time.perf_counter() - t0
        rss, rc = None, proc.returncode
        if stats.exists():
            maxrss, secs, code = stats.read_text().split()
            rss, seconds, rc = _maxrss_mb(int(maxrss)), float(secs), int(code)
        return CommandRun([str(a) for a in argv], rc, round(seconds, 3), rss,
                          out.read_text(errors="replace"), err.read_text(errors="replace"),
                          timed_out=timed_out)


def self_rss_mb() -> float:
    """This process's resident memory now, in MB (``/proc/self/statm``; 0.0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB
    except OSError:
        return 0.0


def _cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_gb() -> float | None:
    """Physical memory in GB (10^9 bytes), ``None`` where the OS does not say."""
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine_info() -> dict:
    """The machine a result was measured on: ``cpu_model``, ``cores`` (logical CPUs the OS
    reports), ``cores_usable`` (this process's affinity), ``ram_gb`` (10^9 bytes),
    ``platform`` and ``python``."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"cpu_model": _cpu_model(), "cores": os.cpu_count(), "cores_usable": usable,
            "ram_gb": _ram_gb(), "platform": platform.platform(),
            "python": platform.python_version()}


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    """``{distribution: version}`` of the installed ``names`` (``None``: not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def environment() -> dict:
    """``{"machine": machine_info(), "packages": package_versions(), "at": UTC time}``:
    what every bench result records about where it was produced."""
    return {"machine": machine_info(), "packages": package_versions(),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
