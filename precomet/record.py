"""Typed, immutable results.

A result class is a frozen dataclass deriving from :class:`Record`: its fields are typed attributes
(``result.methods``) and :meth:`Record.to_dict` is the JSON-ready dict (fields in declaration order, optional fields
left out while ``None``). The report functions read a result's JSON form (:func:`as_json`), so they take a record or
a result loaded back from JSON. Every JSON writer of precomet (:mod:`precomet.io.jsonsafe`) writes a record as its
dict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """Base of the typed results (see the module docstring); subclasses are frozen dataclasses. A field whose JSON
    key differs from its name says so in its metadata: ``field(metadata={"key": "items"})``."""

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


def as_json(result: Record | Mapping[str, Any]) -> Mapping[str, Any]:
    """``result`` in its JSON form: a record's :meth:`~Record.to_dict`, a mapping (read back from JSON) as it is."""
    return result.to_dict() if isinstance(result, Record) else result
