"""The PRECOMET_* variables: one registry of those read, and one warning for any other (issue 51)."""

from __future__ import annotations

import re

from precomet.cli import main
from precomet.environment import VARIABLES, unknown_variables
from tests.conftest import REPO


def test_the_registry_lists_exactly_the_variables_the_code_tests_and_benchmarks_read():
    read = set()
    for folder in ("precomet", "tests", "benchmarks"):
        for path in (REPO / folder).rglob("*.py"):
            if any(part.startswith(".") for part in path.relative_to(REPO).parts):
                continue  # benchmarks/.peer-venv and other hidden folders: not ours
            if path.name != "environment.py" and path.name != "test_environment.py":
                read |= set(re.findall(r"PRECOMET_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    assert read == set(VARIABLES)


def test_an_unknown_variable_is_named_with_the_nearest_known_one():
    lines = unknown_variables({"PRECOMET_CACHE_DIR": "/tmp", "PRECOMET_CACHE": "/x", "HOME": "/root"})
    assert lines == [
        "PRECOMET_CACHE_DIR is set but precomet reads no such variable (ignored); did you mean PRECOMET_CACHE?"
    ]
    assert "precomet reads PRECOMET_CACHE, " in unknown_variables({"PRECOMET_QQQQQQQQQQQQQQQQQQQQQQ": "1"})[0]


def test_a_command_warns_once_about_an_unknown_variable(tmp_path, monkeypatch, capsys):
    sources = tmp_path / "s.txt"
    sources.write_text("one\ntwo\n", encoding="utf-8")
    monkeypatch.setenv("PRECOMET_CACHE_DIR", str(tmp_path))
    assert main(["info", "--data", str(sources)]) == 0
    err = capsys.readouterr().err
    assert err.count("PRECOMET_CACHE_DIR is set but precomet reads no such variable") == 1
