"""Every output precomet writes goes through here: all-or-nothing, with the user's normal permissions, and never
at the expense of what is already there.

* :func:`check_output` validates an output path *before* the expensive work (not a directory, no parent
  that is a file, a writable folder, a name the file system accepts, no trailing ``/`` on a file) and raises
  :class:`~precomet.errors.OutputError` naming it; :func:`check_not_inputs` refuses an output that is, contains
  or lies inside an input.
* :func:`output_set` writes the outputs of one command as a set: every file (or directory) is written to a
  temporary beside its target and renamed into place only when the whole block succeeded; on any error,
  Ctrl-C or SIGTERM the temporaries are removed and no target is touched.
* The renames of a set run with Ctrl-C and SIGTERM held back (:func:`precomet.signals.deferred`) and, when
  there is more than one, under a journal: a process killed between them (SIGKILL) leaves a journal that the
  next run writing to the same folder finishes. Temporaries are named ``.NAME.precomet-PID-HEX.tmp.SUFFIX``;
  those of a process that no longer runs are removed by the next run that writes beside them.
* Where the target is not a regular file — ``-`` (standard output), ``/dev/null``, a FIFO, ``/dev/stdout``
  — the output is written *through* it when the set commits, never replacing it. A symbolic link keeps
  pointing where it did: the file it points to is replaced.
* :func:`atomic_write` is the one-file case.

Temporary names keep the target's suffix (``.x.precomet-1-3f9a0b1c.tmp.png``), so writers that infer the
format from the extension (matplotlib) work on them, and are shortened to fit the file system's name limit.
Files and directories are created with mode ``0o666`` / ``0o777`` minus the umask, like any ``open()``.

Path checks live in :mod:`precomet.io.output_paths`, temporary names and the clean-up of leftovers in
:mod:`precomet.io.leftovers`; their public names are importable from here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO, TextIO

from precomet import signals
from precomet.errors import OutputError
from precomet.io.leftovers import _remove, _temporary_name, clean_leftovers
from precomet.io.output_paths import (
    STDOUT,
    _target,
    check_output,
    check_outputs,
    is_stdout,
    output_error,
    written_through,
)

_STDOUT_STREAM: ContextVar[TextIO | None] = ContextVar("precomet_stdout", default=None)
_COMMITTED: ContextVar[list[Path | str] | None] = ContextVar("precomet_committed", default=None)


class OutputSet:
    """Targets and their temporaries; use through :func:`output_set`."""

    def __init__(self) -> None:
        self._pending: list[tuple[Path, Path]] = []  # (target, temporary): renamed into place
        self._streams: list[tuple[str | Path, Path]] = []  # (target, temporary): written through on commit
        self._created_dirs: list[Path] = []

    def _parent(self, path: Path) -> None:
        missing = []
        parent = path.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        self._created_dirs += reversed(missing)  # known before they exist (abort removes those that do)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise output_error(path, err) from None
        clean_leftovers(path.parent)

    def _new(self, given: Path, target: Path | str) -> None:
        taken = [t for t, _ in self._pending] + [t for t, _ in self._streams]
        if target != STDOUT and any(isinstance(t, Path) and t == target for t in taken):
            raise OutputError(f"{given} is given for two outputs of one command; give each its own path")

    def path(self, target: str | Path) -> Path:
        """A fresh (empty) temporary file that becomes ``target`` on success: hand it to writers that take a
        path (``savefig``, ``np.save``)."""
        given = check_output(target)
        if written_through(given):
            return self._stream(given)
        real = _target(given)
        self._new(given, real)
        self._parent(real)
        temporary = _temporary_name(real)
        self._pending.append((real, temporary))  # known before it exists: an interrupt in between leaves nothing
        self._create(given, temporary)
        return temporary

    def _stream(self, given: Path) -> Path:
        name = STDOUT if is_stdout(given) else given
        self._new(given, name)
        folder = Path(tempfile.gettempdir())
        clean_leftovers(folder)
        temporary = _temporary_name(Path("stdout" if name == STDOUT else given.name), folder=folder)
        self._streams.append((name, temporary))  # known before it exists, as in path()
        self._create(given, temporary)
        return temporary

    @staticmethod
    def _create(given: Path, temporary: Path) -> None:
        try:
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # umask applies
        except OSError as err:
            raise output_error(given, err) from None

    @contextmanager
    def open(self, target: str | Path, mode: str = "w") -> Iterator[IO]:
        """Open the temporary of ``target`` for writing (text as UTF-8); a failed write names ``target``."""
        temporary = self.path(target)
        try:
            with open(temporary, mode, encoding=None if "b" in mode else "utf-8") as handle:
                yield handle
        except OSError as err:
            if err.filename is None:  # a write or close: name the output, not nothing
                raise output_error(target, err) from None
            raise

    def directory(self, target: str | Path) -> Path:
        """A fresh temporary directory beside ``target``. On success it becomes ``target``; when ``target``
        already exists, each entry of the temporary directory replaces the entry of the same name in it (other
        entries, e.g. a previous run's ``lightning/``, are kept)."""
        given = check_output(target, directory=True)
        real = _target(given)
        self._new(given, real)
        self._parent(real)
        temporary = _temporary_name(real)
        self._pending.append((real, temporary))  # known before it exists, as in path()
        try:
            os.mkdir(temporary, 0o777)
        except OSError as err:
            raise output_error(given, err) from None
        return temporary

    def _usual_permissions(self) -> None:
        """Files that writers created owner-only (safetensors, tempfile) get ``0666`` minus the umask, as documented."""
        mask = os.umask(0)
        os.umask(mask)
        wanted = 0o666 & ~mask
        for _, temporary in self._pending:
            files = [temporary] if temporary.is_file() else [p for p in temporary.rglob("*") if p.is_file()]
            for file in files:
                mode = stat.S_IMODE(file.stat().st_mode)
                if mode & 0o666 != wanted and not mode & 0o666 & ~wanted:  # narrower than usual, never wider
                    os.chmod(file, wanted | (mode & 0o111 & ~mask))

    def _steps(self) -> list[tuple[Path, Path, Path]]:
        """(target, temporary, aside) renames: a directory onto an existing one becomes one step per entry."""
        steps = []
        for target, temporary in self._pending:
            pairs = [(target, temporary)]
            if temporary.is_dir() and target.is_dir():
                pairs = [(target / entry.name, entry) for entry in sorted(temporary.iterdir())]
            steps += [(t, p, _temporary_name(t, "old")) for t, p in pairs]
        return steps

    def commit(self) -> None:
        """Put every output in place, with Ctrl-C and SIGTERM held back; refused once an interrupt was seen."""
        if signals.interrupted():
            raise KeyboardInterrupt
        self._usual_permissions()
        with signals.deferred(), _commit_lock({target.parent for target, _ in self._pending}):
            steps = self._steps()
            _check_kinds(steps)
            journals = self._journal(steps) if len(steps) > 1 else []
            done: list[tuple[Path, Path | None]] = []  # (target, what was there before, moved aside)
            try:
                for (
                    target,
                    temporary,
                    aside,
                ) in steps:  # with several, each old target is kept aside until all are placed
                    done.append((target, _replace(temporary, target, aside, keep=len(steps) > 1)))
            except OSError as err:
                for placed, old in reversed(done):  # put back what was there
                    _remove(placed)
                    if old is not None:
                        os.replace(old, placed)
                for journal in journals:
                    journal.unlink(missing_ok=True)
                raise output_error(target, err) from None
            finally:
                self._pending = [(t, p) for t, p in self._pending if p.exists()]
            for _, old in done:
                if old is not None:
                    _remove(old)
            for _, temporary in self._pending:  # emptied temporary directories of merged outputs
                shutil.rmtree(temporary, ignore_errors=True)
            self._pending = []
            for journal in journals:
                journal.unlink(missing_ok=True)
            self._write_through()
            self._created_dirs = []
            committed = _COMMITTED.get()
            if committed is not None:
                committed += [target for target, _, _ in steps] + [target for target, _ in self._streams]
            self._streams = []

    def _journal(self, steps: list[tuple[Path, Path, Path]]) -> list[Path]:
        """Write the commit's journal into every folder it touches (so a run writing to any of them finds it)."""
        folders = sorted({target.parent for target, _, _ in steps})
        journals = [_temporary_name(folder / "commit", "journal") for folder in folders]
        record = {"steps": [[str(t), str(p), str(a)] for t, p, a in steps], "journals": [str(j) for j in journals]}
        for journal in journals:
            temporary = _temporary_name(journal)
            try:
                temporary.write_text(json.dumps(record), encoding="utf-8")
                os.replace(temporary, journal)
            except OSError as err:
                temporary.unlink(missing_ok=True)
                for written in journals:
                    written.unlink(missing_ok=True)
                raise output_error(steps[0][0], err) from None
        return journals

    def _write_through(self) -> None:
        for target, temporary in self._streams:
            try:
                if target == STDOUT:
                    stream = _STDOUT_STREAM.get() or sys.stdout
                    stream.flush()
                    data = temporary.read_bytes()
                    buffer = getattr(stream, "buffer", None)
                    if buffer is not None:
                        buffer.write(data)
                        buffer.flush()
                    else:
                        stream.write(data.decode("utf-8"))
                        stream.flush()
                else:
                    with open(temporary, "rb") as source, open(target, "wb") as sink:
                        shutil.copyfileobj(source, sink)
            except OSError as err:
                raise output_error(target, err) from None
            finally:
                temporary.unlink(missing_ok=True)

    def target_of(self, name: str | bytes | None) -> str | Path | None:
        """The output that ``name`` (a file name from an ``OSError``) stands for: ``None`` unless ``name`` is a
        temporary of this set or lies inside one (a file written into a checkpoint folder's temporary); an output
        written through (standard output) is buffered in the temporary folder and named as the user gave it."""
        if not isinstance(name, str):
            return None
        path = Path(os.path.abspath(name))
        for target, temporary in self._pending:
            if path == temporary:
                return target
            if temporary in path.parents:
                return target / path.relative_to(temporary)
        for stream, temporary in self._streams:
            if path == temporary:
                return "standard output (-), buffered in the temporary folder" if stream == STDOUT else stream
        return None

    def abort(self) -> None:
        for _, temporary in self._pending + self._streams:
            _remove(temporary)
        self._pending, self._streams = [], []
        for folder in reversed(self._created_dirs):  # folders made only for these outputs
            try:
                folder.rmdir()
            except OSError:
                pass
        self._created_dirs = []


@contextmanager
def _commit_lock(folders: set[Path]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on each folder a commit writes into (in sorted order, so two commits never wait
    for each other in a circle): two runs committing to the same outputs at once place their sets one after the
    other, never a subset of one beside the manifest of the other. A lock on the folder itself creates no file.
    Where ``fcntl`` or a folder's lock is unavailable (Windows, some network file systems), commits are not
    serialised."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover -- not on Linux/macOS
        yield
        return
    handles = []
    try:
        for folder in sorted(folders):
            try:
                handle = os.open(folder, os.O_RDONLY)
            except OSError:
                continue
            handles.append(handle)
            with contextlib.suppress(OSError):
                fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        for handle in handles:
            os.close(handle)  # releases its lock


def _check_kinds(steps: list[tuple[Path, Path, Path]]) -> None:
    """Refuse, before any rename, to put a file where a folder now stands or a folder where a file stands: the
    path was checked before the work, so something else made it meanwhile, and replacing it would delete it."""
    for target, temporary, _ in steps:
        if target.exists() and target.is_dir() != temporary.is_dir():
            now, wanted = ("a folder", "file") if target.is_dir() else ("a file", "folder")
            raise OutputError(
                f"{target} became {now} while the command ran; the {wanted} written for it would replace it, so"
                " nothing was written: move it away and run again"
            )


def _replace(source: Path, target: Path, aside: Path, *, keep: bool) -> Path | None:
    """Move ``source`` to ``target``. An existing file is replaced in one rename unless ``keep``; with ``keep``, or
    for an existing directory (or a file where a directory goes), the old target is moved to ``aside`` first and
    returned (deleted on success, put back on failure)."""
    old = None
    if target.is_dir() or ((keep or source.is_dir()) and (target.exists() or target.is_symlink())):
        old = aside
        os.replace(target, old)
    try:
        os.replace(source, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
        raise
    return old


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
    except OSError as err:
        inside = out.target_of(err.filename)
        out.abort()
        if inside is not None:  # a file written inside an output's temporary (a checkpoint's): name the output's
            raise output_error(inside, err) from None
        if err.filename is None and targets:  # a write without a name (ENOSPC in savefig): name the outputs
            raise output_error(", ".join(str(t) for t in targets if t is not None), err) from None
        raise
    except BaseException:
        out.abort()
        raise


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary file for writing; it replaces ``path`` only when the block succeeds."""
    with output_set(path) as out, out.open(path, mode) as handle:
        yield handle


@contextmanager
def command_outputs(stdout: TextIO) -> Iterator[list[Path | str]]:
    """For one command (:func:`precomet.cli.main`): ``-`` outputs go to ``stdout`` (the stream the command had
    before its messages were sent to stderr), and the yielded list collects every target committed meanwhile."""
    committed: list[Path | str] = []
    tokens = _STDOUT_STREAM.set(stdout), _COMMITTED.set(committed)
    try:
        yield committed
    finally:
        _STDOUT_STREAM.reset(tokens[0])
        _COMMITTED.reset(tokens[1])
