"""Subsets measured against a :class:`~precomet.metaeval.reference.Reference`: one subset
(:func:`evaluate_indices`), the prefixes of orderings in batches (:func:`evaluate_prefixes`,
:func:`evaluate_orderings`: shared sign-flip sums, one vectorised Wilcoxon call per size), a weighted subset
(:func:`evaluate_weighted`) and the id-based conveniences (:func:`evaluate_subset`,
:func:`soft_pairwise_accuracy`, :func:`cluster_count`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from precomet.agreement import mean_agreement
from precomet.campaign import HUMAN, Campaign
from precomet.errors import CampaignError
from precomet.metaeval.cluster_rules import CLUSTER_ALPHA, _wmt_rows, clusters
from precomet.metaeval.measures import dice, kendall_tau_b, pearson, spearman
from precomet.metaeval.reference import full_reference
from precomet.significance import (
    batch_pvalues,
    one_blas_thread,
    pair_indices,
    partial_sums,
    pvalues_from_sums,
    wilcoxon_less_rows,
)
from precomet.utilities.metric import kendall_rows

if TYPE_CHECKING:
    from precomet.metaeval.reference import Reference

MEASURES = (
    "spa",
    "pairwise_accuracy",
    "kendall",
    "spearman",
    "pearson",
    "top1",
    "clusters",
    "top1_dice",
    "mae",
    "rmse",
)
"""Everything :func:`evaluate_indices` can compute; ``corr`` in benchmark results is ``kendall``."""

_BATCH = (
    1_000_000  # orderings per batch = _BATCH // (pairs × P): ~15 on WMT23; cache-sized arrays were 1.5× faster than 8e6
)
_SPA_ROWS = 32  # subsets whose SPA one batch_pvalues call computes: (rows, S, P) sums, 3 MB at S=12


def spa_indices(ref: Reference, indices: np.ndarray) -> float:
    """Soft pairwise accuracy of the subset at campaign positions ``indices``."""
    scores = ref.matrix[indices]
    p = pvalues_from_sums(
        partial_sums(scores, ref.signs[indices]), scores.sum(axis=0), float(np.abs(scores).sum()), ref.permutations
    )
    return float(1.0 - np.abs(p - ref.pvalues).mean())


def evaluate_indices(
    ref: Reference, indices: Sequence[int] | np.ndarray, *, measures: Sequence[str] = MEASURES
) -> dict[str, float]:
    """The requested :data:`MEASURES` for the subset at campaign positions ``indices`` (order irrelevant)."""
    idx = np.unique(np.asarray(indices, dtype=int))
    if len(idx) != len(indices):
        raise CampaignError(f"subset lists {len(indices) - len(idx)} item(s) more than once")
    outside = idx[(idx < 0) | (idx >= len(ref))]
    if len(outside):
        raise CampaignError(f"item position {int(outside[0])} is outside the campaign's {len(ref)} items")
    if len(idx) < 2:
        raise CampaignError(f"a subset needs at least 2 items, got {len(idx)}")
    return evaluate_prefixes(ref, idx, [len(idx)], measures=measures)[0]


def evaluate_prefixes(
    ref: Reference, order: Sequence[int] | np.ndarray, sizes: Sequence[int], *, measures: Sequence[str] = MEASURES
) -> list[dict[str, float]]:
    """:func:`evaluate_indices` of ``order[:k]`` for every ``k`` in ``sizes`` (the top-k subsets of one ranking)."""
    values = evaluate_orderings(ref, [order], sizes, measures=measures)[0]
    return [dict(zip(measures, map(float, row))) for row in values]


def evaluate_orderings(
    ref: Reference,
    orders: Sequence[Sequence[int] | np.ndarray],
    sizes: Sequence[int],
    *,
    measures: Sequence[str] = MEASURES,
) -> np.ndarray:
    """The ``measures`` of ``order[:k]`` for every ordering and every ``k`` in ``sizes`` (non-decreasing): an array
    ``(len(orders), len(sizes), len(measures))``.

    Batched for benchmark loops (many random orderings × budgets): nested prefixes share the SPA products
    (each item enters the sign-flip sums once per ordering, all orderings in one batched product), and all
    subsets of one size share a single vectorised Wilcoxon call for the cluster counts (by ``ref.cluster_rule``).
    """
    _check_measures(measures)
    sizes = [int(k) for k in sizes]
    if not sizes or sorted(sizes) != sizes or sizes[0] < 2:
        raise CampaignError(f"prefix sizes must be increasing and at least 2, got {sizes}")
    rows = [np.asarray(o, dtype=int)[: sizes[-1]] for o in orders]
    if not rows or min(len(h) for h in rows) < sizes[-1]:
        raise CampaignError(f"every ordering needs at least {sizes[-1]} positions (the largest size)")
    heads = np.stack(rows)
    ordered = np.sort(heads, axis=1)
    if (ordered[:, 1:] == ordered[:, :-1]).any() or ordered.min() < 0 or ordered.max() >= len(ref):
        raise CampaignError(f"an ordering must list distinct campaign positions in 0..{len(ref) - 1}")
    out = np.empty((len(heads), len(sizes), len(measures)))
    step = orderings_per_batch(ref)
    with one_blas_thread():
        for start in range(0, len(heads), step):
            out[start : start + step] = _evaluate_batch(ref, heads[start : start + step], sizes, measures)
    return out


def orderings_per_batch(ref: Reference) -> int:
    """How many orderings :func:`evaluate_orderings` evaluates at a time: it bounds the (orderings, pairs, P) nulls."""
    return max(1, _BATCH // (len(ref.pvalues) * ref.permutations))


def _evaluate_batch(ref: Reference, heads: np.ndarray, sizes: list[int], measures: Sequence[str]) -> np.ndarray:
    out = np.empty((len(heads), len(sizes), len(measures)))
    spa = _spa_prefixes(ref, heads, sizes) if "spa" in measures else None
    others = []  # the measures of the subsets themselves, not of the prefix sums
    for m, name in enumerate(measures):
        if name == "spa":
            out[:, :, m] = spa
        else:
            others.append((m, name))
    for q, k in enumerate(sizes if others else []):
        sub = ref.matrix[np.sort(heads[:, :k], axis=1)]  # (B, k, S) in canonical row order
        values = _batch_measures(ref, sub, measures)
        for m, name in others:
            out[:, q, m] = values[name]
    return out


def _spa_prefixes(ref: Reference, heads: np.ndarray, sizes: list[int]) -> np.ndarray:
    """SPA of every prefix: the :func:`prefix_sums` compared with the full set's p-values, a few sizes per call."""
    out = np.empty((len(heads), len(sizes)))
    per_call, pending = max(1, _SPA_ROWS // len(heads)), []  # sizes whose sums are compared in one call
    for q, sums in enumerate(prefix_sums(ref, heads, sizes)):
        pending.append((q, *sums))
        if len(pending) == per_call or q == len(sizes) - 1:
            done, *stacked = zip(*pending)
            out[:, list(done)] = spa_from_sums(ref, *map(np.concatenate, stacked)).reshape(len(done), len(heads)).T
            pending = []
    return out


def prefix_sums(
    ref: Reference, heads: np.ndarray, sizes: list[int]
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For each size ``k``, the sums of every ordering's ``heads[:, :k]``: sign-flipped (B, S, P), plain (B, S) and
    absolute (B,); block sums of ``scores.T @ signs`` accumulated along each ordering. Scores on a whole-number grid
    are summed and compared exactly in float32; others in float64 with the 1e-9 tolerance."""
    values = ref.matrix if ref.exact is None else ref.exact
    n_orders, n_systems = len(heads), values.shape[1]
    partial = np.zeros((n_orders, n_systems, ref.permutations), dtype=values.dtype)
    observed, abs_total, start = np.zeros((n_orders, n_systems), dtype=values.dtype), np.zeros(n_orders), 0
    for k in sizes:
        block = heads[:, start:k]
        scores = values[block]  # (B, block, S)
        partial += np.matmul(scores.transpose(0, 2, 1), ref.signs[block].astype(values.dtype))
        observed += scores.sum(axis=1)
        start = k
        if ref.exact is None:
            abs_total += np.abs(scores).sum(axis=(1, 2))
        yield partial.copy(), observed.copy(), abs_total.copy()


def spa_from_sums(ref: Reference, partial: np.ndarray, observed: np.ndarray, abs_total: np.ndarray) -> np.ndarray:
    """SPA of ``B`` subsets from their sums: sign-flipped scores ``partial`` (B, S, permutations), scores
    ``observed`` (B, S) and, for scores that are not exact, absolute scores ``abs_total`` (B,) that scale the
    1e-9 tie tolerance. The one place the subset p-values are compared with the full set's."""
    i, j = pair_indices(len(ref.means))
    threshold = observed[:, i] - observed[:, j]
    if ref.exact is None:
        threshold = threshold - 1e-9 * np.maximum(1.0, abs_total)[:, None]
    return 1.0 - np.abs(batch_pvalues(partial, threshold) - ref.pvalues).mean(axis=1)


def _batch_measures(
    ref: Reference, sub: np.ndarray, measures: Sequence[str]
) -> dict[str, np.ndarray | list[float] | None]:
    """Every measure but SPA for a batch of equal-size subsets ``sub`` (B, k, S)."""
    means = np.round(sub.mean(axis=1), 10)
    wanted = set(measures)
    found: dict[str, np.ndarray | list[float] | None] = {}
    if {"clusters", "top1_dice"} & wanted:
        found["clusters"], first = _batch_clusters(sub, means, ref.cluster_rule)
        if "top1_dice" in wanted:
            found["top1_dice"] = np.array([dice(members, ref.clusters[0]) for members in first])
    if "kendall" in wanted:
        found["kendall"] = kendall_rows(means, ref.means)
    if "pairwise_accuracy" in wanted:  # as measures.pairwise_accuracy, one row per subset
        found["pairwise_accuracy"] = np.asarray(mean_agreement(means, ref.means, ties="subset2evaluate"))
    found["spearman"] = [spearman(m, ref.means) for m in means] if "spearman" in wanted else None
    found["pearson"] = [pearson(m, ref.means) for m in means] if "pearson" in wanted else None
    found["top1"] = (ref.means[np.argmax(means, axis=1)] == ref.means.max()).astype(float)
    found["mae"] = np.abs(means - ref.means).mean(axis=1)
    found["rmse"] = np.sqrt(((means - ref.means) ** 2).mean(axis=1))
    return found


def _batch_clusters(
    sub: np.ndarray, means: np.ndarray, rule: str, alpha: float = CLUSTER_ALPHA
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Cluster counts (by ``rule``, as :func:`clusters`) and best-cluster members of a batch ``sub`` (B, k, S): one
    Wilcoxon call, on the adjacent pairs (``paper``) or on every pair (``wmt``)."""
    n_orders, k, n_systems = sub.shape
    order = np.lexsort((np.broadcast_to(np.arange(n_systems), means.shape), -means))  # per row, as clusters()
    ranked = sub[np.arange(n_orders)[:, None], :, order]  # (B, S, k): row s = the scores of system order[b, s]
    if rule == "paper":
        diffs = (ranked[:, 1:] - ranked[:, :-1]).reshape(-1, k)  # one row per adjacent pair, as wilcoxon_less_rows
        split = (wilcoxon_less_rows(diffs) < alpha).reshape(n_orders, n_systems - 1)
    else:
        better, worse = pair_indices(n_systems)  # every pair, as ordered_pvalues
        pvalues = np.ones((n_orders, n_systems, n_systems))
        diffs = (ranked[:, worse] - ranked[:, better]).reshape(-1, k)
        pvalues[:, better, worse] = wilcoxon_less_rows(diffs).reshape(n_orders, -1)
        split = _wmt_rows(pvalues, alpha) <= alpha
    first = np.where(split.any(axis=1), split.argmax(axis=1) + 1, n_systems)
    return 1.0 + split.sum(axis=1), [row[:size] for row, size in zip(order, first)]


def _check_measures(measures: Sequence[str]) -> None:
    unknown = [m for m in measures if m not in MEASURES]
    if unknown:
        raise CampaignError(f"unknown measure(s) {unknown}; valid: {list(MEASURES)}")


def subset_positions(campaign: Campaign, subset_ids: Iterable[object]) -> np.ndarray:
    """Campaign positions of subset ids; unknown ids raise naming them."""
    ids = [str(i) for i in subset_ids]
    try:
        return campaign.index_of(ids)
    except CampaignError as err:
        raise CampaignError(f"subset: {err}") from None


def evaluate_subset(
    campaign: Campaign,
    subset_ids: Iterable[object],
    *,
    score: str = HUMAN,
    permutations: int = 1000,
    seed: int = 0,
    measures: Sequence[str] = MEASURES,
    cluster_rule: str = "paper",
) -> dict[str, float]:
    """All (or the requested) measures for the subset with the given item ids (clusters by ``cluster_rule``)."""
    ref = full_reference(campaign, score=score, permutations=permutations, seed=seed, cluster_rule=cluster_rule)
    return evaluate_indices(ref, subset_positions(campaign, subset_ids), measures=measures)


def soft_pairwise_accuracy(
    campaign: Campaign, subset_ids: Iterable[object], *, score: str = HUMAN, permutations: int = 1000, seed: int = 0
) -> float:
    """SPA (paper Eq. 17) of the subset with the given item ids against the full campaign."""
    return evaluate_subset(campaign, subset_ids, score=score, permutations=permutations, seed=seed, measures=("spa",))[
        "spa"
    ]


def cluster_count(
    campaign: Campaign, subset_ids: Iterable[object] | None = None, *, score: str = HUMAN, rule: str = "paper"
) -> int:
    """Number of significance clusters (by ``rule``, one of :data:`CLUSTER_RULES`) on the subset (default: the
    full campaign)."""
    matrix = np.asarray(campaign.score(score), dtype=float)
    if subset_ids is not None:
        matrix = matrix[subset_positions(campaign, subset_ids)]
    return len(clusters(matrix, rule=rule))


def evaluate_weighted(
    ref: Reference, indices: Sequence[int] | np.ndarray, weights: Sequence[float] | np.ndarray
) -> dict[str, float]:
    """SPA, cluster count and Kendall τ-b of a *weighted* subset (weighted k-means, seed 002 App. A): item ``i``'s
    scores count ``weights[i]`` times, as if every item of its cluster had its scores.

    SPA: sign-flip sums and observed sums of ``weight × score`` (a replicated item keeps its one id-tied sign);
    clusters: :func:`clusters` (by ``ref.cluster_rule``) on the rows replicated by their (integer) weights; Kendall:
    weighted system means.
    With all weights equal this is :func:`evaluate_indices` (p-values do not change when every weight is scaled).
    """
    idx = np.asarray(indices, dtype=int)
    w = np.asarray(weights, dtype=float)
    if w.shape != idx.shape or len(idx) < 2 or len(np.unique(idx)) != len(idx):
        raise CampaignError(
            f"a weighted subset needs ≥ 2 distinct items and one weight per item, got {len(idx)} items, {w.shape} "
            "weights"
        )
    if (w <= 0).any() or not np.allclose(w, np.rint(w)):
        raise CampaignError("weights must be positive whole numbers (cluster sizes)")
    scores = ref.matrix[idx]
    weighted = scores * w[:, None]
    with one_blas_thread():
        p = pvalues_from_sums(
            partial_sums(weighted, ref.signs[idx]),
            weighted.sum(axis=0),
            float(np.abs(weighted).sum()),
            ref.permutations,
        )
    replicated = np.repeat(scores, np.rint(w).astype(int), axis=0)
    means = np.round(weighted.sum(axis=0) / w.sum(), 10)
    return {
        "spa": float(1.0 - np.abs(p - ref.pvalues).mean()),
        "clusters": float(len(clusters(replicated, rule=ref.cluster_rule))),
        "kendall": kendall_tau_b(means, ref.means),
    }
