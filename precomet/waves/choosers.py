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

The chooser never sets a probability itself: :func:`precomet.waves.design.inclusion_probabilities` mixes its scores
with the uniform floor, so every chooser keeps the estimates unbiased.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from precomet.errors import PrecometError
from precomet.stats import rankdata

CHOOSERS = ("random", "length", "prior", "learn")
"""The choosers' names (``prior`` and ``learn`` read a prior utility; ``learn`` falls back on length without one)."""
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
    """A chooser (module docstring) for one pool: ``features`` (``N × F``) for ``learn``, ``prior`` (``N``)."""

    name: str
    length: np.ndarray
    prior: np.ndarray | None = None
    features: np.ndarray | None = None
    ridge: float = 1.0
    label: str = field(default="")

    def __post_init__(self) -> None:
        if self.name not in CHOOSERS:
            raise PrecometError(f"unknown chooser {self.name!r}; choose one of {', '.join(CHOOSERS)}", param="chooser")
        if self.name == "prior" and self.prior is None:
            raise PrecometError("the prior chooser needs a prior utility per item", param="chooser")
        if not self.label:
            self.label = self.name

    def scores(self, judged: np.ndarray, known: np.ndarray) -> np.ndarray:
        """Scores of every item of the pool, from the judgements ``judged`` on the ``known`` cells."""
        n = len(self.length)
        if self.name == "random":
            return np.ones(n)
        if self.name == "length":
            return as_ranks(self.length)
        start = as_ranks(self.prior) if self.prior is not None else as_ranks(self.length)
        if self.name == "prior":
            return start
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
