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
