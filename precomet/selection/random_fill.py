"""The random baseline under a budget: a random subset that fits, not a knapsack over random utilities.

Maximising the sum of random utilities under a cost budget (what the knapsack would do) prefers many cheap
items — and at document level many one-item documents — so it is not a random subset. Here units (items, or
whole documents) are taken in a random order while they fit; a unit that does not fit is skipped. With
``balance="domain"`` units are added one round at a time, one unit per domain, while the whole round fits,
so every domain ends with the same count (as the knapsack's equal-count constraint requires).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np

from precomet.campaign import Campaign
from precomet.costs import item_seconds
from precomet.selection.units import budget_items, build_units, check_budget_unit


def random_fill(
    order_key: np.ndarray,
    weight: np.ndarray,
    capacity: float,
    *,
    domain: np.ndarray | None = None,
    doc: np.ndarray | None = None,
    level: str = "item",
    balance: str | None = None,
) -> np.ndarray:
    """Item positions of a random subset within ``capacity`` (``order_key``: one random value per item; its
    order — by each unit's mean — is the random order)."""
    units = build_units(
        np.asarray(order_key, dtype=float),
        np.asarray(weight, dtype=float),
        level=level,
        doc=doc,
        domain=domain if balance else None,
    )
    order = np.argsort(units.utility, kind="stable")
    chosen: list[int] = []
    if balance is None:
        used = 0.0
        for u in order:
            if used + units.weight[u] <= capacity:
                chosen.append(int(u))
                used += units.weight[u]
    else:
        unit_domain = cast(np.ndarray, units.domain)  # balancing needs the domains (a None here fails as before)
        queues = [list(order[unit_domain[order] == d]) for d in dict.fromkeys(unit_domain[order])]
        used = 0.0
        for round_units in zip(*queues):  # stops when the smallest domain runs out
            cost = float(units.weight[list(round_units)].sum())
            if used + cost > capacity:
                break
            chosen.extend(int(u) for u in round_units)
            used += cost
    if not chosen:
        return np.zeros(0, dtype=int)
    return units.items(np.array(chosen, dtype=int))


def make_random_selector(
    campaign: Campaign, *, budget_unit: str, balance: str | None, level: str
) -> Callable[[np.ndarray, float], np.ndarray]:
    """``select(random_values, prop) -> positions`` with the same budget as the benchmark's selector: ``prop`` of
    the total annotator time (``budget_unit="cost"``: every output of an item judged,
    :func:`precomet.costs.item_seconds`) or ``floor(prop · N)`` items (``"items"``)."""
    by_cost = check_budget_unit(budget_unit)
    weight = item_seconds(campaign) if by_cost else np.ones(len(campaign))
    total = float(weight.sum())

    def select(values: np.ndarray, prop: float) -> np.ndarray:
        capacity = prop * total if by_cost else float(budget_items(prop, len(campaign)))
        return random_fill(
            values, weight, capacity, domain=campaign.domain, doc=campaign.doc, level=level, balance=balance
        )

    return select
