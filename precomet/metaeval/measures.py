"""System-level comparisons of a subset with the full set: rounded system means, the Dice coefficient of two
clusters, Kendall τ-b, Pearson, Spearman and pairwise accuracy."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from precomet.agreement import mean_agreement
from precomet.utilities.metric import kendall_rows


def system_means(scores: np.ndarray) -> np.ndarray:
    """Column means rounded to 10 decimals, so systems with equal means tie whatever the summation order."""
    return np.round(np.asarray(scores, dtype=float).mean(axis=0), 10)


def dice(a: Iterable[int], b: Iterable[int]) -> float:
    """Sørensen–Dice coefficient of two sets."""
    a, b = set(a), set(b)
    return 2 * len(a & b) / (len(a) + len(b))


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall τ-b of two short vectors (O(S²), equals scipy's); 0 when either is constant (as the peer)."""
    return float(kendall_rows(np.asarray(x, dtype=float)[None, :], np.asarray(y, dtype=float))[0])


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r; 0 when either vector is constant."""
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denominator) if denominator > 0 else 0.0


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman ρ (Pearson of average ranks); 0 when either vector is constant."""
    from scipy.stats import rankdata

    return pearson(rankdata(x), rankdata(y))


def pairwise_accuracy(sub_means: np.ndarray, full_means: np.ndarray) -> float:
    """Share of system pairs ordered the same way (``a < b`` on both or on neither), as subset2evaluate: the
    ``"subset2evaluate"`` tie rule of :mod:`precomet.agreement` over every pair (1.0 with fewer than two systems)."""
    return float(mean_agreement(sub_means, full_means, ties="subset2evaluate"))
