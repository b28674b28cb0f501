"""Outputs are written all-or-nothing with the user's permissions; JSON never holds NaN/Infinity literals;
an interrupted command (Ctrl-C or SIGTERM) leaves nothing behind."""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precomet.cli import main
from precomet.errors import OutputError
from precomet.io import jsonsafe
from precomet.outputs.atomic import atomic_write, output_set
from precomet.outputs.paths import check_output

REPO = Path(__file__).resolve().parent.parent.parent


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_files_and_folders_get_the_umask_permissions_not_0600(tmp_path, umask_022):
    with atomic_write(tmp_path / "a.json") as handle:
        handle.write("{}")
    with output_set() as out:
        (out.directory(tmp_path / "ckpt") / "x").write_text("1")
        out.path(tmp_path / "fig.png").write_bytes(b"png")
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "fig.png").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "ckpt").stat().st_mode) == 0o755


def test_cli_output_permissions_follow_umask(tmp_path, umask_022):
    out = tmp_path / "items.jsonl"
    assert main(["convert", "--data", str(REPO / "tests" / "fixtures" / "tiny.csv"), "-o", str(out)]) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_output_set_is_all_or_nothing(tmp_path, error):
    (tmp_path / "old.json").write_text("previous")
    with pytest.raises(type(error)):
        with output_set(tmp_path / "new.json", tmp_path / "old.json") as out:
            with out.open(tmp_path / "new.json") as handle:
                handle.write("{}")
            (out.directory(tmp_path / "sub" / "ckpt") / "head").write_text("w")
            with out.open(tmp_path / "old.json") as handle:
                handle.write("replaced")
            raise error
    assert _files(tmp_path) == ["old.json"]  # no temporaries, no new file, no folder made for the outputs
    assert (tmp_path / "old.json").read_text() == "previous"


def test_output_set_commits_every_output(tmp_path):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "lightning").mkdir()
    (tmp_path / "ckpt" / "head").write_text("old")
    with output_set(tmp_path / "a.txt") as out:
        with out.open(tmp_path / "a.txt") as handle:
            handle.write("a")
        work = out.directory(tmp_path / "ckpt")
        (work / "head").write_text("new")
        assert not (tmp_path / "a.txt").exists()  # nothing appears before the block ends
    assert (tmp_path / "a.txt").read_text() == "a"
    assert (tmp_path / "ckpt" / "head").read_text() == "new"
    assert (tmp_path / "ckpt" / "lightning").is_dir()  # entries the new output does not name are kept
    assert _files(tmp_path) == ["a.txt", "ckpt", "ckpt/head", "ckpt/lightning"]


@pytest.mark.parametrize(
    "make, target, kwargs, message",
    [
        (lambda d: (d / "x").mkdir(), "x", {}, "is a directory"),
        (lambda d: (d / "f").write_text(""), "f/out.json", {}, "is a file, not a directory"),
        (lambda d: (d / "f").write_text(""), "f", {"directory": True}, "is a file, not a directory"),
        (lambda d: None, "fig.gif", {"suffixes": (".png",)}, "expected a .png file"),
    ],
)
def test_check_output_names_the_path(tmp_path, make, target, kwargs, message):
    make(tmp_path)
    with pytest.raises(OutputError, match=message) as info:
        check_output(tmp_path / target, **kwargs)
    assert str(tmp_path / target) in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_unwritable_folder_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    with pytest.raises(OutputError, match="not writable"):
        check_output(folder / "out.json")


def test_json_never_holds_nan_or_infinity():
    value = {"a": math.nan, "b": [1.0, math.inf, np.float64(-np.inf)], "c": np.array([np.nan, 2.0]), "d": np.int64(3)}
    text = jsonsafe.dumps(value)
    assert json.loads(text) == {"a": None, "b": [1.0, None, None], "c": [None, 2.0], "d": 3}
    assert "NaN" not in text and "Infinity" not in text


def test_elo_json_flip_rate_nan_is_null(tmp_path):
    prefs = tmp_path / "p.csv"
    prefs.write_text(
        "item,model_a,model_b,label\n1,A,B,a\n2,A,B,b\n3,A,B,a\n"
    )  # never both orders: flip rate undefined
    out = tmp_path / "e.json"
    assert main(["elo", "--prefs", str(prefs), "--rounds", "5", "-o", str(out)]) == 0
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["position_bias"]["flip_rate"] is None


def test_verbose_shows_the_traceback_quiet_does_not(tmp_path, capsys):
    argv = ["info", "--data", str(tmp_path / "missing.jsonl")]
    assert main(argv) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert main(["-v", *argv]) == 2
    assert "Traceback" in capsys.readouterr().err


SIGTERM_SCRIPT = """
import os, signal, sys
import precomet.io.jsonl as jsonl
from precomet.cli import main
real = jsonl.jsonsafe.dumps
def dumps(*args, **kwargs):  # the first item is written, then the process gets SIGTERM mid-output
    os.kill(os.getpid(), signal.SIGTERM)
    return real(*args, **kwargs)
jsonl.jsonsafe.dumps = dumps
sys.exit(main(["convert", "--data", sys.argv[1], "-o", sys.argv[2]]))
"""


def test_sigterm_mid_write_leaves_no_output(tmp_path):
    out = tmp_path / "out" / "items.jsonl"
    run = subprocess.run(
        [sys.executable, "-c", SIGTERM_SCRIPT, str(REPO / "tests" / "fixtures" / "tiny.csv"), str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert run.returncode == 130, run.stderr
    assert "interrupted; no output was written" in run.stderr and "Traceback" not in run.stderr
    assert _files(tmp_path) == []


def test_keyboard_interrupt_in_select_leaves_neither_subset_nor_manifest(tmp_path, monkeypatch, capsys):
    import precomet.selection.subset_file as subset_file

    def interrupted(*args, **kwargs):  # the subset is written, the manifest is being written
        raise KeyboardInterrupt

    monkeypatch.setattr(subset_file.jsonsafe, "dump", interrupted)
    items = tmp_path / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": str(i), "src": f"s {i}", "scores": {"A": {"m": i}, "B": {"m": -i}}}) + "\n"
            for i in range(4)
        )
    )
    before = _files(tmp_path)
    status = main(
        [
            "select",
            "--data",
            str(items),
            "--method",
            "metric_var",
            "--metric",
            "m",
            "--budget",
            "2",
            "-o",
            str(tmp_path / "s.jsonl"),
        ]
    )
    assert status == 130 and "interrupted" in capsys.readouterr().err
    assert _files(tmp_path) == before


def test_one_path_for_two_outputs_is_refused(tmp_path):
    with pytest.raises(OutputError, match="two outputs"):
        with output_set(tmp_path / "a.json", tmp_path / "sub" / ".." / "a.json"):
            pass
    with pytest.raises(OutputError, match="two outputs"):
        with output_set() as out:
            out.path(tmp_path / "b.json")
            out.path(tmp_path / "b.json")
    assert _files(tmp_path) == []


def test_failed_set_puts_back_a_file_the_user_had(tmp_path, monkeypatch):
    """A set that fails while placing its second output restores the first target's previous content."""
    import precomet.outputs.atomic as atomic
    from precomet.errors import PrecometError

    first, second = tmp_path / "a.json", tmp_path / "b.png"
    first.write_text("OLD")
    real, placed = atomic._place, []

    def place_then_fail(*args, **kwargs):
        if placed:
            raise PermissionError(errno.EACCES, "Permission denied")
        placed.append(real(*args, **kwargs))
        return placed[-1]

    monkeypatch.setattr(atomic, "_place", place_then_fail)
    with pytest.raises(PrecometError, match="permission denied"):
        with atomic.output_set(first, second) as out:
            with out.open(first) as handle:
                handle.write("NEW")
            out.path(second).write_bytes(b"png")
    assert placed and first.read_text() == "OLD" and not second.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_an_output_whose_staged_file_vanished_fails_the_set(tmp_path):
    """A writer that removed what it was given: the set fails before placing anything."""
    from precomet.errors import OutputError
    from precomet.outputs.atomic import output_set

    first, second = tmp_path / "a.json", tmp_path / "b.png"
    first.write_text("OLD")
    with pytest.raises(OutputError, match=r"b\.png"):
        with output_set(first, second) as out:
            with out.open(first) as handle:
                handle.write("NEW")
            out.path(second).unlink()
    assert first.read_text() == "OLD" and sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]
