"""How a wave is drawn: inclusion probabilities fixed before the draw, with a floor, and a Poisson draw.

Every unit (an item, or a whole document) still holding an unjudged cell gets an inclusion probability

    π_u = min(1, c · (floor · ū + (1 − floor) · u_u))

from its chooser score ``u_u ≥ 0`` (``ū`` their mean), with ``c`` solved so that the expected size of the wave,
``Σ π_u · w_u`` (``w`` = items, cells or seconds of the unit), is the wave's budget. The floor keeps every
probability above ``c · floor · ū > 0``: no unit is ever impossible to draw, which is what keeps the
inverse-probability weighted estimates of :mod:`precomet.waves.estimate` unbiased. Units are then drawn
independently (Poisson sampling), so the probabilities are exactly the ones recorded, and the wave's size is random
around its budget (standard deviation below √budget units).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from precomet.errors import PrecometError

DEFAULT_FLOOR = 0.2
"""Share of every wave spread uniformly over the units still open (the probabilities' floor)."""


def inclusion_probabilities(
    scores: np.ndarray, weights: np.ndarray, budget: float, *, floor: float = DEFAULT_FLOOR
) -> np.ndarray:
    """Inclusion probabilities (see the module docstring) of units with chooser ``scores`` (≥ 0, finite) and sizes
    ``weights`` (> 0), whose expected total size is ``budget`` (every unit, π = 1, when the budget covers them all)."""
    scores = np.asarray(scores, dtype=float)
    weights = np.asarray(weights, dtype=float)
    if scores.shape != weights.shape or scores.ndim != 1:
        raise PrecometError(
            f"scores and weights: expected two arrays of one length, got {scores.shape}, {weights.shape}"
        )
    if not 0 < floor <= 1:
        raise PrecometError(f"floor={floor!r}: expected a share in (0, 1]", param="floor")
    if not np.isfinite(scores).all() or (scores < 0).any():
        raise PrecometError("chooser scores must be finite and >= 0")
    if not np.isfinite(weights).all() or (weights <= 0).any():
        raise PrecometError("unit sizes must be finite and > 0")
    if not np.isfinite(budget) or budget <= 0:
        raise PrecometError(f"budget={budget!r}: expected a wave size > 0", param="size")
    if budget >= weights.sum():
        return np.ones(len(scores))
    mean = scores.mean()
    shape = floor * mean + (1 - floor) * scores if mean > 0 else np.ones(len(scores))
    low, high = 0.0, 1.0 / shape.min()  # at high every unit has π = 1
    for _ in range(200):  # bisection on c: the expected size is monotone in it
        c = (low + high) / 2
        if (np.minimum(1.0, c * shape) * weights).sum() < budget:
            low = c
        else:
            high = c
        if high - low <= 1e-12 * high:
            break
    return np.minimum(1.0, high * shape)


def poisson_draw(probabilities: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Positions drawn, each independently with its probability (Poisson sampling)."""
    return np.flatnonzero(rng.random(len(probabilities)) < probabilities)


def unit_probabilities(
    scores: np.ndarray, sizes: np.ndarray, budget: float, *, floor: float = DEFAULT_FLOOR, top_k: bool = False
) -> np.ndarray:
    """The inclusion probability of every open unit of a wave: :func:`inclusion_probabilities`, or with ``top_k`` 1
    for the highest-scoring units whose sizes fill the budget (at least one) and 0 for the others."""
    if not top_k:
        return inclusion_probabilities(scores, sizes, budget, floor=floor)
    order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")
    take = order[: max(1, int(np.searchsorted(np.cumsum(np.asarray(sizes, dtype=float)[order]), budget, side="right")))]
    probability = np.zeros(len(order))
    probability[take] = 1.0
    return probability


@dataclass(frozen=True)
class Design:
    """What a wave's inclusion probabilities are computed from, recorded with the wave so that a manifest's
    probabilities can be recomputed when it is read: the chooser's score and the size of every open unit (in the
    wave size's kind), the wave's budget, the floor, and whether the wave took the top units."""

    unit_score: np.ndarray
    unit_size: np.ndarray
    budget: float
    floor: float = DEFAULT_FLOOR
    top_k: bool = False

    def probabilities(self) -> np.ndarray:
        """The probabilities this design gives (:func:`unit_probabilities`)."""
        return unit_probabilities(self.unit_score, self.unit_size, self.budget, floor=self.floor, top_k=self.top_k)
