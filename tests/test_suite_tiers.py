"""The test suite's two tiers (issue 10, item 10): the README's test command runs only the
fast tier, and CI runs the slow tier as a second, time-bounded step."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


def _collected(*args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    ).stdout
    return [line for line in out.splitlines() if "::" in line]


def test_the_default_run_leaves_out_every_slow_test_and_slow_runs_them_all():
    default = set(_collected())
    slow = set(_collected("-m", "slow"))
    everything = set(_collected("-m", "slow or not slow"))
    assert default and slow, "both tiers must collect tests"
    assert not default & slow, f"slow tests in the default run: {sorted(default & slow)[:5]}"
    assert default | slow == everything  # nothing falls between the tiers
    assert "tests/test_ingest.py::test_reingest_adds_nothing" in slow  # a model-heavy test


def test_ci_runs_the_readme_command_then_the_slow_tier_under_a_time_bound():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1).split("\n")
    test_command = next(line.strip() for line in block if "pytest" in line)
    steps = [line.strip() for line in ci.splitlines() if line.strip().startswith("tier ")]
    assert steps[0].endswith(test_command), steps
    assert re.search(r"timeout .*\d.*pytest -m slow$", steps[1]), steps
