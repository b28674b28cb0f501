"""System means and pairwise differences that stay unbiased when waves are chosen (AIPW over waves).

Wave ``t`` draws every still-open cell ``(i, s)`` with probability ``π_u · q_s`` (its unit's probability, then its
system's, :mod:`precomet.waves.design`), both fixed before the draw. With ``f`` a predictor of the human score fitted
on the cells judged *before* the wave (0 before any judgement), the wave's
estimate of system ``s``'s total over the pool,

    Ŷ_t(s) = Σ_known y + Σ_open f + Σ_{drawn, judged} (y − f) / (π_u · q_s · r_s),

is unbiased given everything before the wave (``r_s`` = the share of the wave's drawn cells of ``s`` that came
back judged: cells an annotator skipped are treated as missing at random within their wave and system). ``f`` is a
system's mean plus, with a metric, one slope on the metric's score of the cell (fitted within systems on the earlier
cells: the predictor of prediction-powered inference), so residuals shrink by what the metric explains. Its variance is
estimated unit by unit as ``(1 − π_u) (Σ_s c_s H_us)² + π_u Σ_s (1 − q_s r_s) c_s² H_us²`` for a contrast ``c``
(``H_us`` = the unit's weighted residuals of system ``s``). The waves' errors are martingale differences, so the
combination ``Σ λ_t Ŷ_t / Σ λ_t`` with weights fixed before each draw (``λ_t`` = the inverse of the wave's design
variance ``Σ_cells (1 − π_u q_s) / (π_u q_s)``) is unbiased with variance ``Σ λ_t² V_t / (Σ λ_t)²`` (Zrnic &
Candès 2024, "Active Statistical Inference"; Kossen et al. 2021, "Active Testing"). With every cell judged the
means are exact. With random waves it is about as precise as the plain mean with its finite-population correction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from precomet.waves.design import Design
from precomet.waves.target import full_set_se


@dataclass(frozen=True)
class Wave:
    """One drawn wave, as needed to weight its judgements (all arrays are the pool's: ``N`` items × ``S`` systems).

    ``units`` maps every item to its sampling unit (itself, or its document); ``open_units``/``unit_probability``
    are the units that still had an open cell and their inclusion probabilities; ``system_probability`` is ``q``;
    ``known`` the cells judged when the wave was drawn and ``drawn`` the cells it drew; ``predictor`` the prediction
    ``f`` of every cell (``N × S``), fitted on ``known`` only."""

    number: int
    units: np.ndarray
    open_units: np.ndarray
    unit_probability: np.ndarray
    system_probability: np.ndarray
    known: np.ndarray
    drawn: np.ndarray
    predictor: np.ndarray
    chooser: str = "random"
    weighted: bool = True  # False: a deterministic top-k wave (no valid probabilities; estimates biased)
    design: Design | None = None  # what unit_probability was computed from (None: a wave read back from a manifest)

    def unit_probabilities(self) -> np.ndarray:
        """``π`` of every unit number (0 for a unit that had no open cell)."""
        pi = np.zeros(int(self.units.max()) + 1 if len(self.units) else 0)
        pi[self.open_units] = self.unit_probability
        return pi

    def design_variance(self) -> float:
        """``Σ_open cells (1 − π_u q_s) / (π_u q_s)``: the wave's weight ``λ_t`` is its inverse."""
        cell = self.unit_probabilities()[self.units][:, None] * self.system_probability[None, :]
        open_cells = ~self.known
        with np.errstate(divide="ignore"):
            return float(((1 - cell[open_cells]) / cell[open_cells]).sum())


MIN_SLOPE_CELLS = 30
"""Judged cells before the predictor fits a slope on the metric."""


@dataclass(frozen=True)
class Predictor:
    """``f = offsets[s] + slope · (metric[i, s] − the metric's mean for s over the pool)``."""

    offsets: np.ndarray  # (S,)
    slope: float = 0.0

    def values(self, metric: np.ndarray | None, n_items: int) -> np.ndarray:
        """``f`` of every cell (``N × S``)."""
        if metric is None or self.slope == 0.0:
            return np.repeat(self.offsets[None, :], n_items, axis=0)
        return self.offsets[None, :] + self.slope * centred_metric(metric)


def centred_metric(metric: np.ndarray) -> np.ndarray:
    """A metric's ``N × S`` scores minus each system's mean over the pool; 0 where missing."""
    with np.errstate(invalid="ignore"):
        counts = (~np.isnan(metric)).sum(axis=0)
        means = np.divide(np.nansum(metric, axis=0), counts, out=np.zeros(metric.shape[1]), where=counts > 0)
    return np.nan_to_num(metric - means[None, :])


def fit_predictor(scores: np.ndarray, known: np.ndarray, metric: np.ndarray | None = None) -> Predictor:
    """The predictor of the next wave, fitted on the ``known`` cells only: per-system means (0 for a system without
    a judged cell) and, with ``metric`` and at least :data:`MIN_SLOPE_CELLS` judged cells, one slope within systems."""
    counts = known.sum(axis=0)
    y = np.where(known, scores, 0.0)
    means = np.divide(y.sum(axis=0), counts, out=np.zeros(scores.shape[1]), where=counts > 0)
    if metric is None or known.sum() < MIN_SLOPE_CELLS:
        return Predictor(means)
    x = np.where(known, centred_metric(metric), 0.0)
    x_means = np.divide(x.sum(axis=0), counts, out=np.zeros(scores.shape[1]), where=counts > 0)
    dx = np.where(known, x - x_means[None, :], 0.0)
    dy = np.where(known, y - means[None, :], 0.0)
    denominator = float((dx**2).sum())
    slope = float((dx * dy).sum()) / denominator if denominator > 0 else 0.0
    return Predictor(means - slope * x_means, slope)


@dataclass(frozen=True)
class WaveResult:
    """One wave's estimate of every system's pool total, and the variances of the contrasts asked for."""

    totals: np.ndarray  # (S,)
    variances: np.ndarray  # (K,) for the contrasts' rows
    weight: float  # λ_t (inf when the wave drew every open cell with certainty; 0: left out, a system unanswered)


def wave_result(wave: Wave, scores: np.ndarray, contrasts: np.ndarray) -> WaveResult:
    """Wave ``wave``'s estimate from the judged ``scores`` (``N × S``, NaN = not judged; cells judged later than the
    wave count only through the cells it drew)."""
    judged = ~np.isnan(scores)
    answered = wave.drawn & judged
    drawn_per_system = wave.drawn.sum(axis=0)
    response = np.divide(
        answered.sum(axis=0), drawn_per_system, out=np.ones(scores.shape[1]), where=drawn_per_system > 0
    )
    known_total = np.where(wave.known, scores, 0.0).sum(axis=0)
    open_cells = ~wave.known
    baseline = np.where(open_cells, wave.predictor, 0.0).sum(axis=0)
    pi = wave.unit_probabilities()
    qr = wave.system_probability * response
    rows = np.flatnonzero(answered.any(axis=1))
    residual = np.where(answered[rows], scores[rows] - wave.predictor[rows], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        weighted = np.where(answered[rows], residual / (pi[wave.units[rows]][:, None] * qr[None, :]), 0.0)
    unit_ids, unit_rows = np.unique(wave.units[rows], return_inverse=True)
    per_unit = np.zeros((len(unit_ids), scores.shape[1]))
    np.add.at(per_unit, unit_rows, weighted)
    totals = known_total + baseline + per_unit.sum(axis=0)
    unit_pi = pi[unit_ids]
    projected = per_unit @ contrasts.T
    single = (unit_pi[:, None] * per_unit**2 * (1 - qr)[None, :]) @ (contrasts**2).T
    variances = ((1 - unit_pi)[:, None] * projected**2).sum(axis=0) + single.sum(axis=0)
    if ((drawn_per_system > 0) & (answered.sum(axis=0) == 0)).any() or not wave.drawn.any():
        # a system none of whose drawn cells came back, or a wave that drew no cell at all (a small wave's independent
        # draws can come out empty; its variance estimate is then 0, and the stop rule read it as an exact ranking):
        # the wave knows nothing of it, so it is left out (weight 0)
        return WaveResult(totals=totals, variances=variances, weight=0.0)
    design = wave.design_variance()
    return WaveResult(totals=totals, variances=variances, weight=np.inf if design == 0 else 1.0 / design)


def pair_contrasts(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """``(pairs, contrasts)``: the ``P = S(S−1)/2`` system pairs ``(a, b)``, ``a < b``, and the ``(S + P) × S``
    contrast matrix (one row per system, then ``e_a − e_b`` per pair)."""
    a, b = np.triu_indices(n_systems, k=1)
    pairs = np.stack([a, b], axis=1)
    rows = np.zeros((len(pairs), n_systems))
    rows[np.arange(len(pairs)), a] = 1.0
    rows[np.arange(len(pairs)), b] = -1.0
    return pairs, np.vstack([np.eye(n_systems), rows])


@dataclass(frozen=True)
class Estimates:
    """System means over the whole pool and their pairwise differences, with standard errors."""

    means: np.ndarray  # (S,)
    mean_se: np.ndarray  # (S,)
    pairs: np.ndarray  # (P, 2) system positions a < b
    differences: np.ndarray  # (P,) mean_a − mean_b
    difference_se: np.ndarray  # (P,)
    exact: bool  # every cell judged: the means are the pool's own
    waves: int
    df: float = np.inf  # degrees of freedom of the standard errors: judged items − 1 (Student-t tails)
    full_se: np.ndarray | None = None  # (P,) each pair's full-set standard error s_d / √N (pair_spread); None: unknown


def combine(
    results: list[WaveResult],
    scores: np.ndarray,
    pairs: np.ndarray,
    *,
    weighted: bool = True,
    units: np.ndarray | None = None,
) -> Estimates:
    """The weighted combination of the waves' results (module docstring); exact means when every cell is judged.
    ``units`` (every item's sampling unit; default the items themselves) count the degrees of freedom.
    ``weighted=False`` (a wave was a deterministic top-k): the plain means of the judged cells, with the standard
    errors of a random sample of that size — biased, and said so wherever they are shown."""
    n_items, n_systems = scores.shape
    if n_systems == 0:  # a pool of sources whose systems no judgement has named yet
        return Estimates(np.zeros(0), np.zeros(0), pairs, np.zeros(0), np.zeros(0), False, len(results))
    if not weighted and np.isnan(scores).any():
        return plain_estimates(scores, pairs, len(results))
    if not np.isnan(scores).any():
        means = scores.mean(axis=0)
        zeros = np.zeros(len(pairs))
        return Estimates(
            means, np.zeros(n_systems), pairs, means[pairs[:, 0]] - means[pairs[:, 1]], zeros, True, len(results)
        )
    looks = len(results)
    results = [r for r in results if r.weight > 0]  # waves without an answer of some drawn system are left out
    if not results:
        nan = np.full(n_systems, np.nan)
        return Estimates(nan, nan, pairs, np.full(len(pairs), np.nan), np.full(len(pairs), np.nan), False, looks)
    weights = np.array([r.weight for r in results])
    weights = np.isinf(weights).astype(float) if np.isinf(weights).any() else weights
    weights = weights / weights.sum()
    totals = weights @ np.stack([r.totals for r in results])
    variances = (weights**2) @ np.stack([r.variances for r in results])
    means = totals / n_items
    se = np.sqrt(np.maximum(variances, 0.0)) / n_items
    differences = means[pairs[:, 0]] - means[pairs[:, 1]]
    return Estimates(
        means,
        se[:n_systems],
        pairs,
        differences,
        se[n_systems:],
        False,
        looks,
        judged_units(scores, units) - 1.0,
    )


def judged_units(scores: np.ndarray, units: np.ndarray | None) -> float:
    """Sampling units with a judged cell (at least 2, so that the degrees of freedom stay ≥ 1)."""
    judged = (~np.isnan(scores)).any(axis=1)
    count = len(np.unique(units[judged])) if units is not None else int(judged.sum())
    return float(max(count, 2))


def plain_estimates(scores: np.ndarray, pairs: np.ndarray, waves: int) -> Estimates:
    """Unweighted means of the judged cells, standard errors as for a simple random sample of the judged items
    (finite-population corrected): the estimates of a deterministic choice, biased."""
    n_items, n_systems = scores.shape
    judged = ~np.isnan(scores)
    counts = judged.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, np.nansum(scores, axis=0) / np.maximum(counts, 1), np.nan)
        fpc = np.clip(1 - counts / n_items, 0, 1)
        variance = np.nanvar(np.where(judged, scores, np.nan), axis=0, ddof=1) if judged.sum() > 1 else np.nan
        se = np.sqrt(fpc * variance / np.maximum(counts, 1))
        both = judged[:, pairs[:, 0]] & judged[:, pairs[:, 1]]
        diff = np.where(both, scores[:, pairs[:, 0]] - scores[:, pairs[:, 1]], np.nan)
        n_pair = both.sum(axis=0)
        pair_var = np.nanvar(diff, axis=0, ddof=1) if both.any() else np.full(len(pairs), np.nan)
        pair_se = np.sqrt(np.clip(1 - n_pair / n_items, 0, 1) * pair_var / np.maximum(n_pair, 1))
    df = judged_units(scores, None) - 1.0
    return Estimates(means, se, pairs, means[pairs[:, 0]] - means[pairs[:, 1]], pair_se, False, waves, df)


def pair_spread(scores: np.ndarray, waves: list[Wave], pairs: np.ndarray) -> np.ndarray:
    """Every pair's full-set standard error ``s_d / √N`` (:mod:`precomet.waves.target`) estimated from the judged
    cells: per wave, Horvitz-Thompson estimates of the pool's ``Σ d`` and ``Σ d²`` of the per-item differences ``d``
    (an item judged for both systems before the wave counts as known; one the wave completes counts with the inverse
    of the probability that it did, ``π_u ·`` the ``q`` of each of its cells still open), each unbiased given the
    waves before it; the waves combined with the weights of :func:`combine` (fixed before each draw), then
    ``s_d² = (Σ d² − (Σ d)² / N) / (N − 1)``, clipped at 0. Exact when every cell is judged; 0 before any wave."""
    n_items = scores.shape[0]
    a, b = pairs[:, 0], pairs[:, 1]
    differences = scores[:, a] - scores[:, b]
    judged = ~np.isnan(differences)
    if judged.all():
        return full_set_se(differences)
    d = np.where(judged, differences, 0.0)
    sums, weights = [], []
    for wave in waves:
        before = wave.known[:, a] & wave.known[:, b]
        completed = (wave.known | wave.drawn)[:, a] & (wave.known | wave.drawn)[:, b] & judged & ~before
        q = wave.system_probability
        probability = (
            wave.unit_probabilities()[wave.units][:, None]
            * np.where(wave.known[:, a], 1.0, q[a][None, :])
            * np.where(wave.known[:, b], 1.0, q[b][None, :])
        )
        with np.errstate(divide="ignore"):
            weight = np.where(before, 1.0, np.where(completed, 1.0 / np.where(completed, probability, 1.0), 0.0))
        sums.append(((weight * d).sum(axis=0), (weight * d**2).sum(axis=0)))
        design = wave.design_variance()
        weights.append(np.inf if design == 0 else 1.0 / design)
    if not sums or n_items < 2:
        return np.zeros(len(pairs))
    lam = np.array(weights)
    lam = np.isinf(lam).astype(float) if np.isinf(lam).any() else lam
    lam = lam / lam.sum()
    total = lam @ np.stack([s for s, _ in sums])
    square = lam @ np.stack([s for _, s in sums])
    variance = (square - total**2 / n_items) / (n_items - 1)
    return np.sqrt(np.clip(variance, 0.0, None) / n_items)
