"""The parity search (Eq. 12): the smallest budget at which a method's SPA reaches random's, and those budgets as
shares of the budgets they match (:func:`parity_shares`). Its interval comes from the null of random orderings
(:mod:`precomet.benchmark.null`)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence

import numpy as np

from precomet.benchmark.budgets import budget_value
from precomet.campaign import Campaign

log = logging.getLogger(__name__)

PARITY_MEANING = (
    "parity = the share of the budget a method needs to reach the accuracy (SPA) random selection reaches with the"
    " whole budget, averaged over the budgets (below 100 %: a saving, once p < 0.05 against random orderings)"
)


def coarse_grid(n_items: int, *, grid: int = 32, start: int = 2) -> np.ndarray:
    """The grid positions :func:`parity_search` tries first: ``grid`` evenly spaced positions ``start..n_items``."""
    return np.array(_grid(n_items, grid, start), dtype=int)


@functools.lru_cache(maxsize=256)
def _grid(n_items: int, grid: int, start: int) -> tuple[int, ...]:
    """:func:`coarse_grid` as Python ints, computed once per size (the null's orderings search it hundreds of times)."""
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
    first: int | None = None,
) -> list[int]:
    """:func:`parity_search` for several targets in lockstep, for an ``spa_of(positions)`` that evaluates many
    positions at once (nested top-k prefixes: one batched call): the coarse grid in one call (with ``first``: the
    positions up to ``first``, and the rest only when a target is not reached there), then each bisection round's
    midpoints of all targets in one call. Same answers as :func:`parity_search` per target."""
    coarse = [int(g) for g in coarse_grid(n_items, grid=grid, start=start)]
    head = coarse if first is None else [g for g in coarse if g <= first] or coarse[:1]
    spa = dict(zip(head, spa_of(head)))
    if len(head) < len(coarse) and max(targets) > max(spa.values()):  # a target beyond the head: the rest too
        spa.update(zip(coarse[len(head) :], spa_of(coarse[len(head) :])))
    coarse = [g for g in coarse if g in spa]
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


def parity_shares(
    campaign: Campaign, props: Sequence[float], positions: Sequence[int], budget_unit: str
) -> list[float]:
    """Parity per budget: the budget at grid position ``g`` (proportion ``g / N``) as a share of budget ``prop``, in
    ``budget_unit`` (items, or annotation cost)."""
    n = len(campaign)
    return [
        budget_value(campaign, g / n, budget_unit=budget_unit) / budget_value(campaign, prop, budget_unit=budget_unit)
        for prop, g in zip(props, positions)
    ]
