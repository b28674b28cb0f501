"""How an annotated subset's composition (domain shares, source length) compares with its test set's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from precomet.campaign import Campaign, source_length
from precomet.errors import PrecometError

MAX_DOMAIN_TVD = 0.1
"""A subset's domain shares differ *materially* from the test set's when their total variation distance
(half the summed absolute share differences = the share of subset items that would have to change domain) exceeds
this."""
LENGTH_RATIO_RANGE = (0.8, 1.25)
"""... or when the subset's mean source length (characters) over the test set's lies outside this range
(symmetric on a log scale: 1.25 = 1 / 0.8)."""


def _share_text(share: float) -> str:
    return f"{100 * share:.0f} %"


def _length_bins(length: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Quartile of every length against the test set's quartile edges: 0 .. 3 (``Q1`` = shortest)."""
    return np.searchsorted(edges, length, side="right")


def _length_edges(test_set: Campaign) -> np.ndarray:
    return np.quantile(source_length(test_set.src), [0.25, 0.5, 0.75]) if len(test_set) else np.zeros(3)


@dataclass(frozen=True)
class Composition:
    """How a subset's items compare with the test set's (:func:`compare_composition`)."""

    subset_items: int
    test_items: int
    domains: tuple[str, ...]
    subset_share: np.ndarray  # per domain, aligned with ``domains``
    test_share: np.ndarray
    domain_tvd: float
    subset_length: float  # mean source characters
    test_length: float
    length_ratio: float
    quartile_edges: np.ndarray  # the test set's source-length quartile edges (characters)
    subset_quartile_share: np.ndarray  # share of subset items in each test-set length quartile (Q1 shortest)
    test_quartile_share: np.ndarray  # 0.25 each unless lengths tie at an edge
    warnings: tuple[str, ...]  # one line per material difference; empty when the subset is representative
    note: str | None = None  # e.g. the input holds only the subset's items

    @property
    def material(self) -> bool:
        """Whether the composition differs materially (domain shares or mean length; see :data:`MAX_DOMAIN_TVD`)."""
        return bool(self.warnings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "subset_items": self.subset_items,
            "test_items": self.test_items,
            "domains": {
                d: {"subset_share": float(s), "test_share": float(t)}
                for d, s, t in zip(self.domains, self.subset_share, self.test_share)
            },
            "domain_tvd": self.domain_tvd,
            "length": {
                "subset_mean_chars": self.subset_length,
                "test_mean_chars": self.test_length,
                "ratio": self.length_ratio,
                "quartile_edges_chars": self.quartile_edges.tolist(),
                "subset_quartile_shares": self.subset_quartile_share.tolist(),
                "test_quartile_shares": self.test_quartile_share.tolist(),
            },
            "thresholds": {"max_domain_tvd": MAX_DOMAIN_TVD, "length_ratio_range": list(LENGTH_RATIO_RANGE)},
            "material": self.material,
            "warnings": list(self.warnings),
            "note": self.note,
        }


def compare_composition(
    subset: Campaign,
    test_set: Campaign,
    *,
    max_tvd: float = MAX_DOMAIN_TVD,
    length_ratio: tuple[float, float] = LENGTH_RATIO_RANGE,
) -> Composition:
    """Compare the subset's domain shares and source lengths with the test set's (every item of it, rated or not).

    A warning line is produced when the domain shares' total variation distance exceeds ``max_tvd`` (naming the
    most over- and under-represented domains, e.g. ``manuals 71 % vs 10 % in the test set``) and one when the
    ratio of mean source lengths lies outside ``length_ratio``.
    """
    if not len(subset) or not len(test_set):
        raise PrecometError("comparing a subset with its test set needs items in both")
    domains = tuple(sorted(set(map(str, test_set.domain)) | set(map(str, subset.domain))))
    sub_dom, test_dom = subset.domain.astype(str), test_set.domain.astype(str)
    sub_share = np.array([(sub_dom == d).mean() for d in domains])
    test_share = np.array([(test_dom == d).mean() for d in domains])
    tvd = float(0.5 * np.abs(sub_share - test_share).sum())
    sub_len, test_len = source_length(subset.src), source_length(test_set.src)
    sub_mean, test_mean = float(sub_len.mean()), float(test_len.mean())
    ratio = sub_mean / test_mean if test_mean > 0 else float("nan")
    edges = _length_edges(test_set)
    sub_q = np.bincount(_length_bins(sub_len, edges), minlength=4) / len(sub_len)
    test_q = np.bincount(_length_bins(test_len, edges), minlength=4) / len(test_len)
    warnings = []
    if tvd > max_tvd:
        diff = sub_share - test_share
        over, under = int(np.argmax(diff)), int(np.argmin(diff))
        parts = [f"{domains[over]} {_share_text(sub_share[over])} vs {_share_text(test_share[over])}"]
        if diff[under] < 0:
            parts.append(f"{domains[under]} {_share_text(sub_share[under])} vs {_share_text(test_share[under])}")
        warnings.append(
            f"the subset's domains differ from the test set's: {', '.join(parts)} of the test set "
            f"(total variation {tvd:.3f} > {max_tvd:g})"
        )
    if np.isfinite(ratio) and not length_ratio[0] <= ratio <= length_ratio[1]:
        warnings.append(
            f"the subset's sources are {ratio:.2f}x as long as the test set's on average ({sub_mean:.0f} vs "
            f"{test_mean:.0f} characters; outside [{length_ratio[0]:g}, {length_ratio[1]:g}])"
        )
    note = None
    if len(test_set) == len(subset) and set(map(str, test_set.ids)) == set(map(str, subset.ids)):
        note = (
            "the input holds only the subset's items, so the test set's composition is unknown; give the whole "
            "test set (every item's source, human scores where annotated) as the data"
        )
    return Composition(
        subset_items=len(subset),
        test_items=len(test_set),
        domains=domains,
        subset_share=sub_share,
        test_share=test_share,
        domain_tvd=tvd,
        subset_length=sub_mean,
        test_length=test_mean,
        length_ratio=ratio,
        quartile_edges=edges,
        subset_quartile_share=sub_q,
        test_quartile_share=test_q,
        warnings=tuple(warnings),
        note=note,
    )
