"""Budgets: the budget proportions and the meta-evaluation of one utility's subsets at every budget (with the
selector of :mod:`precomet.selection.selector`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from precomet.campaign import Campaign
from precomet.costs import item_seconds
from precomet.errors import PrecometError
from precomet.metaeval import Reference, evaluate_indices, evaluate_prefixes
from precomet.selection.selector import Select, top_k
from precomet.selection.units import budget_items, check_budget_unit

log = logging.getLogger(__name__)

DEFAULT_PROPS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
BENCH_MEASURES = ("spa", "clusters", "kendall")


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
    """The budget a proportion stands for in ``budget_unit``: item count, or annotation seconds (every output of
    an item judged: :func:`precomet.costs.item_seconds`)."""
    if check_budget_unit(budget_unit):
        return prop * float(item_seconds(campaign).sum())
    return float(budget_items(prop, len(campaign)))
