"""The full-campaign side of every measure, computed once per campaign and score (:class:`Reference`,
:func:`full_reference`, cached per campaign object)."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import CampaignError
from precomet.metaeval.cluster_rules import check_cluster_rule, clusters
from precomet.metaeval.measures import system_means
from precomet.record import freeze_fields
from precomet.significance import exact_float32, item_signs, pairwise_pvalues

log = logging.getLogger(__name__)

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


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
    clusters: Sequence[Sequence[int]]  # tuples (frozen)
    exact: np.ndarray | None = None  # scores on a whole-number grid as float32 (see significance.exact_float32)
    cluster_rule: str = "paper"  # of the clusters here and of every subset's (one of CLUSTER_RULES)

    def __post_init__(self) -> None:  # cached and shared: nobody may change it
        freeze_fields(self, copy=False)  # its arrays are computed for it or shared read-only (the crowd's signs)

    def __len__(self) -> int:
        return len(self.ids)


def reference_from_matrix(
    campaign: Campaign,
    matrix: np.ndarray,
    *,
    score: str,
    signs: np.ndarray,
    seed: int,
    systems: Sequence[str] | None = None,
    cluster_rule: str = "paper",
) -> Reference:
    """The reference of a complete ``(N, S)`` score matrix of ``campaign``'s items (of ``systems``, default all)
    with the given sign flips ``(N, permutations)``, clustering by ``cluster_rule``; :func:`full_reference` builds
    and caches it."""
    return Reference(
        ids=campaign.ids,
        systems=tuple(campaign.systems if systems is None else systems),
        score=score,
        matrix=matrix,
        signs=signs,
        permutations=signs.shape[1],
        seed=seed,
        pvalues=pairwise_pvalues(matrix, signs),
        means=system_means(matrix),
        clusters=clusters(matrix, rule=cluster_rule),
        exact=exact_float32(matrix),
        cluster_rule=cluster_rule,
    )


def full_reference(
    campaign: Campaign, *, score: str = HUMAN, permutations: int = 1000, seed: int = 0, cluster_rule: str = "paper"
) -> Reference:
    """The full-set side of every measure (p-values, means, clusters by ``cluster_rule``, one of
    :data:`CLUSTER_RULES`, also for every subset evaluated against it); cached per campaign object."""
    check_cluster_rule(cluster_rule)
    key = (score, permutations, seed, cluster_rule)
    cached = _CACHE.setdefault(campaign, {})
    if key not in cached:
        matrix = np.asarray(campaign.score(score), dtype=float)
        if len(campaign.systems) < 2:
            raise CampaignError(
                f"campaign {campaign.name!r}: meta-evaluation needs at least 2 systems, got {len(campaign.systems)}"
            )
        if len(campaign) < 2:
            raise CampaignError(
                f"campaign {campaign.name!r}: meta-evaluation needs at least 2 items, got {len(campaign)}"
            )
        missing = np.isnan(matrix)
        if missing.any():
            row, col = np.argwhere(missing)[0]
            raise CampaignError(
                f"campaign {campaign.name!r}: score {score!r} missing for item {campaign.ids[row]!r}, system"
                f" {campaign.systems[col]!r} ({int(missing.any(axis=1).sum())} items); use Campaign.complete({score!r})"
            )
        signs = item_signs(campaign.ids, permutations=permutations, seed=seed)
        cached[key] = reference_from_matrix(
            campaign, matrix, score=score, signs=signs, seed=seed, cluster_rule=cluster_rule
        )
        log.debug("full-set reference for %s/%s computed (%d items)", campaign.name, score, len(campaign))
    return cached[key]
