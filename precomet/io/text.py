"""Reading text files strictly: UTF-8 only, errors name the file and line."""

from __future__ import annotations

from pathlib import Path

from precomet.errors import DataError


def read_text(path: str | Path) -> str:
    """The whole file decoded as UTF-8; invalid bytes raise :class:`DataError` with the line number."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file")
    if path.is_dir():
        raise DataError(path, "is a directory; expected a file")
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise DataError(path, f"invalid UTF-8 at byte {err.start}", line=line) from None


def read_lines(path: str | Path) -> list[str]:
    """Lines without their line endings (a final newline does not add an empty line)."""
    text = read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
