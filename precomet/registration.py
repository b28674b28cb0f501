"""The one rule every extension registry follows (utilities, input formats, encoders): names are checked, and a
name already taken is refused unless ``replace=True``."""

from __future__ import annotations

import re
from typing import TypeVar

from precomet.errors import PrecometError

T = TypeVar("T")

NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
"""A registered name: lower-case letters, digits, ``_`` and ``-``, so that it survives comma lists, ``PATH:NAME``
and ``KEY=VALUE`` on the command line."""


def register(table: dict[str, T], name: str, entry: T, *, kind: str, replace: bool = False) -> None:
    """Add ``entry`` to ``table`` under ``name`` (``kind`` names the registry in errors)."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise PrecometError(
            f"invalid {kind} name {name!r}: use lower-case letters, digits, '_' and '-' (starting with a letter or"
            " digit)"
        )
    if name in table and not replace:
        raise PrecometError(f"{kind} {name!r} is already registered; pass replace=True to replace it")
    table[name] = entry
