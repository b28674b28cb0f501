"""Paired significance tests behind the meta-evaluation, vectorised: sign-flip permutation p-values for every
system pair (SPA, paper Eq. 17) and the one-sided Wilcoxon signed-rank test of the cluster count (Algorithm 1).

Sign flips are tied to item ids (see :func:`item_signs`), so p-values do not depend on item order.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Sequence

import numpy as np

from precomet.errors import CampaignError
from precomet.stats import normal_cdf

_CHUNK = 8192
_COUNT_ROWS = 8  # orderings per pass of batch_pvalues: its buffers stay in L2 (12 systems, 1,000 flips: 0.7 MB)
_CONTROLLER = None  # threadpoolctl.ThreadpoolController, created on first use (its library scan is slow)


# --------------------------------------------------------------------------- sign flips and p-values
def item_signs(ids: Sequence[str] | np.ndarray, *, permutations: int = 1000, seed: int = 0) -> np.ndarray:
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
    return pvalues_from_sums(
        partial_sums(scores, signs), scores.sum(axis=0), float(np.abs(scores).sum()), signs.shape[1]
    )


def partial_sums(scores: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """``scores.T @ signs`` as an ``(S, P)`` float matrix (chunks bound the float copy of the signs)."""
    partial = np.zeros((scores.shape[1], signs.shape[1]))
    with one_blas_thread():
        for start in range(0, len(scores), _CHUNK):
            block = slice(start, start + _CHUNK)
            partial += scores[block].T @ signs[block].astype(float)
    return partial


def pvalues_from_sums(partial: np.ndarray, observed: np.ndarray, abs_total: float, permutations: int) -> np.ndarray:
    i, j = pair_indices(len(observed))
    tolerance = 1e-9 * max(1.0, abs_total)
    null = partial[i] - partial[j]
    return np.count_nonzero(null >= (observed[i] - observed[j] - tolerance)[:, None], axis=1) / permutations


def one_blas_thread():
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


# --------------------------------------------------------------------------- Wilcoxon signed-rank
def wilcoxon_less(diffs: np.ndarray) -> np.ndarray:
    """scipy's one-sided Wilcoxon signed-rank p-value of "median < 0" for each column of ``(n, K)`` diffs.

    Equals ``scipy.stats.wilcoxon(d, alternative="less").pvalue`` (zeros dropped, average ranks, no
    continuity correction) and follows scipy's choice of method: normal approximation with tie correction
    when n > 50 or ties/zeros with n > 13, exact null distribution without ties/zeros, exact sign-flip
    enumeration for n ≤ 13 with ties/zeros. Written in numpy because scipy's per-call overhead dominated the
    benchmark loop. Columns that are all zero (identical systems) get p = 1.
    """
    return wilcoxon_less_rows(np.ascontiguousarray(np.asarray(diffs, dtype=float).T))


def wilcoxon_less_rows(rows: np.ndarray) -> np.ndarray:
    """:func:`wilcoxon_less` of each row of ``(K, n)`` diffs (rows contiguous: the sorts run along them)."""
    k, n = rows.shape
    count = (rows != 0).sum(axis=1)
    # average ranks of |d| among the nonzero entries of each row; zeros sort last as +inf
    magnitude = np.abs(rows)
    magnitude[magnitude == 0] = np.inf
    # sort |d| with the sign alongside: the bits of a non-negative float order like the float (the top bit, the
    # sign, is 0), so key = bits · 2 + (d > 0) sorts by |d|; tied |d| share one average rank, so their order is
    # irrelevant. One value sort is ~2× faster than argsort + two gathers.
    keys = np.sort((magnitude.view(np.uint64) << np.uint64(1)) | (rows > 0), axis=1)
    ordered = (keys >> np.uint64(1)).view(np.float64)  # |d| sorted, zeros last
    positive = (keys & np.uint64(1)).astype(bool)
    # tie groups: each sorted position's group spans first..last (0-based); its average rank is their mean + 1
    starts, ends = np.ones((k, n), bool), np.ones((k, n), bool)
    starts[:, 1:] = ends[:, :-1] = ordered[:, 1:] != ordered[:, :-1]
    position = np.arange(n)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, n)[:, ::-1], axis=1)[:, ::-1]
    ranks = (first + last) / 2.0 + 1.0  # half-integers: exact, so sums are exact in any order
    r_plus = np.where(positive, ranks, 0.0).sum(axis=1)
    size = last - first + 1  # a group of t contributes t³ − t = t · (t² − 1): t² − 1 at each of its positions
    ties = np.where(np.isfinite(ordered), size * size - 1, 0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt((count * (count + 1) * (2 * count + 1) - ties / 2.0) / 24.0)
        pvalues = normal_cdf((r_plus - count * (count + 1) / 4.0) / se)
    if n <= 50:  # scipy's small-sample methods
        exact = (count == n) & (ties == 0)
        if exact.any():
            pvalues[exact] = _signed_rank_cdf(n)[np.ceil(r_plus[exact]).astype(int)]
        for col in np.flatnonzero(~exact & (count > 0)) if n <= 13 else ():
            signs = ((np.arange(2 ** count[col])[:, None] >> np.arange(count[col])) & 1).astype(float)
            null = signs @ ranks[col, : count[col]]  # the nonzero entries; zeros only duplicate every pattern
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


def exact_float32(matrix: np.ndarray) -> np.ndarray | None:
    """``matrix × q`` as float32 for the smallest ``q`` in 1, 2, 4, 5, 10, 20, 100, 1000 that makes every score
    a whole number while the difference of any two systems' sign-flip sums stays below 2**24 (e.g. q = 10 for MQM,
    1 for ESA); ``None`` if there is none. On such a grid float32 sums, differences and comparisons are exact (and
    twice as fast as float64)."""
    bound = float(np.abs(matrix).sum(axis=0).max(initial=0.0))  # of any sign-flip sum; a difference of two: 2 × it
    for q in (1, 2, 4, 5, 10, 20, 100, 1000):
        scaled = matrix * q
        if 2 * bound * q < 2**24 and np.all(np.abs(scaled - np.rint(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return np.rint(scaled).astype(np.float32)
    return None


def batch_pvalues(partial: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """:func:`pvalues_from_sums` for a batch: ``partial`` (B, S, P) sign-flip sums, ``threshold`` (B, pairs) observed
    differences (minus the tolerance in float64; exact in float32 on the :func:`exact_float32` grid). System by
    system and 8 orderings at a time into two reused buffers, so the (orderings, pairs, P) null differences never
    exist at once and no pass allocates (numpy's floor for these passes: benchmarks/results/spa-kernel.md)."""
    n_orders, n_systems, permutations = partial.shape
    counts = np.empty(threshold.shape)
    total = np.uint16 if permutations < 2**16 else np.int64  # counting bytes into uint16 was 3× faster
    null = np.empty((min(n_orders, _COUNT_ROWS), max(n_systems - 1, 0), permutations), partial.dtype)
    reached = np.empty(null.shape, bool)
    for start in range(0, n_orders, _COUNT_ROWS):
        rows, col = slice(start, start + _COUNT_ROWS), 0
        height = min(_COUNT_ROWS, n_orders - start)
        for a in range(n_systems - 1):
            width = n_systems - a - 1
            differences, above = null[:height, :width], reached[:height, :width]
            np.subtract(partial[rows, a, None, :], partial[rows, a + 1 :, :], out=differences)  # pairs (a, a+1..)
            np.greater_equal(differences, threshold[rows, col : col + width, None], out=above)
            counts[rows, col : col + width] = above.view(np.uint8).sum(axis=2, dtype=total)
            col += width
    return counts / permutations
