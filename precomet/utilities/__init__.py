"""Output-based item utilities: one value per item, **higher = annotate first**, always.

:func:`compute_utility` is the single entry point; :data:`UTILITY_METHODS` is the explicit registry
(name -> :class:`UtilitySpec`, the one record of a utility), filled by :func:`register_utility`. Every method
function has the signature
``fn(campaign, *, metric, budget, seed, options) -> np.ndarray`` and sees a campaign that is already
restricted to the requested systems (artificial crowd, paper §4.2) and complete for ``metric``.
"""

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
    if len(campaign.systems) < spec.min_systems:
        raise PrecometError(
            f"utility {method!r} needs at least {spec.min_systems} systems, got {len(campaign.systems)}"
            f" ({list(campaign.systems)})"
        )
    if len(campaign) == 0:
        raise PrecometError(f"campaign {campaign.name!r} has no items")
    if spec.needs_budget:
        if budget is None:
            raise PrecometError(f"utility {method!r} needs a budget (number of items), e.g. budget=100")
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
    values = np.asarray(spec.fn(work, metric=metric, budget=budget, seed=seed, options=opts), dtype=float)
    if values.shape != (len(work),):
        raise RuntimeError(f"utility {method!r} returned shape {values.shape}, expected ({len(work)},)")
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
    register(
        UTILITY_METHODS, name, spec if spec.label else replace_field(spec, label=name), kind="utility", replace=replace
    )


IRT_LABELS = {"diff": "Diff", "disc": "Disc", "feas": "Feas", "diffdisc": "DiffDisc", "fic": "FIC"}
"""Table labels of the ``irt_<kind>`` utilities (the paper's names)."""


def _register_builtins() -> None:
    from precomet.utilities import additive, cluster, diffuse, diversity, irt, length, metric

    register_utility(
        "metric_avg",
        UtilitySpec(metric.metric_avg, "minus the mean score over systems (Eq. 3)", min_systems=1, label="MetricAvg"),
    )
    register_utility(
        "item_effect",
        UtilitySpec(
            additive.item_effect,
            "minus the item effect of an additive item + system model fitted on the scored cells (weighted by the"
            " judgements per cell, shrunk): MetricAvg for sparse, noisy scores such as crowd DA",
            min_systems=1,
            options=dict(additive.OPTIONS),
            sparse=True,
            label="ItemEffect",
        ),
    )
    register_utility(
        "metric_var", UtilitySpec(metric.metric_var, "variance of scores over systems (Eq. 4)", label="MetricVar")
    )
    register_utility(
        "metric_cons",
        UtilitySpec(
            metric.metric_cons,
            "rank correlation of item scores with system means (Eq. 5)",
            options={"correlation": "spearman"},
            label="MetricCons",
        ),
    )
    register_utility(
        "diversity",
        UtilitySpec(
            diversity.diversity,
            "1 - mean pairwise similarity of the outputs (Eq. 6, shifted)",
            needs_score=False,
            options=dict(diversity.OPTIONS),
            label="Diversity",
        ),
    )
    for kind in irt.UTILITY_KINDS:
        register_utility(
            f"irt_{kind}",
            UtilitySpec(
                irt.irt_utility_method(kind),
                irt.UTILITY_KINDS[kind],
                options=dict(irt.FIT_OPTIONS),
                label=IRT_LABELS[kind],
            ),
        )
    register_utility(
        "kmeans",
        UtilitySpec(
            cluster.kmeans,
            "k-means (k = budget) on source embeddings; items nearest the centres first",
            needs_budget=True,
            needs_score=False,
            min_systems=0,
            options=dict(cluster.KMEANS_OPTIONS),
            system_free=True,
            label="k-means",
        ),
    )
    register_utility(
        "kmeans_outputs",
        UtilitySpec(
            cluster.kmeans_outputs,
            "k-means (k = budget) on output embeddings (all systems' outputs concatenated); items nearest the centres "
            "first",
            needs_budget=True,
            needs_score=False,
            options=dict(cluster.KMEANS_OPTIONS),
            label="k-means (outputs)",
        ),
    )
    register_utility(
        "random",
        UtilitySpec(
            cluster.random_utility,
            "seeded uniform random values (hash of seed and item id)",
            needs_score=False,
            min_systems=0,
            system_free=True,
            label="Random",
        ),
    )
    register_utility(
        "length",
        UtilitySpec(
            length.length_utility,
            "source length in characters (longer first); under a cost budget the knapsack with a constant utility",
            needs_score=False,
            min_systems=0,
            constant_under_cost=True,
            system_free=True,
            label="Length",
        ),
    )
    register_utility(
        "mixture",
        UtilitySpec(
            cluster.mixture,
            "weighted mean of the per-utility ranks",
            needs_score=False,
            min_systems=0,
            options={"weights": None, "method_options": None},
            forwards_metric=True,
            label="Mixture",
        ),
    )
    register_utility(
        "diffuse",
        UtilitySpec(
            diffuse.diffuse_method,
            "DiffUse: one representative per Ward cluster of output differences (k = budget)",
            needs_budget=True,
            needs_score=False,
            options=dict(diffuse.UTILITY_OPTIONS),
            label="DiffUse",
        ),
    )


_register_builtins()

__all__ = [
    "UTILITY_METHODS",
    "UtilitySpec",
    "compute_utility",
    "get_spec",
    "knapsack_utility",
    "register_utility",
    "require_scores",
    "resolve_options",
]
