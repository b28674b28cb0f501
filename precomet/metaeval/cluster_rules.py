"""Significance clusters by one of :data:`CLUSTER_RULES`: systems sorted by mean and split where a one-sided
Wilcoxon signed-rank test on paired item differences finds a system worse (``paper``: Algorithm 1, against the
previous system; ``wmt``: mt-metrics-eval's ``AssignRanks``, against every member of the current cluster)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from precomet.errors import PrecometError
from precomet.metaeval.measures import system_means
from precomet.significance import pair_indices, wilcoxon_less

CLUSTER_ALPHA = 0.05
CLUSTER_RULES = ("paper", "wmt")
"""How significance clusters are formed (:func:`clusters`): ``paper`` = Algorithm 1 (:func:`split_clusters`),
``wmt`` = mt-metrics-eval's ``AssignRanks``, the clusters of WMT findings papers (:func:`split_clusters_wmt`)."""


def clusters(scores: np.ndarray, *, alpha: float = CLUSTER_ALPHA, rule: str = "paper") -> list[list[int]]:
    """Significance clusters of an ``(n, S)`` score matrix: lists of system indices, best cluster first.

    Systems are sorted by mean (descending, ties by index); ``rule`` (one of :data:`CLUSTER_RULES`) decides
    where a new cluster opens, from one-sided Wilcoxon tests on paired item differences: ``paper`` tests each
    system against the previous one (:func:`split_clusters`), ``wmt`` against every member of the current cluster
    (:func:`split_clusters_wmt`).
    """
    check_cluster_rule(rule)
    scores = np.asarray(scores, dtype=float)
    order = np.lexsort((np.arange(scores.shape[1]), -system_means(scores)))
    ranked = scores[:, order]
    if rule == "paper":
        return split_clusters(order, wilcoxon_less(ranked[:, 1:] - ranked[:, :-1]), alpha=alpha)
    return split_clusters_wmt(order, ordered_pvalues(ranked), alpha=alpha)


def check_cluster_rule(rule: str) -> None:
    """Raise :class:`PrecometError` unless ``rule`` is one of :data:`CLUSTER_RULES`."""
    if rule not in CLUSTER_RULES:
        raise PrecometError(f"unknown cluster rule {rule!r}; valid: {', '.join(CLUSTER_RULES)}")


def ordered_pvalues(ranked: np.ndarray) -> np.ndarray:
    """``(S, S)`` p-values of every pair of the columns of ``ranked`` (``(n, S)``, best system first): entry
    ``[a, b]``, ``a < b``, is the one-sided Wilcoxon p-value of "column ``b`` is worse than column ``a``"
    (:func:`wilcoxon_less` of ``ranked[:, b] − ranked[:, a]``); 1 on and below the diagonal."""
    ranked = np.asarray(ranked, dtype=float)
    first, second = pair_indices(ranked.shape[1])
    out = np.ones((ranked.shape[1], ranked.shape[1]))
    out[first, second] = wilcoxon_less(ranked[:, second] - ranked[:, first])
    return out


def split_clusters(
    order: Sequence[int] | np.ndarray, pvalues: Sequence[float] | np.ndarray, *, alpha: float = CLUSTER_ALPHA
) -> list[list[int]]:
    """Algorithm 1's grouping: systems in ``order``; p-value ``i`` (``order[i+1]`` vs ``order[i]``) below
    ``alpha`` opens a new cluster."""
    return _groups(order, np.asarray(pvalues, dtype=float) < alpha)


def split_clusters_wmt(
    order: Sequence[int] | np.ndarray, pvalues: np.ndarray, *, alpha: float = CLUSTER_ALPHA
) -> list[list[int]]:
    """mt-metrics-eval's ``AssignRanks``: systems in ``order``, ``pvalues`` an ``(S, S)`` matrix over positions in
    ``order`` (as :func:`ordered_pvalues`; only ``a < b`` is read). The system at position ``b`` opens a new
    cluster, starting at ``b``, when some member of the current cluster (positions ``start .. b−1``) is
    significantly better, ``pvalues[a, b] ≤ alpha`` (≤ as ``AssignRanks``); otherwise it joins that cluster."""
    return _groups(order, wmt_cluster_pvalues(pvalues, alpha=alpha) <= alpha)


def wmt_cluster_pvalues(pvalues: np.ndarray, *, alpha: float = CLUSTER_ALPHA) -> np.ndarray:
    """The p-value :func:`split_clusters_wmt` compares with ``alpha`` for each position ``b ≥ 1``: the smallest
    ``pvalues[a, b]`` over the members ``a`` of the cluster open when ``b`` is reached (length ``S − 1``)."""
    return _wmt_rows(np.asarray(pvalues, dtype=float)[None], alpha)[0]


def _wmt_rows(pvalues: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`wmt_cluster_pvalues` of each ``(S, S)`` matrix of the batch ``pvalues`` (B, S, S): (B, S − 1)."""
    n_rows, n_systems = pvalues.shape[:2]
    out = np.empty((n_rows, n_systems - 1))
    start, position = np.zeros((n_rows, 1), dtype=int), np.arange(n_systems)
    for b in range(1, n_systems):
        members = (position >= start) & (position < b)
        out[:, b - 1] = np.where(members, pvalues[:, :, b], np.inf).min(axis=1)
        start[out[:, b - 1] <= alpha] = b
    return out


def _groups(order: Sequence[int] | np.ndarray, opens: np.ndarray) -> list[list[int]]:
    """Systems in ``order`` cut into clusters before every position ``i + 1`` where ``opens[i]``."""
    result = [[int(order[0])]]
    for system, new in zip(order[1:], opens):
        if new:
            result.append([int(system)])
        else:
            result[-1].append(int(system))
    return result
