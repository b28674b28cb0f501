"""When to stop: the predicted pairwise agreement of the current ranking with the full test set's.

For each system pair the estimated difference ``D̂`` and its standard error give ``z = |D̂| / se`` and the
probability that the full test set orders the pair the other way, ``p = T_df(−z)`` (Student-t with the judged
items − 1 degrees of freedom, so that the first small waves do not claim a normal's certainty; ``p = 0`` when the
pair's cells are all judged).

* **expected** agreement: ``mean over pairs of 1 − p`` — calibrated on average, no guarantee for one campaign;
* **guaranteed** lower bound: the ``δ_t``-quantile of the agreement between the current order and full-test-set
  means drawn from the estimates' joint Student-t distribution (same degrees of freedom; the systems' covariance,
  so pairs that share a system err together; Monte Carlo with a fixed seed, at least ``20 / δ_t`` draws).
  ``δ_t`` spends ``1 − confidence`` over the looks (a union bound): :data:`PLANNED_SHARE` of it evenly over the
  ``planned`` looks that exhaust the pool at the wave size, the rest over any later look ``k`` (a random wave size
  can need more) as ``6 / (π² k²)`` of it. So the guarantee holds however many waves are looked at and whenever
  the campaign stops (optional stopping);
* **decided** pairs: those a Holm step-down test decides at level ``δ_t`` (every one ordered as in the full test set
  with probability at least ``1 − δ_t``).

The agreement is the :class:`~precomet.waves.target.Target`'s: over all pairs (a pair tied exactly in the full test
set agrees with any order), or over the pairs the full test set separates — then each draw also decides which pairs
are ties (its full-set difference against the pair's estimated tie width), a tie cannot be wrong and the share is
over the draw's separated pairs, so a pair near its width counts as wrong whenever a draw puts it beyond the width on
the other side. Under the all-pairs target, ties cost annotation, never agreement: a tied pair is never decided
before every cell is judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import stdtr

from precomet.agreement import disagreement
from precomet.errors import PrecometError
from precomet.waves.estimate import Estimates
from precomet.waves.target import Target

PLANNED_SHARE = 0.9
"""Share of the error level spent on the planned looks (the rest on looks beyond them)."""
RULES = ("guaranteed", "expected")
"""Stop rules: the agreement's lower bound (default) or its expectation reaches the target."""


def wave_level(confidence: float, waves: int, planned: int, *, anytime: bool = True) -> float:
    """``δ_t``: the error level spent on the look after ``waves`` waves when ``planned`` looks exhaust the pool.
    ``anytime=False`` spends the whole level on every look: valid for one look fixed in advance only — an ablation
    that measures what the guarantee under optional stopping costs, never a stop rule to run a campaign on."""
    alpha, planned, waves = 1 - confidence, max(planned, 1), max(waves, 1)
    if not anytime:
        return alpha
    if waves <= planned:
        return PLANNED_SHARE * alpha / planned
    return (1 - PLANNED_SHARE) * alpha * 6 / (math.pi**2 * (waves - planned) ** 2)


def system_covariance(estimates: Estimates) -> np.ndarray:
    """The ``S × S`` covariance of the system means, from their variances and the pairs' (clipped to be PSD)."""
    v = estimates.mean_se**2
    cov = np.diag(v)
    a, b = estimates.pairs[:, 0], estimates.pairs[:, 1]
    off = (v[a] + v[b] - estimates.difference_se**2) / 2
    cov[a, b] = off
    cov[b, a] = off
    values, vectors = np.linalg.eigh(cov)
    return (vectors * np.clip(values, 0, None)) @ vectors.T


def agreement_lower_bound(
    estimates: Estimates,
    level: float,
    *,
    seed: int = 0,
    target: Target | None = None,
    quick: bool = False,
    excuse_ties: bool = False,
) -> tuple[float, float]:
    """``(bound, mean)``: the ``level``-quantile and the mean of the agreement under ``target`` (default: all pairs)
    with full-test-set means drawn around the estimates (module docstring). ``quick``: a few thousand draws, for the
    mean only (the bound is then only as good as the draws). ``excuse_ties`` is an ABLATION, not a valid bound: a
    pair whose estimated difference lies within its tie width is never counted wrong (a rule that claims no order
    for it), which ignores the separated pairs such an estimate can hide."""
    target = target or Target("all-pairs")
    pairs = estimates.pairs
    if estimates.exact or not len(pairs):
        return 1.0, 1.0
    cov = system_covariance(estimates)
    values, vectors = np.linalg.eigh(cov)
    root = vectors * np.sqrt(np.clip(values, 0, None))
    draws = 4000 if quick else int(min(max(math.ceil(20 / level), 2000), 400_000))
    rng = np.random.default_rng(seed)
    order = estimates.differences
    widths = target.widths(estimates.full_se, len(pairs))
    # a pair estimated as an exact tie with no spread (identical residuals before every cell is judged): no draw moves
    # it, yet the full test set may order it either way, a coin flip, as in flip_probabilities
    unsure_mask = (estimates.difference_se == 0) & (estimates.differences == 0)
    unsure = int(unsure_mask.sum())
    chunks = []
    for start in range(0, draws, 50_000):
        m = min(50_000, draws - start)
        noise = rng.standard_normal((m, len(values)), dtype=np.float32) @ root.T.astype(np.float32)
        if np.isfinite(estimates.df):  # multivariate t: one chi-square scale per draw
            noise *= np.sqrt(estimates.df / rng.chisquare(estimates.df, m)).astype(np.float32)[:, None]
        truth = estimates.differences[None, :] + noise[:, pairs[:, 0]] - noise[:, pairs[:, 1]]
        wrong, separated = disagreement(order, np.where(unsure_mask, 0.0, truth), ties="strict", width=widths)
        if excuse_ties and target.over == "separated":  # the ablation: pairs estimated within their width never err
            wrong = wrong * (np.abs(order) > widths)[None, :]
        coins = (rng.random((m, unsure)) < 0.5).sum(axis=1) if unsure else 0
        wrong_count = wrong.sum(axis=1) + coins
        if target.over == "all":
            chunks.append(1 - wrong_count / len(pairs))
        else:
            counted = separated.sum(axis=1) + unsure
            chunks.append(1 - np.divide(wrong_count, counted, out=np.zeros(m), where=counted > 0))
    share = np.concatenate(chunks)
    return float(np.quantile(share, level, method="lower")), float(share.mean())


def wrong_probabilities(estimates: Estimates, widths: np.ndarray) -> np.ndarray:
    """Per pair, the probability that the full test set orders it the other way by more than its tie width
    (``T(−(|D̂| + w) / se)``, twice that for an estimated exact tie, which has no side; 0 when exact; ½ for an exact
    tie without spread, as :func:`flip_probabilities`)."""
    se = estimates.difference_se
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, (np.abs(estimates.differences) + widths) / se, np.inf)
    p = stdtr(estimates.df, -z)
    if estimates.exact:
        return np.zeros(len(p))
    p = np.where(estimates.differences == 0, np.minimum(2 * p, 1.0), p)
    return np.where(se == 0, np.where(estimates.differences == 0, 0.5, 0.0), p)


def flip_probabilities(estimates: Estimates) -> np.ndarray:
    """Per pair, the probability that the full test set orders it the other way (``T_df(−|D̂|/se)``; 0 when
    exact)."""
    se = estimates.difference_se
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, np.abs(estimates.differences) / se, np.inf)
    p = stdtr(estimates.df, -z)
    if estimates.exact:
        return np.zeros(len(p))
    # a standard error of 0 before every cell is judged (identical residuals): certain of an order it estimates, no
    # wiser about one it estimates as a tie
    return np.where(se == 0, np.where(estimates.differences == 0, 0.5, 0.0), p)


def holm_decided(p: np.ndarray, level: float) -> np.ndarray:
    """Pairs a Holm step-down test decides at family-wise ``level`` (mask aligned with ``p``)."""
    order = np.argsort(p, kind="stable")
    thresholds = level / (len(p) - np.arange(len(p)))
    passing = p[order] <= thresholds
    k = len(p) if passing.all() else int(np.argmin(passing))
    decided = np.zeros(len(p), dtype=bool)
    decided[order[:k]] = True
    return decided


@dataclass(frozen=True)
class Verdict:
    """The stop rule's reading of one set of estimates."""

    expected: float  # plain agreement over all pairs, expected
    lower_bound: float  # the target's agreement: the level-quantile over the draws (the rule guaranteed reads it)
    decided: np.ndarray  # (P,) pairs whose order is decided at the wave's level (Holm)
    level: float
    stop: bool
    rule: str
    target: Target
    confidence: float
    expected_target: float = 0.0  # the target's agreement, expected (the rule expected reads it)
    widths: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (P,) tie widths of the target at this look
    ties: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # (P,) estimated within the tie width
    settled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # (P,) wrong w.p. below SETTLED


SETTLED = 1e-3
"""A pair ordered the other way beyond its tie width with a smaller probability is settled (decided or tied)."""


def verdict(
    estimates: Estimates,
    *,
    target: Target,
    confidence: float,
    rule: str = "guaranteed",
    planned: int = 20,
    always_bound: bool = True,
    anytime: bool = True,
    level: float | None = None,
    excuse_ties: bool = False,
) -> Verdict:
    """Stop or continue after ``estimates.waves`` waves (``planned``: looks that exhaust the pool at the wave size).
    ``always_bound=False`` skips drawing the lower bound when it cannot reach the target (then ``lower_bound`` is
    only known to be below it and holds the expected agreement, an upper bound of it up to ``1 − δ_t``)."""
    if rule not in RULES:
        raise PrecometError(f"unknown stop rule {rule!r}; choose one of {', '.join(RULES)}", param="rule")
    if not isinstance(target, Target):
        raise PrecometError(f"target={target!r}: expected a Target", param="target")
    if not 0 < confidence < 1:
        raise PrecometError(f"confidence={confidence!r}: expected a level in (0, 1)", param="confidence")
    if level is None:
        level = wave_level(confidence, estimates.waves, planned, anytime=anytime)
    n_pairs = len(estimates.pairs)
    if np.isnan(estimates.differences).any() or not len(estimates.means):
        empty = np.zeros(n_pairs, dtype=bool)
        return Verdict(0.0, 0.0, empty, level, False, rule, target, confidence, 0.0, np.zeros(n_pairs), empty, empty)
    widths = target.widths(estimates.full_se, n_pairs)
    p = flip_probabilities(estimates)
    decided = holm_decided(p, level) if not estimates.exact else np.ones(len(p), dtype=bool)
    expected = float(1 - p.mean()) if len(p) else 1.0
    ties = np.abs(estimates.differences) <= widths
    settled = wrong_probabilities(estimates, widths) < SETTLED
    share = target.share
    if target.kind == "all-pairs":  # the expectation is exact here: no draw needed for it
        expected_target = expected
    elif estimates.exact:
        expected_target = 1.0
    else:
        expected_target = agreement_lower_bound(estimates, level, target=target, quick=True, excuse_ties=excuse_ties)[1]
    # the level-quantile q of an agreement with mean E has (1 − level) q ≤ E: below, no need to draw (a margin for
    # the quick mean's Monte Carlo error where it was drawn)
    margin = 0.0 if target.kind == "all-pairs" else 0.03
    cheap = not always_bound and (rule == "expected" or expected_target < share * (1 - level) - margin)
    lower = (
        expected_target
        if cheap
        else agreement_lower_bound(estimates, level, seed=0, target=target, excuse_ties=excuse_ties)[0]
    )
    reached = lower >= share if rule == "guaranteed" else expected_target >= share
    return Verdict(
        expected, lower, decided, level, bool(reached or estimates.exact), rule, target, confidence,
        expected_target, widths, ties, settled,
    )  # fmt: skip


FORECAST_GRID = 64
"""Looks :func:`projected_fraction` reads before reading the bracket of the first stop in turn."""


def projected_fraction(
    estimates: Estimates,
    *,
    judged_fraction: float,
    step: float,
    target: Target,
    confidence: float,
    rule: str,
    planned: int,
    shift: float = 0.0,
    excuse_ties: bool = False,
) -> float:
    """The share of the pool's cells at which the rule is predicted to stop, if the differences stay where they are
    and the variances shrink as a random sample's (``∝ (1 − f) / f``), looking every ``step``; 1.0 when only a
    fully judged pool would stop. ``shift`` moves every difference's size by that many of its standard errors (−1
    and +1 bound the forecast's interval: differences smaller or larger than estimated).

    The looks are read on a grid of at most :data:`FORECAST_GRID` of them, then in turn between the last that does
    not stop and the first that does (every look when there are no more: a small wave on a large pool has thousands
    of looks, and each costs a verdict). The verdict is not monotone in the looks (each look spends its own error
    level), so a stop between two grid looks that do not stop is missed and the forecast can come later than
    reading every look would give (``benchmarks/bench_forecast_grid.py`` measures both)."""
    if estimates.exact or np.isnan(estimates.differences).any() or judged_fraction <= 0:
        return 1.0 if not estimates.exact else judged_fraction
    size = np.maximum(np.abs(estimates.differences) + shift * estimates.difference_se, 0.0)
    moved = replace(estimates, differences=np.sign(estimates.differences) * size)
    now = (1 - judged_fraction) / judged_fraction

    def at(k: int) -> float:
        return min(1.0, judged_fraction + k * step)

    def stops(k: int) -> bool:
        fraction, look = at(k), estimates.waves + k
        scale = math.sqrt(((1 - fraction) / fraction) / now) if now > 0 else 0.0
        future = replace(
            moved,
            mean_se=estimates.mean_se * scale,
            difference_se=estimates.difference_se * scale,
            exact=fraction >= 1 - 1e-9,
            waves=look,
            df=estimates.df * fraction / judged_fraction,
        )
        # looks the bound cannot pass skip its Monte Carlo draws (always_bound=False): they cost a second each
        reading = verdict(
            future,
            target=target,
            confidence=confidence,
            rule=rule,
            planned=planned,
            always_bound=False,
            excuse_ties=excuse_ties,
        )
        return reading.stop

    looks = max(1, math.ceil((1 - 1e-9 - judged_fraction) / step))  # until the pool is judged
    grid = np.unique(np.linspace(1, looks, min(looks, FORECAST_GRID)).round().astype(int))
    last = 0
    for k in grid.tolist():
        if stops(k):  # the first stop between the grid's last two looks, read in turn
            return at(next(j for j in range(last + 1, k + 1) if j == k or stops(j)))
        last = k
    return 1.0
