"""JSON that every parser reads: NaN and ±Infinity are written as ``null`` (``json.dumps`` would write the
non-standard literals ``NaN`` / ``Infinity``), numpy scalars and arrays as plain numbers and lists, and text
that is not UTF-8 — a file name of other bytes, which Python holds as lone surrogates — as its bytes escaped
(``\\xfe.jsonl``). Every JSON or JSONL output of precomet is encoded here."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import IO, Any

import numpy as np


def json_safe(value: Any, default=None) -> Any:
    """``value`` with non-finite floats replaced by ``None`` (recursively through dicts, lists, tuples and
    numpy arrays); other objects go through ``default`` when given (e.g. ``str``)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, str):
        return value if value.isascii() else _utf8(value)
    if value is None:
        return value
    if callable(to_dict := getattr(value, "to_dict", None)):  # a typed result: its JSON form
        return json_safe(to_dict(), default)
    if isinstance(value, Mapping):
        return {(k if isinstance(k, str) else str(k)): json_safe(v, default) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v, default) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v, default) for v in value.tolist()]
    if default is not None:
        return json_safe(default(value))
    return value  # json.dumps raises its usual TypeError for unknown types


def _utf8(text: str) -> str:
    """``text`` unchanged when it is UTF-8 text; else with each byte that is not (``surrogateescape``) or each lone
    surrogate written as a backslash escape."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")


def dumps(value: Any, *, default=None, **kwargs: Any) -> str:
    """``json.dumps`` of :func:`json_safe` (``allow_nan=False``: a literal NaN can never slip through)."""
    kwargs.setdefault("ensure_ascii", False)
    return json.dumps(json_safe(value, default), allow_nan=False, **kwargs)


def dump(value: Any, handle: IO[str], *, default=None, **kwargs: Any) -> None:
    """:func:`dumps` into an open text file."""
    handle.write(dumps(value, default=default, **kwargs))


def dump_lines(rows: Iterable[Any], handle: IO[str]) -> None:
    """JSONL: one :func:`dumps` line per row into an open text file."""
    handle.writelines(dumps(row) + "\n" for row in rows)
