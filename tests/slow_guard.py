"""A pytest plugin (loaded by tests/conftest.py): under CI (``CI=true``) the run fails when a test that is not marked
``slow`` (or ``docs``) spends more than :data:`LIMIT_S` seconds in its call, so that ``make test-fast`` stays fast.
Such tests are listed at the end of the run, under CI or not."""

from __future__ import annotations

import os

import pytest

LIMIT_S = 5.0
EXEMPT = ("slow", "docs")
_too_slow: list[tuple[str, float]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.duration > LIMIT_S and not any(m in report.keywords for m in EXEMPT):
        _too_slow.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 -- pytest's TerminalReporter
    if _too_slow:
        terminalreporter.section(f"tests not marked slow that took more than {LIMIT_S:g} s")
        for nodeid, seconds in sorted(_too_slow, key=lambda row: -row[1]):
            terminalreporter.write_line(f"{seconds:6.2f} s  {nodeid}")
        if os.environ.get("CI") == "true":
            terminalreporter.write_line("CI=true: mark them @pytest.mark.slow or make them faster")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _too_slow and os.environ.get("CI") == "true" and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
