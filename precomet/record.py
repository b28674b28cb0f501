"""Typed, immutable results that also read like the JSON they are written as.

A result class is a frozen dataclass deriving from :class:`Record`: its fields are typed attributes
(``result.methods``), :meth:`Record.to_dict` is the JSON-ready dict (fields in declaration order, optional fields
left out while ``None``), and it is a read-only :class:`~collections.abc.Mapping` of that dict
(``result["methods"]``), so code written against the dicts of precomet 0.4 and the report functions, which also
read results loaded back from JSON, take either. Every JSON writer of precomet (:mod:`precomet.io.jsonsafe`)
writes a record as its dict."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import fields, replace
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class Record(Mapping[str, Any]):
    """Base of the typed results (see the module docstring); subclasses are frozen dataclasses. A field whose JSON
    key differs from its name (``items`` would hide :meth:`Mapping.items`) says so in its metadata:
    ``field(metadata={"key": "items"})``."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()
    """Fields left out of :meth:`to_dict` while ``None`` (e.g. a benchmark's ``oracle`` row when not asked for)."""

    def _fields(self) -> dict[str, str]:
        """JSON key -> attribute name, in declaration order, without the optional fields that are ``None``."""
        return {
            f.metadata.get("key", f.name): f.name
            for f in fields(self)  # type: ignore[arg-type]
            if not (f.name in self.OPTIONAL and getattr(self, f.name) is None)
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict (nested records become dicts too)."""
        return {key: _plain(getattr(self, name)) for key, name in self._fields().items()}

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._fields()[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields())

    def __len__(self) -> int:
        return len(self._fields())

    def replaced(self: R, **changes: Any) -> R:
        """A copy with ``changes`` to its fields (a record itself never changes)."""
        return replace(self, **changes)  # type: ignore[type-var]


def _plain(value: Any) -> Any:
    """``value`` with records (also inside dicts and lists) turned into dicts."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
