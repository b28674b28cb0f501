"""Selection units (items or whole documents), utility normalisation and domain constraints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from precomet.errors import PrecometError

BUDGET_UNITS = ("items", "cost")
"""What a benchmark's budget proportions are shares of: the items, or the total annotation cost."""


def check_budget_unit(unit: str) -> bool:
    """``True`` when budgets are shares of the annotation cost; raises on a unit not in :data:`BUDGET_UNITS`."""
    if unit not in BUDGET_UNITS:
        raise PrecometError(f"unknown budget unit {unit!r}; valid: {list(BUDGET_UNITS)}", param="budget_unit")
    return unit == "cost"


def budget_items(proportion: float, n_items: int) -> int:
    """Items in a budget of ``proportion`` of ``n_items``: ``floor(P·N)`` (subset2evaluate's ``int(N * P)``;
    the tiny epsilon keeps 0.3·10 at 3 despite floating point)."""
    return int(np.floor(proportion * n_items + 1e-9))


def item_budget(
    cost: np.ndarray, *, budget: int | None = None, proportion: float | None = None, budget_cost: float | None = None
) -> int:
    """The budget in items (k for kmeans, diffuse and the strata selector) of ``len(cost)`` items: ``budget``, the
    ``proportion`` of the items, or as many items as ``budget_cost`` buys at the mean item cost; at least 1 and at
    most every item (a budget that covers them all selects them all)."""
    if budget is not None:
        items = int(budget)
    elif proportion is not None:
        items = budget_items(proportion, len(cost))
    elif budget_cost is not None:
        items = int(budget_cost / float(np.mean(cost)))
    else:
        raise PrecometError("give one of budget, proportion, budget_cost")
    return min(len(cost), max(1, items))


@dataclass(frozen=True)
class Units:
    """What the optimiser chooses from: one unit per item, or per document (paper Table 2)."""

    members: list[np.ndarray] | None  # item positions of each unit; None: unit i is item i
    utility: np.ndarray  # raw unit utility (mean over members)
    weight: np.ndarray  # unit weight (sum over members)
    domain: np.ndarray | None  # unit domain (object), None when no domain data
    length: np.ndarray | None = None  # unit source length (sum over members), None when not given

    def __len__(self) -> int:
        return len(self.utility)

    def items(self, units: np.ndarray) -> np.ndarray:
        """The item positions of ``units``, unit after unit (a document's items in their original order)."""
        if self.members is None:
            return np.asarray(units, dtype=int)
        return np.concatenate([self.members[u] for u in units]) if len(units) else np.arange(0)


def build_units(
    utility: np.ndarray,
    weight: np.ndarray,
    *,
    level: str,
    doc: np.ndarray | None,
    domain: np.ndarray | None,
    length: np.ndarray | None = None,
) -> Units:
    """Items as units, or documents: utility = mean of the items', weight and length = sums (first-appearance
    order)."""
    if level == "item":
        return Units(None, utility.copy(), weight.copy(), domain, None if length is None else length.copy())
    if level != "doc":
        raise PrecometError(f"unknown level {level!r}; choose one of ['doc', 'item']")
    if doc is None:
        raise PrecometError("level='doc' needs the document of every item (doc=...)")
    names, first, codes = np.unique(doc.astype(str), return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first, kind="stable"), kind="stable")  # doc code -> first-appearance rank
    codes = rank[codes]
    order = np.argsort(codes, kind="stable")
    members = np.split(order, np.cumsum(np.bincount(codes))[:-1])
    unit_domain = None
    if domain is not None:
        unit_domain = np.empty(len(members), dtype=object)
        for u, items in enumerate(members):
            kinds = set(domain[items])
            if len(kinds) > 1:
                raise PrecometError(f"document {doc[items[0]]!r} spans several domains {sorted(map(str, kinds))}")
            unit_domain[u] = domain[items[0]]
    return Units(
        members,
        np.array([utility[m].mean() for m in members]),
        np.array([weight[m].sum() for m in members]),
        unit_domain,
        None if length is None else np.array([length[m].sum() for m in members]),
    )


def normalise(utility: np.ndarray) -> np.ndarray:
    """Map utilities affinely onto [0.1, 0.6], as the paper ("shift to positive") and subset2evaluate do.

    The knapsack maximises a sum, so an item with utility <= 0 would never be taken even with budget left;
    the same map as the peer keeps objectives comparable. Order (and so top-k) is unchanged.
    """
    scale = float(np.max(np.abs(utility))) if len(utility) else 0.0
    scaled = utility / scale if scale > 0 else np.zeros(len(utility))  # no overflow between ±1e308
    spread = float(scaled.max() - scaled.min()) if len(scaled) else 0.0
    return (scaled - scaled.min()) / (spread if spread > 0 else 1.0) / 2 + 0.1


def group_codes(units: Units) -> tuple[list[str], np.ndarray]:
    """Sorted domain names and each unit's domain code."""
    if units.domain is None:
        raise PrecometError("domain balance or quotas need the domain of every item (domain=...)")
    return factorize(units.domain)


def factorize(values: np.ndarray, *, most: int = 64) -> tuple[list[str], np.ndarray]:
    """``np.unique(values.astype(str), return_inverse=True)`` as (names, codes). Up to ``most`` distinct string
    values are found by equality scans instead, seconds faster than sorting millions of strings."""
    codes = np.empty(len(values), dtype=int)
    found: list[str] = []
    rest = np.arange(len(values))
    while len(rest) and len(found) < most and isinstance(values[rest[0]], str):
        match = values[rest] == values[rest[0]]
        codes[rest[match]] = len(found)
        found.append(values[rest[0]])
        rest = rest[~match]
    if len(rest):  # many distinct values, or not all strings: the general path
        names, codes = np.unique(values.astype(str), return_inverse=True)
        return [str(n) for n in names], codes.reshape(-1)
    names, inverse = np.unique(np.array(found, dtype=str), return_inverse=True)
    return [str(n) for n in names], inverse.reshape(-1)[codes]


def quota_targets(
    quotas: Mapping[str, float], names: Sequence[str], sizes: np.ndarray, *, count_budget: int | None
) -> tuple[str, np.ndarray]:
    """Resolve quotas to ("counts", exact count per domain) or ("shares", budget share per domain).

    Integer quotas are exact counts. Fractional quotas are shares of the budget: with an item-count budget
    they become counts (largest-remainder rounding); with a cost budget each domain gets that share of it.
    Domains missing from ``quotas`` get nothing.
    """
    unknown = [d for d in quotas if d not in names]
    if unknown:
        raise PrecometError(f"quotas name unknown domain(s) {unknown}; domains are {list(names)}")
    values = [quotas.get(d, 0) for d in names]
    if any(isinstance(q, bool) for q in values):
        raise PrecometError(f"quotas must be counts or proportions, not true/false, got {dict(quotas)}")
    if all(isinstance(q, (int, np.integer)) for q in values):
        if any(abs(int(q)) > 2**62 for q in values):
            raise PrecometError(f"quotas must be counts no larger than the domains, got {dict(quotas)}")
        counts = np.array(values, dtype=int)
        kind = "counts"
    elif all(isinstance(q, (int, float, np.floating, np.integer)) for q in values):
        shares = np.array(values, dtype=float)
        if (shares < 0).any() or (shares > 1).any() or not np.isclose(shares.sum(), 1.0):
            raise PrecometError(f"fractional quotas must lie in [0, 1] and sum to 1, got {dict(quotas)}")
        if count_budget is None:
            return "shares", shares
        raw = shares * count_budget
        counts = np.floor(raw).astype(int)
        counts[np.argsort(-(raw - counts), kind="stable")[: count_budget - counts.sum()]] += 1
        kind = "counts"
    else:
        raise PrecometError(f"quotas must be all counts (int) or all proportions (float), got {dict(quotas)}")
    if (counts < 0).any():
        raise PrecometError(f"quotas must not be negative, got {dict(quotas)}")
    for name, want, have in zip(names, counts, sizes):
        if want > have:
            raise PrecometError(f"quota for domain {name!r} asks {want} units but the domain has only {have}")
    return kind, counts


def smallest(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest ``values`` (ties: earlier position first), in position order.

    The first ``k`` of a stable argsort, as a set, in linear time (``np.partition``), so that top-k over millions
    of items takes well under a second."""
    if k >= len(values):
        return np.arange(len(values))
    if k <= 0:
        return np.arange(0)
    threshold = np.partition(values, k - 1)[k - 1]
    below = np.flatnonzero(values < threshold)
    tied = np.flatnonzero(values == threshold)[: k - len(below)]
    return np.sort(np.concatenate((below, tied)))


def top_per_group(value: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Boolean mask of the ``counts[g]`` best units of every group (ties: earlier position first)."""
    chosen = np.zeros(len(value), dtype=bool)
    for g, n in enumerate(counts):
        members = np.flatnonzero(codes == g)
        chosen[members[smallest(-value[members], int(n))]] = True
    return chosen
