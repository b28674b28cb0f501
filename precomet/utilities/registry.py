"""The registry of output-based utilities: :class:`UtilitySpec` (the one record of a utility), :data:`UTILITY_METHODS`
(filled by :func:`register_utility`; the built-in ones are registered by :mod:`precomet.utilities`) and
:func:`compute_utility`, the single entry point. A utility that combines others (``mixture``) calls
:func:`compute_utility` from here, so no method module imports the package that registers it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as replace_field
from typing import Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.registration import register
from precomet.values import check_like

log = logging.getLogger(__name__)

UtilityFn = Callable[..., np.ndarray]

MISSING_POLICIES = ("error", "exclude")


@dataclass(frozen=True)
class UtilitySpec:
    """Everything known about one utility: its function and ``description`` (the help text); whether it needs a
    budget / a score matrix, and the systems it needs (``min_systems``: 0 for one that reads only the sources);
    the method-specific ``options`` with their defaults; ``system_free`` (the value does not depend on which
    systems are used, so the artificial crowd computes it once); ``constant_under_cost`` (a utility that is the
    source length, which the cost objective already weighs: a cost budget's knapsack gets a constant utility, see
    :func:`knapsack_utility`); ``forwards_metric`` (reads no score itself but is given the ``metric`` requested, to
    hand on to the utilities it combines: ``mixture``); ``sparse`` (reads a score matrix with unscored cells, NaN,
    itself: :func:`compute_utility` does not require complete items, and an item without any score gets NaN); and
    ``label``, the name shown in tables (default: the registered name)."""

    fn: UtilityFn
    description: str
    needs_budget: bool = False
    needs_score: bool = True
    min_systems: int = 2
    options: Mapping[str, Any] = field(default_factory=dict)
    constant_under_cost: bool = False
    system_free: bool = False
    forwards_metric: bool = False
    sparse: bool = False
    label: str = ""


def compute_utility(
    campaign: Campaign,
    method: str,
    *,
    metric: str | None = None,
    systems: Sequence[str] | None = None,
    budget: int | None = None,
    seed: int = 0,
    options: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """Utility of every item of ``campaign`` (float array, length N, campaign order; higher = annotate first).

    ``metric`` names the score matrix the utility reads (a metric, or ``"human"`` for utilities of human scores);
    ``systems`` restricts the computation to an artificial crowd; ``budget`` is required by methods with
    ``needs_budget``; ``options`` holds method-specific settings (see ``UTILITY_METHODS[name].options``)
    plus ``missing``: ``"error"`` (default) or ``"exclude"`` — items lacking ``metric`` for some system get
    NaN and the count is logged (see :func:`resolve_options`).
    """
    spec = get_spec(method)
    opts = resolve_options(method, options)
    missing = opts.pop("missing")
    if systems is not None:
        systems = list(systems)
        if len(set(systems)) != len(systems):
            raise PrecometError(f"systems {systems} contain duplicates")
        campaign = campaign.restrict_systems(systems)
    if not campaign.systems and spec.min_systems:
        raise PrecometError(
            f"utility {method!r} reads the systems' outputs or scores, but campaign {campaign.name!r} has sources only"
            " (no systems)"
        )
    if len(campaign.systems) < spec.min_systems:
        raise PrecometError(
            f"utility {method!r} needs at least {spec.min_systems} systems, got {len(campaign.systems)}"
            f" ({list(campaign.systems)})"
        )
    if len(campaign) == 0:
        raise PrecometError(f"campaign {campaign.name!r} has no items")
    if spec.needs_budget:
        if budget is None:
            raise PrecometError(
                f"utility {method!r} needs a budget (number of items), e.g. {{budget}}100", param="budget"
            )
        if not 1 <= int(budget) <= len(campaign):
            raise PrecometError(f"utility {method!r}: budget must be in 1..{len(campaign)}, got {budget}")
    keep = None
    if spec.needs_score:
        require_scores(campaign, method)
        if metric is None:
            raise PrecometError(
                f"utility {method!r} needs the score it reads ({{metric}}NAME); available: {sorted(campaign.scores)}",
                param="metric",
            )
        matrix = campaign.score(metric)
        bad = np.isnan(matrix)
        if bad.any() and not spec.sparse:
            rows, cols = np.nonzero(bad)
            n_bad = int(bad.any(axis=1).sum())
            if missing == "error":
                raise PrecometError(
                    f"score {metric!r} is missing for item {campaign.ids[rows[0]]!r}, system"
                    f" {campaign.systems[cols[0]]!r} ({n_bad} item(s) affected); restrict systems or pass"
                    " {options}",
                    param="options",
                )
            keep = np.flatnonzero(~bad.any(axis=1))
            log.warning("utility %s: %d item(s) lack %r for some system; excluded (utility NaN)", method, n_bad, metric)
            if len(keep) == 0:
                raise PrecometError(f"no item has score {metric!r} for every system {list(campaign.systems)}")
    work = campaign if keep is None else campaign.take(keep)
    returned = spec.fn(work, metric=metric, budget=budget, seed=seed, options=opts)
    try:
        values = np.array(returned, dtype=float)  # a copy: writeable whatever the function returned
    except (TypeError, ValueError) as err:
        raise PrecometError(f"utility {method!r} returned values that are not numbers ({err})") from None
    if values.shape != (len(work),):
        raise PrecometError(f"utility {method!r} returned shape {values.shape}, expected ({len(work)},)")
    if np.isinf(values).any() or (len(values) and np.isnan(values).all()):
        raise PrecometError(
            f"utility {method!r} returned {'infinite values' if np.isinf(values).any() else 'no number (all NaN)'}"
            f" on campaign {work.name!r}; a utility must rank the items"
        )
    if keep is None:
        return values
    out = np.full(len(campaign), np.nan)
    out[keep] = values
    return out


def knapsack_utility(method: str, utility: np.ndarray, *, by_cost: bool) -> np.ndarray:
    """The utility the subset builder gets for ``method``: ``utility`` itself, or under a cost budget (``by_cost``) a
    constant
    for a method with ``constant_under_cost`` (``length``): the knapsack with the same cost objective and a
    constant utility (rank-length: the most source characters the budget buys; rank-cost: any subset that fills
    the budget; paper: the most items)."""
    if by_cost and get_spec(method).constant_under_cost:
        return np.ones(len(utility))
    return utility


def require_scores(campaign: Campaign, method: str) -> None:
    """Raise a one-line :class:`PrecometError` when ``method`` needs a score matrix and ``campaign`` has none
    (an output-only input such as a WMT release), naming the utilities that need none."""
    if get_spec(method).needs_score and not campaign.scores:
        free = [name for name, spec in UTILITY_METHODS.items() if not spec.needs_score]
        raise PrecometError(
            f"utility {method!r} needs scores, but campaign {campaign.name!r} has none (outputs only);"
            f" utilities that need no score: {', '.join(free)}"
        )


def get_spec(method: str) -> UtilitySpec:
    """The registered spec of ``method``; unknown names list the valid ones."""
    if method not in UTILITY_METHODS:
        raise PrecometError(f"unknown utility method {method!r}; valid: {', '.join(UTILITY_METHODS)}")
    return UTILITY_METHODS[method]


def resolve_options(method: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults of ``method`` updated with ``options``; unknown keys raise listing the valid ones."""
    spec = get_spec(method)
    valid = {**spec.options, "missing": "error"}
    given = dict(options or {})
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise PrecometError(f"utility {method!r}: unknown option(s) {unknown}; valid: {sorted(valid)}")
    for key, value in given.items():
        check_like(value, valid[key], what=f"utility {method!r}: option {key!r}")
    merged = {**valid, **given}
    if merged["missing"] not in MISSING_POLICIES:
        raise PrecometError(f"option 'missing' must be one of {MISSING_POLICIES}, got {merged['missing']!r}")
    return merged


UTILITY_METHODS: dict[str, UtilitySpec] = {}
"""Name -> :class:`UtilitySpec`, in registration order; add to it with :func:`register_utility`."""


def register_utility(name: str, spec: UtilitySpec, *, replace: bool = False) -> None:
    """Register ``spec`` as the utility ``name`` (lower-case letters, digits, ``_``, ``-``): from then on
    :func:`compute_utility`, ``select``, ``benchmark`` and the artificial crowd accept it. A name already taken is
    refused unless ``replace=True``; an empty ``spec.label`` becomes ``name``."""
    if not isinstance(spec, UtilitySpec) or not callable(spec.fn):
        got = type(spec.fn if isinstance(spec, UtilitySpec) else spec).__name__
        raise PrecometError(
            f"register_utility({name!r}, spec): spec must be a UtilitySpec(fn, description, ...) whose fn is"
            f" callable, got {'a UtilitySpec whose fn is a ' + got if isinstance(spec, UtilitySpec) else 'a ' + got}"
        )
    register(
        UTILITY_METHODS, name, spec if spec.label else replace_field(spec, label=name), kind="utility", replace=replace
    )
