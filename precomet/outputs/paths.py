"""Output paths before anything is written: :func:`check_output` and :func:`check_outputs` (can this path be
written, is it given twice), :func:`check_not_inputs` (would it destroy an input), which paths are written
through rather than replaced (:func:`written_through`, :func:`is_stdout`), and :func:`output_error`, the
one-line :class:`~precomet.errors.OutputError` for a failed write. Used by :mod:`precomet.outputs.atomic`."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from precomet.errors import OutputError

STDOUT = "-"
"""The output name that means standard output."""

FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def _describe(err: OSError) -> str:
    descriptions: dict[int | None, str] = {
        errno.EISDIR: "is a directory",
        errno.ENOTDIR: "a parent of it is a file, not a directory",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EEXIST: "exists and is in the way",
        errno.ENAMETOOLONG: "file name too long",
    }
    return descriptions.get(err.errno, err.strerror or str(err))


def output_error(path: str | Path, err: OSError) -> OutputError:
    """An :class:`OutputError` for ``path`` from the ``OSError`` raised while writing it."""
    return OutputError(f"cannot write {path}: {_describe(err)}")


def name_max(folder: Path) -> int:
    """The longest file name (bytes) the file system of ``folder`` (or its nearest existing parent) accepts."""
    while not folder.exists():
        folder = folder.parent
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


_DESCRIPTOR = re.compile(r"^/(dev/(stdin|stdout|stderr|fd/\d+)|proc/[^/]+/fd/\d+)$")


def written_through(path: Path) -> bool:
    """Whether ``path`` is written through instead of replaced: standard output, an existing target that is not a
    regular file or directory (a device, a FIFO, a socket), or a file descriptor's name (``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/PID/fd/N``) even when it stands for a regular file (a shell redirection): replacing
    it would cut the output off from the stream the user opened."""
    if str(path) == STDOUT:
        return True
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    if stat.S_ISDIR(mode):
        return False
    return not stat.S_ISREG(mode) or bool(_DESCRIPTOR.match(os.path.normpath(path.absolute())))


def is_stdout(path: str | Path) -> bool:
    """``-``, or a descriptor name (``/dev/stdout``, ``/dev/fd/1``, …) that is this process's standard output:
    written through the command's own stdout stream, so that its messages cannot overwrite the output."""
    text = os.fspath(path)
    if text == STDOUT:
        return True
    if not _DESCRIPTOR.match(os.path.normpath(os.path.abspath(text))):
        return False
    try:
        return os.path.samestat(os.stat(text), os.fstat(1))
    except OSError:
        return False


def check_output(path: str | Path, *, directory: bool = False, suffixes: tuple[str, ...] | None = None) -> Path:
    """Raise :class:`OutputError` unless ``path`` can be written as a file (or, with ``directory``, a
    directory): it is not the other kind, no existing ancestor is a file, the nearest existing folder is
    writable and its name fits the file system; a file's name does not end in ``/``; with ``suffixes`` (e.g.
    :data:`FIGURE_SUFFIXES`) its suffix must be one of them. ``-`` (standard output) and existing devices or
    FIFOs are accepted as files. Creates nothing."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputError("output path is empty")
    if "\0" in text:
        raise OutputError(f"cannot write {text!r}: the path holds a NUL character")
    path = Path(text)
    if suffixes is not None and path.suffix.lower() not in suffixes:
        raise OutputError(
            f"cannot write {path}: expected a {', '.join(suffixes)} file, got {path.suffix or 'no suffix'!r}"
        )
    if not directory and text.endswith((os.sep, "/")) and not path.is_dir():
        raise OutputError(f"cannot write {text}: a trailing '/' names a folder; give the file's name")
    if written_through(path):
        if directory:
            raise OutputError(f"cannot write {text}: a folder output cannot go to standard output or a device")
        if text != STDOUT and not os.access(path, os.W_OK):
            raise OutputError(f"cannot write {path}: permission denied")
        return path
    if len(os.fsencode(path.name)) > name_max(path.absolute().parent):
        raise OutputError(
            f"cannot write {path}: its name is {len(os.fsencode(path.name))} bytes, more than the file system allows"
            f" ({name_max(path.absolute().parent)})"
        )
    if path.exists():
        if directory and not path.is_dir():
            raise OutputError(f"cannot write {path}: exists and is a file, not a directory")
        if not directory and path.is_dir():
            raise OutputError(f"cannot write {path}: is a directory")
    parent = _target(path).parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: {parent} is a file, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: folder {parent} is not writable")
    if path.exists() and not os.access(path if directory else parent, os.W_OK):
        raise OutputError(f"cannot write {path}: permission denied")
    return path


def _target(path: Path) -> Path:
    """Where ``path`` really is: links resolved, so that the file a link points to is replaced, not the link."""
    return Path(os.path.realpath(path))


def _exists(path: Path) -> bool:
    """``path.exists()`` that answers ``False`` for a name the system refuses (too long) instead of raising."""
    try:
        return path.exists()
    except OSError:
        return False


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return _target(a) == _target(b)


def _inside(inner: Path, outer: Path) -> bool:
    inner, outer = _target(inner), _target(outer)
    return inner != outer and outer in inner.parents


def check_not_inputs(outputs: Iterable[str | Path | None], inputs: Iterable[str | Path | None]) -> None:
    """Refuse (:class:`OutputError`, naming both) an output that is an input (links, ``/proc`` paths and
    descriptors resolved: ``-o /dev/stdin < input`` too), would replace a file inside an input folder, or is a
    folder holding an input: writing it would destroy what the command reads. Standard output and devices are
    written through, never replaced, so they may be both."""
    sources = [Path(os.fspath(i)) for i in inputs if i is not None and os.fspath(i) != STDOUT]
    for given in outputs:
        if given is None or os.fspath(given) == STDOUT:
            continue
        if not os.fspath(given).strip():
            raise OutputError("output path is empty")
        output = Path(os.fspath(given))
        if written_through(output) and not _regular(output):
            continue  # a device or FIFO: written through, nothing of the user's is replaced
        for source in sources:
            if _same(output, source):
                raise OutputError(
                    f"output {output} is the input {source}; write it elsewhere (inputs are never overwritten)"
                )
            if source.is_dir() and _exists(output) and _inside(output, source):
                raise OutputError(
                    f"output {output} would replace {_target(output)}, a file of the input folder {source};"
                    " write it elsewhere"
                )
            if _exists(output) and output.is_dir() and _inside(source, output):
                raise OutputError(f"output {output} would replace the input {source} inside it; write it elsewhere")


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def check_outputs(*targets: str | Path | None) -> list[Path]:
    """:func:`check_output` on every target (``None`` skipped), and no path given for two of them: what a
    command calls before its work, so that :func:`~precomet.outputs.atomic.output_set` cannot refuse after it."""
    given = [check_output(t) for t in targets if t is not None]
    resolved = [STDOUT if is_stdout(t) else _target(t) for t in given]
    if resolved.count(STDOUT) > 1:
        names = " and ".join(str(t) for t, r in zip(given, resolved) if r == STDOUT)
        how_many = "both" if resolved.count(STDOUT) == 2 else "all"
        raise OutputError(
            f"{names} are {how_many} standard output: two outputs of one command would run together there; give each"
            " its own path (at most one '-')"
        )
    twice = [str(t) for t, r in zip(given, resolved) if r != STDOUT and resolved.count(r) > 1]
    if twice:
        raise OutputError(f"{twice[0]} is given for two outputs of one command; give each its own path")
    return given
