"""Post-stratified system means: each stratum's subset mean weighted by its share of the test set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign, source_length
from precomet.errors import PrecometError
from precomet.rank.bootstrap import bootstrap_means, percentile_interval
from precomet.rank.composition import _length_bins, _length_edges, _share_text


def _domain_strata(campaign: Campaign, test_set: Campaign) -> np.ndarray:
    return campaign.domain.astype(str)


def _length_strata(campaign: Campaign, test_set: Campaign) -> np.ndarray:
    labels = np.array(["Q1 (shortest)", "Q2", "Q3", "Q4 (longest)"], dtype=object)
    return labels[_length_bins(source_length(campaign.src), _length_edges(test_set))]


STRATIFIERS = {"domain": _domain_strata, "length": _length_strata}
"""What ``reweight`` can post-stratify by: ``domain`` (the items' domains) or ``length`` (the test set's
source-length quartiles); each maps (campaign, test set) to one stratum label per item of the campaign."""


@dataclass(frozen=True)
class Reweighted:
    """Post-stratified system means (:func:`reweighted_means`), aligned with the systems they were asked for."""

    by: str
    strata: tuple[str, ...]
    test_share: np.ndarray  # share of the test set's items in each stratum
    subset_items: np.ndarray  # ranked subset items in each stratum
    means: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    missing: tuple[str, ...]  # strata of the test set without a rated subset item (weights renormalised)
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "method": "post-stratification: each stratum's subset mean weighted by its share of the test set; "
            "bootstrap resamples items within strata",
            "strata": {
                s: {"test_share": float(w), "subset_items": int(n)}
                for s, w, n in zip(self.strata, self.test_share, self.subset_items)
            },
            "missing_strata": list(self.missing),
            "notes": list(self.notes),
        }


THIN_STRATUM = 10
"""Subset items below which a stratum's mean is too noisy to carry its test-set weight without a warning."""


def _stratum_seed(seed: int, k: int) -> int:
    """Seed of stratum ``k``'s bootstrap: its own stream, so the raw bootstrap's stream is untouched."""
    return int(np.random.SeedSequence([seed, 1, k]).generate_state(1)[0])


def _combine(per_stratum: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ_k w_k · x_k over the strata where x is rated, over Σ_k w_k of those (axis 0 = strata)."""
    rated = ~np.isnan(per_stratum)
    w = np.where(rated, weights.reshape((-1,) + (1,) * (per_stratum.ndim - 1)), 0.0)
    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (w * np.where(rated, per_stratum, 0.0)).sum(axis=0) / total, np.nan)


def reweighted_means(
    subset: Campaign,
    test_set: Campaign,
    *,
    by: str = "domain",
    score: str = HUMAN,
    confidence: float = 0.95,
    rounds: int = 1000,
    seed: int = 0,
) -> Reweighted:
    """System means of ``subset`` post-stratified to the test set's shares (aligned with ``subset.systems``).

    Each stratum's subset mean (over the items rated for the system) is weighted by the stratum's share of the
    test set's items; strata without a rated subset item are left out and the other weights renormalised (listed
    in ``missing``). The interval is the percentile interval of the same combination over a bootstrap that
    resamples items within each stratum (its own seeded stream per stratum).
    """
    if by not in STRATIFIERS:
        raise PrecometError(f"unknown reweighting {by!r}; valid: {', '.join(STRATIFIERS)}")
    if not 0 < confidence < 1:
        raise PrecometError(f"confidence must lie in (0, 1), got {confidence}")
    matrix = np.asarray(subset.score(score), dtype=float)
    keep = ~np.isnan(matrix).all(axis=1)
    matrix = matrix[keep]
    labels = STRATIFIERS[by](subset, test_set)[keep]
    test_labels = STRATIFIERS[by](test_set, test_set)
    strata = tuple(sorted(set(map(str, test_labels)) | set(map(str, labels))))
    shares = np.array([(test_labels == s).mean() for s in strata])
    counts = np.array([(labels == s).sum() for s in strata])
    missing = tuple(s for s, n, w in zip(strata, counts, shares) if n == 0 and w > 0)
    notes = []
    if len(set(map(str, test_labels))) == 1:
        notes.append(f"the test set has one {by} stratum ({strata[0]}): the reweighted means are the raw means")
    if missing:
        lost = sum(float(w) for s, w in zip(strata, shares) if s in missing)
        notes.append(
            f"the subset has no rated item in {', '.join(missing)} ({_share_text(lost)} of the test set): "
            "reweighted over the strata it has"
        )
    thin = [(s, int(n), float(w)) for s, n, w in zip(strata, counts, shares) if 0 < n < THIN_STRATUM and w > 0]
    if thin:
        notes.append(
            f"{len(thin)} {by} stratum/strata hold fewer than {THIN_STRATUM} subset items but keep their test-set"
            " weight, so their means are noisy: "
            + ", ".join(f"{s} ({n} item(s), {_share_text(w)} of the weight)" for s, n, w in thin)
        )
    present = [k for k in range(len(strata)) if counts[k]]
    with np.errstate(invalid="ignore"):
        per_stratum = np.array([np.nanmean(matrix[labels == strata[k]], axis=0) for k in present])
    weights = shares[present]
    means = _combine(per_stratum, weights)
    boot = np.array(
        [bootstrap_means(matrix[labels == strata[k]], rounds=rounds, seed=_stratum_seed(seed, k)) for k in present]
    )
    combined = _combine(boot, weights)
    low, high = percentile_interval(combined, means, confidence)
    return Reweighted(
        by=by,
        strata=strata,
        test_share=shares,
        subset_items=counts,
        means=means,
        ci_low=low,
        ci_high=high,
        missing=missing,
        notes=tuple(notes),
    )
