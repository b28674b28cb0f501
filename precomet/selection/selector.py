"""The selector a benchmark, the waves and the controls pick subsets with: :func:`top_k` (the highest utilities) or,
when costs, domain quotas or documents are in play, :func:`make_selector` over the subset builder."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable

import numpy as np

from precomet.campaign import Campaign, source_length
from precomet.costs import item_seconds
from precomet.errors import PrecometError, SolverGapWarning
from precomet.selection.objective import DEFAULT_COST_OBJECTIVE
from precomet.selection.subset import SubsetPlan, select_subset
from precomet.selection.units import budget_items, check_budget_unit

log = logging.getLogger(__name__)

LEVELS = ("item", "doc")
BALANCE = (None, "domain")

Select = Callable[[np.ndarray, float], np.ndarray]
"""``select(utility, prop) -> positions``: the subset built at budget proportion ``prop``."""


def top_k(utility: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest utilities (stable: earlier items win ties)."""
    return np.argsort(-np.asarray(utility, dtype=float), kind="stable")[:k]


def make_selector(
    campaign: Campaign,
    *,
    budget_unit: str = "items",
    balance: str | None = None,
    level: str = "item",
    time_limit: float = 10.0,
    cost_objective: str = DEFAULT_COST_OBJECTIVE,
) -> Select | None:
    """``select(utility, prop) -> positions`` through the subset builder (:func:`precomet.selection.select_subset`)
    with the cost budget ``prop · total cost`` when ``budget_unit`` is ``"cost"`` (knapsack over
    ``cost_objective``), domain quotas and/or document units; ``None`` when no option is set: plain top-k, whose
    nested subsets :func:`evaluate_props` meta-evaluates in one pass.

    A benchmark makes hundreds of selections, so a knapsack the solver has not certified optimal within
    ``time_limit`` seconds is used as found (its gap is logged at debug level)."""
    if level not in LEVELS:
        raise PrecometError(f"unknown level {level!r}; valid: {list(LEVELS)}")
    if balance not in BALANCE:
        raise PrecometError(f"unknown balance {balance!r}; valid: {[b for b in BALANCE if b]}")
    by_cost = check_budget_unit(budget_unit)
    n = len(campaign)
    if not by_cost and balance is None and level == "item":
        return None

    seconds = item_seconds(campaign)  # every output of an item is judged
    total = float(seconds.sum())
    length = source_length(campaign.src)

    def select(utility: np.ndarray, prop: float) -> np.ndarray:
        with warnings.catch_warnings():  # the gap is logged below; hundreds of selections need no warning each
            warnings.simplefilter("ignore", SolverGapWarning)
            plan = SubsetPlan(
                budget=None if by_cost else budget_items(prop, n),
                budget_cost=prop * total if by_cost else None,
                balance=balance,
                level=level,
                time_limit=time_limit,
                allow_gap=True,
                cost_objective=cost_objective,
            )
            chosen = select_subset(
                utility,
                plan,
                cost=seconds if by_cost else None,
                domain=campaign.domain if balance else None,
                doc=campaign.doc if level == "doc" else None,
                length=length,
            )
        if chosen.status != "optimal":
            log.debug("budget %.3f: knapsack gap %.2g accepted after %.0f s", prop, chosen.gap, time_limit)
        return np.asarray(chosen.indices, dtype=int)

    return select
