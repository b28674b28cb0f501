"""One run at a time in a folder that keeps work between runs (``predict``'s resume folder): an exclusive lock, so
that two runs on one output or one resume folder are refused, never mixed.

The lock is ``fcntl.flock`` on a file ``.precomet.lock`` inside the folder, holding the owner's process id. The
system releases it when the process ends, however it ends (even SIGKILL), so a stale lock never blocks the next
run. Where ``fcntl`` is missing (Windows) runs are not serialised.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from precomet.errors import PrecometError

LOCK_NAME = ".precomet.lock"


@contextmanager
def folder_lock(folder: Path, *, what: str, remedy: str) -> Iterator[Path]:
    """Hold the lock of ``folder`` (which must exist) for the block; yields the lock file's path. Another process
    holding it raises :class:`PrecometError` naming ``what`` (the user's option and path), that process and the
    ``remedy``; the lock file is removed when the block ends."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover -- not on Linux/macOS
        yield folder / LOCK_NAME
        return
    path = folder / LOCK_NAME
    while True:
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(handle, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(handle)
            raise PrecometError(
                f"{what} is in use by another precomet run (process {owner}); wait for it to finish, or give {remedy}"
            ) from None
        # the holder before us may have removed the file after we opened it: then lock the new one
        if _same_file(handle, path):
            break
        os.close(handle)
    try:
        os.ftruncate(handle, 0)
        os.pwrite(handle, str(os.getpid()).encode(), 0)
        yield path
    finally:
        path.unlink(missing_ok=True)
        os.close(handle)  # releases the lock


def _same_file(handle: int, path: Path) -> bool:
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(handle)
    return (opened.st_dev, opened.st_ino) == (now.st_dev, now.st_ino)
