"""The parity search (Eq. 12): the smallest budget at which a method's SPA reaches random's, and its bootstrap
interval (:func:`parity_interval`) replayed on the SPA values the search already evaluated."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np

log = logging.getLogger(__name__)

PARITY_RESAMPLES = 1000  # bootstrap resamples behind parity_ci90
PARITY_MEANING = (
    "parity = the share of the budget a method needs to reach the accuracy (SPA) random selection reaches with the"
    " whole budget, averaged over the budgets (below 100 %: the method saves annotation)"
)


def coarse_grid(n_items: int, *, grid: int = 32, start: int = 2) -> np.ndarray:
    """The grid positions :func:`parity_search` tries first: ``grid`` evenly spaced positions ``start..n_items``."""
    return np.array(_grid(n_items, grid, start), dtype=int)


@functools.lru_cache(maxsize=256)
def _grid(n_items: int, grid: int, start: int) -> tuple[int, ...]:
    """:func:`coarse_grid` as Python ints, computed once per size (the parity interval replays it 10⁴–10⁵ times)."""
    return tuple(int(g) for g in np.unique(np.linspace(start, n_items, max(2, grid)).round().astype(int)))


def parity_search(
    spa_at: Callable[[int], float], target: float, *, n_items: int, grid: int = 32, start: int = 2
) -> int:
    """Smallest grid position ``g`` (budget proportion ``g / n_items``) with ``spa_at(g) ≥ target``.

    A coarse pass over ``grid`` evenly spaced positions finds the first one that reaches the target, then
    bisection between it and the previous coarse position finds the crossing (exactly the smallest when SPA
    grows with the budget inside that interval). ``spa_at`` should be memoised by the caller.
    """
    previous = start - 1
    for g in coarse_grid(n_items, grid=grid, start=start):
        if spa_at(int(g)) >= target:
            lo, hi = previous, int(g)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if spa_at(mid) >= target:
                    hi = mid
                else:
                    lo = mid
            return hi
        previous = int(g)
    log.warning("SPA never reaches %.4f, not even on the full budget; parity capped at the full set", target)
    return n_items


def parity_searches(
    spa_of: Callable[[list[int]], list[float]],
    targets: Sequence[float],
    *,
    n_items: int,
    grid: int = 32,
    start: int = 2,
) -> list[int]:
    """:func:`parity_search` for several targets in lockstep, for an ``spa_of(positions)`` that evaluates many
    positions at once (nested top-k prefixes: one batched call): the whole coarse grid in one call, then each
    bisection round's midpoints of all targets in one call. Same answers as :func:`parity_search` per target."""
    coarse = [int(g) for g in coarse_grid(n_items, grid=grid, start=start)]
    spa = dict(zip(coarse, spa_of(coarse)))
    brackets: list[list[int] | None] = []  # [lo, hi] per target: spa(hi) ≥ target > spa(lo) (or lo = start − 1)
    for target in targets:
        reached = [position for position, g in enumerate(coarse) if spa[g] >= target]
        if not reached:
            log.warning("SPA never reaches %.4f, not even on the full budget; parity capped at the full set", target)
            brackets.append(None)
        else:
            brackets.append([coarse[reached[0] - 1] if reached[0] > 0 else start - 1, coarse[reached[0]]])
    while True:
        open_brackets = [
            (target, bracket)
            for target, bracket in zip(targets, brackets)
            if bracket is not None and bracket[1] - bracket[0] > 1
        ]
        if not open_brackets:
            return [n_items if bracket is None else bracket[1] for bracket in brackets]
        mids = sorted({(lo + hi) // 2 for _, (lo, hi) in open_brackets})
        spa.update(zip(mids, spa_of(mids)))
        for target, bracket in open_brackets:
            mid = sum(bracket) // 2
            if spa[mid] >= target:
                bracket[1] = mid
            else:
                bracket[0] = mid


def replayed_position(
    spa_at: Callable[[int], float],
    evaluated: Mapping[int, float],
    target: float,
    *,
    n_items: int,
    grid: int = 32,
    start: int = 2,
) -> float:
    """:func:`parity_search`'s answer for ``target``, replayed on the SPA values it already ``evaluated``: the same
    coarse pass (a coarse position not evaluated yet is asked of the memoised ``spa_at``) and the same bisection
    while its midpoints are known; at the first unknown midpoint, the linear interpolation between the bracket's
    ends (fractional). For a target the search ran with, the answer is the search's own (every midpoint known)."""
    previous = start - 1
    for g in _grid(n_items, grid, start):
        if (evaluated[g] if g in evaluated else spa_at(g)) >= target:
            lo, hi = previous, g
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if mid not in evaluated:
                    low = evaluated.get(lo, -np.inf)
                    if not np.isfinite(low):
                        return float(hi)
                    share = (target - low) / (evaluated[hi] - low)
                    return lo + float(np.clip(share, 0.0, 1.0)) * (hi - lo)
                if evaluated[mid] >= target:
                    hi = mid
                else:
                    lo = mid
            return float(hi)
        previous = g
    return float(n_items)


def parity_interval(
    position_for: Callable[[float], float],
    random_spa_runs: np.ndarray,
    parity_of: Callable[[float, int], float],
    *,
    resamples: int = PARITY_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """90 % bootstrap interval (5th and 95th percentile) of the parity over random's seeds and the budgets.

    Each resample draws random's seeds with replacement (the targets become the resampled seeds' mean SPA per
    budget), finds each budget's parity position with ``position_for(target)`` (:func:`replayed_position`: no
    new subsets beyond a few coarse grid points), and averages the parities (``parity_of(position, budget
    index)``) of budgets drawn with replacement. ``random_spa_runs`` = random's SPA, shape ``(seeds, budgets)``.
    """
    runs = np.asarray(random_spa_runs, dtype=float)
    n_seeds, n_props = runs.shape
    rng = np.random.default_rng([seed, 21])
    values = np.empty(resamples)
    for b in range(resamples):
        targets = runs[rng.integers(0, n_seeds, n_seeds)].mean(axis=0)
        parities = np.array([parity_of(position_for(float(targets[q])), q) for q in range(n_props)])
        values[b] = parities[rng.integers(0, n_props, n_props)].mean()
    bounds = np.percentile(values, [5, 95])
    return float(bounds[0]), float(bounds[1])
