"""Meta-evaluation: how close is the evaluation outcome on a subset to the outcome on the full campaign?

All measures compare system-level results of a subset ``Y`` with those of the full campaign ``X`` on one
score (default :data:`~precomet.campaign.HUMAN`):

* **SPA**, soft pairwise accuracy (Thompson et al. 2024; paper Eq. 17): ``1 − mean_pairs |p^Y − p^X|`` where
  ``p`` is the one-sided paired permutation p-value of "mean of A > mean of B" from sign flips,
  ``p = #{null ≥ observed} / P`` (no +1, ties count as "≥", as in Thompson's code and subset2evaluate).
  The sign flips are tied to the *item id* (a hash of seed and id), so the value does not depend on the
  order of items, and one matrix product per call serves every pair and permutation.
* pairwise accuracy, Kendall τ-b / Spearman / Pearson of system means, top-1 match, MAE / RMSE;
* **clusters** (paper Algorithm 1): systems sorted by mean; a one-sided Wilcoxon signed-rank test
  (p < 0.05) against the previous system opens a new cluster; identical systems stay together.

Use :func:`full_reference` once per campaign (it is cached) and :func:`evaluate_indices` per subset, or the
id-based conveniences :func:`soft_pairwise_accuracy` / :func:`evaluate_subset`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import CampaignError

log = logging.getLogger(__name__)

MEASURES = ("spa", "pairwise_accuracy", "kendall", "spearman", "pearson", "top1", "clusters", "top1_dice", "mae", "rmse")
"""Everything :func:`evaluate_indices` can compute; ``corr`` in benchmark results is ``kendall``."""

CLUSTER_ALPHA = 0.05
_CHUNK = 8192
_BATCH = 8_000_000  # elements of the largest temporary array in a batched SPA step
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CONTROLLER = None  # threadpoolctl.ThreadpoolController, created on first use (its library scan is slow)


# --------------------------------------------------------------------------- sign flips and p-values
def item_signs(ids: Sequence[str], *, permutations: int = 1000, seed: int = 0) -> np.ndarray:
    """An ``(N, permutations)`` int8 matrix of ±1 sign flips; row ``i`` depends only on ``(seed, ids[i])``.

    Each item's key is a BLAKE2b hash of seed and id; splitmix64 of key + counter gives 64 signs per word.
    """
    if permutations < 1:
        raise CampaignError(f"permutations must be at least 1, got {permutations}")
    keys = np.array(
        [int.from_bytes(hashlib.blake2b(f"{seed}\x1f{i}".encode(), digest_size=8).digest(), "little") for i in ids],
        dtype=np.uint64,
    )
    words = -(-permutations // 64)
    with np.errstate(over="ignore"):
        z = keys[:, None] + np.arange(1, words + 1, dtype=np.uint64)[None, :] * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    bits = np.unpackbits(np.ascontiguousarray(z).view(np.uint8).reshape(len(keys), words * 8), axis=1)
    return (bits[:, :permutations].astype(np.int8) * 2 - 1).astype(np.int8)


@functools.lru_cache(maxsize=32)
def pair_indices(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle system pairs ``(i, j)``, ``i < j``, in row-major order (as subset2evaluate); read-only."""
    pairs = np.triu_indices(n_systems, 1)
    for index in pairs:
        index.flags.writeable = False
    return pairs


def pairwise_pvalues(scores: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """One-sided permutation p-values of "system i > system j" for every pair ``i < j``.

    ``scores`` is ``(n, S)``, ``signs`` the matching ``(n, P)`` ±1 rows. ``p = #{null ≥ observed} / P`` with
    the null sums ``signs.T @ scores`` (one matrix product) and a 1e-9 relative tolerance so exact ties
    (e.g. identical systems, integer MQM scores) count as ties whatever the summation order.
    """
    scores = np.asarray(scores, dtype=float)
    return _pvalues(_partial_sums(scores, signs), scores.sum(axis=0), float(np.abs(scores).sum()), signs.shape[1])


def _partial_sums(scores: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """``scores.T @ signs`` as an ``(S, P)`` float matrix (chunks bound the float copy of the signs)."""
    partial = np.zeros((scores.shape[1], signs.shape[1]))
    with _one_blas_thread():
        for start in range(0, len(scores), _CHUNK):
            block = slice(start, start + _CHUNK)
            partial += scores[block].T @ signs[block].astype(float)
    return partial


def _pvalues(partial: np.ndarray, observed: np.ndarray, abs_total: float, permutations: int) -> np.ndarray:
    i, j = pair_indices(len(observed))
    tolerance = 1e-9 * max(1.0, abs_total)
    null = partial[i] - partial[j]
    return np.count_nonzero(null >= (observed[i] - observed[j] - tolerance)[:, None], axis=1) / permutations


def _one_blas_thread():
    """Scoped single-threaded BLAS: these products are small, and on a busy machine BLAS threads made
    them ~20× slower. Restored on exit; a no-op context when threadpoolctl is unavailable."""
    global _CONTROLLER
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return contextlib.nullcontext()
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


# --------------------------------------------------------------------------- clusters
def wilcoxon_less(diffs: np.ndarray) -> np.ndarray:
    """scipy's one-sided Wilcoxon signed-rank p-value of "median < 0" for each column of ``(n, K)`` diffs.

    Equals ``scipy.stats.wilcoxon(d, alternative="less").pvalue`` (zeros dropped, average ranks, no
    continuity correction) and follows scipy's choice of method: normal approximation with tie correction
    when n > 50 or ties/zeros with n > 13, exact null distribution without ties/zeros, exact sign-flip
    enumeration for n ≤ 13 with ties/zeros. Written in numpy because scipy's per-call overhead dominated the
    benchmark loop. Columns that are all zero (identical systems) get p = 1.
    """
    from scipy.special import ndtr

    n, k = np.shape(diffs)
    rows = np.ascontiguousarray(np.asarray(diffs, dtype=float).T)  # one row per column: contiguous sorts
    nonzero = rows != 0
    count = nonzero.sum(axis=1)
    # average ranks of |d| among the nonzero entries of each row; zeros sort last as +inf
    magnitude = np.where(nonzero, np.abs(rows), np.inf)
    order = np.argsort(magnitude, axis=1)  # tied values get average ranks: their order is irrelevant
    ordered = np.take_along_axis(magnitude, order, axis=1)
    starts = np.hstack([np.ones((k, 1), bool), ordered[:, 1:] != ordered[:, :-1]])
    group = np.cumsum(starts, axis=1) - 1 + n * np.arange(k)[:, None]  # tie groups, numbered per row
    sizes = np.bincount(group.ravel(), minlength=n * k)
    first = np.cumsum(sizes) - sizes - n * (np.arange(n * k) // n)  # 0-based position where each group starts
    ranks = np.empty_like(magnitude)
    np.put_along_axis(ranks, order, (first + (sizes + 1) / 2.0)[group], axis=1)
    r_plus = np.where(rows > 0, ranks, 0.0).sum(axis=1)  # half-integers: exact in any summation order
    tie_sizes = np.where(np.isfinite(ordered) & starts, sizes[group], 0)
    ties = (tie_sizes**3 - tie_sizes).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt((count * (count + 1) * (2 * count + 1) - ties / 2.0) / 24.0)
        pvalues = ndtr((r_plus - count * (count + 1) / 4.0) / se)
    if n <= 50:  # scipy's small-sample methods
        exact = (count == n) & (ties == 0)
        if exact.any():
            pvalues[exact] = _signed_rank_cdf(n)[np.ceil(r_plus[exact]).astype(int)]
        for col in np.flatnonzero(~exact & (count > 0)) if n <= 13 else ():
            signs = ((np.arange(2 ** count[col])[:, None] >> np.arange(count[col])) & 1).astype(float)
            null = signs @ ranks[col, nonzero[col]]  # zeros only duplicate every pattern
            pvalues[col] = np.mean(null <= r_plus[col] + abs(r_plus[col]) * np.finfo(float).eps * 100)
    pvalues[count == 0] = 1.0
    return pvalues


@functools.lru_cache(maxsize=64)
def _signed_rank_cdf(n: int) -> np.ndarray:
    """P(signed-rank sum ≤ r) for r = 0..n(n+1)/2 (ranks 1..n, no ties), from exact pattern counts."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    return np.cumsum(counts) / counts.sum()


def clusters(scores: np.ndarray, *, alpha: float = CLUSTER_ALPHA) -> list[list[int]]:
    """Paper Algorithm 1 on an ``(n, S)`` score matrix: lists of system indices, best cluster first.

    Systems are sorted by mean (descending, ties by index). Each system is compared with the previous one
    (the last member of the current cluster); p < ``alpha`` opens a new cluster.
    """
    scores = np.asarray(scores, dtype=float)
    order = np.lexsort((np.arange(scores.shape[1]), -system_means(scores)))
    pvalues = wilcoxon_less(scores[:, order[1:]] - scores[:, order[:-1]])
    result = [[int(order[0])]]
    for system, p in zip(order[1:], pvalues):
        if p < alpha:
            result.append([int(system)])
        else:
            result[-1].append(int(system))
    return result


def system_means(scores: np.ndarray) -> np.ndarray:
    """Column means rounded to 10 decimals, so systems with equal means tie whatever the summation order."""
    return np.round(np.asarray(scores, dtype=float).mean(axis=0), 10)


def dice(a: Iterable[int], b: Iterable[int]) -> float:
    """Sørensen–Dice coefficient of two sets."""
    a, b = set(a), set(b)
    return 2 * len(a & b) / (len(a) + len(b))


# --------------------------------------------------------------------------- system-level correlations
def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall τ-b of two short vectors (O(S²), equals scipy's); 0 when either is constant (as the peer)."""
    sx = np.sign(np.subtract.outer(x, x))
    sy = np.sign(np.subtract.outer(y, y))
    denominator = np.sqrt(np.count_nonzero(sx) * np.count_nonzero(sy))
    return float((sx * sy).sum() / denominator) if denominator else 0.0


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r; 0 when either vector is constant."""
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / denominator) if denominator > 0 else 0.0


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman ρ (Pearson of average ranks); 0 when either vector is constant."""
    from scipy.stats import rankdata

    return pearson(rankdata(x), rankdata(y))


def pairwise_accuracy(sub_means: np.ndarray, full_means: np.ndarray) -> float:
    """Share of system pairs ordered the same way (``a < b`` on both or on neither), as subset2evaluate."""
    i, j = pair_indices(len(full_means))
    return float(np.mean((sub_means[i] < sub_means[j]) == (full_means[i] < full_means[j])))


# --------------------------------------------------------------------------- reference and evaluation
@dataclass(frozen=True, eq=False)
class Reference:
    """Everything about the full campaign the subset measures need, computed once (see :func:`full_reference`)."""

    ids: np.ndarray
    systems: tuple[str, ...]
    score: str
    matrix: np.ndarray
    signs: np.ndarray
    permutations: int
    seed: int
    pvalues: np.ndarray
    means: np.ndarray
    clusters: list[list[int]]

    def __len__(self) -> int:
        return len(self.ids)


def full_reference(campaign: Campaign, *, score: str = HUMAN, permutations: int = 1000, seed: int = 0) -> Reference:
    """The full-set side of every measure (p-values, means, clusters); cached per campaign object."""
    key = (score, permutations, seed)
    cached = _CACHE.setdefault(campaign, {})
    if key not in cached:
        matrix = np.asarray(campaign.score(score), dtype=float)
        if len(campaign.systems) < 2:
            raise CampaignError(f"campaign {campaign.name!r}: meta-evaluation needs at least 2 systems, got {len(campaign.systems)}")
        if len(campaign) < 2:
            raise CampaignError(f"campaign {campaign.name!r}: meta-evaluation needs at least 2 items, got {len(campaign)}")
        missing = np.isnan(matrix)
        if missing.any():
            row, col = np.argwhere(missing)[0]
            raise CampaignError(
                f"campaign {campaign.name!r}: score {score!r} missing for item {campaign.ids[row]!r}, system"
                f" {campaign.systems[col]!r} ({int(missing.any(axis=1).sum())} items); use Campaign.complete({score!r})"
            )
        signs = item_signs(campaign.ids, permutations=permutations, seed=seed)
        cached[key] = Reference(
            ids=campaign.ids, systems=campaign.systems, score=score, matrix=matrix, signs=signs,
            permutations=permutations, seed=seed, pvalues=pairwise_pvalues(matrix, signs),
            means=system_means(matrix), clusters=clusters(matrix),
        )
        log.debug("full-set reference for %s/%s computed (%d items)", campaign.name, score, len(campaign))
    return cached[key]


def spa_indices(ref: Reference, indices: np.ndarray) -> float:
    """Soft pairwise accuracy of the subset at campaign positions ``indices``."""
    scores = ref.matrix[indices]
    p = _pvalues(_partial_sums(scores, ref.signs[indices]), scores.sum(axis=0), float(np.abs(scores).sum()), ref.permutations)
    return float(1.0 - np.abs(p - ref.pvalues).mean())


def evaluate_indices(ref: Reference, indices: Sequence[int] | np.ndarray, *, measures: Sequence[str] = MEASURES) -> dict[str, float]:
    """The requested :data:`MEASURES` for the subset at campaign positions ``indices`` (order irrelevant)."""
    idx = np.unique(np.asarray(indices, dtype=int))
    if len(idx) != len(indices):
        raise CampaignError(f"subset lists {len(indices) - len(idx)} item(s) more than once")
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
    ref: Reference, orders: Sequence[Sequence[int] | np.ndarray], sizes: Sequence[int], *, measures: Sequence[str] = MEASURES
) -> np.ndarray:
    """The ``measures`` of ``order[:k]`` for every ordering and every ``k`` in ``sizes`` (non-decreasing): an array
    ``(len(orders), len(sizes), len(measures))``.

    Batched for benchmark loops (many random orderings × budgets): nested prefixes share the SPA products
    (each item enters the sign-flip sums once per ordering, all orderings in one batched product), and all
    subsets of one size share a single vectorised Wilcoxon call for the cluster counts.
    """
    _check_measures(measures)
    sizes = [int(k) for k in sizes]
    if not sizes or sorted(sizes) != sizes or sizes[0] < 2:
        raise CampaignError(f"prefix sizes must be increasing and at least 2, got {sizes}")
    heads = [np.asarray(o, dtype=int)[: sizes[-1]] for o in orders]
    if not heads or min(len(h) for h in heads) < sizes[-1]:
        raise CampaignError(f"every ordering needs at least {sizes[-1]} positions (the largest size)")
    heads = np.stack(heads)
    ordered = np.sort(heads, axis=1)
    if (ordered[:, 1:] == ordered[:, :-1]).any() or ordered.min() < 0 or ordered.max() >= len(ref):
        raise CampaignError(f"an ordering must list distinct campaign positions in 0..{len(ref) - 1}")
    out = np.empty((len(heads), len(sizes), len(measures)))
    step = max(1, _BATCH // (len(ref.pvalues) * ref.permutations))  # bounds the (orderings, pairs, P) null array
    with _one_blas_thread():
        for start in range(0, len(heads), step):
            out[start:start + step] = _evaluate_batch(ref, heads[start:start + step], sizes, measures)
    return out


def _evaluate_batch(ref: Reference, heads: np.ndarray, sizes: list[int], measures: Sequence[str]) -> np.ndarray:
    out = np.empty((len(heads), len(sizes), len(measures)))
    spa = _spa_prefixes(ref, heads, sizes) if "spa" in measures else None
    for q, k in enumerate(sizes):
        sub = ref.matrix[np.sort(heads[:, :k], axis=1)]  # (B, k, S) in canonical row order
        values = _batch_measures(ref, sub, measures)
        for m, name in enumerate(measures):
            out[:, q, m] = spa[:, q] if name == "spa" else values[name]
    return out


def _spa_prefixes(ref: Reference, heads: np.ndarray, sizes: list[int]) -> np.ndarray:
    """SPA of every prefix: block sums of ``scores.T @ signs`` accumulated along each ordering."""
    n_orders, n_systems = len(heads), ref.matrix.shape[1]
    partial = np.zeros((n_orders, n_systems, ref.permutations))
    observed, abs_total = np.zeros((n_orders, n_systems)), np.zeros(n_orders)
    i, j = pair_indices(n_systems)
    out, start = np.empty((n_orders, len(sizes))), 0
    for q, k in enumerate(sizes):
        block = heads[:, start:k]
        scores = ref.matrix[block]  # (B, block, S)
        partial += np.matmul(scores.transpose(0, 2, 1), ref.signs[block].astype(float))
        observed += scores.sum(axis=1)
        abs_total += np.abs(scores).sum(axis=(1, 2))
        start = k
        threshold = observed[:, i] - observed[:, j] - 1e-9 * np.maximum(1.0, abs_total)[:, None]
        out[:, q] = 1.0 - np.abs(_batch_pvalues(partial, threshold) - ref.pvalues).mean(axis=1)
    return out


def _batch_pvalues(partial: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """``_pvalues`` for a batch: ``partial`` (B, S, P) sign-flip sums, ``threshold`` (B, pairs) observed
    differences minus tolerance. System by system and a few orderings at a time, so that the (orderings,
    pairs, P) null differences never exist at once (4× faster than one fancy-indexed array: cache)."""
    n_orders, n_systems, permutations = partial.shape
    counts = np.empty(threshold.shape)
    for start in range(0, n_orders, 8):
        rows, col = slice(start, start + 8), 0
        for a in range(n_systems - 1):
            width = n_systems - a - 1
            null = partial[rows, a, None, :] - partial[rows, a + 1:, :]  # pairs (a, a+1..S-1), as pair_indices
            counts[rows, col:col + width] = np.count_nonzero(null >= threshold[rows, col:col + width, None], axis=2)
            col += width
    return counts / permutations


def _batch_measures(ref: Reference, sub: np.ndarray, measures: Sequence[str]) -> dict[str, np.ndarray]:
    """Every measure but SPA for a batch of equal-size subsets ``sub`` (B, k, S)."""
    means = np.round(sub.mean(axis=1), 10)
    wanted, found = set(measures), {}
    if {"clusters", "top1_dice"} & wanted:
        found["clusters"], first = _batch_clusters(sub, means)
        found["top1_dice"] = np.array([dice(members, ref.clusters[0]) for members in first])
    if "kendall" in wanted:
        sx = np.sign(means[:, :, None] - means[:, None, :])
        sy = np.sign(np.subtract.outer(ref.means, ref.means))
        denominator = np.sqrt(np.count_nonzero(sx, axis=(1, 2)) * np.count_nonzero(sy))
        found["kendall"] = np.divide((sx * sy).sum(axis=(1, 2)), denominator, out=np.zeros(len(sub)), where=denominator > 0)
    if "pairwise_accuracy" in wanted:
        i, j = pair_indices(len(ref.means))
        found["pairwise_accuracy"] = np.mean((means[:, i] < means[:, j]) == (ref.means[i] < ref.means[j]), axis=1)
    found["spearman"] = [spearman(m, ref.means) for m in means] if "spearman" in wanted else None
    found["pearson"] = [pearson(m, ref.means) for m in means] if "pearson" in wanted else None
    found["top1"] = (ref.means[np.argmax(means, axis=1)] == ref.means.max()).astype(float)
    found["mae"] = np.abs(means - ref.means).mean(axis=1)
    found["rmse"] = np.sqrt(((means - ref.means) ** 2).mean(axis=1))
    return found


def _batch_clusters(sub: np.ndarray, means: np.ndarray, alpha: float = CLUSTER_ALPHA) -> tuple[np.ndarray, list[np.ndarray]]:
    """Cluster counts (Algorithm 1) and best-cluster members of a batch ``sub`` (B, k, S): one Wilcoxon call."""
    n_orders, k, n_systems = sub.shape
    order = np.lexsort((np.broadcast_to(np.arange(n_systems), means.shape), -means))  # per row, as clusters()
    ranked = np.take_along_axis(sub, order[:, None, :], axis=2)
    diffs = (ranked[:, :, 1:] - ranked[:, :, :-1]).transpose(1, 0, 2).reshape(k, -1)
    split = (wilcoxon_less(diffs) < alpha).reshape(n_orders, n_systems - 1)
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
    campaign: Campaign, subset_ids: Iterable[object], *, score: str = HUMAN, permutations: int = 1000,
    seed: int = 0, measures: Sequence[str] = MEASURES,
) -> dict[str, float]:
    """All (or the requested) measures for the subset with the given item ids."""
    ref = full_reference(campaign, score=score, permutations=permutations, seed=seed)
    return evaluate_indices(ref, subset_positions(campaign, subset_ids), measures=measures)


def soft_pairwise_accuracy(
    campaign: Campaign, subset_ids: Iterable[object], *, score: str = HUMAN, permutations: int = 1000, seed: int = 0
) -> float:
    """SPA (paper Eq. 17) of the subset with the given item ids against the full campaign."""
    return evaluate_subset(campaign, subset_ids, score=score, permutations=permutations, seed=seed, measures=("spa",))["spa"]


def cluster_count(campaign: Campaign, subset_ids: Iterable[object] | None = None, *, score: str = HUMAN) -> int:
    """Number of significance clusters (Algorithm 1) on the subset (default: the full campaign)."""
    matrix = np.asarray(campaign.score(score), dtype=float)
    if subset_ids is not None:
        matrix = matrix[subset_positions(campaign, subset_ids)]
    return len(clusters(matrix))
