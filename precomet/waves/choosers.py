"""Choosers: one nonnegative score per item, read before each wave is drawn (higher = more likely drawn).

* ``random`` — every open item alike;
* ``length`` — "longer source first", the control every selector must beat;
* ``prior`` — a fixed per-item utility known before any judgement (an output-based utility such as MetricVar, or
  the shipped source-based estimator's prediction), turned into ranks ``1/N … 1``;
* ``learn`` — within-campaign learning: a ridge regression, re-fitted after every wave on this campaign's judged
  items, of what makes an item worth drawing — the spread of its human scores across systems once each system's
  mean is removed (the square root of an item's contribution to the pairwise differences' variance, which is what
  an inclusion probability should be proportional to) — from item features (source length, the prior, metric mean
  and spread when metrics exist, and optionally the leading principal components of the sources' frozen encoder
  vectors, :func:`vector_features`). Until :data:`MIN_LEARNING_ITEMS` items are judged it follows the prior.

Each is a registered class (:func:`register_chooser`) that declares what it reads (:data:`READS`); a new one is one
class and one registration (docs/extending.md). The chooser never sets a probability itself:
:func:`precomet.waves.design.inclusion_probabilities` mixes its scores with the uniform floor, so every chooser keeps
the estimates unbiased.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from precomet import registration
from precomet.errors import PrecometError
from precomet.stats import rankdata

READS = ("prior", "metric", "vectors")
"""What a chooser may read besides source length: a prior utility per item, a metric's per-item mean and spread, the
sources' encoder vectors (the command computes each only for a chooser that declares it)."""
MIN_LEARNING_ITEMS = 20
"""Judged items (with at least two judged systems) before ``learn`` fits its own model."""


def as_ranks(values: np.ndarray) -> np.ndarray:
    """``values`` as ranks scaled to ``(0, 1]`` (ties share their mean rank; NaN counts as the lowest)."""
    values = np.asarray(values, dtype=float)
    filled = np.where(np.isnan(values), -np.inf, values)
    return rankdata(filled) / len(values)


def spread_targets(scores: np.ndarray, known: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(items, spread)``: the items with ≥ 2 judged systems and the standard deviation over them of the judged
    scores after removing every system's mean over the judged cells."""
    counts = known.sum(axis=0)
    means = np.divide(np.where(known, scores, 0.0).sum(axis=0), counts, out=np.zeros(scores.shape[1]), where=counts > 0)
    centred = np.where(known, scores - means[None, :], np.nan)
    usable = np.flatnonzero(known.sum(axis=1) >= 2)
    return usable, np.nanstd(centred[usable], axis=1) if len(usable) else np.zeros(0)


@dataclass
class Chooser:
    """A chooser for one pool (module docstring): ``length`` of every source, and what it declares it reads —
    ``prior`` (``N``), ``features`` (``N × F``: the metric's and the vectors' columns). A subclass sets ``name``,
    ``help``, ``reads`` (a subset of :data:`READS`) and ``needs_prior``, implements :meth:`scores`, and registers
    with :func:`register_chooser`."""

    length: np.ndarray
    prior: np.ndarray | None = None
    features: np.ndarray | None = None
    label: str = field(default="")

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    reads: ClassVar[frozenset[str]] = frozenset()
    needs_prior: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.needs_prior and self.prior is None:
            raise PrecometError(f"the {self.name} chooser needs a prior utility per item", param="chooser")
        if not self.label:
            self.label = self.name

    def scores(self, judged: np.ndarray, known: np.ndarray) -> np.ndarray:
        """Scores (≥ 0) of every item of the pool, from the judgements ``judged`` on the ``known`` cells."""
        raise NotImplementedError


CHOOSERS: dict[str, type[Chooser]] = {}
"""The registered choosers by name (:func:`register_chooser`); the command's ``--chooser`` choices come from it."""


def register_chooser(cls: type[Chooser], *, replace: bool = False) -> type[Chooser]:
    """Register a :class:`Chooser` subclass under its ``name`` (the rule of :mod:`precomet.registration`; usable as a
    class decorator). What it reads must be among :data:`READS`."""
    if not set(cls.reads) <= set(READS):
        raise PrecometError(f"chooser {cls.name!r} reads {sorted(cls.reads)}: expected some of {', '.join(READS)}")
    registration.register(CHOOSERS, cls.name, cls, kind="chooser", replace=replace)
    return cls


def make_chooser(
    name: str, length: np.ndarray, *, prior: np.ndarray | None = None, features: np.ndarray | None = None
) -> Chooser:
    """The registered chooser ``name`` over a pool (what it does not read is dropped)."""
    if name not in CHOOSERS:
        raise PrecometError(f"unknown chooser {name!r}; choose one of {', '.join(CHOOSERS)}", param="chooser")
    cls = CHOOSERS[name]
    return cls(
        np.asarray(length, dtype=float),
        prior=prior if "prior" in cls.reads else None,
        features=features if {"metric", "vectors"} & cls.reads else None,
    )


@register_chooser
class RandomChooser(Chooser):
    name = "random"
    help = "every open item alike"

    def scores(self, judged: np.ndarray, known: np.ndarray) -> np.ndarray:
        return np.ones(len(self.length))


@register_chooser
class LengthChooser(Chooser):
    name = "length"
    help = "longer source first (the control every selector must beat)"

    def scores(self, judged: np.ndarray, known: np.ndarray) -> np.ndarray:
        return as_ranks(self.length)


@register_chooser
class PriorChooser(Chooser):
    name = "prior"
    help = "a fixed utility per item known before any judgement (--utility or --utility-file), as ranks"
    reads = frozenset({"prior"})
    needs_prior = True

    def scores(self, judged: np.ndarray, known: np.ndarray) -> np.ndarray:
        assert self.prior is not None  # needs_prior: checked when made
        return as_ranks(self.prior)


@register_chooser
class LearnChooser(Chooser):
    name = "learn"
    help = "within-campaign learning: a ridge regression of how much an item separates the systems, from the prior"
    reads = frozenset(READS)
    ridge: ClassVar[float] = 1.0

    def scores(self, judged: np.ndarray, known: np.ndarray) -> np.ndarray:
        n = len(self.length)
        start = as_ranks(self.prior) if self.prior is not None else as_ranks(self.length)
        items, spread = spread_targets(judged, known)
        if len(items) < MIN_LEARNING_ITEMS or float(np.std(spread)) == 0.0:
            return start
        x = self._design()
        mu, sd = x[items].mean(axis=0), x[items].std(axis=0)
        sd[sd == 0] = 1.0
        z = (x - mu) / sd
        z1 = np.hstack([np.ones((n, 1)), z])
        penalty = self.ridge * np.eye(z1.shape[1])
        penalty[0, 0] = 0.0
        coef = np.linalg.solve(z1[items].T @ z1[items] + penalty, z1[items].T @ spread)
        predicted = z1 @ coef
        floor = max(float(np.median(spread)) * 0.1, 1e-12)
        return np.maximum(predicted, floor)

    def _design(self) -> np.ndarray:
        columns = [np.log1p(self.length)]
        if self.prior is not None:
            columns.append(as_ranks(self.prior))
        if self.features is not None:
            columns.extend(np.asarray(self.features, dtype=float).T)
        return np.nan_to_num(np.stack(columns, axis=1))


def metric_features(scores: np.ndarray) -> np.ndarray:
    """Per-item mean and standard deviation of a metric's ``N × S`` scores (NaN-aware; 0 where none)."""
    with warnings.catch_warnings():  # an item without any score: NaN, then 0 (numpy warns of the empty slice)
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(scores, axis=1)
        spread = np.nanstd(scores, axis=1)
    return np.nan_to_num(np.stack([mean, spread], axis=1))


VECTOR_COMPONENTS = 16
"""Principal components of the source vectors that ``learn`` reads (few: it fits on a few hundred judged items)."""


def vector_features(vectors: np.ndarray, components: int = VECTOR_COMPONENTS) -> np.ndarray:
    """The sources' frozen encoder vectors (``N × d``) reduced to their leading principal components (``N × k``)."""
    vectors = np.asarray(vectors, dtype=float)
    centred = vectors - vectors.mean(axis=0)
    k = max(0, min(components, *centred.shape))
    if k == 0:
        return np.zeros((len(vectors), 0))
    left, singular, _ = np.linalg.svd(centred, full_matrices=False)
    return left[:, :k] * singular[:k]
