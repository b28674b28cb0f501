"""Pairwise agreement between two orderings of the same systems: the one definition the package uses.

Two orderings are compared pair by pair on the differences ``estimated`` and ``truth`` of every system pair
(``a − b``). A pair is **tied in the truth** when ``|truth| ≤ width`` (``width`` per pair or one number; 0: only an
exact tie) and **tied in the estimate** when ``estimated == 0``. How ties count is named by two choices:

``ties`` — a pair the truth orders and the estimate ties:

* ``"strict"``: it disagrees (only the same strict order agrees);
* ``"agree"``: it agrees (only a strictly opposite order disagrees);
* ``"coin"``: half of it agrees (the estimate's order is a coin flip);
* ``"subset2evaluate"``: the peer's rule, ``(a < b)`` on both sides or on neither (an estimated tie agrees with a
  truth ``a > b`` and disagrees with ``a < b``; kept only to match its pairwise accuracy). This rule knows no tie in
  the truth either: a truth ``a = b`` (or within ``width``) reads as ``a > b``, so with ``over="all"`` such a pair
  disagrees with an estimated ``a < b``; ``width`` acts only through ``over="separated"``.

``over`` — the pairs tied in the truth:

* ``"all"``: they agree with any order and count in the share (every pair is in the denominator);
* ``"separated"``: they are left out (the share is over the pairs the truth separates; 1.0 when none is).

Every function is vectorised over leading axes: ``estimated`` and ``truth`` broadcast against each other.
"""

from __future__ import annotations

import numpy as np

from precomet.significance import pair_indices

TIE_RULES = ("strict", "agree", "coin", "subset2evaluate")
"""How a pair the truth orders and the estimate ties counts (module docstring)."""
OVER = ("all", "separated")
"""Which pairs the share is over (module docstring)."""


def pair_differences(means: np.ndarray) -> np.ndarray:
    """``means[..., a] − means[..., b]`` for every pair of :func:`pair_indices` (last axis = systems)."""
    means = np.asarray(means, dtype=float)
    a, b = pair_indices(means.shape[-1])
    return means[..., a] - means[..., b]


def _check(ties: str, over: str) -> None:
    if ties not in TIE_RULES:
        raise ValueError(f"unknown tie rule {ties!r}; choose one of {', '.join(TIE_RULES)}")
    if over not in OVER:
        raise ValueError(f"unknown pairs {over!r}; choose one of {', '.join(OVER)}")


def disagreement(
    estimated: np.ndarray, truth: np.ndarray, *, ties: str, width: float | np.ndarray = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """``(wrong, separated)`` per pair: how much of the pair disagrees (0, ½ or 1) and whether the truth separates it
    (``|truth| > width``). A pair the truth ties is never wrong, except under ``"subset2evaluate"`` (module
    docstring)."""
    _check(ties, "all")
    estimated, truth = np.broadcast_arrays(np.asarray(estimated, dtype=float), np.asarray(truth, dtype=float))
    separated = np.abs(truth) > np.asarray(width, dtype=float)
    if ties == "subset2evaluate":
        return ((estimated < 0) != (truth < 0)).astype(float), separated
    opposite = np.sign(estimated) * np.sign(truth) < 0
    estimate_tie = {"strict": 1.0, "agree": 0.0, "coin": 0.5}[ties]
    wrong = np.where(opposite, 1.0, np.where(estimated == 0, estimate_tie, 0.0))
    return np.where(separated, wrong, 0.0), separated


def wrong_pairs(estimated: np.ndarray, truth: np.ndarray, *, ties: str, width: float | np.ndarray = 0.0) -> np.ndarray:
    """The number of pairs that disagree (sum over the last axis of :func:`disagreement`)."""
    return disagreement(estimated, truth, ties=ties, width=width)[0].sum(axis=-1)


def agreement(
    estimated: np.ndarray,
    truth: np.ndarray,
    *,
    ties: str,
    over: str = "all",
    width: float | np.ndarray = 0.0,
) -> np.ndarray | float:
    """The share of pairs on which the two orderings agree (module docstring), over the last axis of the pair
    differences ``estimated`` and ``truth``; a float for one ordering, an array over the leading axes otherwise. With
    no pair to count it is 1.0 (nothing is ordered wrong)."""
    _check(ties, over)
    wrong, separated = disagreement(estimated, truth, ties=ties, width=width)
    counted = separated if over == "separated" else np.ones_like(separated)
    n = counted.sum(axis=-1)
    # agreeing / n (not 1 − wrong / n): one rounding, so a count-based share is the mean of a boolean array bit for bit
    agreeing = np.where(counted, 1.0 - wrong, 0.0).sum(axis=-1)
    share = np.divide(agreeing, n, out=np.ones(np.shape(n)), where=n > 0)
    return float(share) if np.ndim(share) == 0 else share


def mean_agreement(
    estimated_means: np.ndarray,
    truth_means: np.ndarray,
    *,
    ties: str,
    over: str = "all",
    width: float | np.ndarray = 0.0,
) -> np.ndarray | float:
    """:func:`agreement` of two sets of system means (last axis = systems)."""
    return agreement(
        pair_differences(estimated_means), pair_differences(truth_means), ties=ties, over=over, width=width
    )
