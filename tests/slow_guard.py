"""A pytest plugin (loaded by tests/conftest.py) that keeps ``make test-fast`` fast. Under CI (``CI=true``) the run
fails when a test that is not marked ``slow`` (or ``docs``) spends more than :data:`LIMIT_S` seconds in its setup and
call together (a slow fixture counts against the first test that builds it; ``SLOW_GUARD_LIMIT_S`` changes the
5), or when the whole run takes longer than ``SLOW_GUARD_BUDGET_S`` seconds (``make test-fast`` sets 90). Both
are reported at the end of the run, under CI or not."""

from __future__ import annotations

import os
import time

import pytest

LIMIT_S = float(os.environ.get("SLOW_GUARD_LIMIT_S", "5"))
EXEMPT = ("slow", "docs")
_spent: dict[str, float] = {}  # setup + call seconds of the tests not exempt
_too_slow: list[tuple[str, float]] = []
_started = time.monotonic()


def pytest_sessionstart(session: pytest.Session) -> None:
    global _started
    _started = time.monotonic()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if any(m in report.keywords for m in EXEMPT):
        return
    if report.when in ("setup", "call"):
        _spent[report.nodeid] = _spent.get(report.nodeid, 0.0) + report.duration
    if report.when == "teardown":
        spent = _spent.pop(report.nodeid, 0.0)
        if spent > LIMIT_S:
            _too_slow.append((report.nodeid, spent))


def budget_s() -> float | None:
    """``SLOW_GUARD_BUDGET_S`` as a number of seconds, or ``None`` when unset."""
    value = os.environ.get("SLOW_GUARD_BUDGET_S", "").strip()
    return float(value) if value else None


def _over_budget() -> float | None:
    budget, elapsed = budget_s(), time.monotonic() - _started
    return elapsed if budget is not None and elapsed > budget else None


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 -- pytest's TerminalReporter
    ci = os.environ.get("CI") == "true"
    if _too_slow:
        terminalreporter.section(f"tests not marked slow that took more than {LIMIT_S:g} s (setup + call)")
        for nodeid, seconds in sorted(_too_slow, key=lambda row: -row[1]):
            terminalreporter.write_line(f"{seconds:6.2f} s  {nodeid}")
        if ci:
            terminalreporter.write_line("CI=true: mark them @pytest.mark.slow or make them faster")
    elapsed = _over_budget()
    if elapsed is not None:
        terminalreporter.section("over the test budget")
        terminalreporter.write_line(
            f"the run took {elapsed:.0f} s, over its budget of {budget_s():g} s (SLOW_GUARD_BUDGET_S)"
            + ("; CI=true: mark the slowest tests @pytest.mark.slow or make them faster" if ci else "")
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get("CI") != "true" or exitstatus != pytest.ExitCode.OK:
        return
    if _too_slow or _over_budget() is not None:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
