"""What a cost-aware knapsack maximises: the value of each unit, from its utility (and source length).

The knapsack of paper Eq. 2 maximises ``sum_i v_i x_i`` under ``sum_i c_i x_i <= C``. How ``v`` is built from
the utility decides how much cost wins over usefulness:

- ``"rank-length"`` (default): ``v_i = rank(u_i)/N · length_i`` — the utility's percentile rank times the
  source length in characters. Rationale, from the development campaign alone (WMT22 zh-en MQM): how far an
  item separates systems grows with its length (Pearson 0.55 of the per-item spread of human scores across
  systems with source characters), while an item's annotation time has a large fixed part (33.7 s in the
  length model), so a long item buys more separation per second; among ten formulations tried there, this one
  had the lowest mean parity in cost (``benchmarks/bench_cost_aware.py --explore``). The other campaigns of
  that benchmark were read only afterwards, to confirm or refute the choice (BENCHMARKS.md, cost-aware section).
- ``"rank-cost"``: ``v_i = rank(u_i)/N · c_i`` — every annotation second is worth the same at a given
  utility rank, so cost neither attracts nor repels: close to filling the budget in utility order.
- ``"paper"``: ``v_i`` = the utility mapped affinely onto [0.1, 0.6] (the paper's "shift to positive", as
  subset2evaluate does): maximising the sum then favours many cheap items, which on the development campaign
  did no better than a random subset of the same cost (mean parity in cost above 100 % in ``--explore``).

Every objective is a plain 0-1 knapsack, so its optimum is certified as before.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from precomet.errors import PrecometError
from precomet.selection.units import normalise
from precomet.stats import rankdata

DEFAULT_COST_OBJECTIVE = "rank-length"


def percentile_rank(utility: np.ndarray) -> np.ndarray:
    """Average ranks of the utilities divided by N: in (0, 1], ties share a value."""
    return rankdata(utility) / len(utility)


def _rank_length(utility: np.ndarray, cost: np.ndarray, length: np.ndarray | None) -> np.ndarray:
    if length is None:
        raise PrecometError("cost objective 'rank-length' needs the source length of every item (length=...)")
    return percentile_rank(utility) * np.maximum(length, 1.0)


def _rank_cost(utility: np.ndarray, cost: np.ndarray, length: np.ndarray | None) -> np.ndarray:
    return percentile_rank(utility) * cost


def _paper(utility: np.ndarray, cost: np.ndarray, length: np.ndarray | None) -> np.ndarray:
    return normalise(utility)


COST_OBJECTIVES: dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray]] = {
    "rank-length": _rank_length,
    "rank-cost": _rank_cost,
    "paper": _paper,
}
"""Cost objective name -> ``value(utility, cost, length)`` per unit (positive, larger = more worth its cost)."""


def check_cost_objective(name: str) -> str:
    """``name`` when it is a known cost objective; else a :class:`PrecometError` listing the valid ones."""
    if name not in COST_OBJECTIVES:
        raise PrecometError(f"unknown cost objective {name!r}; choose one of {list(COST_OBJECTIVES)}")
    return name


def unit_values(name: str, utility: np.ndarray, cost: np.ndarray, length: np.ndarray | None) -> np.ndarray:
    """The knapsack value of every unit under cost objective ``name`` (arrays aligned with the units)."""
    return COST_OBJECTIVES[check_cost_objective(name)](utility, cost, length)
