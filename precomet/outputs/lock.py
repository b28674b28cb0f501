"""One run at a time in a folder that keeps work between runs (``predict``'s resume folder): an exclusive lock, so
that two runs on one output or one resume folder are refused, never mixed.

The lock is ``fcntl.flock`` on a file ``.precomet.lock`` inside the folder, holding the owner's process id. The
system releases it when the process ends, however it ends (even SIGKILL), so a stale lock never blocks the next
run. Where ``fcntl`` is missing (Windows) runs are not serialised.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from precomet.errors import PrecometError

LOCK_NAME = ".precomet.lock"
_ATTEMPTS = 100  # tries to lock a folder that other runs keep removing


@contextmanager
def folder_lock(folder: Path, *, what: str, remedy: str) -> Iterator[bool]:
    """Hold the lock of ``folder`` for the block, making the folder (and its parents) when missing; yields whether
    this call made it. Another process holding the lock raises :class:`PrecometError` naming ``what`` (the user's
    option and path), that process and the ``remedy``; the lock file is removed when the block ends. A folder that
    the run before us removes as it ends (an empty resume folder) while we wait for it is made again."""
    path = folder / LOCK_NAME
    made = False
    for _ in range(_ATTEMPTS):
        try:
            folder.mkdir(parents=True)
            made = True
        except FileExistsError:
            pass
        except OSError as err:
            raise PrecometError(f"{what}: cannot make the folder ({err.strerror or err}); give {remedy}") from None
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:  # removed between our mkdir and open: make it again
            continue
        except OSError as err:
            raise PrecometError(f"{what}: cannot lock the folder ({err.strerror or err})") from None
        if _lock(handle, what=what, remedy=remedy) and _same_file(handle, path):
            break  # the holder before us may have removed the file after we opened it: then lock the new one
        os.close(handle)
    else:
        raise PrecometError(f"{what}: the folder keeps being removed while this run locks it; {remedy}")
    try:
        try:
            os.ftruncate(handle, 0)
            os.pwrite(handle, str(os.getpid()).encode(), 0)
        except OSError as err:  # a full disk: not even the holder's process number fits; the error names no file
            raise PrecometError(
                f"{what}: cannot write its lock file {path} ({err.strerror or err}); free space there, or give {remedy}"
            ) from None
        yield made
    finally:
        path.unlink(missing_ok=True)
        os.close(handle)  # releases the lock


@contextmanager
def waiting_lock(path: Path) -> Iterator[None]:
    """Wait for and hold an exclusive ``flock`` on the lock file ``path`` for the block: two processes run the block
    one after the other. The file is removed when the block ends (a waiter then locks the new one). Without
    ``fcntl``, or where the file cannot be made or locked, nothing is locked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover -- not on Linux/macOS
        yield
        return
    handle = None
    for _ in range(_ATTEMPTS):  # the holder before us removes the file as it ends: then lock the new one
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            handle = None
            break
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:  # a file system without locks: unserialised
            break
        if _same_file(handle, path):
            break
        os.close(handle)
        handle = None
    try:
        yield
    finally:
        if handle is not None:
            with suppress(OSError):
                path.unlink()
            os.close(handle)  # releases the lock


def _lock(handle: int, *, what: str, remedy: str) -> bool:
    """Take the exclusive lock on the open ``handle`` (``True``), or raise naming its holder; without ``fcntl``
    (Windows) runs are not serialised."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover -- not on Linux/macOS
        return True
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = os.pread(handle, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(handle)
        raise PrecometError(
            f"{what} is in use by another precomet run (process {owner}); wait for it to finish, or give {remedy}"
        ) from None
    return True


def _same_file(handle: int, path: Path) -> bool:
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(handle)
    return (opened.st_dev, opened.st_ino) == (now.st_dev, now.st_ino)
