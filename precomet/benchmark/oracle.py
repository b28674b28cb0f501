"""The headroom oracle of the benchmark: greedy subset selection on the human scores themselves (seed 002, App. A,
Eq. 13). **Not a usable selector** — it reads the very scores the annotation is meant to produce — but it shows how
far a selector is from the best subset one could choose.

What it optimises, exactly: starting from the empty set, each step adds the extension ``Y⁺`` of ``step`` items
(``S`` in Eq. 13) that maximises the **soft pairwise accuracy of Ŷᵢ ∪ Y⁺ against the full set**, computed on the
meta-evaluation's own :class:`~precomet.metaeval.Reference` (same score, same item-tied sign flips, same p-value
rule), among ``candidates`` extensions drawn uniformly without replacement from the remaining items (``N`` in the
paper's Table 8: its best row is N = 100, S = 10). When the remaining items admit at most ``candidates`` distinct
extensions, all of them are tried (exhaustive). The greedy order over *all* items is the oracle's ranking, so the
subset at every budget is a prefix (nested, like a utility's top-k). Because it maximises the reported SPA on the
same permutations, its SPA is an optimistic reference, not an achievable target; cluster count and Kendall τ are
by-products, not optimised.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from precomet.errors import PrecometError
from precomet.metaeval import Reference, spa_from_sums
from precomet.significance import one_blas_thread

ORACLE_CANDIDATES = 100
ORACLE_STEP = 10
ORACLE_DESCRIPTION = (
    "oracle: greedy on the target scores (human by default; Zouhar et al. 2025, Eq. 13); each step adds the"
    " {step}-item extension, among {candidates} random ones, that maximises SPA against the full set; NOT a usable"
    " selector"
)


def greedy_oracle_order(
    ref: Reference, *, candidates: int = ORACLE_CANDIDATES, step: int = ORACLE_STEP, seed: int = 0
) -> np.ndarray:
    """All campaign positions in the greedy oracle's order (see the module docstring)."""
    if candidates < 1:
        raise PrecometError(f"oracle candidates must be at least 1, got {candidates}")
    if step < 1:
        raise PrecometError(f"oracle step must be at least 1, got {step}")
    rng = np.random.default_rng([seed, 13])
    values = ref.exact if ref.exact is not None else ref.matrix
    dtype = values.dtype
    n, n_systems = values.shape
    partial = np.zeros((n_systems, ref.permutations), dtype=dtype)
    observed = np.zeros(n_systems, dtype=dtype)
    abs_total = 0.0
    remaining = np.arange(n)
    order: list[int] = []
    with one_blas_thread():
        while len(remaining):
            m = min(step, len(remaining))
            if m == len(remaining):
                ext = remaining[None, :]
            elif math.comb(len(remaining), m) <= candidates:
                ext = remaining[np.array(list(combinations(range(len(remaining)), m)))]
            else:
                ext = np.stack([rng.choice(remaining, size=m, replace=False) for _ in range(candidates)])
            if len(ext) == 1:
                best = 0
            else:
                scores = values[ext]  # (C, m, S)
                cand_partial = partial[None] + np.matmul(scores.transpose(0, 2, 1), ref.signs[ext].astype(dtype))
                cand_observed = observed[None] + scores.sum(axis=1)
                totals = abs_total + np.abs(scores).sum(axis=(1, 2))
                spa = spa_from_sums(ref, cand_partial, cand_observed, totals)
                best = int(np.argmax(spa))  # first of equals: deterministic
            chosen = ext[best]
            block = values[chosen]
            partial = partial + block.T @ ref.signs[chosen].astype(dtype)
            observed = observed + block.sum(axis=0)
            abs_total += float(np.abs(ref.matrix[chosen]).sum())
            order.extend(int(c) for c in chosen)
            remaining = np.setdiff1d(remaining, chosen, assume_unique=True)
    return np.asarray(order, dtype=int)


def oracle_utility(order: np.ndarray) -> np.ndarray:
    """Utilities that rank items in ``order`` (first = highest), for selectors that take utilities."""
    utility = np.empty(len(order))
    utility[order] = np.arange(len(order), 0, -1, dtype=float)
    return utility
