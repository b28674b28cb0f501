"""Ctrl-C, SIGTERM, SIGHUP (a closed terminal or ssh session) and SIGQUIT (Ctrl-\\) while a command runs: each
raises :class:`KeyboardInterrupt` *and* is remembered, so every one of them removes the command's temporaries.

Raising alone is not enough: an interrupt that lands inside a finaliser or a callback is printed as "Exception
ignored in ..." and swallowed, and the command would go on to finish with exit 0. The remembered flag closes
that gap: :meth:`precomet.outputs.atomic.OutputSet.commit` refuses to commit once it is set, and
:func:`precomet.cli.main` exits 130 when a command returns after an interrupt.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_RECEIVED: list[int] = []  # signal numbers received inside the current interruptible() block


def interrupted() -> bool:
    """Whether Ctrl-C or SIGTERM arrived inside the enclosing :func:`interruptible` block."""
    return bool(_RECEIVED)


@contextmanager
def interruptible() -> Iterator[None]:
    """The :data:`INTERRUPTS` raise KeyboardInterrupt and set :func:`interrupted` inside the block; the previous
    handlers and the flag are restored afterwards. A no-op outside the main thread (signals go to it only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        _RECEIVED.append(signum)
        raise KeyboardInterrupt

    previous = {number: signal.signal(number, interrupt) for number in INTERRUPTS}
    received = list(_RECEIVED)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _RECEIVED[:] = received


@contextmanager
def deferred() -> Iterator[None]:
    """Hold the :data:`INTERRUPTS` back while the block runs (a commit's renames): a signal that arrives meanwhile is
    recorded and handed to the previous handler when the block ends (for SIGTERM without one, the process then
    ends as it would have). Python runs signal handlers in the main thread only, so elsewhere this is a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {number: signal.signal(number, lambda signum, frame: held.append(signum)) for number in _HELD}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for signum in dict.fromkeys(held):
            handler = previous[signal.Signals(signum)]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


def forget_unhandled_interrupt() -> None:
    """Clear CPython's note of an unhandled KeyboardInterrupt. CPython sets it when a KeyboardInterrupt leaves code
    it runs through its C API (an extension importing during start-up), keeps it although the command then
    handles the interrupt, and at exit kills the process with SIGINT (exit -2 instead of 130: about one run in 30
    of a SIGTERM during start-up). A no-op where the interpreter has no such note."""
    try:
        import ctypes

        flag = ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt")
    except (ImportError, ValueError, AttributeError, OSError):
        return
    flag.value = 0


def end_on_interrupt(status: int | None) -> None:
    """From now on until the process ends, an :data:`INTERRUPTS` signal ends it at once with 130, saying that the
    command had ended with ``status`` (``None``: it was interrupted, nothing more is written). For the last steps of
    ``precomet`` (the closing message, ``sys.exit``, the interpreter's shutdown), where an interrupt used to escape
    every handler and kill the process by SIGINT (exit -2) although the command had finished."""
    said = "; no more output is written" if status is None else f" after the command ended (status {status})"

    def finish(signum, frame):
        os.write(2, f"precomet: interrupted{said}\n".encode())
        os._exit(130)

    if threading.current_thread() is threading.main_thread():
        for number in INTERRUPTS:
            signal.signal(number, finish)


def ignore_during_teardown() -> None:
    """Have the interpreter ignore the :data:`INTERRUPTS` once its exit functions have run: call this first thing
    (``atexit`` runs its functions last-registered first, so this one runs after every other one registered later).
    After them CPython resets every signal with a Python handler to the default action and tears down its modules,
    which takes seconds with torch loaded: a second Ctrl-C then killed the process by SIGINT (exit -2) after the
    first had been reported and the command had ended with 130. A signal set to be ignored stays ignored; the
    process ends with the status it had."""

    def ignore() -> None:
        if threading.current_thread() is threading.main_thread():
            for number in INTERRUPTS:
                signal.signal(number, signal.SIG_IGN)

    atexit.register(ignore)


INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
"""The signals that interrupt a command (:func:`interruptible`) and that a commit holds back (:func:`deferred`)."""
_HELD = INTERRUPTS
