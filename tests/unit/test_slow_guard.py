"""Issues 33 and 52: the slow-test guard (tests/slow_guard.py) in a pytest of its own: a slow fixture counts, marked
tests are exempt, the whole run's budget fails CI, and nothing fails outside CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUITE = """
import time
import pytest

@pytest.fixture
def slow_fixture():
    time.sleep(0.6)

def test_fast_call_slow_setup(slow_fixture):
    time.sleep(0.1)

@pytest.mark.slow
def test_marked(slow_fixture):
    pass

def test_quick():
    pass
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_suite.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n", encoding="utf-8")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("SLOW_GUARD_", "CI"))}
    environment.update(PYTHONPATH=str(ROOT), **env)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "tests.slow_guard", "-p", "no:cacheprovider", "."]
    return subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_a_slow_fixture_fails_ci_and_only_reports_outside(tmp_path):
    under_ci = _run(tmp_path, CI="true", SLOW_GUARD_LIMIT_S="0.5")
    assert under_ci.returncode == 1, under_ci.stdout
    assert "test_fast_call_slow_setup" in under_ci.stdout and "(setup + call)" in under_ci.stdout
    assert "test_marked" not in under_ci.stdout.split("took more than")[1]  # marked slow: exempt
    outside = _run(tmp_path, SLOW_GUARD_LIMIT_S="0.5")
    assert outside.returncode == 0, outside.stdout
    assert "test_fast_call_slow_setup" in outside.stdout


@pytest.mark.slow
def test_a_run_over_its_budget_fails_ci(tmp_path):
    over = _run(tmp_path, CI="true", SLOW_GUARD_BUDGET_S="0.2")
    assert over.returncode == 1, over.stdout
    assert "over its budget of 0.2 s" in over.stdout
    within = _run(tmp_path, CI="true", SLOW_GUARD_BUDGET_S="600")
    assert within.returncode == 0, within.stdout
