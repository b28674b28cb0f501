"""Source-text identity across campaigns: the normalisation that decides when two sources are "the same",
and the compact fingerprint a checkpoint keeps of the sources it was trained on.

Two sources are the same when their :func:`normalise_source` forms are equal (Unicode NFKC, case-folded,
whitespace runs collapsed, trimmed): within a WMT year every ``en-*`` pair translates the same English
lines, so any split or exclusion must go by this text, never by campaign or document.

A :class:`SourceFingerprint` is the sorted set of 32-bit BLAKE2b hashes of the normalised training sources
(4 bytes per source, base64 in JSON). Membership is exact for sources that were seen; an unseen source is
reported as seen with probability ``count / 2**32`` (1.7e-6 for 7,500 training sources).
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from precomet.errors import PrecometError

logger = logging.getLogger(__name__)

SCHEME = "blake2b-32/nfkc-casefold-ws"
"""How fingerprints are made; a fingerprint with another scheme is refused."""

_SPACES = re.compile(r"\s+")


def normalise_source(text: str) -> str:
    """The form under which two sources count as the same text."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def source_hash(text: str) -> int:
    """32-bit hash of the normalised source."""
    return int.from_bytes(hashlib.blake2b(normalise_source(text).encode("utf-8"), digest_size=4).digest(), "little")


@dataclass(frozen=True)
class SourceFingerprint:
    """Sorted unique 32-bit hashes of normalised training sources (read-only)."""

    hashes: np.ndarray

    def __post_init__(self) -> None:
        self.hashes.flags.writeable = False

    @classmethod
    def of(cls, sources: Iterable[str]) -> SourceFingerprint:
        return cls(np.unique(np.fromiter((source_hash(s) for s in sources), dtype=np.uint32)))

    def __len__(self) -> int:
        return len(self.hashes)

    def contains(self, sources: Sequence[str] | np.ndarray) -> np.ndarray:
        """A boolean per source: was it (probably, see module doc) among the training sources?"""
        probe = np.fromiter((source_hash(s) for s in sources), dtype=np.uint32, count=len(sources))
        if not len(self.hashes):
            return np.zeros(len(probe), dtype=bool)
        where = np.minimum(np.searchsorted(self.hashes, probe), len(self.hashes) - 1)
        return self.hashes[where] == probe

    def to_json(self) -> dict[str, Any]:
        return {
            "scheme": SCHEME,
            "count": len(self),
            "hashes": base64.b64encode(self.hashes.astype("<u4").tobytes()).decode("ascii"),
        }

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> SourceFingerprint:
        """Parse :meth:`to_json` output; anything else raises naming ``where``."""
        if not isinstance(data, dict) or data.get("scheme") != SCHEME or "hashes" not in data:
            raise PrecometError(f"{where}: training-source fingerprint is not of scheme {SCHEME!r}")
        try:
            raw = base64.b64decode(data["hashes"], validate=True)
        except (ValueError, TypeError):
            raise PrecometError(f"{where}: training-source fingerprint is not valid base64") from None
        if len(raw) % 4:
            raise PrecometError(f"{where}: training-source fingerprint has {len(raw)} bytes, not a multiple of 4")
        hashes = np.frombuffer(raw, dtype="<u4").astype(np.uint32)
        if data.get("count") != len(hashes) or np.any(np.diff(hashes.astype(np.int64)) <= 0):
            raise PrecometError(f"{where}: training-source fingerprint is corrupt (count or order does not match)")
        return cls(hashes)


def fingerprint_in(mapping: Any, *, where: str) -> SourceFingerprint | None:
    """The fingerprint under ``training_sources`` of a checkpoint's metadata or a utility file's signature
    (``None`` when there is none)."""
    data = mapping.get("training_sources") if isinstance(mapping, dict) else None
    return None if data is None else SourceFingerprint.from_json(data, where=where)


def check_seen(mapping: Any, sources: Sequence[str] | np.ndarray, *, strict: bool, what: str, where: str) -> int | None:
    """How many ``sources`` the estimator behind ``mapping`` (a checkpoint's metadata or a utility file's
    signature, read at ``where``) was trained on; ``None`` when ``mapping`` has no fingerprint. Any seen
    source is a warning, or with ``strict`` a :class:`PrecometError`."""
    fingerprint = fingerprint_in(mapping, where=where)
    if fingerprint is None:
        return None
    seen = int(fingerprint.contains(sources).sum())
    if seen:
        message = (
            f"{seen} of {len(sources)} sources scored by {what} were in its training data; their utilities are"
            f" memorised, not predicted (train without them: hold their campaign out of the training targets)"
        )
        if strict:
            raise PrecometError(message)
        logger.warning(message)
    return seen


def drop_sources(rows: Sequence[dict[str, Any]], sources: Iterable[str]) -> tuple[list[dict[str, Any]], int]:
    """``(kept rows, dropped count)``: rows whose normalised ``src`` is among ``sources`` are dropped."""
    banned = {normalise_source(s) for s in sources}
    kept = [r for r in rows if normalise_source(r["src"]) not in banned]
    return kept, len(rows) - len(kept)


def connected_groups(rows: Sequence[dict[str, Any]], keys: Sequence[Any]) -> np.ndarray:
    """A group label per row such that rows sharing a key OR a normalised source end up in one group
    (union-find over both links), so a split by these labels never puts one source text on both sides."""
    parent = list(range(len(rows)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[Any, int] = {}
    for i, (row, key) in enumerate(zip(rows, keys)):
        for link in (("key", key), ("src", normalise_source(row["src"]))):
            j = first.setdefault(link, i)
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return np.array([find(i) for i in range(len(rows))], dtype=int)
