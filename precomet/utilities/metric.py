"""Metric moments and consistency (paper Eq. 3–5), vectorised over items.

Each function receives a campaign that is complete for ``score`` (see :func:`compute_utility`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from precomet.agreement import mean_agreement, pair_differences
from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.stats import rankdata


def metric_avg(
    campaign: Campaign, *, metric: str, budget: int | None, seed: int, options: Mapping[str, Any]
) -> np.ndarray:
    """``-mean_s score[i, s]``: items on which systems score low (difficult items) first (Eq. 3)."""
    return -campaign.score(metric).mean(axis=1)


def metric_var(
    campaign: Campaign, *, metric: str, budget: int | None, seed: int, options: Mapping[str, Any]
) -> np.ndarray:
    """Population variance (ddof=0) of the scores over systems (Eq. 4)."""
    return campaign.score(metric).var(axis=1)


def metric_cons(
    campaign: Campaign, *, metric: str, budget: int | None, seed: int, options: Mapping[str, Any]
) -> np.ndarray:
    """Agreement of each item's system ordering with the systems' means over the campaign (Eq. 5).

    ``correlation``: ``spearman`` (default), ``kendall`` (τ-b) or ``pairwise`` (share of system pairs with
    distinct campaign means that the item orders the same way, strictly). An item whose scores are all
    equal gets 0 (the correlation is undefined; 0 = "no information").
    """
    name = options["correlation"]
    if name not in CORRELATIONS:
        raise PrecometError(f"metric_cons: unknown correlation {name!r}; valid: {', '.join(CORRELATIONS)}")
    matrix = np.asarray(campaign.score(metric), dtype=float)
    return CORRELATIONS[name](matrix, matrix.mean(axis=0))


def spearman_rows(matrix: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Spearman correlation of every row of ``matrix`` with ``target`` (average ranks for ties)."""
    return _pearson_rows(rankdata(matrix, axis=1), rankdata(target))


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    denom = np.sqrt((xc**2).sum(axis=1) * (yc**2).sum())
    num = xc @ yc
    out = np.zeros(len(x))
    ok = denom > 1e-12 * max(1.0, float(np.abs(num).max(initial=0.0)))
    out[ok] = num[ok] / denom[ok]
    return np.clip(out, -1.0, 1.0)


def _pair_signs(matrix: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.triu_indices(matrix.shape[1], k=1)
    return np.sign(matrix[:, a] - matrix[:, b]), np.sign(target[a] - target[b])


def kendall_rows(matrix: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Kendall τ-b of every row of ``matrix`` with ``target`` (scipy's default variant)."""
    dx, dy = _pair_signs(matrix, target)
    denom = np.sqrt((dx != 0).sum(axis=1) * float((dy != 0).sum()))
    out = np.zeros(len(matrix))
    ok = denom > 0
    out[ok] = (dx @ dy)[ok] / denom[ok]
    return out


def pairwise_rows(matrix: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Share of system pairs (with distinct ``target`` values) ordered strictly the same way by each row: the
    ``"strict"`` tie rule of :mod:`precomet.agreement` over the pairs the target separates. When ``target`` has no
    two distinct values every row gets 0.0 ("no information", as :func:`metric_cons`), not that module's 1.0."""
    truth = pair_differences(target)
    if not (truth != 0).any():
        return np.zeros(len(matrix))
    return np.asarray(mean_agreement(matrix, target, ties="strict", over="separated"))


CORRELATIONS = {"spearman": spearman_rows, "kendall": kendall_rows, "pairwise": pairwise_rows}
