"""Privacy: nothing leaves the device unless the user configured a remote role.

A real ``edge ingest`` of a short shared footage file (perception captioner with OCR, the
embedder, the memory LLM) and an ``edge ask`` on it run under ``strace -f``, which sees every
process and thread, native code included (onnxruntime's telemetry is C++, invisible to Python
audit hooks). No socket may reach a non-loopback address, and no name lookup may start (a
connection to nscd or to a DNS server on port 53 is how glibc's resolver begins one).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from edge.config import models_dir
from tests.conftest import EGOLIFE_DAY1, FOOTAGE, ROOT, shared

LOOPBACK = re.compile(r"^(127\.|::1$|::ffff:127\.)")
ADDRESS = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')
PORT = re.compile(r"sin6?_port=htons\((\d+)\)")


def _strace_works() -> bool:
    if not shutil.which("strace"):
        return False
    probe = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "true"],
                           capture_output=True)
    return probe.returncode == 0


pytestmark = pytest.mark.skipif(not _strace_works(),
                                reason="strace missing or not permitted (scripts/setup.sh)")


def offending(trace: str) -> list[str]:
    """strace lines of network calls that leave the machine or start a name lookup."""
    bad = []
    for line in trace.splitlines():
        if not re.search(r"\b(connect|sendto|sendmsg|sendmmsg)\(", line):
            continue
        if "/var/run/nscd/socket" in line or "/run/nscd/socket" in line:
            bad.append(line)  # glibc asks nscd first for any name lookup
            continue
        port = PORT.search(line)
        addrs = [a or b for a, b in ADDRESS.findall(line)]
        if (port and port.group(1) == "53") or any(not LOOPBACK.match(a) for a in addrs):
            bad.append(line)
    return bad


def traced(args: list[str], env: dict, trace_file) -> subprocess.CompletedProcess:
    cmd = ["strace", "-f", "-qq", "-e", "trace=%network", "-o", str(trace_file),
           sys.executable, "-m", "edge.cli", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_offline_self_check():
    lines = [
        '12 connect(14, {sa_family=AF_INET, sin_port=htons(53), '
        'sin_addr=inet_addr("10.255.255.53")}, 16) = 0',
        '12 connect(3, {sa_family=AF_UNIX, sun_path="/var/run/nscd/socket"}, 110) = -1',
        '12 connect(5, {sa_family=AF_INET6, sin6_port=htons(443), '
        'sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2603:1030::1", &sin6_addr)}, 28) = 0',
    ]
    allowed = [
        '12 connect(5, {sa_family=AF_INET, sin_port=htons(8080), '
        'sin_addr=inet_addr("127.0.0.1")}, 16) = 0',
        '12 connect(5, {sa_family=AF_UNIX, sun_path="/tmp/x.sock"}, 110) = 0',
        '12 socket(AF_INET, SOCK_DGRAM, IPPROTO_IP) = 14',
    ]
    assert offending("\n".join(lines + allowed)) == lines


def local_env(tmp_path) -> dict:
    """The test's environment without any EDGE_/ORT_ setting, in a fresh $HOME (whatever a
    library would persist for a later upload shows up there)."""
    home = tmp_path / "user"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("EDGE_") or k.startswith("ORT_"))}
    env.update(HOME=str(home), EDGE_HOME=str(tmp_path / "edge"),
               EDGE_MODELS_DIR=str(models_dir()), PYTHONPATH=str(ROOT))
    return env


def test_ingest_and_ask_make_no_lookups_or_connections(tmp_path):
    footage = shared(FOOTAGE / "tiny_drawing_noaudio.mp4")
    env = local_env(tmp_path)
    home = tmp_path / "user"
    mem = str(tmp_path / "memory.db")

    r = traced(["ingest", str(footage), "--memory", mem], env, tmp_path / "ingest.strace")
    assert r.returncode == 0, r.stdout + r.stderr
    r = traced(["ask", "--memory", mem, "--rounds", "1", "--loop", "single",
                "what was drawn?"], env, tmp_path / "ask.strace")
    assert r.returncode == 0, r.stdout + r.stderr

    for name in ("ingest.strace", "ask.strace"):
        bad = offending((tmp_path / name).read_text())
        assert not bad, f"{name}: network calls off the device:\n" + "\n".join(bad[:10])
    # onnxruntime's telemetry queues its events (and a device id) here for a later upload
    assert not (home / ".cache" / "Microsoft").exists(), "onnxruntime telemetry store written"


def test_a_remote_role_contacts_only_its_configured_host(tmp_path):
    """A solver at 127.0.0.1 on an unused port: ask fails (nothing listens), and the only
    connections made are to that address and port; no name is looked up."""
    env = local_env(tmp_path)
    mem = str(tmp_path / "memory.db")
    r = traced(["ingest-captions", str(shared(EGOLIFE_DAY1)), "--limit", "3", "--no-pyramid",
                "--memory", mem], env, tmp_path / "captions.strace")
    assert r.returncode == 0, r.stdout + r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # free once closed; nothing listens there
    env.update(EDGE_SOLVER_BASE_URL=f"http://127.0.0.1:{port}/v1", EDGE_SOLVER_MODEL="m",
               EDGE_SOLVER_MAX_RETRIES="0", EDGE_SOLVER_TIMEOUT="5")
    r = traced(["ask", "--memory", mem, "--rounds", "1", "--loop", "single",
                "who used the screwdriver?"], env, tmp_path / "ask.strace")
    assert r.returncode != 0 and f"127.0.0.1:{port}" in r.stdout + r.stderr, r.stdout + r.stderr
    for name in ("captions.strace", "ask.strace"):
        assert not offending((tmp_path / name).read_text()), name
    connects = [line for line in (tmp_path / "ask.strace").read_text().splitlines()
                if "connect(" in line and "AF_INET" in line]
    assert connects and all(f"htons({port})" in c and "127.0.0.1" in c for c in connects), \
        connects
    assert not (tmp_path / "user" / ".cache" / "Microsoft").exists(), \
        "onnxruntime telemetry store written"
