"""Meta-evaluation: how close is the evaluation outcome on a subset to the outcome on the full campaign?

All measures compare system-level results of a subset ``Y`` with those of the full campaign ``X`` on one
score (default :data:`~precomet.campaign.HUMAN`):

* **SPA**, soft pairwise accuracy (Thompson et al. 2024; paper Eq. 17): ``1 − mean_pairs |p^Y − p^X|`` where
  ``p`` is the one-sided paired permutation p-value of "mean of A > mean of B" from sign flips,
  ``p = #{null ≥ observed} / P`` (no +1, ties count as "≥", as in Thompson's code and subset2evaluate).
  The sign flips are tied to the *item id* (a hash of seed and id), so the value does not depend on the
  order of items, and one matrix product per call serves every pair and permutation.
* pairwise accuracy, Kendall τ-b / Spearman / Pearson of system means, top-1 match, MAE / RMSE;
* **clusters**: systems sorted by mean and split where a one-sided Wilcoxon signed-rank test on paired item
  differences finds a system worse, by one of :data:`CLUSTER_RULES`: ``paper`` (Algorithm 1, the default of the
  meta-evaluation: against the previous system, p < 0.05) or ``wmt`` (mt-metrics-eval's ``AssignRanks``: against
  every member of the current cluster, p ≤ 0.05); identical systems stay together.

Use :func:`full_reference` once per campaign (it is cached) and :func:`evaluate_indices` per subset,
:func:`evaluate_orderings` for many rankings × budgets at once (benchmark loops), or the id-based
conveniences :func:`soft_pairwise_accuracy` / :func:`evaluate_subset`. The tests themselves live in
:mod:`precomet.significance`.

The package, by concern: :mod:`~precomet.metaeval.measures` (system means, correlations, pairwise accuracy),
:mod:`~precomet.metaeval.cluster_rules` (significance clusters, both rules), :mod:`~precomet.metaeval.reference`
(the full-set side, cached) and :mod:`~precomet.metaeval.evaluation` (subsets, orderings and prefixes in
batches, weighted subsets, the id-based conveniences).
"""

from precomet.metaeval.cluster_rules import (
    CLUSTER_ALPHA,
    CLUSTER_RULES,
    check_cluster_rule,
    clusters,
    ordered_pvalues,
    split_clusters,
    split_clusters_wmt,
    wmt_cluster_pvalues,
)
from precomet.metaeval.evaluation import (
    MEASURES,
    cluster_count,
    evaluate_indices,
    evaluate_orderings,
    evaluate_prefixes,
    evaluate_subset,
    evaluate_weighted,
    soft_pairwise_accuracy,
    spa_from_sums,
    spa_indices,
    subset_positions,
)
from precomet.metaeval.measures import dice, kendall_tau_b, pairwise_accuracy, pearson, spearman, system_means
from precomet.metaeval.reference import Reference, full_reference, reference_from_matrix

__all__ = [
    "CLUSTER_ALPHA",
    "CLUSTER_RULES",
    "MEASURES",
    "Reference",
    "check_cluster_rule",
    "cluster_count",
    "clusters",
    "dice",
    "evaluate_indices",
    "evaluate_orderings",
    "evaluate_prefixes",
    "evaluate_subset",
    "evaluate_weighted",
    "full_reference",
    "kendall_tau_b",
    "ordered_pvalues",
    "pairwise_accuracy",
    "pearson",
    "reference_from_matrix",
    "soft_pairwise_accuracy",
    "spa_from_sums",
    "spa_indices",
    "spearman",
    "split_clusters",
    "split_clusters_wmt",
    "subset_positions",
    "system_means",
    "wmt_cluster_pvalues",
]
