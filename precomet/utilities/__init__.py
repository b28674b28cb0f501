"""Output-based item utilities: one value per item, **higher = annotate first**, always.

:func:`compute_utility` is the single entry point; :data:`UTILITY_METHODS` is the explicit registry
(name -> :class:`UtilitySpec`, the one record of a utility), filled by :func:`register_utility`. Every method
function has the signature
``fn(campaign, *, metric, budget, seed, options) -> np.ndarray`` and sees a campaign that is already
restricted to the requested systems (artificial crowd, paper §4.2) and complete for ``metric``.
"""

from __future__ import annotations

from precomet.utilities import additive, cluster, diffuse, diversity, irt, length, metric
from precomet.utilities.registry import (
    UTILITY_METHODS,
    UtilitySpec,
    compute_utility,
    get_spec,
    knapsack_utility,
    register_utility,
    require_scores,
    resolve_options,
)

IRT_LABELS = {"diff": "Diff", "disc": "Disc", "feas": "Feas", "diffdisc": "DiffDisc", "fic": "FIC"}
"""Table labels of the ``irt_<kind>`` utilities (the paper's names)."""


def _register_builtins() -> None:
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
