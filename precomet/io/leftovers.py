"""Temporary names (``.NAME.precomet-PID-HEX.KIND``) and what a process that no longer runs left behind with
them: :func:`clean_leftovers` rolls its commit journal forward and removes its temporaries."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from pathlib import Path

from precomet.io.output_paths import name_max

_LEFTOVER = re.compile(r"^\.(?P<name>.*)\.precomet-(?P<pid>\d+)-[0-9a-f]{8}\.(?P<kind>tmp|old|journal)")


def _temporary_name(target: Path, kind: str = "tmp", folder: Path | None = None) -> Path:
    """A fresh recognisable name beside ``target`` (or in ``folder``) that fits the file system's limit."""
    folder = target.parent if folder is None else folder
    suffix = target.suffix if kind == "tmp" else ""
    ending = f".precomet-{os.getpid()}-{secrets.token_hex(4)}.{kind}{suffix}"
    room = name_max(folder) - len(os.fsencode(ending)) - 1
    if room < 0:  # an extremely long suffix: drop it
        ending, room = ending[: -len(suffix)] if suffix else ending, room + len(os.fsencode(suffix))
    stem = _cut(target.stem if kind == "tmp" else target.name, room)
    return folder / f".{stem}{ending}"


def _cut(name: str, room: int) -> str:
    """The first ``room`` bytes of ``name`` as the file system stores it (a name of non-UTF-8 bytes included)."""
    return os.fsdecode(os.fsencode(name)[: max(room, 0)])


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def clean_leftovers(folder: Path) -> None:
    """Finish what processes that no longer run left in ``folder``: a commit journal is rolled forward (its
    outputs were complete), then their temporaries are removed. Live processes' files are left alone."""
    try:
        entries = [(entry, _LEFTOVER.match(entry.name)) for entry in map(Path, os.scandir(folder))]
    except OSError:
        return
    stale = [(entry, match) for entry, match in entries if match and not _alive(int(match["pid"]))]
    for entry, match in stale:
        if match["kind"] == "journal":
            _roll_forward(entry)
    for entry, match in stale:
        if match["kind"] != "journal" and (entry.exists() or entry.is_symlink()):
            _remove(entry)


def _roll_forward(journal: Path) -> None:
    try:
        steps = json.loads(journal.read_text(encoding="utf-8"))["steps"]
        for target, temporary, aside in ((Path(t), Path(p), Path(a)) for t, p, a in steps):
            if temporary.exists():
                if (target.exists() or target.is_symlink()) and not aside.exists():
                    os.replace(target, aside)
                os.replace(temporary, target)
            if aside.exists() or aside.is_symlink():
                _remove(aside)
        for copy in json.loads(journal.read_text(encoding="utf-8"))["journals"]:
            Path(copy).unlink(missing_ok=True)
    except (OSError, ValueError, KeyError, TypeError):
        return  # left for a person to see; never guessed at
