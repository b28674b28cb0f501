"""The paired item bootstrap of system means and the win probabilities drawn from it."""

from __future__ import annotations

import numpy as np

from precomet.errors import PrecometError
from precomet.significance import one_blas_thread

_CHUNK_CELLS = (
    4_000_000  # rounds × items drawn per chunk (bounds memory at ~32 MB per array); part of the seeded stream
)


def bootstrap_means(matrix: np.ndarray, *, rounds: int = 1000, seed: int = 0) -> np.ndarray:
    """``(rounds, S)`` system means over item resamples with replacement (paired across systems, NaN = unrated).

    Round ``r`` draws ``N`` item positions uniformly (numpy ``default_rng(seed)``, chunks of rounds in order), turns
    them into multiplicities and takes ``counts @ scores / counts @ rated``. A system unrated in every drawn item
    of a round gets NaN for that round (possible only for systems with very few ratings).
    """
    matrix = np.asarray(matrix, dtype=float)
    n, s = matrix.shape
    if rounds < 1:
        raise PrecometError(f"bootstrap rounds must be at least 1, got {rounds}")
    rated = ~np.isnan(matrix)
    values = np.where(rated, matrix, 0.0)
    complete = bool(rated.all())
    rng = np.random.default_rng(seed)
    out = np.empty((rounds, s))
    step = max(1, _CHUNK_CELLS // max(n, 1))
    offsets = None
    with one_blas_thread():
        for start in range(0, rounds, step):
            b = min(step, rounds - start)
            draws = rng.integers(0, n, size=(b, n))
            if offsets is None or len(offsets) != b:
                offsets = (np.arange(b) * n)[:, None]
            counts = np.bincount((draws + offsets).ravel(), minlength=b * n).reshape(b, n).astype(float)
            totals = counts @ values
            if complete:
                out[start : start + b] = totals / n
            else:
                weight = counts @ rated.astype(float)
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[start : start + b] = np.where(weight > 0, totals / np.where(weight > 0, weight, 1.0), np.nan)
    return out


def percentile_interval(boot: np.ndarray, estimate: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``confidence`` percentile interval of the ``(rounds, S)`` bootstrap ``boot``, rounded to 10 decimals as
    the reported means are, and widened where needed so that it always holds ``estimate`` (at the edges of float
    precision, e.g. subnormal scores, the rounded mean could otherwise fall outside its own interval)."""
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    low, high = np.round(low, 10), np.round(high, 10)
    estimate = np.asarray(estimate, dtype=float)
    known = ~np.isnan(estimate)
    low = np.where(known & ~(low <= estimate), estimate, low)
    high = np.where(known & ~(high >= estimate), estimate, high)
    return low, high


def win_probabilities(boot: np.ndarray) -> np.ndarray:
    """``(S, S)``: share of rounds with mean[a] > mean[b], ties half; rounds where either is NaN are skipped."""
    s = boot.shape[1]
    win = np.full((s, s), 0.5)
    for a in range(s):  # S passes over (rounds, S): no (rounds, S, S) array
        diff = boot[:, a, None] - boot
        valid = ~np.isnan(diff)
        n_valid = valid.sum(axis=0)
        score = (diff > 0).sum(axis=0) + 0.5 * ((diff == 0) & valid).sum(axis=0)
        win[a] = np.divide(score, n_valid, out=np.full(s, 0.5), where=n_valid > 0)
    np.fill_diagonal(win, 0.5)
    return win
