"""Independent pieces of numpy work on several cores, with results bit-identical to a plain loop.

:func:`map_forked` runs ``fn(item)`` for every item in forked worker processes (they inherit the parent's memory:
nothing is pickled on the way in, only the results come back) and returns the results in input order. Each piece
is computed exactly as the loop would compute it, so the answer does not depend on the number of workers. Use it
for numpy work only: a forked child must not start OpenMP-threaded libraries (torch, sklearn) that the parent has
already run.

The number of workers is ``workers`` when given, else ``PRECOMET_WORKERS``, else the CPUs this process may use.
With one worker, one item, off Linux, or inside a daemonic process (a ``multiprocessing`` pool's worker), it is
the plain loop.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from precomet import signals
from precomet.environment import variable
from precomet.errors import PrecometError

T = TypeVar("T")
R = TypeVar("R")

_WORK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None  # what the forked workers read (inherited memory)


def default_workers() -> int:
    """``PRECOMET_WORKERS`` when set (an integer ≥ 1), else the number of CPUs this process may run on."""
    given = variable("PRECOMET_WORKERS")  # another value than a whole number >= 1 is refused naming the variable
    if given is not None:
        return int(given)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def check_workers(workers: int | None) -> int:
    """``workers`` (``None``: :func:`default_workers`), refused unless a whole number ≥ 1."""
    if workers is None:
        return default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise PrecometError(f"{{workers}}{workers!r}: expected a whole number of processes >= 1", param="workers")
    return workers


def map_forked(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    workers: int | None = None,
    done: Callable[[R], None] = lambda result: None,
) -> list[R]:
    """``[fn(item) for item in items]``, spread over ``workers`` forked processes (see the module docstring);
    ``done(result)`` is called in the parent for each result, in input order, as soon as it is there (progress)."""
    global _WORK
    items = list(items)
    count = min(check_workers(workers), len(items))
    results: list[R] = []
    if count < 2 or not _can_fork() or _WORK is not None:
        for item in items:  # also inside a worker: no pool of pools
            results.append(fn(item))
            done(results[-1])
        return results
    _WORK = (fn, items)
    try:
        # Ctrl-C and SIGTERM stay blocked from the fork until a worker has its own handlers (``_quiet_signals``):
        # a signal that reaches it earlier would run the parent's Python handler (the CLI defers SIGTERM) and the
        # worker would then wait for work forever
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_SIGNALS)
        try:
            pool = multiprocessing.get_context("fork").Pool(count, initializer=_quiet_signals, initargs=(blocked,))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        try:
            for result in pool.imap(_run, range(len(items)), chunksize=1):
                results.append(result)
                done(result)
            pool.close()  # every result is in: the workers end on the pool's sentinel, no signal needed
        except BaseException:
            pool.terminate()  # an error or Ctrl-C: SIGTERM to the workers still running
            raise
        finally:
            pool.join()
    finally:
        _WORK = None
    return results


def _can_fork() -> bool:
    """Fork only where it is safe and allowed: Linux (macOS system libraries are not fork-safe; Windows cannot), and
    not inside a daemonic process (a ``multiprocessing`` worker may not have children)."""
    return sys.platform.startswith("linux") and not multiprocessing.current_process().daemon


def _run(index: int) -> Any:
    assert _WORK is not None
    fn, items = _WORK
    return fn(items[index])


_WORKER_SIGNALS = set(signals.INTERRUPTS)


def _quiet_signals(mask: set[signal.Signals]) -> None:
    """Workers leave Ctrl-C, SIGHUP and SIGQUIT to the parent (which stops the pool) and end on SIGTERM; then the
    signals blocked around the fork are unblocked (``mask``: the parent's mask before), so one sent meanwhile takes
    effect now."""
    for number in _WORKER_SIGNALS - {signal.SIGTERM}:  # Ctrl-C, a closed terminal, Ctrl-\: the parent's to handle
        signal.signal(number, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
