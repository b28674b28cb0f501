"""Source-text identity across campaigns: the normalisation that decides when two sources are "the same",
and the compact fingerprint a checkpoint keeps of the sources it was trained on.

Two sources are the same when their :func:`normalise_source` forms are equal (Unicode NFKC, case-folded,
whitespace runs collapsed, trimmed): within a WMT year every ``en-*`` pair translates the same English
lines, so any split or exclusion must go by this text, never by campaign or document. Different texts still
overlap when they share a sentence or a long word/character run (:class:`NearDuplicates`: the WMT23 en-de
paragraphs contain the WMT23 sentence-level sources); :func:`connected_groups` and :func:`drop_sources` follow
those links too.

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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from precomet.errors import PrecometError
from precomet.estimator.metadata import CheckpointMeta

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


def fingerprint_in(mapping: CheckpointMeta | Mapping[str, Any], *, where: str) -> SourceFingerprint | None:
    """The fingerprint under ``training_sources`` of a checkpoint's metadata or a utility file's signature
    (``None`` when there is none)."""
    if isinstance(mapping, CheckpointMeta):
        data = mapping.training_sources
    else:  # a signature that is not an object has no fingerprint
        data = mapping.get("training_sources") if isinstance(mapping, Mapping) else None
    return None if data is None else SourceFingerprint.from_json(data, where=where)


def check_seen(
    mapping: CheckpointMeta | Mapping[str, Any],
    sources: Sequence[str] | np.ndarray,
    *,
    strict: bool,
    what: str,
    where: str,
) -> int | None:
    """How many ``sources`` the estimator behind ``mapping`` (a checkpoint's metadata or a utility file's
    signature, read at ``where``) was trained on; ``None`` when ``mapping`` has no fingerprint. Any seen
    source is a warning, or with ``strict`` a :class:`PrecometError`."""
    fingerprint = fingerprint_in(mapping, where=where)
    if fingerprint is None:
        return None
    return report_seen(int(fingerprint.contains(sources).sum()), len(sources), strict=strict, what=what)


def report_seen(seen: int, total: int, *, strict: bool, what: str) -> int:
    """``seen`` of ``total`` sources (counted chunk by chunk for a large pool) were in the training data of
    ``what``: a warning when any, or with ``strict`` a :class:`PrecometError`. Returns ``seen``."""
    if seen:
        message = (
            f"{seen} of {total} sources scored by {what} were in its training data; their utilities are"
            f" memorised, not predicted (train without them: hold their campaign out of the training targets)"
        )
        if strict:
            raise PrecometError(message)
        logger.warning(message)
    return seen


@dataclass(frozen=True)
class NearDuplicates:
    """When two different sources still count as overlapping: they share a sentence of at least
    ``min_sentence`` normalised characters, or a run of ``words`` whitespace tokens (``chars`` characters
    for unspaced text). Defaults: 8 words, 16 characters, sentences of 20 characters.

    Both tests run on :func:`normalise_source` forms. Sentences end after ``. ! ?`` (with any closing
    quotes or brackets) followed by whitespace or the end of the text, and after ``。！？`` anywhere. A
    text is *unspaced* (Chinese, Japanese, Thai) when its whitespace tokens average more than
    ``spaced_below`` characters; its runs are ``chars`` characters of the text with whitespace removed, so a
    stray space around a Latin name or a number does not matter. A spaced text and an unspaced one are
    compared by sentences only.
    """

    words: int = 8
    chars: int = 16
    min_sentence: int = 20
    spaced_below: float = 12.0

    def __post_init__(self) -> None:
        for name in ("words", "chars", "min_sentence"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PrecometError(f"near-duplicate {name} must be a positive integer, got {value!r}")
        if not self.spaced_below > 0:
            raise PrecometError(f"near-duplicate spaced_below must be positive, got {self.spaced_below!r}")

    def sentences(self, text: str) -> set[str]:
        """The sentences of a normalised text that are long enough to link two sources."""
        pieces, start = [], 0
        for end in _SENTENCE_END.finditer(text):
            pieces.append(text[start : end.end()])
            start = end.end()
        pieces.append(text[start:])
        return {p for p in (piece.strip() for piece in pieces) if len(p) >= self.min_sentence}

    def runs(self, text: str) -> set[int]:
        """The word runs (``words`` tokens) or, for unspaced text, character runs (``chars`` characters) of
        a normalised text, as 64-bit hashes (Python's ``hash`` of the token tuple or the string: a false match
        among 3 million runs has probability about 3e-7; the runs are compared within one process only)."""
        tokens = text.split(" ")
        if len(text) > self.spaced_below * len(tokens):
            dense = "".join(tokens)
            return {hash(dense[k : k + self.chars]) for k in range(len(dense) - self.chars + 1)}
        n = self.words
        return {hash(tuple(tokens[k : k + n])) for k in range(len(tokens) - n + 1)}


NEAR = NearDuplicates()
"""The default near-duplicate rule (8 words, 16 characters, sentences of 20 characters)."""

_SENTENCE_END = re.compile(
    r"[.!?]+[\"'\u201d\u2019\u00bb)\]]*(?=\s|$)|[\u3002\uff01\uff1f]+[\u300d\u300f\u201d\u2019\uff09]*"
)


def drop_sources(
    rows: Sequence[dict[str, Any]], sources: Iterable[str], *, near: NearDuplicates | None = NEAR
) -> tuple[list[dict[str, Any]], int]:
    """``(kept rows, dropped count)``: rows whose normalised ``src`` is among ``sources`` are dropped, and
    (unless ``near`` is ``None``) rows that share a sentence or a long run with one of them
    (:class:`NearDuplicates`)."""
    banned = {normalise_source(s) for s in sources}
    sentences: set[str] = set()
    runs: set[int] = set()
    if near is not None:
        for text in banned:
            sentences |= near.sentences(text)
            runs |= near.runs(text)
    verdict: dict[str, int] = {}  # normalised text -> 0 keep, 1 same text, 2 near duplicate

    def judge(text: str) -> int:
        if text in banned:
            return 1
        if near is not None and (
            not sentences.isdisjoint(near.sentences(text)) or not runs.isdisjoint(near.runs(text))
        ):
            return 2
        return 0

    kept, counts = [], [0, 0, 0]
    for row in rows:
        text = normalise_source(row["src"])
        if text not in verdict:
            verdict[text] = judge(text)
        counts[verdict[text]] += 1
        if not verdict[text]:
            kept.append(row)
    if counts[2]:
        logger.info(
            "dropped %d row(s) with a left-out source text and %d more sharing a sentence or a long run with one",
            counts[1],
            counts[2],
        )
    return kept, counts[1] + counts[2]


class _UnionFind:
    """Union-find whose root is always the smallest member, so labels do not depend on the order of unions."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        a, b = self.find(i), self.find(j)
        if a != b:
            self.parent[max(a, b)] = min(a, b)

    def labels(self) -> np.ndarray:
        return np.array([self.find(i) for i in range(len(self.parent))], dtype=int)


def connected_groups(
    rows: Sequence[dict[str, Any]], keys: Sequence[Any], *, near: NearDuplicates | None = NEAR
) -> np.ndarray:
    """A group label per row (the smallest row index of its group) such that rows sharing a key, a
    normalised source or (unless ``near`` is ``None``) a sentence or a long run (:class:`NearDuplicates`:
    a WMT23 en-de paragraph and the WMT23 sentence-level sources inside it) end up in one group, so a split
    by these labels never puts overlapping source texts on both sides.

    Union-find over the links: every key, text, sentence and run is hashed to the first row that has it and
    each later row is joined to that one, so the work is linear in the total length of the distinct texts."""
    groups = _UnionFind(len(rows))
    first_key: dict[Any, int] = {}
    first_text: dict[str, int] = {}
    for i, (row, key) in enumerate(zip(rows, keys)):
        groups.union(i, first_key.setdefault(key, i))
        groups.union(i, first_text.setdefault(normalise_source(row["src"]), i))
    if near is None or len(rows) < 2:
        return groups.labels()
    exact = groups.labels()
    first_sentence: dict[str, int] = {}
    first_run: dict[int, int] = {}
    for text, i in first_text.items():
        for sentence in near.sentences(text):
            j = first_sentence.setdefault(sentence, i)
            if j != i:
                groups.union(i, j)
        for run in near.runs(text):
            j = first_run.setdefault(run, i)
            if j != i:
                groups.union(i, j)
    labels = groups.labels()
    merged: dict[int, set[int]] = {}
    for final, before in zip(labels.tolist(), exact.tolist()):
        merged.setdefault(final, set()).add(before)
    joined = [label for label, parts in merged.items() if len(parts) > 1]
    if joined:
        logger.info(
            "%d rows in %d groups are held together by a shared sentence or a run of %d words / %d characters"
            " (not by an identical source or key)",
            int(np.isin(labels, joined).sum()),
            len(joined),
            near.words,
            near.chars,
        )
    return labels
