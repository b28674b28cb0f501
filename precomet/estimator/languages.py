"""Which languages sources are in, so that an estimator can say where it was never trained.

A checkpoint records the language profile of its distinct training and dev sources (``training_languages`` in
``precomet.json``, :func:`language_profile`); ``predict`` and ``select --checkpoint`` identify the languages of
the sources they score and warn, with the share of sources, when some are in languages the estimator was not
trained on (:func:`unseen_language_warning`, :func:`report_languages`).

Languages are identified offline by py3langid (a maintained fork of langid.py, its model inside the wheel), one
ISO 639-1 code per source (``de``, ``hi``, ``he``, ``zh``, ...; regional varieties under their language,
:data:`MACROLANGUAGES`; ISO 639-3 for the few languages without a two-letter code). A source with fewer than
:data:`MIN_LETTERS` letters, one the identifier is not sure about (:data:`MIN_CONFIDENCE`) or one it calls "no
linguistic content" is :data:`UNDETERMINED` (``und``): it is counted in the profile but never called unseen. A
large pool is identified on a sample of :data:`SAMPLE_SIZE` sources (:class:`SourceSample`: drawn at random but
deterministically, the same sample whatever the chunking).
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

IDENTIFIER = "py3langid"
"""The language identifier (its version is recorded with every profile)."""

SAMPLE_SIZE = 2000
"""Sources identified at most for the sources scored by ``predict`` / ``select`` (about 0.5 s,
benchmarks/results/coverage.md; and 0.6 s to load the identifier's model once)."""

TRAINING_SAMPLE_SIZE = 20000
"""Distinct sources identified at most for a checkpoint's ``training_languages`` (about 3 s)."""

TRAINED_SHARE = 0.01
"""A language counts as trained on when at least this share (1 %) of the training profile is in it: rarer
languages are noise of the identifier or stray lines, on which the estimator learnt nothing."""

WARN_SHARE = 0.01
"""The unseen-language warning is given when at least this share (1 %) of the scored sources are in languages
not trained on; below it, the identifier's own mistakes on short sentences would raise it on clean input."""

MIN_LETTERS = 3
"""Sources with fewer letters (numbers, symbols, ``OK``) are :data:`UNDETERMINED`."""

UNDETERMINED = "und"
"""The code of a source whose language is not determined (ISO 639-2 "undetermined")."""

MIN_CONFIDENCE = 0.5
"""A source is :data:`UNDETERMINED` unless the identifier gives its language (summed over its varieties) at least
this probability: on the WMT23 en-de sources the identifier's mistakes ("No idea." as Basque, "(PERSON7) Okay."
as Tagalog: 1.6 % of the sources) have a probability below 0.15 but one (an English line as Nigerian Pidgin)."""

MACROLANGUAGES = {
    "wuu": "zh",
    "yue": "zh",
    "arz": "ar",
    "ary": "ar",
    "hbo": "he",
    "grc": "el",
    "uzs": "uz",
    "sdh": "ku",
}
"""py3langid's regional and historical varieties counted as the language they belong to: it calls 5-6 % of the
WMT22/23 zh-en sources Wu Chinese (``wuu``) or Cantonese (``yue``), which an estimator trained on Chinese reads
like the rest."""

_NO_LANGUAGE = frozenset({"zxx"})
"""py3langid's codes that name no language ("no linguistic content"): counted as undetermined."""

_SHOWN = 6
"""Languages or campaigns listed at most in a message (the rest as "and N more")."""


def identifier_version() -> str:
    """``"py3langid 0.4.0"``: the identifier and its installed version."""
    try:
        return f"{IDENTIFIER} {version(IDENTIFIER)}"
    except PackageNotFoundError:  # pragma: no cover - a declared dependency
        return IDENTIFIER


@functools.cache
def language_identifier() -> Any:
    """py3langid's identifier with probabilities (its own instance: py3langid's module-level one is left as is)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def language_of(text: str) -> str:
    """The ISO 639-1 code of ``text``'s language (varieties counted as their :data:`MACROLANGUAGES`), or
    :data:`UNDETERMINED` when the text is too short or the identifier is not sure (:data:`MIN_CONFIDENCE`)."""
    if sum(ch.isalpha() for ch in text) < MIN_LETTERS:
        return UNDETERMINED
    grouped: dict[str, float] = {}
    for code, probability in language_identifier().rank(text):  # every language it knows, with its probability
        name = MACROLANGUAGES.get(str(code), str(code))
        grouped[name] = grouped.get(name, 0.0) + float(probability)
    code = max(grouped, key=lambda name: grouped[name])
    return UNDETERMINED if code in _NO_LANGUAGE or grouped[code] < MIN_CONFIDENCE else code


def identify(sources: Iterable[str]) -> dict[str, int]:
    """How many of ``sources`` (all of them, no sampling) are in each language, most frequent first (ties by
    code); undetermined sources are counted under :data:`UNDETERMINED`."""
    counts = Counter(language_of(str(s)) for s in sources)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _priority(positions: np.ndarray, seed: int) -> np.ndarray:
    """A pseudo-random 64-bit key per position (splitmix64 of position and seed): the sample is the positions
    with the smallest keys, so it depends on the positions alone, not on how the stream was chunked."""
    with np.errstate(over="ignore"):
        z = positions.astype(np.uint64) + np.uint64(((seed + 1) * 0x9E3779B97F4A7C15) % 2**64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class SourceSample:
    """Up to ``limit`` sources of a stream drawn uniformly without replacement, deterministically (``seed``): the
    same sources whatever the chunks the stream comes in. Feed it with :meth:`add` or :meth:`follow`; the
    sample (in stream order) is :attr:`sources`, the stream's length :attr:`total`."""

    def __init__(self, limit: int = SAMPLE_SIZE, *, seed: int = 0) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        self.limit = limit
        self.seed = seed
        self.total = 0
        self._keys = np.empty(0, dtype=np.uint64)
        self._positions = np.empty(0, dtype=np.int64)
        self._texts: list[str] = []

    def add(self, sources: Sequence[str] | np.ndarray) -> None:
        """Take the next ``len(sources)`` sources of the stream into account."""
        positions = np.arange(self.total, self.total + len(sources), dtype=np.int64)
        self.total += len(sources)
        keys = _priority(positions, self.seed)
        if len(self._keys) >= self.limit:  # only keys below the current largest kept one can enter
            chosen = np.flatnonzero(keys < self._keys.max())
        else:
            chosen = np.arange(len(sources))
        if not len(chosen):
            return
        self._keys = np.concatenate([self._keys, keys[chosen]])
        self._positions = np.concatenate([self._positions, positions[chosen]])
        self._texts.extend(str(sources[int(i)]) for i in chosen)
        if len(self._keys) > self.limit:
            keep = np.sort(np.argsort(self._keys, kind="stable")[: self.limit])
            self._keys, self._positions = self._keys[keep], self._positions[keep]
            self._texts = [self._texts[int(i)] for i in keep]

    def follow(self, chunks: Iterable[tuple[Any, Sequence[str]]]) -> Iterator[tuple[Any, Sequence[str]]]:
        """Pass ``(ids, sources)`` chunks through unchanged, adding each chunk's sources on the way."""
        for ids, sources in chunks:
            self.add(sources)
            yield ids, sources

    @property
    def sources(self) -> list[str]:
        """The sampled sources, in stream order."""
        return list(self._texts)

    @property
    def sampled(self) -> bool:
        """Whether some sources of the stream were left out."""
        return self.total > len(self._texts)

    def profile(self) -> dict[str, Any]:
        """:func:`language_profile` of the sample."""
        return _profile(identify(self._texts), total=self.total)


def _profile(counts: dict[str, int], *, total: int) -> dict[str, Any]:
    sample = sum(counts.values())
    return {
        "identifier": identifier_version(),
        "sources": total,
        "sample": sample,
        "counts": counts,
        "shares": {code: round(n / sample, 4) for code, n in counts.items()},
    }


def language_profile(sources: Iterable[str], *, limit: int = SAMPLE_SIZE, seed: int = 0) -> dict[str, Any]:
    """The languages of ``sources``: ``{"identifier", "sources", "sample", "counts", "shares"}`` with the
    identifier and its version, the number of sources, the number identified (at most ``limit``, a
    :class:`SourceSample`), the count per ISO 639-1 code (:func:`identify`, undetermined as ``und``) and each
    code's share of the sample (4 decimals)."""
    sample = SourceSample(limit, seed=seed)
    sample.add(list(sources))
    return sample.profile()


def training_profile(sources: Iterable[str]) -> dict[str, Any]:
    """:func:`language_profile` of the distinct training and dev sources (the checkpoint's ``training_languages``;
    at most :data:`TRAINING_SAMPLE_SIZE` identified)."""
    return language_profile(dict.fromkeys(sources), limit=TRAINING_SAMPLE_SIZE)


def _percent(share: float) -> str:
    value = 100 * share
    return f"{value:.0f} %" if value >= 1 or value == 0 else f"{value:.1g} %"


def _listing(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown if len(names) <= _SHOWN else f"{shown} and {len(names) - _SHOWN} more"


def _shares(profile: Mapping[str, Any]) -> dict[str, float]:
    counts = profile.get("counts") or {}
    sample = sum(counts.values())
    return {code: n / sample for code, n in counts.items()} if sample else {}


def trained_languages(profile: Mapping[str, Any]) -> dict[str, float]:
    """The languages of a training profile at or above :data:`TRAINED_SHARE` with their shares, most frequent
    first (never :data:`UNDETERMINED`)."""
    shares = _shares(profile)
    kept = {c: s for c, s in shares.items() if c != UNDETERMINED and s >= TRAINED_SHARE}
    return dict(sorted(kept.items(), key=lambda item: (-item[1], item[0])))


def describe(profile: Mapping[str, Any]) -> str:
    """``"de 98 %, en 2 %"``: the languages of a profile with their shares, most frequent first."""
    shares = sorted(_shares(profile).items(), key=lambda item: (-item[1], item[0]))
    return _listing([f"{code} {_percent(share)}" for code, share in shares]) or "none"


def _sampled_note(profile: Mapping[str, Any]) -> str:
    sample, total = int(profile.get("sample", 0)), int(profile.get("sources", 0))
    if total <= sample:
        return ""
    return f" (languages identified on {sample:,} of the {total:,} sources, drawn at random)"


def unseen_language_warning(
    inputs: Mapping[str, Any], trained: Mapping[str, Any], *, what: str = "the estimator"
) -> str | None:
    """One warning line when at least :data:`WARN_SHARE` of the sources of profile ``inputs`` are in languages
    ``what`` was not trained on (below :data:`TRAINED_SHARE` of the training profile ``trained``), naming the
    unseen languages with their shares and the languages it was trained on; ``None`` otherwise. Undetermined
    sources are never unseen."""
    known = trained_languages(trained)
    shares = _shares(inputs)
    unseen = {c: s for c, s in shares.items() if c != UNDETERMINED and c not in known}
    total = sum(unseen.values())
    if not unseen or total < WARN_SHARE:
        return None
    listed = [f"{c} {_percent(s)}" for c, s in sorted(unseen.items(), key=lambda item: (-item[1], item[0]))]
    trained_on = _listing([f"{c} ({_percent(s)})" for c, s in known.items()]) or "no identified language"
    return (
        f"{_percent(total)} of the sources scored by {what} ({_listing(listed)}) are in languages it was never"
        f" trained on; it was trained on {trained_on}, so its utilities there are untested{_sampled_note(inputs)}"
    )


def no_record_warning(meta: Mapping[str, Any], inputs: Mapping[str, Any], *, what: str) -> str:
    """The warning for a checkpoint without ``training_languages``: the campaigns it was trained on (from
    ``training_data``) and the languages of the sources scored."""
    data = meta.get("training_data")
    campaigns = data.get("campaigns") if isinstance(data, dict) else None
    names = [str(c) for c in campaigns] if isinstance(campaigns, list) else []
    trained_on = f"it was trained on {_listing(names)}" if names else "nor the data it was trained on"
    return (
        f"{what} does not record its training languages; {trained_on}; the languages of the sources scored:"
        f" {describe(inputs)}{_sampled_note(inputs)}"
    )


def report_languages(meta: Mapping[str, Any], inputs: Mapping[str, Any], *, what: str) -> str | None:
    """Log (warning) the sources of profile ``inputs`` that ``what``, the estimator of checkpoint metadata
    ``meta``, was not trained on (:func:`unseen_language_warning`), or that ``meta`` does not record its
    training languages (:func:`no_record_warning`); the languages alone at INFO otherwise. Returns the warning."""
    trained = meta.get("training_languages")
    message = no_record_warning(meta, inputs, what=what) if trained is None else None
    if trained is not None:
        message = unseen_language_warning(inputs, trained, what=what)
    if message:
        logger.warning(message)
    else:
        logger.info("the sources scored by %s are in %s%s", what, describe(inputs), _sampled_note(inputs))
    return message
