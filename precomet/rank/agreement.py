"""The subset ranking's agreement with the full-data ranking (Kendall τ-b, flipped system pairs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from precomet.agreement import pair_differences, wrong_pairs
from precomet.campaign import HUMAN, Campaign
from precomet.metaeval import kendall_tau_b


@dataclass(frozen=True)
class FullAgreement:
    """The subset ranking's system order against the full-data one (:func:`full_data_agreement`)."""

    items: int  # scored items of the full data
    outside: int  # of which outside the subset
    full_means: np.ndarray  # aligned with the ranking's systems
    tau: float | None  # Kendall τ-b of subset means vs full-data means; None when the full data is not scored
    flipped: int | None  # system pairs ordered strictly the other way (pairs tied on either side do not count)
    pairs: int
    tau_reweighted: float | None = None
    flipped_reweighted: int | None = None
    note: str | None = None

    def to_dict(self, systems: tuple[str, ...]) -> dict[str, Any]:
        order = np.lexsort((np.arange(len(systems)), -self.full_means))
        return {
            "items": self.items,
            "items_outside_subset": self.outside,
            "kendall_tau": self.tau,
            "flipped_pairs": self.flipped,
            "pairs": self.pairs,
            "kendall_tau_reweighted": self.tau_reweighted,
            "flipped_pairs_reweighted": self.flipped_reweighted,
            "full_order": [systems[i] for i in order] if self.tau is not None else None,
            "note": self.note,
        }


def _flips(a: np.ndarray, b: np.ndarray) -> int:
    """System pairs that the means ``a`` and ``b`` order strictly the other way (a tie on either side is no flip)."""
    return int(wrong_pairs(pair_differences(a), pair_differences(b), ties="agree"))


def full_data_agreement(
    systems: tuple[str, ...],
    means: np.ndarray,
    full: Campaign,
    *,
    subset_ids: Any,
    score: str = HUMAN,
    reweighted: np.ndarray | None = None,
) -> FullAgreement:
    """Kendall τ-b and flipped pairs between the subset's system means (``means``, aligned with ``systems``) and
    the means over every scored item of ``full`` (each system over the items rated for it, as :func:`rank_systems`).
    When ``full`` has no scored item outside the subset, ``tau`` is ``None`` and ``note`` says why."""
    matrix = np.asarray(full.score(score), dtype=float)[:, full.system_index(systems)]
    scored = ~np.isnan(matrix).all(axis=1)
    inside = set(map(str, subset_ids))
    outside = int(sum(1 for i, s in zip(full.ids, scored) if s and str(i) not in inside))
    pairs = len(systems) * (len(systems) - 1) // 2
    with np.errstate(invalid="ignore"):
        raw: np.ndarray = np.nanmean(matrix[scored], axis=0) if scored.any() else np.full(len(systems), np.nan)
    full_means = np.round(raw, 10)
    if outside == 0 or np.isnan(full_means).any():
        why = "no scored item outside the subset" if outside == 0 else "a system without any full-data score"
        return FullAgreement(
            items=int(scored.sum()),
            outside=outside,
            full_means=full_means,
            tau=None,
            flipped=None,
            pairs=pairs,
            note=f"the full data has {why}: no Kendall τ to the full-data ranking",
        )
    rw_tau = rw_flips = None
    if reweighted is not None and not np.isnan(reweighted).any():
        rw_tau, rw_flips = kendall_tau_b(reweighted, full_means), _flips(reweighted, full_means)
    return FullAgreement(
        items=int(scored.sum()),
        outside=outside,
        full_means=full_means,
        tau=kendall_tau_b(means, full_means),
        flipped=_flips(np.asarray(means, dtype=float), full_means),
        pairs=pairs,
        tau_reweighted=rw_tau,
        flipped_reweighted=rw_flips,
    )
