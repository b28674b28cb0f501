"""Budgets and selection: the budget proportions, the selector a benchmark picks subsets with, and the
meta-evaluation of one utility's subsets at every budget."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from precomet.campaign import Campaign, source_length
from precomet.errors import PrecometError, SolverGapWarning
from precomet.metaeval import Reference, evaluate_indices, evaluate_prefixes
from precomet.selection import select_subset
from precomet.selection.objective import DEFAULT_COST_OBJECTIVE
from precomet.selection.units import budget_items, check_budget_unit

log = logging.getLogger(__name__)

DEFAULT_PROPS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
BENCH_MEASURES = ("spa", "clusters", "kendall")
LEVELS = ("item", "doc")
BALANCE = (None, "domain")

Select = Callable[[np.ndarray, float], np.ndarray]


def parse_props(text: str) -> list[float]:
    """``"0.05:0.5:0.05"`` (start:stop:step, stop included) or ``"0.1,0.25,0.5"`` -> validated proportions."""
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            if step <= 0:
                raise ValueError
            props = list(np.round(np.arange(start, stop + step / 2, step), 10))
        else:
            props = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise PrecometError(
            f"{{props}}{text!r}: expected start:stop:step or a comma list of proportions", param="props"
        ) from None
    return validate_props(props)


def validate_props(props: Sequence[float]) -> list[float]:
    """Proportions must lie in (0, 1]; at least one."""
    props = [float(p) for p in props]
    bad = [p for p in props if not 0 < p <= 1]
    if not props or bad:
        raise PrecometError(f"budget proportions {{props}} must lie in (0, 1], got {bad or 'none'}", param="props")
    twice = sorted({p for p in props if props.count(p) > 1})
    if twice:
        raise PrecometError(f"budget proportions ({{props}}...) give {twice} twice", param="props")
    return props


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

    total = float(campaign.cost.sum())
    length = source_length(campaign.src)

    def select(utility: np.ndarray, prop: float) -> np.ndarray:
        with warnings.catch_warnings():  # the gap is logged below; hundreds of selections need no warning each
            warnings.simplefilter("ignore", SolverGapWarning)
            chosen = select_subset(
                utility,
                cost=campaign.cost if by_cost else None,
                domain=campaign.domain if balance else None,
                doc=campaign.doc if level == "doc" else None,
                budget=None if by_cost else budget_items(prop, n),
                budget_cost=prop * total if by_cost else None,
                balance=balance,
                level=level,
                time_limit=time_limit,
                allow_gap=True,
                cost_objective=cost_objective,
                length=length,
            )
        if chosen.status != "optimal":
            log.debug("budget %.3f: knapsack gap %.2g accepted after %.0f s", prop, chosen.gap, time_limit)
        return np.asarray(chosen.indices, dtype=int)

    return select


def evaluate_props(
    ref: Reference,
    select: Select | None,
    utility: np.ndarray,
    props: Sequence[float],
    *,
    measures: Sequence[str] = BENCH_MEASURES,
) -> list[dict[str, float]]:
    """Meta-evaluate the subset ``utility`` selects at every budget proportion (in the order given)."""
    if select is not None:
        return [evaluate_indices(ref, _subset(select, utility, prop), measures=measures) for prop in props]
    sizes = np.array([budget_items(prop, len(ref)) for prop in props])
    order = np.argsort(sizes, kind="stable")
    values = evaluate_prefixes(ref, top_k(utility, int(sizes.max())), sizes[order].tolist(), measures=measures)
    out: list[dict[str, float]] = [{}] * len(props)
    for position, value in zip(order, values):
        out[position] = value
    return out


def _subset(select: Select, utility: np.ndarray, prop: float) -> np.ndarray:
    """The subset ``select`` builds at ``prop``; a budget that whole documents, quotas or costs leave with fewer than
    2 items is refused by name (the meta-evaluation needs 2)."""
    chosen = select(utility, prop)
    if len(chosen) < 2:
        raise PrecometError(
            f"the budget proportion {prop:g} holds {len(chosen)} item(s) once the subset builder has taken whole"
            " documents, domain quotas or costs into account; the meta-evaluation needs at least 2: use larger"
            " proportions ({props}...)",
            param="props",
        )
    return chosen


def spa_at_position(ref: Reference, select: Select | None, utility: np.ndarray, position: int) -> float:
    """SPA of the subset ``utility`` selects at budget proportion ``position / N`` (a parity search's grid position);
    ``-inf`` when that budget is infeasible (e.g. below the smallest document): nothing is reached there yet."""
    try:
        return evaluate_props(ref, select, utility, [position / len(ref)], measures=("spa",))[0]["spa"]
    except PrecometError as err:
        log.debug("parity search: budget %d/%d infeasible (%s)", position, len(ref), err)
        return -np.inf


def budget_value(campaign: Campaign, prop: float, *, budget_unit: str) -> float:
    """The budget a proportion stands for in ``budget_unit``: item count, or annotation cost."""
    if check_budget_unit(budget_unit):
        return prop * float(campaign.cost.sum())
    return float(budget_items(prop, len(campaign)))
