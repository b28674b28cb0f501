"""Significance clusters of the ranked systems: one-sided Wilcoxon tests under either cluster rule."""

from __future__ import annotations

import numpy as np

from precomet.metaeval import split_clusters, split_clusters_wmt, wmt_cluster_pvalues
from precomet.significance import wilcoxon_less


def _pair_tests(matrix: np.ndarray, better: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """One-sided Wilcoxon p-values of "system ``worse[i]`` is worse than ``better[i]``", each pair on the items
    rated for both (p = 1 without any)."""
    out = np.ones(len(better))
    for i, (a, b) in enumerate(zip(better, worse)):
        both = ~np.isnan(matrix[:, a]) & ~np.isnan(matrix[:, b])
        if both.any():
            out[i] = wilcoxon_less((matrix[both, b] - matrix[both, a])[:, None])[0]
    return out


def _cluster_tests(
    matrix: np.ndarray, order: np.ndarray, *, rule: str, alpha: float, complete: bool
) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Clusters of the systems in ``order`` by ``rule``, the adjacent p-values and the p-values that placed each
    system (see :class:`Ranking`)."""
    n = len(order)

    def test(better: np.ndarray, worse: np.ndarray) -> np.ndarray:  # positions in ``order``
        if complete:
            return wilcoxon_less(matrix[:, order[worse]] - matrix[:, order[better]])
        return _pair_tests(matrix, order[better], order[worse])

    if rule == "paper":
        tested = test(np.arange(n - 1), np.arange(1, n))
        return split_clusters(order, tested, alpha=alpha), tested, tested
    pvalues, start = np.ones((n, n)), 0  # only the pairs AssignRanks reads: the open cluster's members vs the next
    for b in range(1, n):
        pvalues[start:b, b] = test(np.arange(start, b), np.full(b - start, b))
        start = b if pvalues[start:b, b].min() <= alpha else start
    groups = split_clusters_wmt(order, pvalues, alpha=alpha)
    return groups, np.diagonal(pvalues, 1).copy(), wmt_cluster_pvalues(pvalues, alpha=alpha)
