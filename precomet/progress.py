"""One progress-bar policy for every bar precomet shows (its own tqdm bars, Lightning's, sentence-transformers').

:func:`progress_enabled` decides, in this order: an explicit ``progress=True/False`` from the caller; the
setting of an enclosing :func:`progress_setting` block (``precomet --no-progress`` uses one); the environment
(``PRECOMET_PROGRESS=0`` or ``TQDM_DISABLE=1`` turn bars off, ``PRECOMET_PROGRESS=1`` turns them on); otherwise
bars are on exactly when stderr is a terminal — so they are off in pipes, logs and tests.

:func:`progress` is the tqdm wrapper; when bars are off it returns a silent stand-in and never imports tqdm
(part of what keeps ``precomet benchmark`` quick to start).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

ENV = "PRECOMET_PROGRESS"
_OFF, _ON = ("0", "false", "no", "off"), ("1", "true", "yes", "on")
_SETTING: ContextVar[bool | None] = ContextVar("precomet_progress", default=None)


def progress_enabled(progress: bool | None = None) -> bool:
    """Whether to show a progress bar (see the module docstring for the order of the rules)."""
    if progress is not None:
        return bool(progress)
    if _SETTING.get() is not None:
        return bool(_SETTING.get())
    setting = os.environ.get(ENV, "").strip().lower()
    if setting in _OFF or os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", *_OFF):
        return False
    if setting in _ON:
        return True
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


@contextmanager
def progress_setting(enabled: bool | None) -> Iterator[None]:
    """Bars on (``True``), off (``False``) or by the environment and terminal (``None``) inside the block, for
    every call that passes no explicit ``progress``; the previous setting is restored on exit."""
    token = _SETTING.set(enabled)
    try:
        yield
    finally:
        _SETTING.reset(token)


THIRD_PARTY_SWITCHES = ("TQDM_DISABLE", "HF_DATASETS_DISABLE_PROGRESS_BARS", "HF_HUB_DISABLE_PROGRESS_BARS")
"""Environment switches that turn off the bars of tqdm, Hugging Face datasets and hub (read when they load)."""


@contextmanager
def third_party_bars() -> Iterator[None]:
    """When bars are off (:func:`progress_enabled`), libraries loaded inside the block show none either: their
    environment switches are set for the block and restored afterwards."""
    if progress_enabled():
        yield
        return
    previous = {name: os.environ.get(name) for name in THIRD_PARTY_SWITCHES}
    os.environ.update(dict.fromkeys(THIRD_PARTY_SWITCHES, "1"))
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def progress(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    desc: str | None = None,
    unit: str = "it",
    enabled: bool | None = None,
) -> Any:
    """A tqdm bar over ``iterable`` (or one advanced by hand with ``update()``, given ``total``) when
    ``progress_enabled(enabled)``; otherwise a silent stand-in with the same iteration, ``update``, ``close``
    and context-manager interface."""
    if not progress_enabled(enabled):
        return _Silent(iterable)
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit)


class _Silent:
    """What :func:`progress` returns when bars are off: iterates like the iterable and ignores the rest."""

    def __init__(self, iterable: Iterable | None) -> None:
        self._iterable = iterable

    def __iter__(self) -> Iterator:
        return iter(self._iterable if self._iterable is not None else ())

    def update(self, n: float = 1) -> None:
        del n

    def close(self) -> None:
        pass

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass
