"""Reading user files strictly, in one place: every reader of a text, JSON, JSONL, CSV or TSV input goes
through here, so every one of them treats encodings, byte-order marks, huge cells, deeply nested JSON and
path-like names the same way, and every failure is a :class:`~precomet.errors.DataError` naming the file
(and the line).

* Text is UTF-8. A UTF-8 byte-order mark at the start is removed; a UTF-16/UTF-32 file (by its byte-order
  mark, or by NUL bytes) is refused with "save it as UTF-8"; invalid UTF-8 (e.g. a latin-1 file) is refused
  naming the line and the byte.
* JSON: syntax errors, nesting deeper than :data:`MAX_JSON_DEPTH`, integers too long to convert and duplicate
  keys in one object are refused with the line.
* CSV/TSV: cells of any length are read (a cell may hold a whole document); a malformed file is refused with
  the line.
* :func:`safe_name`: a name found in the data that becomes part of a file path (a system name in an ESA
  export, a split in a saved dataset) may not contain ``/``, ``\\``, NUL or be ``.``/``..``.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import json
import re
import sys
from collections.abc import Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

from precomet.errors import DataError

MAX_JSON_DEPTH = 100
"""Deepest nesting of arrays/objects accepted in JSON inputs (Python's parser would hit its recursion limit)."""

_WIDE_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)


def read_bytes(path: str | Path) -> bytes:
    """The raw content of a regular file; a missing path, a directory or an unreadable file raise
    :class:`DataError`."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "no such file")
    if path.is_dir():
        raise DataError(path, "is a directory; expected a file")
    if not path.is_file():
        raise DataError(path, "is not a regular file")
    try:
        return path.read_bytes()
    except OSError as err:
        raise DataError(path, f"cannot read ({err.strerror or err})") from None


def decode(raw: bytes, path: str | Path) -> str:
    """``raw`` as UTF-8 text without a leading byte-order mark (see the module docstring)."""
    for bom, name in _WIDE_BOMS:
        if raw.startswith(bom):
            raise DataError(path, f"is {name} text; save it as UTF-8")
    skip = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        text = raw[skip:].decode("utf-8")
    except UnicodeDecodeError as err:
        start = skip + err.start
        bad = raw[start : start + 1].hex().upper()
        line = raw[:start].count(b"\n") + 1
        raise DataError(
            path, f"invalid UTF-8: not UTF-8 text (byte 0x{bad} at offset {start}); save it as UTF-8", line=line
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise DataError(path, "NUL byte in the text (UTF-16 or a binary file?); save it as UTF-8 text", line=line)
    return text


def read_text(path: str | Path) -> str:
    """The whole file decoded as UTF-8 (a leading byte-order mark removed); errors name the file and line."""
    return decode(read_bytes(path), path)


def split_lines(text: str) -> list[str]:
    """Lines without their ``\\n`` / ``\\r\\n`` endings (a final newline does not add an empty line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_lines(path: str | Path, *, universal: bool = False) -> list[str]:
    """Lines of a UTF-8 text file without their line endings (see :func:`read_text`, :func:`split_lines`).
    ``universal``: a lone ``\r`` also ends a line (Python's universal newlines, as sacrebleu reads text), so
    ``\n``, ``\r\n`` and ``\r`` may even be mixed in one file; U+2028 and other separators stay in the line."""
    text = read_text(path)
    return split_lines(text.replace("\r\n", "\n").replace("\r", "\n") if universal else text)


# ------------------------------------------------------------------------------------------------ JSON
def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _DuplicateKey(key)
    return result


class _DuplicateKey(Exception):
    pass


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
"""One decoder for every call (``json.loads`` with a hook builds a new one each time: a fifth of a line's parse)."""


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _depth_exceeds(text: str, limit: int) -> bool:
    """Whether arrays/objects nest deeper than ``limit`` (brackets inside strings do not count)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return len(brackets) > limit and max(accumulate(1 if char in "[{" else -1 for char in brackets)) > limit


def parse_json(text: str, path: str | Path, *, line: int | None = None) -> Any:
    """``text`` parsed as JSON; invalid JSON, nesting deeper than :data:`MAX_JSON_DEPTH`, an integer too long
    to convert and a key repeated in one object raise :class:`DataError` (with ``line``, or the line of the
    syntax error in a whole file)."""
    if _depth_exceeds(text, MAX_JSON_DEPTH):
        raise DataError(path, f"invalid JSON: nested too deeply (more than {MAX_JSON_DEPTH} levels)", line=line)
    try:
        value = _DECODER.decode(text)
        if "\\ud" in text.lower():  # an escaped surrogate: only a pair of them is a character
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except UnicodeEncodeError:
        raise DataError(
            path, "invalid JSON: a lone surrogate escape (\\ud800-\\udfff) is not a character", line=line
        ) from None
    except json.JSONDecodeError as err:
        where = line if line is not None else err.lineno
        raise DataError(path, f"invalid JSON ({err.msg}, column {err.colno})", line=where) from None
    except _DuplicateKey as key:
        raise DataError(path, f"invalid JSON: key {key.args[0]!r} appears twice in one object", line=line) from None
    except RecursionError:
        raise DataError(path, "invalid JSON: nested too deeply", line=line) from None
    except ValueError:  # an integer literal over the int-to-str digit limit
        raise DataError(
            path, f"invalid JSON: a number with more than {sys.get_int_max_str_digits()} digits", line=line
        ) from None


def read_json(path: str | Path) -> Any:
    """A whole JSON file (UTF-8, see :func:`read_text`) parsed with :func:`parse_json`."""
    return parse_json(read_text(path), path)


# ------------------------------------------------------------------------------------------------ CSV
_C_LONG_MAX = 2**31 - 1 if sys.platform == "win32" else sys.maxsize


@contextlib.contextmanager
def _field_limit(size: int) -> Iterator[None]:
    """The csv module's field size limit raised to at least ``size`` inside the block, restored after it."""
    previous = csv.field_size_limit()
    csv.field_size_limit(min(max(previous, size + 1), _C_LONG_MAX))
    try:
        yield
    finally:
        csv.field_size_limit(previous)


SPREADSHEET_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "'")  # a leading one makes a spreadsheet read a formula


def spreadsheet_cell(cell: str | int | float) -> str:
    """``cell`` safe to open in a spreadsheet, decided by its first character alone, as OWASP's CSV-injection advice
    says: text that starts with ``= + - @``, a tab or a carriage return (a formula to Excel, LibreOffice and Google
    Sheets) gets a leading ``'``; so does text starting with ``'`` itself, so that :func:`csv_rows` with
    ``unescape=True`` gets every text back exactly. Text that looks like a number is text too (``-0.5``, ``-inf``,
    ``+Infinity``, ``-1_000`` typed by a user get the ``'``): only a number precomet writes itself, passed as an
    ``int`` or ``float``, is written as it is."""
    if not isinstance(cell, str):  # a number precomet computed: never a formula
        return str(cell)
    return "'" + cell if cell.startswith(SPREADSHEET_TRIGGERS) else cell


def _unescape(cell: str) -> str:
    """The text :func:`spreadsheet_cell` escaped."""
    return cell[1:] if len(cell) > 1 and cell[0] == "'" and cell[1] in SPREADSHEET_TRIGGERS else cell


def csv_rows(
    path: str | Path, text: str, *, delimiter: str = ",", quotes: bool = True, unescape: bool = False
) -> list[tuple[int, list[str]]]:
    """``(line, fields)`` of every row of CSV/TSV ``text`` read from ``path`` (``line`` = the row's last line,
    1-based); ``quotes=False`` reads ``"`` as an ordinary character; ``unescape=True`` undoes
    :func:`spreadsheet_cell` (for precomet's own CSV formats). Quoting is strict: a quote left open at
    the end of the file (it would swallow every later row into one cell) or text after a closing quote is an
    error. Cells may be as long as the file; a malformed file raises :class:`DataError` with the line."""
    handle = io.StringIO(text, newline="")
    if quotes:
        reader = csv.reader(handle, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL, strict=True)
    else:
        reader = csv.reader(handle, delimiter=delimiter, quoting=csv.QUOTE_NONE)
    rows = []
    with _field_limit(len(text)):
        try:
            for row in reader:
                rows.append((reader.line_num, [_unescape(cell) for cell in row] if unescape else row))
        except csv.Error as err:
            raise DataError(
                path, f"malformed {'TSV' if delimiter == chr(9) else 'CSV'} ({err})", line=reader.line_num
            ) from None
    return rows


def read_csv_rows(
    path: str | Path, *, delimiter: str = ",", quotes: bool = True, unescape: bool = False
) -> list[tuple[int, list[str]]]:
    """:func:`csv_rows` of a UTF-8 file (see :func:`read_text`)."""
    return csv_rows(path, read_text(path), delimiter=delimiter, quotes=quotes, unescape=unescape)


# ------------------------------------------------------------------------------------------------ names
def safe_name(name: str, *, what: str, path: str | Path, line: int | None = None) -> str:
    """``name`` (read from ``path``, at ``line``) when it can be one component of a file name: not empty, no
    ``/`` or ``\\``, no NUL, not ``.`` or ``..``; otherwise :class:`DataError` naming the file and line."""
    if not name or name in (".", "..") or any(char in name for char in "/\\\0"):
        raise DataError(
            path,
            f"{what} {name!r} cannot name a file (it is empty, '.', '..' or contains '/', '\\\\' or NUL)",
            line=line,
        )
    return name
