"""The :class:`Ranking` result and :func:`rank_systems`, which assembles it."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.metaeval import CLUSTER_ALPHA, check_cluster_rule
from precomet.rank.agreement import FullAgreement, full_data_agreement
from precomet.rank.bootstrap import bootstrap_means, percentile_interval, win_probabilities
from precomet.rank.clusters import _cluster_tests
from precomet.rank.composition import Composition, compare_composition
from precomet.rank.reweight import STRATIFIERS, Reweighted, reweighted_means
from precomet.record import freeze_fields
from precomet.signature import signature

log = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False)
class Ranking:
    """The result of :func:`rank_systems`; systems are listed best first (by mean, ties by input order)."""

    systems: tuple[str, ...]
    means: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_rated: np.ndarray
    clusters: Sequence[Sequence[str]]  # tuples (frozen)
    adjacent_pvalues: np.ndarray  # p-value of system i+1 vs system i, length S-1
    cluster_pvalues: np.ndarray  # the p-value that placed system i+1 (vs alpha): adjacent (paper), min vs cluster (wmt)
    win_probability: np.ndarray  # (S, S) in the order of ``systems``
    confidence: float
    rounds: int
    seed: int
    cluster_rule: str  # one of metaeval.CLUSTER_RULES
    signature: Mapping[str, Any] = field(default_factory=dict)
    composition: Composition | None = None  # with a test set: the subset's composition against it
    reweighted: Reweighted | None = None  # with ``reweight``: post-stratified means, aligned with ``systems``
    full_data: FullAgreement | None = None  # with a test set: τ to the full-data ranking

    def __post_init__(self) -> None:
        freeze_fields(self)

    def cluster_of(self) -> np.ndarray:
        """1-based cluster number of each system (aligned with ``systems``)."""
        lookup = {s: c for c, members in enumerate(self.clusters, start=1) for s in members}
        return np.array([lookup[s] for s in self.systems])

    def rank_ranges(self) -> list[str]:
        """WMT-style rank range per system: the positions its cluster spans, e.g. ``"2-4"``."""
        out, start = [], 1
        for members in self.clusters:
            end = start + len(members) - 1
            out += [str(start) if start == end else f"{start}-{end}"] * len(members)
            start = end + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: one row per system, the clusters, the win-probability matrix and the signature."""
        cluster = self.cluster_of()
        ranges = self.rank_ranges()
        rows = [
            {
                "system": s,
                "rank": ranges[i],
                "cluster": int(cluster[i]),
                "mean": float(self.means[i]),
                "ci_low": float(self.ci_low[i]),
                "ci_high": float(self.ci_high[i]),
                "n_rated": int(self.n_rated[i]),
                "p_vs_previous": None if i == 0 else float(self.adjacent_pvalues[i - 1]),
                "p_vs_cluster": None if i == 0 else float(self.cluster_pvalues[i - 1]),
            }
            for i, s in enumerate(self.systems)
        ]
        if self.reweighted is not None:
            for i, row in enumerate(rows):
                row["reweighted_mean"] = float(self.reweighted.means[i])
                row["reweighted_ci_low"] = float(self.reweighted.ci_low[i])
                row["reweighted_ci_high"] = float(self.reweighted.ci_high[i])
        extra: dict[str, Any] = {}
        if self.composition is not None:
            extra["composition"] = self.composition.to_dict()
        if self.reweighted is not None:
            extra["reweighting"] = self.reweighted.to_dict()
        if self.full_data is not None:
            extra["full_data"] = self.full_data.to_dict(self.systems)
        return {
            "systems": rows,
            "clusters": [list(c) for c in self.clusters],
            "win_probability": {"systems": list(self.systems), "matrix": np.round(self.win_probability, 6).tolist()},
            "confidence": self.confidence,
            "rounds": self.rounds,
            "seed": self.seed,
            "cluster_rule": self.cluster_rule,
            "signature": dict(self.signature),
            **extra,
        }


def rank_systems(
    campaign: Campaign,
    *,
    score: str = HUMAN,
    confidence: float = 0.95,
    rounds: int = 1000,
    alpha: float = CLUSTER_ALPHA,
    cluster_rule: str = "wmt",
    seed: int = 0,
    manifest: Mapping[str, Any] | None = None,
    test_set: Campaign | None = None,
    full: Campaign | None = None,
    reweight: str | None = None,
) -> Ranking:
    """Rank the systems of ``campaign`` by their mean ``score`` (see :mod:`precomet.rank` for every number).

    ``manifest`` (how the subset was selected, e.g. :func:`read_manifest`) is recorded in the signature.
    When ``campaign`` is an annotated subset, ``test_set`` (every item of the test set, rated or not) adds the
    subset's :class:`Composition` against it and the :class:`FullAgreement` (Kendall τ) with the ranking over
    ``full`` (the scored full data; default ``test_set``); ``reweight`` (a :data:`STRATIFIERS` name, needs
    ``test_set``) adds post-stratified means. None of these change the raw means, intervals or clusters.
    ``cluster_rule`` is ``wmt`` (WMT findings papers) or ``paper`` (Algorithm 1), see :mod:`precomet.rank`.
    Raises :class:`PrecometError` when the score is unknown, a system has no rating at all, or there are fewer
    than 2 systems / items.
    """
    if not 0 < confidence < 1:
        raise PrecometError(f"confidence must lie in (0, 1), got {confidence}")
    if not 0 < alpha < 1:
        raise PrecometError(f"significance level alpha must lie in (0, 1), got {alpha}")
    check_cluster_rule(cluster_rule)
    if reweight is not None and test_set is None:
        raise PrecometError(f"reweighting by {reweight!r} needs the test set the subset was drawn from (test_set)")
    if reweight is not None and reweight not in STRATIFIERS:
        raise PrecometError(f"unknown reweighting {reweight!r}; valid: {', '.join(STRATIFIERS)}")
    matrix = np.asarray(campaign.score(score), dtype=float)
    if len(campaign.systems) < 2:
        raise PrecometError(
            f"campaign {campaign.name!r}: ranking needs at least 2 systems, got {len(campaign.systems)}"
        )
    rated = ~np.isnan(matrix)
    with np.errstate(over="ignore", invalid="ignore"):
        summable = np.isfinite(np.nansum(matrix, axis=0)).all() and np.isfinite(np.nansum(matrix**2))
    if not summable:  # finite scores whose sums overflow (1e308): every mean and interval would be inf or nan
        raise PrecometError(
            f"campaign {campaign.name!r}: score {score!r} holds values too large to average"
            f" (up to {np.nanmax(np.abs(matrix)):.3g}); rescale them"
        )
    n_rated = rated.sum(axis=0)
    if (n_rated == 0).any():
        raise PrecometError(
            f"campaign {campaign.name!r}: system {campaign.systems[int(np.argmin(n_rated))]!r} has no {score!r} rating"
        )
    keep = rated.any(axis=1)
    if keep.sum() < 2:
        raise PrecometError(f"campaign {campaign.name!r}: ranking needs at least 2 rated items, got {int(keep.sum())}")
    if not keep.all():
        log.info("%d item(s) without any %r rating ignored", int((~keep).sum()), score)
    matrix = matrix[keep]
    complete = bool(rated[keep].all())
    if not complete:
        log.warning(
            "rank: %d of %d rated items lack %r for some system; each system is averaged over its own ratings",
            int((~rated[keep]).any(axis=1).sum()),
            len(matrix),
            score,
        )

    with np.errstate(invalid="ignore"):
        raw_means: np.ndarray = np.nanmean(matrix, axis=0)  # typed: np.round of Any reads as a numpy scalar
        means = np.round(raw_means, 10)  # as metaeval.system_means: ties are ties
    order = np.lexsort((np.arange(len(means)), -means))  # as metaeval.clusters
    groups, adjacent, decisive = _cluster_tests(matrix, order, rule=cluster_rule, alpha=alpha, complete=complete)

    boot = bootstrap_means(matrix, rounds=rounds, seed=seed)[:, order]
    low, high = percentile_interval(boot, means[order], confidence)
    names = tuple(campaign.systems[i] for i in order)
    composition = reweighted = agreement = None
    more: dict[str, Any] = {}
    if test_set is not None:
        composition = compare_composition(campaign, test_set)
        if reweight is not None:
            rw = reweighted_means(
                campaign, test_set, by=reweight, score=score, confidence=confidence, rounds=rounds, seed=seed
            )
            reweighted = replace(rw, means=rw.means[order], ci_low=rw.ci_low[order], ci_high=rw.ci_high[order])
        agreement = full_data_agreement(
            names,
            means[order],
            test_set if full is None else full,
            subset_ids=campaign.ids,
            score=score,
            reweighted=None if reweighted is None else reweighted.means,
        )
        more = {"test_items": len(test_set), "reweight": reweight}
    run = signature(
        "precomet rank",
        method="mean + paired item bootstrap (percentile CI) + Wilcoxon clusters "
        + ("(WMT rule)" if cluster_rule == "wmt" else "(Alg. 1)"),
        campaign=campaign,
        seed=seed,
        score=score,
        confidence=confidence,
        rounds=rounds,
        alpha=alpha,
        cluster_rule=cluster_rule,
        items=int(len(matrix)),
        systems=len(names),
        complete=complete,
        manifest=None if manifest is None else dict(manifest),
        **more,
    )
    return Ranking(
        systems=names,
        means=means[order],
        ci_low=low,
        ci_high=high,
        n_rated=n_rated[order],
        clusters=[[campaign.systems[i] for i in members] for members in groups],
        adjacent_pvalues=np.asarray(adjacent, dtype=float),
        cluster_pvalues=np.asarray(decisive, dtype=float),
        win_probability=win_probabilities(boot),
        confidence=confidence,
        rounds=rounds,
        seed=seed,
        cluster_rule=cluster_rule,
        signature=run,
        composition=composition,
        reweighted=reweighted,
        full_data=agreement,
    )
