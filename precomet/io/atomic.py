"""Every output precomet writes goes through here: all-or-nothing, with the user's normal permissions.

* :func:`check_output` validates an output path *before* the expensive work (not a directory, no parent
  that is a file, a writable folder) and raises :class:`~precomet.errors.OutputError` naming it.
* :func:`output_set` writes the outputs of one command as a set: every file (or directory) is written to a
  temporary name beside its target and renamed into place only when the whole block succeeded; on any
  error, Ctrl-C or SIGTERM (see :func:`precomet.cli.main`) the temporaries are removed and no target is
  touched.
* :func:`atomic_write` is the one-file case.

Temporary names keep the target's suffix (``.x.3f9a.png``), so writers that infer the format from the
extension (matplotlib) work on them. Files and directories are created with mode ``0o666`` / ``0o777``
minus the umask, like any ``open()``; ``tempfile.mkstemp``'s 0600 is not used.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from precomet.errors import OutputError


def _describe(err: OSError) -> str:
    descriptions: dict[int | None, str] = {
        errno.EISDIR: "is a directory",
        errno.ENOTDIR: "a parent of it is a file, not a directory",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device",
        errno.EEXIST: "exists and is in the way",
    }
    return descriptions.get(err.errno, err.strerror or str(err))


def output_error(path: str | Path, err: OSError) -> OutputError:
    """An :class:`OutputError` for ``path`` from the ``OSError`` raised while writing it."""
    return OutputError(f"cannot write {path}: {_describe(err)}")


FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def check_output(path: str | Path, *, directory: bool = False, suffixes: tuple[str, ...] | None = None) -> Path:
    """Raise :class:`OutputError` unless ``path`` can be written as a file (or, with ``directory``, a
    directory): it is not the other kind, no existing ancestor is a file, and the nearest existing folder is
    writable; with ``suffixes`` (e.g. :data:`FIGURE_SUFFIXES`) its suffix must be one of them. Creates nothing."""
    path = Path(path)
    if not str(path).strip():
        raise OutputError("output path is empty")
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise OutputError(
            f"cannot write {path}: expected a {', '.join(suffixes)} file, got {path.suffix or 'no suffix'!r}"
        )
    if path.exists():
        if directory and not path.is_dir():
            raise OutputError(f"cannot write {path}: exists and is a file, not a directory")
        if not directory and path.is_dir():
            raise OutputError(f"cannot write {path}: is a directory")
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: {parent} is a file, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: folder {parent} is not writable")
    if path.exists() and not os.access(path if directory else parent, os.W_OK):
        raise OutputError(f"cannot write {path}: permission denied")
    return path


def _temporary_name(path: Path) -> Path:
    return path.with_name(f".{path.stem}.{secrets.token_hex(4)}.tmp{path.suffix}")


class OutputSet:
    """Targets and their temporaries; use through :func:`output_set`."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []  # (target, temporary)
        self._created_dirs: list[Path] = []

    def _parent(self, path: Path) -> None:
        missing = []
        parent = path.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise output_error(path, err) from None
        self._created_dirs += reversed(missing)

    def _new(self, target: Path) -> Path:
        if any(target.resolve() == pending.resolve() for pending, _ in self._pending):
            raise OutputError(f"{target} is given for two outputs of one command; give each its own path")
        return target

    def path(self, target: str | Path) -> Path:
        """A fresh (empty) temporary file beside ``target`` that becomes ``target`` on success: hand it to
        writers that take a path (``savefig``, ``np.save``)."""
        target = self._new(check_output(target))
        self._parent(target)
        temporary = _temporary_name(target)
        try:
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # umask applies
        except OSError as err:
            raise output_error(target, err) from None
        self._pending.append((target, temporary))
        return temporary

    @contextmanager
    def open(self, target: str | Path, mode: str = "w") -> Iterator[IO]:
        """Open the temporary of ``target`` for writing (text as UTF-8)."""
        temporary = self.path(target)
        with open(temporary, mode, encoding=None if "b" in mode else "utf-8") as handle:
            yield handle

    def directory(self, target: str | Path) -> Path:
        """A fresh temporary directory beside ``target``. On success it becomes ``target``; when ``target``
        already exists, each entry of the temporary directory replaces the entry of the same name in it (other
        entries, e.g. a previous run's ``lightning/``, are kept)."""
        target = self._new(check_output(target, directory=True))
        self._parent(target)
        temporary = _temporary_name(target)
        try:
            os.mkdir(temporary, 0o777)
        except OSError as err:
            raise output_error(target, err) from None
        self._pending.append((target, temporary))
        return temporary

    def commit(self) -> None:
        done: list[tuple[Path, Path | None]] = []  # (target, what was there before, moved aside)
        try:
            for target, temporary in self._pending:
                if temporary.is_dir() and target.is_dir():
                    for entry in sorted(temporary.iterdir()):
                        done += _replace(entry, target / entry.name)
                    temporary.rmdir()
                else:
                    done += _replace(temporary, target)
        except OSError as err:
            for placed, old in reversed(done):  # put back what was there
                shutil.rmtree(placed, ignore_errors=True) if placed.is_dir() else placed.unlink(missing_ok=True)
                if old is not None:
                    os.replace(old, placed)
            raise output_error(target, err) from None
        finally:
            self._pending = [(t, p) for t, p in self._pending if p.exists()]
        for _, old in done:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
        self._created_dirs = []

    def abort(self) -> None:
        for _, temporary in self._pending:
            if temporary.is_dir():
                shutil.rmtree(temporary, ignore_errors=True)
            else:
                temporary.unlink(missing_ok=True)
        self._pending = []
        for folder in reversed(self._created_dirs):  # folders made only for these outputs
            try:
                folder.rmdir()
            except OSError:
                pass
        self._created_dirs = []


def _replace(source: Path, target: Path) -> list[tuple[Path, Path | None]]:
    """Move ``source`` to ``target``; an existing ``target`` is moved aside first (returned, to delete on
    success or to put back on failure)."""
    old = None
    if target.exists() or target.is_symlink():
        old = _temporary_name(target)
        os.replace(target, old)
    try:
        os.replace(source, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
        raise
    return [(target, old)]


@contextmanager
def output_set(*targets: str | Path | None) -> Iterator[OutputSet]:
    """Write several outputs all-or-nothing::

        with output_set(json_path, plot_path) as out:   # paths checked before the block runs
            with out.open(json_path) as handle: ...
            plot(result, out.path(plot_path))

    ``targets`` (``None`` entries are skipped) are validated up front with :func:`check_output`; every
    output must still be requested through :meth:`OutputSet.open`, :meth:`~OutputSet.path` or
    :meth:`~OutputSet.directory`. Nothing appears unless the block completes."""
    check_outputs(*targets)
    out = OutputSet()
    try:
        yield out
        out.commit()
    except BaseException:
        out.abort()
        raise


def check_outputs(*targets: str | Path | None) -> list[Path]:
    """:func:`check_output` on every target (``None`` skipped), and no path given for two of them: what a
    command calls before its work, so that :func:`output_set` cannot refuse after it."""
    given = [check_output(t) for t in targets if t is not None]
    resolved = [t.resolve() for t in given]
    twice = [str(t) for t, r in zip(given, resolved) if resolved.count(r) > 1]
    if twice:
        raise OutputError(f"{twice[0]} is given for two outputs of one command; give each its own path")
    return given


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file for writing; it replaces ``path`` only when the block succeeds."""
    with output_set(path) as out, out.open(path, mode) as handle:
        yield handle
