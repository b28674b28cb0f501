"""The bad-input matrix (issues 12 and 20): every subcommand, fed one broken input or option at a time, must exit 2
with one line that names the culprit (file, line, field or option), print no traceback, and leave no output
behind — no file at all appears in the working folder, not even a temporary one. The cases are in
``tests/bad_inputs/cases_*.py``, one module per area."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import tests.bad_inputs
from tests.bad_inputs import Case, check


def _all_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for module in pkgutil.iter_modules(tests.bad_inputs.__path__):
        if module.name.startswith("cases_"):
            more = importlib.import_module(f"tests.bad_inputs.{module.name}").CASES
            assert not set(more) & set(cases), f"case names repeated in {module.name}: {set(more) & set(cases)}"
            cases.update(more)
    return cases


CASES = _all_cases()


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_exits_2_with_one_clear_line_and_writes_nothing(name, tmp_path, monkeypatch, capsys):
    check(CASES[name], tmp_path, monkeypatch, capsys)


def test_matrix_covers_every_subcommand():
    from precomet.cli import COMMANDS

    covered = {case.argv[0] for case in CASES.values()}
    assert covered == set(COMMANDS), sorted(set(COMMANDS) - covered)
    assert len(CASES) >= 75
