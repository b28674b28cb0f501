"""System ranking from human scores: the step after annotation ("close the loop").

:func:`rank_systems` turns an ``(items × systems)`` score matrix (typically the human scores of an annotated
subset) into a findings-paper ranking:

* **mean** score per system over the items rated for it (NaN = not rated, as every loader documents; with the
  loaders' default ``complete=True`` every kept item is rated for every system);
* **bootstrap confidence intervals**: items are resampled with replacement ``rounds`` times (seeded; one draw
  of item multiplicities per round shared by all systems, so the resampling is paired), a system's mean in a
  round is ``Σ count·score / Σ count·rated``; the interval is the percentile interval at ``level``;
* **significance clusters** (:func:`precomet.metaeval.clusters`): systems sorted by mean, one-sided Wilcoxon
  signed-rank tests on paired item differences (:func:`precomet.significance.wilcoxon_less`). ``cluster_rule``
  ``wmt`` (default) is what WMT findings papers print (mt-metrics-eval's ``AssignRanks``): a system opens a new
  cluster when any member of the current cluster is significantly better (``p ≤ alpha``); ``paper`` is the
  meta-evaluation's Algorithm 1: only the previous system is tested (``p < alpha``). With missing ratings each
  tested pair is compared on the items rated for both;
* **win probabilities**: ``win[a, b]`` = share of bootstrap rounds in which system ``a``'s mean is above
  ``b``'s, ties counted half (so ``win[a, b] + win[b, a] = 1``).

With ``test_set`` (the subset's test set), three additions that leave the numbers above untouched: the subset's
:class:`Composition` against it (domain shares, source length; material when the domain total variation exceeds
:data:`MAX_DOMAIN_TVD` or the mean-length ratio leaves :data:`LENGTH_RATIO_RANGE`), :class:`Reweighted`
post-stratified means (``reweight``: each stratum's subset mean weighted by its test-set share, bootstrap within
strata) and the :class:`FullAgreement` (Kendall τ-b and flipped system pairs) with the full-data ranking.

Vectorised: a chunk of rounds is one ``(rounds, N)`` count matrix (``bincount`` of uniform draws) times the
``(N, S)`` score matrix, so 1000 rounds on 100k items × 30 systems take about 1.7 s on 2 cores
(``benchmarks/bench_rank.py``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign, source_length
from precomet.errors import PrecometError
from precomet.metaeval import (
    CLUSTER_ALPHA,
    check_cluster_rule,
    kendall_tau_b,
    split_clusters,
    split_clusters_wmt,
    wmt_cluster_pvalues,
)
from precomet.signature import signature
from precomet.significance import one_blas_thread, wilcoxon_less

log = logging.getLogger(__name__)

_CHUNK_CELLS = (
    4_000_000  # rounds × items drawn per chunk (bounds memory at ~32 MB per array); part of the seeded stream
)


@dataclass(frozen=True)
class Ranking:
    """The result of :func:`rank_systems`; systems are listed best first (by mean, ties by input order)."""

    systems: tuple[str, ...]
    means: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_rated: np.ndarray
    clusters: list[list[str]]
    adjacent_pvalues: np.ndarray  # p-value of system i+1 vs system i, length S-1
    cluster_pvalues: np.ndarray  # the p-value that placed system i+1 (vs alpha): adjacent (paper), min vs cluster (wmt)
    win_probability: np.ndarray  # (S, S) in the order of ``systems``
    level: float
    rounds: int
    seed: int
    cluster_rule: str  # one of metaeval.CLUSTER_RULES
    signature: Mapping[str, Any] = field(default_factory=dict)
    composition: Composition | None = None  # with a test set: the subset's composition against it
    reweighted: Reweighted | None = None  # with ``reweight``: post-stratified means, aligned with ``systems``
    full_data: FullAgreement | None = None  # with a test set: τ to the full-data ranking

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
            "level": self.level,
            "rounds": self.rounds,
            "seed": self.seed,
            "cluster_rule": self.cluster_rule,
            "signature": dict(self.signature),
            **extra,
        }


# --------------------------------------------------------------------------- bootstrap
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


# --------------------------------------------------------------------------- clusters
def _pair_tests(matrix: np.ndarray, better: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """One-sided Wilcoxon p-values of "system ``worse[i]`` is worse than ``better[i]``", each pair on the items
    rated for both (p = 1 without any)."""
    out = np.ones(len(better))
    for i, (a, b) in enumerate(zip(better, worse)):
        both = ~np.isnan(matrix[:, a]) & ~np.isnan(matrix[:, b])
        if both.any():
            out[i] = wilcoxon_less((matrix[both, b] - matrix[both, a])[:, None])[0]
    return out


def _cluster_tests(
    matrix: np.ndarray, order: np.ndarray, *, rule: str, alpha: float, complete: bool
) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
    """Clusters of the systems in ``order`` by ``rule``, the adjacent p-values and the p-values that placed each
    system (see :class:`Ranking`)."""
    n = len(order)

    def test(better: np.ndarray, worse: np.ndarray) -> np.ndarray:  # positions in ``order``
        if complete:
            return wilcoxon_less(matrix[:, order[worse]] - matrix[:, order[better]])
        return _pair_tests(matrix, order[better], order[worse])

    if rule == "paper":
        tested = test(np.arange(n - 1), np.arange(1, n))
        return split_clusters(order, tested, alpha=alpha), tested, tested
    pvalues, start = np.ones((n, n)), 0  # only the pairs AssignRanks reads: the open cluster's members vs the next
    for b in range(1, n):
        pvalues[start:b, b] = test(np.arange(start, b), np.full(b - start, b))
        start = b if pvalues[start:b, b].min() <= alpha else start
    groups = split_clusters_wmt(order, pvalues, alpha=alpha)
    return groups, np.diagonal(pvalues, 1).copy(), wmt_cluster_pvalues(pvalues, alpha=alpha)


# --------------------------------------------------------------------------- the ranking
def rank_systems(
    campaign: Campaign,
    *,
    score: str = HUMAN,
    level: float = 0.95,
    rounds: int = 1000,
    alpha: float = CLUSTER_ALPHA,
    cluster_rule: str = "wmt",
    seed: int = 0,
    manifest: Mapping[str, Any] | None = None,
    test_set: Campaign | None = None,
    full: Campaign | None = None,
    reweight: str | None = None,
) -> Ranking:
    """Rank the systems of ``campaign`` by their mean ``score`` (see the module docstring for every number).

    ``manifest`` (how the subset was selected, e.g. :func:`read_manifest`) is recorded in the signature.
    When ``campaign`` is an annotated subset, ``test_set`` (every item of the test set, rated or not) adds the
    subset's :class:`Composition` against it and the :class:`FullAgreement` (Kendall τ) with the ranking over
    ``full`` (the scored full data; default ``test_set``); ``reweight`` (a :data:`STRATIFIERS` name, needs
    ``test_set``) adds post-stratified means. None of these change the raw means, intervals or clusters.
    ``cluster_rule`` is ``wmt`` (WMT findings papers) or ``paper`` (Algorithm 1), see the module docstring.
    Raises :class:`PrecometError` when the score is unknown, a system has no rating at all, or there are fewer
    than 2 systems / items.
    """
    if not 0 < level < 1:
        raise PrecometError(f"confidence level must lie in (0, 1), got {level}")
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
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
    names = tuple(campaign.systems[i] for i in order)
    composition = reweighted = agreement = None
    more: dict[str, Any] = {}
    if test_set is not None:
        composition = compare_composition(campaign, test_set)
        if reweight is not None:
            rw = reweighted_means(campaign, test_set, by=reweight, score=score, level=level, rounds=rounds, seed=seed)
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
        level=level,
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
        level=level,
        rounds=rounds,
        seed=seed,
        cluster_rule=cluster_rule,
        signature=run,
        composition=composition,
        reweighted=reweighted,
        full_data=agreement,
    )


# --------------------------------------------------------------------------- subset vs test set
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
            f"(total variation {tvd:.2f} > {max_tvd:g})"
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
    level: float = 0.95,
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
    if not 0 < level < 1:
        raise PrecometError(f"confidence level must lie in (0, 1), got {level}")
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
    present = [k for k in range(len(strata)) if counts[k]]
    with np.errstate(invalid="ignore"):
        per_stratum = np.array([np.nanmean(matrix[labels == strata[k]], axis=0) for k in present])
    weights = shares[present]
    means = _combine(per_stratum, weights)
    boot = np.array(
        [bootstrap_means(matrix[labels == strata[k]], rounds=rounds, seed=_stratum_seed(seed, k)) for k in present]
    )
    combined = _combine(boot, weights)
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(combined, [(1 - level) / 2, (1 + level) / 2], axis=0)
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
    da, db = a[:, None] - a[None, :], b[:, None] - b[None, :]
    return int(np.triu((da * db) < 0, k=1).sum())


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


# --------------------------------------------------------------------------- manifest
def read_manifest(path: str | Path) -> dict[str, Any]:
    """How a subset was selected: the manifest ``precomet select`` writes beside a subset, summarised for a
    ranking's signature (method, parameters, budget, size, solver outcome, data hash, version, file hash)."""
    path = Path(path)
    from precomet.io.text import decode, parse_json, read_bytes

    raw = read_bytes(path)
    manifest = parse_json(decode(raw, path), path)
    if not isinstance(manifest, dict) or "method" not in manifest:
        raise PrecometError(f"{path}: not a precomet subset manifest (expected a JSON object with 'method')")
    keys = (
        "method",
        "parameters",
        "level",
        "budget",
        "n_selected",
        "total_cost",
        "solver",
        "status",
        "gap",
        "data_hash",
        "seed",
        "precomet_version",
    )
    return {"file": str(path), "sha256": hashlib.sha256(raw).hexdigest()[:16], **{k: manifest.get(k) for k in keys}}


def check_manifest(ranking_items: int, manifest: Mapping[str, Any]) -> str | None:
    """A warning when the ranked items are not the selected subset's size (``None`` when they match)."""
    selected = manifest.get("n_selected")
    if isinstance(selected, int) and selected != ranking_items:
        return f"the manifest selected {selected} items but {ranking_items} rated items were ranked"
    return None


# --------------------------------------------------------------------------- output
def ranking_table(ranking: Ranking) -> str:
    """The terminal table: rank range, cluster, system, mean, CI, ratings, the p-value that placed the system (vs
    the previous system, or the smallest vs the current cluster under the WMT rule); with reweighting its means and
    CIs beside the raw ones; footer lines for the rule, the composition and the full-data τ."""
    width = max(12, *(len(s) for s in ranking.systems))
    pct = f"{ranking.level:.0%}"
    rw = ranking.reweighted
    wmt = ranking.cluster_rule == "wmt"
    p_header = "p(clus)" if wmt else "p(prev)"
    header = f"{'rank':>5} {'cl':>3} {'system':<{width}} {'mean':>9} {pct + ' CI':>21} {'n':>6} {p_header:>8}"
    if rw is not None:
        header += f" {'rw mean':>9} {'rw ' + pct + ' CI':>21}"
    lines = [header]
    cluster = ranking.cluster_of()
    for i, (name, rank) in enumerate(zip(ranking.systems, ranking.rank_ranges())):
        if i and cluster[i] != cluster[i - 1]:
            lines.append("-" * len(lines[0]))
        p = "" if i == 0 else f"{ranking.cluster_pvalues[i - 1]:.3g}"
        ci = f"[{ranking.ci_low[i]:.4g}, {ranking.ci_high[i]:.4g}]"
        line = (
            f"{rank:>5} {cluster[i]:>3} {name:<{width}} {ranking.means[i]:>9.4g} {ci:>21} {ranking.n_rated[i]:>6} "
            f"{p:>8}"
        )
        if rw is not None:
            line += f" {rw.means[i]:>9.4g} {f'[{rw.ci_low[i]:.4g}, {rw.ci_high[i]:.4g}]':>21}"
        lines.append(line)
    sig = ranking.signature
    alpha = sig.get("alpha", CLUSTER_ALPHA)
    rule = (
        f"WMT rule: one-sided Wilcoxon vs every member of the current cluster, p <= {alpha}"
        if wmt
        else f"Algorithm 1: one-sided Wilcoxon vs the previous system, p < {alpha}"
    )
    lines.append(
        f"{len(ranking.clusters)} cluster(s) ({rule}); {pct} bootstrap CI"
        f" from {ranking.rounds} rounds, seed {ranking.seed}; {sig.get('items', '?')} items, score "
        f"{sig.get('score', '?')!r}"
    )
    lines += summary_lines(ranking)
    return "\n".join(lines)


def summary_lines(ranking: Ranking) -> list[str]:
    """The footer lines about the subset: reweighting, composition against the test set, τ to the full data."""
    lines = []
    rw, comp, full = ranking.reweighted, ranking.composition, ranking.full_data
    if rw is not None:
        shares = ", ".join(f"{s} {_share_text(w)}" for s, w in zip(rw.strata, rw.test_share))
        lines.append(
            f"rw = reweighted: each {rw.by} stratum's subset mean weighted by its test-set share ({shares}); CI from "
            f"a bootstrap within strata"
        )
        lines += [f"  note: {note}" for note in rw.notes]
    if comp is not None:
        if comp.note:
            lines.append(f"composition: {comp.note}")
        else:
            verdict = "differs materially: subset means are not test-set means" if comp.material else "representative"
            lines.append(
                f"composition vs the test set's {comp.test_items} items: domain total variation {comp.domain_tvd:.2f}"
                f" (material above {MAX_DOMAIN_TVD:g}), mean source length ratio {comp.length_ratio:.2f} (material "
                f"outside [{LENGTH_RATIO_RANGE[0]:g}, {LENGTH_RATIO_RANGE[1]:g}]): {verdict}"
            )
    if full is not None:
        if full.tau is None:
            lines.append(f"full data: {full.note}")
        else:
            text = (
                f"full data ({full.items} scored items): Kendall tau {full.tau:.3f} between the subset's and the "
                f"full-data system order, {full.flipped} of {full.pairs} system pairs flipped"
            )
            if full.tau_reweighted is not None:
                text += f" (reweighted: tau {full.tau_reweighted:.3f}, {full.flipped_reweighted} flipped)"
            lines.append(text)
    return lines


def plot_ranking(ranking: Ranking, path: str | Path, *, title: str | None = None) -> None:
    """The findings-paper figure: one row per system (best on top), mean with its CI bar, clusters as
    alternating bands with their number. Uses a bare :class:`matplotlib.figure.Figure` (no pyplot, no backend
    switch); the format follows the file suffix."""
    from matplotlib.figure import Figure

    s = len(ranking.systems)
    fig = Figure(figsize=(7, 0.9 + 0.32 * s))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(s)[::-1]  # best on top
    start = 0
    for c, members in enumerate(ranking.clusters, start=1):
        top, bottom = y[start] + 0.5, y[start + len(members) - 1] - 0.5
        ax.axhspan(bottom, top, color="0.92" if c % 2 else "0.82", zorder=0, linewidth=0)
        ax.text(1.01, (top + bottom) / 2, f"cluster {c}", transform=ax.get_yaxis_transform(), va="center", fontsize=8)
        start += len(members)
    ax.errorbar(
        ranking.means,
        y,
        xerr=[ranking.means - ranking.ci_low, ranking.ci_high - ranking.means],
        fmt="o",
        color="C0",
        ecolor="C0",
        capsize=3,
        markersize=4,
        zorder=2,
    )
    ax.set_yticks(y)
    ax.set_yticklabels(list(ranking.systems), fontsize=8)
    ax.set_ylim(-0.5, s - 0.5)
    sig = ranking.signature
    ax.set_xlabel(f"mean {sig.get('score', 'score')} ({ranking.level:.0%} bootstrap CI, {ranking.rounds} rounds)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(
        title
        or f"{sig.get('campaign', '')}: {sig.get('items', '?')} items, {len(ranking.clusters)} significance clusters",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


__all__ = [
    "LENGTH_RATIO_RANGE",
    "MAX_DOMAIN_TVD",
    "STRATIFIERS",
    "Composition",
    "FullAgreement",
    "Ranking",
    "Reweighted",
    "bootstrap_means",
    "check_manifest",
    "compare_composition",
    "full_data_agreement",
    "plot_ranking",
    "rank_systems",
    "ranking_table",
    "read_manifest",
    "reweighted_means",
    "summary_lines",
    "win_probabilities",
]
