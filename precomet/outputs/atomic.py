"""Every output precomet writes goes through here: all-or-nothing, with the user's normal permissions, and never
at the expense of what is already there.

One mechanism carries it, a **staging folder**. The outputs of a command that go to folder ``F`` are written under
``F/.precomet-PID-HEX/out/``, each under its target's own name (so writers that read the format from the suffix,
like matplotlib, work), and moved into ``F`` only when the whole block succeeded, with Ctrl-C and SIGTERM held back
(:func:`precomet.signals.deferred`) and ``F`` locked. On an error or an interrupt the staging folder is removed and
no target is touched.

* **Killed between renames.** A commit of more than one rename first writes a ``commit`` file into each of its
  staging folders, naming them (relative to its own) and the outputs it places; the first folder's is written last,
  and once it exists the commit is decided. When every move is made, that decision goes first, then the staging
  folders. The next run that writes into any of these folders (:func:`clean_leftovers`, and every commit before its
  own moves) finishes a decided commit of a process that no longer runs, with the commit's own moves and under the
  same locks, and removes every other staging folder of a dead process. Only this user's staging folders are
  touched; one whose process is not found on this machine counts as dead, so do not share an output folder
  between machines that write into it at the same time.
* Only the outputs asked for are placed: anything else a writer leaves in the staging folder is removed with it.
* **Not a regular file.** ``-`` (standard output), ``/dev/null``, a FIFO or ``/dev/stdout`` is staged in the
  temporary folder and written *through* at commit, never replaced. They are written before the files are moved
  into place: written data cannot be taken back, moves can, so a device that fails (``/dev/full``) leaves no file
  placed; only a move failing after them (then undone) leaves what was written through. A symbolic link keeps
  pointing where it did: the file it points to is replaced.
* **A folder onto a folder** replaces only the entries it writes (a previous run's ``lightning/`` stays).
* Files and folders get mode ``0o666`` / ``0o777`` minus the umask, like any ``open()``.

Path checks before the work live in :mod:`precomet.outputs.paths`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
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
from precomet.outputs.paths import (
    STDOUT,
    _target,
    check_output,
    check_outputs,
    is_stdout,
    output_error,
    written_through,
)

_STAGING = re.compile(r"^\.precomet-(?P<pid>\d+)-[0-9a-f]{8}$")
_OUT, _THROUGH, _OLD, _DECIDED = "out", "through", "old", "commit"
_MINE: set[Path] = set()  # this process's staging folders (a PID alone may be an earlier container's)
_STDOUT_STREAM: ContextVar[TextIO | None] = ContextVar("precomet_stdout", default=None)
_COMMITTED: ContextVar[list[Path | str] | None] = ContextVar("precomet_committed", default=None)
_OPEN_SETS: ContextVar[tuple[OutputSet, ...]] = ContextVar("precomet_open_sets", default=())


def _error(path: str | Path, err: OSError) -> OutputError:
    """:func:`output_error` naming what the user gave: a file staged by an open output set (a writer that writes
    its own output atomically into a staged path) is named by that set's output, standard output by where it is
    buffered; never a hidden temporary."""
    name: str | Path = path
    for open_set in reversed(_OPEN_SETS.get()):  # innermost first: a staged path of a staged path
        name = open_set.target_of(str(name)) or name
    if is_stdout(name):
        name = _BUFFERED_STDOUT.format(folder=tempfile.gettempdir())
    return output_error(name, err)


_BUFFERED_STDOUT = "standard output (-), buffered first in the temporary folder {folder} (TMPDIR)"


class OutputSet:
    """The outputs of one block and their staging folders; use through :func:`output_set`."""

    def __init__(self) -> None:
        self._staging: dict[Path, Path] = {}  # folder -> its staging folder
        self._outputs: list[tuple[Path, Path]] = []  # (target, staged): moved into place
        self._streams: list[tuple[str | Path, Path]] = []  # (target, staged): written through
        self._created_dirs: list[Path] = []

    def _stage(self, folder: Path, given: Path) -> Path:
        """The staging folder for outputs to ``folder`` (made, with the folders above it, on first use)."""
        if folder not in self._staging:
            missing = [p for p in [folder, *folder.parents] if not p.exists()]
            self._created_dirs += reversed(missing)  # known before they exist: abort removes those that do
            root = _new_root(folder)
            try:
                folder.mkdir(parents=True, exist_ok=True)
                clean_leftovers(folder)
                self._staging[folder] = root  # known before it exists, as above
                os.mkdir(root, 0o700)
                for part in (_OUT, _THROUGH, _OLD):
                    os.mkdir(root / part, 0o700)
            except OSError as err:
                raise _error(given, err) from None
        return self._staging[folder]

    def _add(self, given: Path) -> Path:
        if is_stdout(given) or written_through(given):
            name = STDOUT if is_stdout(given) else given
            if name != STDOUT and any(target == name for target, _ in self._streams):
                raise OutputError(f"{given} is given for two outputs of one command; give each its own path")
            root = self._stage(Path(tempfile.gettempdir()), given)
            staged = root / _THROUGH / f"{len(self._streams)}-{'stdout' if name == STDOUT else given.name}"
            self._streams.append((name, staged))
            return staged
        target = _target(given)
        if any(target == taken for taken, _ in self._outputs):
            raise OutputError(f"{given} is given for two outputs of one command; give each its own path")
        staged = self._stage(target.parent, given) / _OUT / target.name
        self._outputs.append((target, staged))
        return staged

    def path(self, target: str | Path) -> Path:
        """A fresh (empty) file that becomes ``target`` on success: hand it to writers that take a path
        (``savefig``, ``np.save``)."""
        given = check_output(target)
        staged = self._add(given)
        try:
            os.close(os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # umask applies
        except OSError as err:
            raise _error(given, err) from None
        return staged

    @contextmanager
    def open(self, target: str | Path, mode: str = "w") -> Iterator[IO]:
        """Open the staged file of ``target`` for writing (text as UTF-8); a failed write names ``target``."""
        staged = self.path(target)
        try:
            with open(staged, mode, encoding=None if "b" in mode else "utf-8") as handle:
                yield handle
        except OSError as err:
            if err.filename is None:  # a write or close: name the output, not nothing
                raise _error(target, err) from None
            raise

    def directory(self, target: str | Path) -> Path:
        """A fresh folder that becomes ``target`` on success; onto an existing folder, each of its entries
        replaces the entry of the same name there and the others are kept."""
        given = check_output(target, directory=True)
        staged = self._add(given)
        try:
            os.mkdir(staged, 0o777)
        except OSError as err:
            raise _error(given, err) from None
        return staged

    def commit(self) -> None:
        """Put every output in place, with Ctrl-C and SIGTERM held back; refused once an interrupt was seen."""
        if signals.interrupted():
            raise KeyboardInterrupt
        for target, staged in self._outputs:  # a writer removed what it was given: nothing is placed
            if not os.path.lexists(staged):
                raise _error(target, FileNotFoundError(errno.ENOENT, "its written file vanished"))
        _usual_permissions([staged for _, staged in self._outputs])
        self._write_through()  # first: a device that refuses the data (/dev/full) leaves no file placed
        folders = sorted({target.parent for target, _ in self._outputs})
        roots = [self._staging[folder] for folder in folders]
        names = {root: [staged.name for _, staged in self._outputs if staged.parent.parent == root] for root in roots}
        for attempt in range(3):
            for folder in folders:
                clean_leftovers(folder)  # a dead run's decided commit is finished before this newer one
            with _commit_lock(folders), signals.deferred():
                if attempt < 2 and any(_decided(root) for folder in folders for root in _dead_roots(folder)):
                    continue  # a run died deciding in between: finish it first (a decision left for a person stays)
                self._place_all(names)
                break
        committed = _COMMITTED.get()
        if committed is not None:
            committed += [target for target, _ in self._outputs] + [target for target, _ in self._streams]
        self._outputs, self._streams, self._created_dirs = [], [], []
        self.abort()  # the staging folder of the outputs written through

    def _place_all(self, names: dict[Path, list[str]]) -> None:
        """The moves of a commit, under its locks; on a failure, back to the state before (or, when even that
        fails, left decided for the next run to finish)."""
        roots = list(names)
        moves = [(target, staged, root) for root in roots for target, staged in _moves(root, names[root])]
        _check_kinds(moves)
        several = len(moves) > 1 or any(target.is_dir() for target, _, _ in moves)
        if several:
            _decide(names, moves[0][0])
        done: list[tuple[Path, Path, Path | None]] = []  # (target, staged, what stood there)
        try:
            for target, staged, root in moves:
                done.append((target, staged, _place(staged, target, root, keep=several)))
        except OSError as err:
            try:
                for placed, staged, old in reversed(done):
                    os.replace(placed, staged)
                    if old is not None:
                        os.replace(old, placed)
            except OSError:  # neither set can be restored now: the decision stands, the next run completes it
                for root in roots:
                    del self._staging[root.parent]
                    _MINE.discard(root)
                raise _error(target, err) from None
            for root in roots:  # the decision (the first) first
                (root / _DECIDED).unlink(missing_ok=True)
            raise _error(target, err) from None
        _done(roots)
        for root in roots:
            del self._staging[root.parent]
            _MINE.discard(root)

    def _write_through(self) -> None:
        for target, staged in self._streams:
            try:
                if target == STDOUT:
                    stream = _STDOUT_STREAM.get() or sys.stdout
                    stream.flush()
                    data = staged.read_bytes()
                    buffer = getattr(stream, "buffer", None)
                    if buffer is not None:
                        buffer.write(data)
                        buffer.flush()
                    else:
                        stream.write(data.decode("utf-8"))
                        stream.flush()
                else:
                    with open(staged, "rb") as source, open(target, "wb") as sink:
                        shutil.copyfileobj(source, sink)
            except OSError as err:
                raise _error(target, err) from None

    def target_of(self, name: str | bytes | None) -> str | Path | None:
        """The output that ``name`` (a file name from an ``OSError``) stands for: ``None`` unless it is staged by
        this set or lies inside a staged folder (a checkpoint's Lightning file)."""
        if not isinstance(name, str):
            return None
        path = Path(os.path.abspath(name))
        for target, staged in self._outputs:
            if path == staged or staged in path.parents:
                return target / path.relative_to(staged)
        for stream, staged in self._streams:
            if path == staged:
                return _BUFFERED_STDOUT.format(folder=tempfile.gettempdir()) if stream == STDOUT else stream
        return None

    def abort(self) -> None:
        """Remove the staging folders, and the folders made only for these outputs."""
        for root in self._staging.values():  # never decided here: the order does not matter
            shutil.rmtree(root, ignore_errors=True)
            _MINE.discard(root)
        self._staging, self._outputs, self._streams = {}, [], []
        for folder in reversed(self._created_dirs):
            with contextlib.suppress(OSError):
                folder.rmdir()
        self._created_dirs = []


def _moves(root: Path, names: list[str]) -> list[tuple[Path, Path]]:
    """(target, staged) renames of the outputs ``names`` staged in ``root`` and not yet moved (nothing else a writer
    left there): a folder onto an existing folder moves entry by entry."""
    moves = []
    for staged in [root / _OUT / name for name in names if os.path.lexists(root / _OUT / name)]:
        target = root.parent / staged.name
        if staged.is_dir() and target.is_dir():
            moves += [(target / entry.name, entry) for entry in sorted(staged.iterdir())]
        else:
            moves.append((target, staged))
    return moves


def _place(staged: Path, target: Path, root: Path, *, keep: bool) -> Path | None:
    """Move ``staged`` to ``target``. An existing file is replaced in one rename unless ``keep``; with ``keep``, or
    for a folder, what stands there is first moved into the staging folder and returned."""
    old = None
    if (target.exists() or target.is_symlink()) and (keep or target.is_dir()):
        old = root / _OLD / secrets.token_hex(8)
        os.replace(target, old)
    try:
        os.replace(staged, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
        raise
    return old


def _decide(names: dict[Path, list[str]], first: Path) -> None:
    """Write a ``commit`` file into each staging folder (the first's last: the commit is then decided), naming every
    staging folder of the commit (relative to the folder's own, so a moved tree still finds them) and its outputs."""
    roots = list(names)
    try:
        for root in roots[1:] + roots[:1]:
            record = {"roots": [os.path.relpath(other, root.parent) for other in roots], "outputs": names[root]}
            (root / "commit.part").write_text(json.dumps(record), encoding="utf-8")
            os.replace(root / "commit.part", root / _DECIDED)
    except OSError as err:
        for root in roots:
            (root / _DECIDED).unlink(missing_ok=True)
        raise _error(first, err) from None


def clean_leftovers(folder: Path) -> None:
    """Deal with the staging folders that processes no longer running left in ``folder``: a decided commit is
    finished (its outputs were complete), any other is removed. A decision that cannot be read is left for a
    person to see; staging folders of live processes, and of other users (a shared temporary folder), are left
    alone."""
    for root in _dead_roots(folder):
        try:
            _finish(root)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            continue  # a damaged decision, or another run finishing it now: never guessed at


def _new_root(folder: Path) -> Path:
    root = folder / f".precomet-{os.getpid()}-{secrets.token_hex(4)}"
    _MINE.add(root)
    return root


def _dead_roots(folder: Path) -> list[Path]:
    """This user's staging folders in ``folder`` whose process no longer runs."""
    try:
        names = [entry.name for entry in os.scandir(folder)]
    except OSError:
        return []
    return [folder / name for name in names if _ours(folder / name)]


def _ours(path: Path) -> bool:
    """Whether ``path`` is a staging folder of this user whose process no longer runs."""
    match = _STAGING.match(path.name)
    if match is None or path in _MINE:
        return False
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not _alive(int(match["pid"]))


def _decided(root: Path) -> bool:
    """Whether ``root``'s commit was decided: the first of its staging folders holds its decision."""
    try:
        first = json.loads((root / _DECIDED).read_text(encoding="utf-8"))["roots"][0]
        return (root.parent / first / _DECIDED).exists()
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        return False


def _done(roots: list[Path]) -> None:
    """A commit whose moves are all made: its decision goes first, then its staging folders, in any order."""
    for root in roots:
        (root / _DECIDED).unlink(missing_ok=True)
    for root in roots:
        shutil.rmtree(root, ignore_errors=True)


def _finish(root: Path) -> None:
    """Finish ``root``'s commit if it was decided (under the folders' locks, interrupts held back), else remove it."""
    if not (root / _DECIDED).exists():
        shutil.rmtree(root, ignore_errors=True)
        return
    record = json.loads((root / _DECIDED).read_text(encoding="utf-8"))
    members = [Path(os.path.normpath(root.parent / relative)) for relative in record["roots"]]
    same_run = all(
        (match := _STAGING.match(m.name)) and match["pid"] == root.name.split("-")[1] and (_ours(m) or not m.exists())
        for m in members
    )
    if Path(os.path.normpath(root)) not in members or not same_run:
        return  # not a decision this module wrote: left for a person
    with _commit_lock(sorted({member.parent for member in members if member.parent.exists()})), signals.deferred():
        if (members[0] / _DECIDED).exists():  # decided, and not finished by another run meanwhile
            for member in members:
                if (member / _DECIDED).exists():
                    (member / _OLD).mkdir(exist_ok=True)
                    names = json.loads((member / _DECIDED).read_text(encoding="utf-8"))["outputs"]
                    if any(os.sep in name or name in ("", ".", "..") for name in names):
                        raise ValueError(f"{member}: not an output name in {names}")
                    for target, staged in _moves(member, names):
                        _place(staged, target, member, keep=True)
            _done([m for m in members if m.exists()])
        else:  # never decided, taken back, or finished: nothing of it is left to place
            shutil.rmtree(root, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():  # not one of this process's folders (_MINE): an earlier process with this PID
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _usual_permissions(staged: list[Path]) -> None:
    """Files that writers created owner-only (safetensors, tempfile) get ``0666`` minus the umask, as documented."""
    mask = os.umask(0)
    os.umask(mask)
    wanted = 0o666 & ~mask
    for output in staged:
        for file in [output] if output.is_file() else [p for p in output.rglob("*") if p.is_file()]:
            mode = stat.S_IMODE(file.stat().st_mode)
            if mode & 0o666 != wanted and not mode & 0o666 & ~wanted:  # narrower than usual, never wider
                os.chmod(file, wanted | (mode & 0o111 & ~mask))


@contextmanager
def _commit_lock(folders: list[Path]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on each folder a commit writes into (in sorted order, so two commits never wait
    for each other in a circle): two runs committing the same outputs at once place their sets one after the
    other. Where ``fcntl`` or a folder's lock is unavailable (Windows, some network file systems), commits are not
    serialised."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover -- not on Linux/macOS
        yield
        return
    handles = []
    try:
        for folder in folders:
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


def _check_kinds(moves: list[tuple[Path, Path, Path]]) -> None:
    """Refuse, before any rename, to put a file where a folder now stands or a folder where a file stands: the
    path was checked before the work, so something else made it meanwhile, and replacing it would delete it."""
    for target, staged, _ in moves:
        if target.exists() and target.is_dir() != staged.is_dir():
            now, wanted = ("a folder", "file") if target.is_dir() else ("a file", "folder")
            raise OutputError(
                f"{target} became {now} while the command ran; the {wanted} written for it would replace it, so"
                " nothing was written: move it away and run again"
            )


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
    opened = _OPEN_SETS.set((*_OPEN_SETS.get(), out))
    try:
        yield out
        out.commit()
    except OSError as err:
        inside = out.target_of(err.filename)
        out.abort()
        if inside is not None:  # a file written inside a staged output (a checkpoint's): name the output's
            raise _error(inside, err) from None
        if err.filename is None and targets:  # a write without a name (ENOSPC in savefig): name the outputs
            raise _error(", ".join(str(t) for t in targets if t is not None), err) from None
        raise
    except BaseException:
        out.abort()
        raise
    finally:
        _OPEN_SETS.reset(opened)


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a staged file for writing; it replaces ``path`` only when the block succeeds."""
    with output_set(path) as out, out.open(path, mode) as handle:
        yield handle


@contextmanager
def kept_file(path: Path) -> Iterator[IO[bytes]]:
    """Write ``path`` (a cache or resume file the command keeps for itself, not one of its outputs) in a staging
    folder beside it, renamed onto it when the block succeeds; raises ``OSError``. The caller cleans the folder's
    leftovers (:func:`clean_leftovers`) once, not on every file."""
    root = _new_root(path.parent)
    try:
        os.mkdir(root, 0o700)
        with open(root / path.name, "wb") as handle:
            yield handle
        with signals.deferred():  # an interrupt now waits until the file is in place and the folder gone
            os.replace(root / path.name, path)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
        _MINE.discard(root)


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
