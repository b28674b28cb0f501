"""The one progress-bar policy (precomet.progress): explicit > scoped setting > environment > stderr is a TTY."""

from __future__ import annotations

import sys

import pytest

from precomet.progress import progress, progress_enabled, progress_setting
from tests.conftest import loaded_after


class _Stream:
    def __init__(self, tty: bool) -> None:
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv("PRECOMET_PROGRESS", raising=False)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    return monkeypatch


@pytest.mark.parametrize("tty", [True, False])
def test_default_follows_stderr_being_a_terminal(clean_env, tty):
    clean_env.setattr(sys, "stderr", _Stream(tty))
    assert progress_enabled() is tty
    assert progress_enabled(True) is True and progress_enabled(False) is False  # explicit wins


def test_environment_turns_bars_off_or_on(clean_env):
    clean_env.setattr(sys, "stderr", _Stream(True))
    clean_env.setenv("PRECOMET_PROGRESS", "0")
    assert not progress_enabled()
    clean_env.setenv("PRECOMET_PROGRESS", "")
    clean_env.setenv("TQDM_DISABLE", "1")
    assert not progress_enabled()
    clean_env.setattr(sys, "stderr", _Stream(False))
    clean_env.delenv("TQDM_DISABLE")
    clean_env.setenv("PRECOMET_PROGRESS", "1")
    assert progress_enabled()
    assert not progress_enabled(False)


def test_scoped_setting_is_restored(clean_env):
    clean_env.setattr(sys, "stderr", _Stream(True))
    with progress_setting(False):
        assert not progress_enabled()
        assert progress_enabled(True)
        with progress_setting(None):
            assert progress_enabled()
        assert not progress_enabled()
    assert progress_enabled()


def test_silent_stand_in_iterates_and_ignores_updates(clean_env):
    clean_env.setattr(sys, "stderr", _Stream(False))
    with progress([1, 2, 3], desc="x") as bar:
        assert list(bar) == [1, 2, 3]
        bar.update()
        bar.update(5)
    manual = progress(total=4)
    assert list(manual) == []
    manual.update()
    manual.close()


def test_shown_bar_is_tqdm(clean_env):
    stream = _Stream(True)
    clean_env.setattr(sys, "stderr", stream)
    bar = progress([1, 2], desc="x", enabled=True)
    assert type(bar).__module__.startswith("tqdm") and list(bar) == [1, 2]


def test_hidden_bars_do_not_import_tqdm():
    code = "from precomet.progress import progress\nbar = progress(range(3))\nlist(bar)\nbar.close()"
    assert "tqdm" not in loaded_after(code)


def test_in_a_pipe_progress_is_lines_not_silence(clean_env):
    from precomet.progress import progress_mode

    clean_env.setattr(sys, "stderr", _Stream(False))
    assert progress_mode() == "lines"
    assert progress_mode(False) == "off"
    with progress_setting(False):  # precomet --no-progress
        assert progress_mode() == "off"
    clean_env.setenv("PRECOMET_PROGRESS", "0")
    assert progress_mode() == "off"


def test_lines_mode_prints_a_line_per_interval_and_a_final_one(clean_env, capsys):
    import time

    clean_env.setenv("PRECOMET_PROGRESS_INTERVAL", "0.01")
    clean_env.setattr(sys, "stderr", sys.stderr)  # captured: not a terminal
    for _ in progress(range(3), desc="encode (x)", unit="batch"):
        time.sleep(0.02)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("[progress] encode (x): 1/3 batch (33 %)")
    assert lines[-1].startswith("[progress] encode (x): 3/3 batch (100 %)") and "done in" in lines[-1]


def test_a_slow_step_reads_in_seconds_per_unit_and_ends_done_in(clean_env, capsys):
    import precomet.progress as module

    clock = iter([0.0, 100.0, 200.0, 225.0])  # start; two updates 100 s apart; the close
    clean_env.setattr(module.time, "monotonic", lambda: next(clock))
    clean_env.setenv("PRECOMET_PROGRESS_INTERVAL", "1")
    clean_env.setattr(sys, "stderr", sys.stderr)  # captured: not a terminal
    bar = progress(total=8, desc="embedding sources", unit="source")
    bar.update(4)
    bar.update(4)
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    first = "[progress] embedding sources: 4/8 source (50 %), 100 s elapsed, 25 s per source, about 100 s left"
    assert lines[0] == first
    assert lines[-1] == "[progress] embedding sources: 8/8 source (100 %), done in 225 s, 28.1 s per source"


def test_lines_mode_is_quiet_for_short_steps(clean_env, capsys):
    clean_env.setenv("PRECOMET_PROGRESS_INTERVAL", "30")
    for _ in progress(range(1000), desc="short"):
        pass
    assert capsys.readouterr().err == ""


def test_heartbeat_shows_a_long_call_is_alive_only_in_lines_mode(clean_env, capsys):
    import time

    from precomet.progress import heartbeat

    clean_env.setenv("PRECOMET_PROGRESS_INTERVAL", "0.02")
    with heartbeat("py-irt fit"):
        time.sleep(0.15)
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("[progress] py-irt fit: ") for line in lines)
    with heartbeat("py-irt fit", progress=False):
        time.sleep(0.1)
    assert capsys.readouterr().err == ""


def test_third_party_switches_keep_precomet_lines(clean_env):
    import os

    from precomet.progress import progress_mode, third_party_bars

    clean_env.setattr(sys, "stderr", _Stream(False))
    with third_party_bars():
        assert os.environ["TQDM_DISABLE"] == "1" and progress_mode() == "lines"
    assert "TQDM_DISABLE" not in os.environ


def test_a_large_encoding_is_announced_before_it_starts(clean_env, capsys):
    from precomet.encoders import ENCODERS, encode_cached

    encode_cached(ENCODERS["length"](), [f"text {i}" for i in range(1000)])
    assert "[progress] encoding 1,000 texts with length" in capsys.readouterr().err
    encode_cached(ENCODERS["length"](), [f"text {i}" for i in range(999)])
    assert capsys.readouterr().err == ""
