"""One progress policy for every long step precomet runs (its own tqdm bars, Lightning's, sentence-transformers').

:func:`progress_mode` decides between ``"bar"``, ``"lines"`` and ``"off"``, in this order: an explicit
``progress=True/False`` from the caller; the setting of an enclosing :func:`progress_setting` block
(``precomet --no-progress`` uses one); the environment (``PRECOMET_PROGRESS=0`` or ``TQDM_DISABLE=1`` turn
progress off, ``PRECOMET_PROGRESS=1`` turns bars on); otherwise bars when stderr is a terminal and, in pipes,
logs and CI, **lines**: one line on stderr every ``PRECOMET_PROGRESS_INTERVAL`` seconds (default 30) while a
step runs, so that a log shows the work is alive. :func:`progress_enabled` is "bar mode" (for libraries that
draw their own bars); :func:`announce` says what a slow step does before it starts.

:func:`progress` is the tqdm wrapper; without bars it returns a stand-in and never imports tqdm (part of what
keeps ``precomet benchmark`` quick to start).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from precomet.environment import variable

ENV = "PRECOMET_PROGRESS"
_OFF = ("0", "false", "no", "off")  # TQDM_DISABLE values that leave progress on
INTERVAL_ENV = "PRECOMET_PROGRESS_INTERVAL"
PREFIX = "[progress]"
_SETTING: ContextVar[bool | None] = ContextVar("precomet_progress", default=None)
_MODE: ContextVar[str | None] = ContextVar("precomet_progress_mode", default=None)  # fixed by third_party_bars


def progress_mode(progress: bool | None = None) -> str:
    """``"bar"``, ``"lines"`` or ``"off"`` (see the module docstring for the order of the rules)."""
    if progress is not None:
        return "bar" if progress else "off"
    if _SETTING.get() is not None:
        return "bar" if _SETTING.get() else "off"
    if _MODE.get() is not None:
        return str(_MODE.get())
    setting = variable(ENV)  # True, False or None (unset); another value is refused naming the variable
    if setting is False or os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", *_OFF):
        return "off"
    if setting:
        return "bar"
    stream = sys.stderr
    return "bar" if stream is not None and hasattr(stream, "isatty") and stream.isatty() else "lines"


def progress_enabled(progress: bool | None = None) -> bool:
    """Whether to draw progress bars (:func:`progress_mode` is ``"bar"``)."""
    return progress_mode(progress) == "bar"


def announce(message: str, *, progress: bool | None = None) -> None:
    """Say on stderr what a slow step is about to do, unless progress is off."""
    if progress_mode(progress) != "off":
        print(f"{PREFIX} {message}", file=sys.stderr, flush=True)


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
    environment switches are set for the block and restored afterwards (precomet's own mode is kept: lines in a
    pipe stay on)."""
    mode = progress_mode()
    if mode == "bar":
        yield
        return
    previous = {name: os.environ.get(name) for name in THIRD_PARTY_SWITCHES}
    os.environ.update(dict.fromkeys(THIRD_PARTY_SWITCHES, "1"))
    token = _MODE.set(mode)
    try:
        yield
    finally:
        _MODE.reset(token)
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def heartbeat(desc: str, *, progress: bool | None = None) -> Iterator[None]:
    """Around one long call that reports no progress of its own (a library's encode or fit): in lines mode a
    line ``[progress] DESC: T s elapsed`` every interval until the block ends; nothing in the other modes."""
    if progress_mode(progress) != "lines":
        yield
        return
    import threading

    stop, start, interval = threading.Event(), time.monotonic(), _interval()  # refused here, not in the thread

    def beat() -> None:
        while not stop.wait(interval):
            print(f"{PREFIX} {desc}: {time.monotonic() - start:.0f} s elapsed", file=sys.stderr, flush=True)

    thread = threading.Thread(target=beat, name="precomet-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _interval() -> float:
    """Seconds between progress lines: :data:`INTERVAL_ENV` (a number > 0; another value is refused naming it) or 30."""
    seconds = variable(INTERVAL_ENV)
    return 30.0 if seconds is None else float(seconds)


def progress(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    desc: str | None = None,
    unit: str = "it",
    enabled: bool | None = None,
) -> Any:
    """A tqdm bar over ``iterable`` (or one advanced by hand with ``update()``, given ``total``) in bar mode; in
    lines mode a stand-in that prints a line every interval; otherwise a silent one (same iteration, ``update``,
    ``close`` and context-manager interface)."""
    mode = progress_mode(enabled)
    if mode == "lines":
        return _Lines(iterable, total=total, desc=desc, unit=unit)
    if mode == "off":
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


class _Lines(_Silent):
    """Lines mode: counts like a bar and prints ``[progress] DESC: N/TOTAL UNIT (P %), T s elapsed, R UNIT/s, about
    E s left`` on stderr once every interval (``S s per UNIT`` when slower than one a second); a final line
    ``[progress] DESC: N/TOTAL UNIT (100 %), done in T s, …`` when something was printed."""

    def __init__(self, iterable: Iterable | None, *, total: int | None, desc: str | None, unit: str) -> None:
        super().__init__(iterable)
        if total is None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total, self.desc, self.unit, self.n = total, desc or "working", unit, 0
        self.interval = _interval()
        self.start = self.last = time.monotonic()
        self.printed = False

    def __iter__(self) -> Iterator:
        for item in super().__iter__():
            yield item
            self.update(1)
        self.close()

    def update(self, n: float = 1) -> None:
        self.n += int(n)
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._line(now)

    def _line(self, now: float, done: bool = False) -> None:
        share = f" ({100 * self.n / self.total:.0f} %)" if self.total else ""
        of = f"/{self.total}" if self.total else ""
        elapsed = now - self.start
        took = f"done in {elapsed:.0f} s" if done else f"{elapsed:.0f} s elapsed"
        rate = self.n / elapsed if elapsed > 0 else 0.0
        speed = ""
        if self.n:
            speed = f", {rate:.3g} {self.unit}/s" if rate >= 1 else f", {elapsed / self.n:.3g} s per {self.unit}"
        eta = f", about {(self.total - self.n) / rate:.0f} s left" if self.total and rate and not done else ""
        print(
            f"{PREFIX} {self.desc}: {self.n}{of} {self.unit}{share}, {took}{speed}{eta}",
            file=sys.stderr,
            flush=True,
        )
        self.printed = True

    def close(self) -> None:
        if self.printed:
            self._line(time.monotonic(), done=True)
            self.printed = False

    def __exit__(self, *exc_info: object) -> None:
        self.close()
