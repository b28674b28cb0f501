"""Item difficulty from sparse, noisy score cells: an additive item + system model (``item_effect``).

Crowd DA scores 1–2 judgements per cell and not every system on every item, so a per-item mean over the scored
systems (MetricAvg on the complete items, or a NaN-mean) depends on *which* systems happened to be scored: an
item judged only on the strong systems looks easy. The model

    score[i, s] = mu + a[i] + b[s] + noise,   var(noise) = sigma^2 / w[i, s]

is fitted by weighted least squares on the scored cells only (``w`` = the number of judgements behind each cell
when the campaign has them — ``<metric>_n``, e.g. ``human_n`` of the WMT crowd DA — else 1), with a ridge
penalty ``lam * sum(a^2)`` on the item effects: their best linear unbiased predictor under a random-item model.
The default shrinkage estimates ``lam = sigma^2 / tau^2`` by moments (``sigma^2`` from the unpenalised fit's
residuals, ``tau^2`` = the variance of its item effects minus their mean sampling variance), so an item seen in
few cells is pulled toward the average instead of being ranked by its noise. The utility is ``-a[i]`` (items the
systems do badly on first, as MetricAvg); an item without a scored cell gets NaN.

On a complete matrix with equal weights the ranking equals MetricAvg's, whatever the shrinkage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError

OPTIONS = {"shrinkage": None, "weights": "auto"}
"""``shrinkage``: ``None`` (or ``"auto"``) estimates it by moments, a number >= 0 fixes it; ``weights``: ``"auto"``
(judgement counts when the campaign has them) or ``"none"``."""
_MAX_SWEEPS = 1000


def item_effect(
    campaign: Campaign, *, metric: str, budget: int | None, seed: int, options: Mapping[str, Any]
) -> np.ndarray:
    """``-a[i]`` of the additive model above (NaN for an item with no scored cell)."""
    scores = np.asarray(campaign.score(metric), dtype=float)
    weights = _weights(campaign, metric, scores, options["weights"])
    effects = fit_item_effects(scores, weights, shrinkage=options["shrinkage"])
    return -effects


def fit_item_effects(scores: np.ndarray, weights: np.ndarray, *, shrinkage: Any = None) -> np.ndarray:
    """Item effects ``a`` of the weighted additive model on the cells where ``scores`` is not NaN (NaN for rows
    with no such cell); ``shrinkage`` is ``None``/``"auto"`` (estimated) or a ridge weight ``lam >= 0``."""
    return fit_additive(scores, weights, shrinkage=shrinkage)[0]


def fit_additive(scores: np.ndarray, weights: np.ndarray, *, shrinkage: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)``: the item effects (as :func:`fit_item_effects`) and the system effects of the model."""
    observed = ~np.isnan(scores) & (weights > 0)
    w = np.where(observed, weights, 0.0)
    y = np.where(observed, scores, 0.0)
    if not observed.any():
        raise PrecometError("item_effect: no scored cell")
    if shrinkage is None or shrinkage == "auto":
        unpenalised, _, residual_var = _fit(y, w, 0.0)
        lam = _moment_shrinkage(unpenalised, residual_var, w)
    else:
        lam = _check_shrinkage(shrinkage)
    effects, systems, _ = _fit(y, w, lam)
    effects[w.sum(axis=1) == 0] = np.nan
    systems[w.sum(axis=0) == 0] = np.nan
    return effects, systems


def _fit(y: np.ndarray, w: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Backfitting (exact coordinate descent on a convex quadratic) until the effects stop moving; returns the
    item and system effects and the residual variance per unit weight."""
    item_w, system_w = w.sum(axis=1), w.sum(axis=0)
    mu = float((w * y).sum() / w.sum())
    a, b = np.zeros(y.shape[0]), np.zeros(y.shape[1])
    scale = max(float(np.sqrt((w * (y - mu) ** 2).sum() / w.sum())), 1e-12)
    for _ in range(_MAX_SWEEPS):
        b_new = _ratio((w * (y - mu - a[:, None])).sum(axis=0), system_w)
        a_new = _ratio((w * (y - mu - b_new[None, :])).sum(axis=1), item_w + lam)
        mu_new = float((w * (y - a_new[:, None] - b_new[None, :])).sum() / w.sum())
        moved = max(np.abs(a_new - a).max(), np.abs(b_new - b).max(), abs(mu_new - mu))
        a, b, mu = a_new, b_new, mu_new
        if moved < 1e-10 * scale:
            break
    residual = np.where(w > 0, y - mu - a[:, None] - b[None, :], 0.0)
    dof = int((w > 0).sum()) - int((item_w > 0).sum()) - int((system_w > 0).sum()) + 1
    residual_var = float((w * residual**2).sum() / dof) if dof > 0 else 0.0
    return a, b, residual_var


def _moment_shrinkage(effects: np.ndarray, residual_var: float, w: np.ndarray) -> float:
    """``sigma^2 / tau^2``: ``tau^2`` = variance of the unpenalised item effects minus their mean sampling variance
    (``sigma^2 / W_i``); 0 (no shrinkage) when the residuals carry no noise estimate."""
    item_w = w.sum(axis=1)
    scored = item_w > 0
    if residual_var <= 0 or scored.sum() < 2:
        return 0.0
    spread = float(np.var(effects[scored]))
    sampling = float(np.mean(residual_var / item_w[scored]))
    tau2 = max(spread - sampling, 1e-3 * spread, 1e-12)
    return residual_var / tau2


def _weights(campaign: Campaign, metric: str, scores: np.ndarray, how: Any) -> np.ndarray:
    if how == "none":
        return np.ones_like(scores)
    if how != "auto":
        raise PrecometError(f"item_effect: weights must be 'auto' or 'none', got {how!r}")
    counts = campaign.scores.get(f"{metric}_n")
    if counts is None:
        return np.ones_like(scores)
    counts = np.asarray(counts, dtype=float)
    bad = ~np.isnan(counts) & ((counts < 0) | (counts != np.round(counts)))
    if bad.any():
        item, system = np.argwhere(bad)[0]
        raise PrecometError(
            f"item_effect: {metric}_n counts the judgements behind each cell and must be a whole number >= 0; item"
            f" {campaign.ids[item]!r}, system {campaign.systems[system]!r} has {float(counts[item, system]):g}"
            f" ({int(bad.sum())} such cell(s))"
        )
    return np.where(np.isnan(counts), np.where(np.isnan(scores), 0.0, 1.0), counts)


def _check_shrinkage(value: Any) -> float:
    try:
        lam = float(value)
    except (TypeError, ValueError):
        lam = float("nan")
    if not np.isfinite(lam) or lam < 0:
        raise PrecometError(f"item_effect: shrinkage must be 'auto' or a number >= 0, got {value!r}")
    return lam


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros_like(num)
    np.divide(num, den, out=out, where=den > 0)
    return out
