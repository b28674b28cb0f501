"""Typed, immutable results.

A result class is a frozen dataclass deriving from :class:`Record`: its fields are typed attributes
(``result.methods``), frozen all the way down (:func:`frozen`: read-only arrays, read-only mappings, tuples for
lists), and :meth:`Record.to_dict` is the JSON-ready dict (fields in declaration order, optional fields
left out while ``None``). The report functions read a result's JSON form (:func:`as_json`), so they take a record or
a result loaded back from JSON. Every JSON writer of precomet (:mod:`precomet.io.jsonsafe`) writes a record as its
dict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any, ClassVar, TypeVar

import numpy as np

from precomet.campaign import ReadOnlyMapping, locked

R = TypeVar("R", bound="Record")


def frozen(value: Any, *, copy: bool = True) -> Any:
    """``value`` that nobody can change: arrays become read-only views of read-only copies (numpy refuses to make
    them writeable again; with ``copy=False`` the arrays themselves are locked, for arrays nobody else writes),
    dicts read-only mappings and lists tuples, all the way down; anything else (a
    :class:`~precomet.signature.Signature`, a record) is kept as it is."""
    if isinstance(value, np.ndarray):
        return locked(value.copy() if copy else value)
    if type(value) in (dict, ReadOnlyMapping):  # not a Signature or another mapping class of its own
        return ReadOnlyMapping({key: frozen(item, copy=copy) for key, item in value.items()})
    if type(value) in (list, tuple):  # not a named tuple
        return tuple(frozen(item, copy=copy) for item in value)
    return value


def freeze_fields(instance: Any, *, copy: bool = True) -> None:
    """Replace every field of a frozen dataclass ``instance`` by its :func:`frozen` value (from ``__post_init__``)."""
    for f in fields(instance):
        object.__setattr__(instance, f.name, frozen(getattr(instance, f.name), copy=copy))


class Record:
    """Base of the typed results (see the module docstring); subclasses are frozen dataclasses. A field whose JSON
    key differs from its name says so in its metadata: ``field(metadata={"key": "items"})``."""

    OPTIONAL: ClassVar[frozenset[str]] = frozenset()
    """Fields left out of :meth:`to_dict` while ``None`` (e.g. a benchmark's ``oracle`` row when not asked for)."""

    def __post_init__(self) -> None:
        freeze_fields(self)

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
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def as_json(result: Record | Mapping[str, Any]) -> Mapping[str, Any]:
    """``result`` in its JSON form: a record's :meth:`~Record.to_dict`, a mapping (read back from JSON) as it is."""
    return result.to_dict() if isinstance(result, Record) else result
