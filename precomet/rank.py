"""System ranking from human scores: the step after annotation ("close the loop").

:func:`rank_systems` turns an ``(items × systems)`` score matrix (typically the human scores of an annotated
subset) into what a findings paper prints:

* **mean** score per system over the items rated for it (NaN = not rated, as every loader documents; with the
  loaders' default ``complete=True`` every kept item is rated for every system);
* **bootstrap confidence intervals**: items are resampled with replacement ``rounds`` times (seeded; one draw
  of item multiplicities per round shared by all systems, so the resampling is paired), a system's mean in a
  round is ``Σ count·score / Σ count·rated``; the interval is the percentile interval at ``level``;
* **significance clusters**: paper Algorithm 1, the same rule as the meta-evaluation
  (:func:`precomet.metaeval.clusters`): systems sorted by mean, each compared with the previous one by a
  one-sided Wilcoxon signed-rank test (:func:`precomet.significance.wilcoxon_less`), ``p < alpha`` opens a new
  cluster. With missing ratings each adjacent pair is tested on the items rated for both;
* **win probabilities**: ``win[a, b]`` = share of bootstrap rounds in which system ``a``'s mean is above
  ``b``'s, ties counted half (so ``win[a, b] + win[b, a] = 1``).

Vectorised: a chunk of rounds is one ``(rounds, N)`` count matrix (``bincount`` of uniform draws) times the
``(N, S)`` score matrix, so 1000 rounds on 100k items × 30 systems take about 1.7 s on 2 cores
(``benchmarks/bench_rank.py``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.metaeval import CLUSTER_ALPHA, split_clusters
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
    adjacent_pvalues: np.ndarray  # p-value of system i+1 vs system i (the cluster test), length S-1
    win_probability: np.ndarray  # (S, S) in the order of ``systems``
    level: float
    rounds: int
    seed: int
    signature: Mapping[str, Any] = field(default_factory=dict)

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
            }
            for i, s in enumerate(self.systems)
        ]
        return {
            "systems": rows,
            "clusters": [list(c) for c in self.clusters],
            "win_probability": {"systems": list(self.systems), "matrix": np.round(self.win_probability, 6).tolist()},
            "level": self.level,
            "rounds": self.rounds,
            "seed": self.seed,
            "signature": dict(self.signature),
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


# --------------------------------------------------------------------------- clusters with missing ratings
def _adjacent_tests(matrix: np.ndarray, order: np.ndarray) -> np.ndarray:
    """One-sided Wilcoxon p-values of system ``order[i+1]`` vs ``order[i]`` (each pair on the items rated for both)."""
    out = np.ones(len(order) - 1)
    for i, (prev, cur) in enumerate(zip(order[:-1], order[1:])):
        both = ~np.isnan(matrix[:, prev]) & ~np.isnan(matrix[:, cur])
        if both.sum() >= 1:
            out[i] = wilcoxon_less((matrix[both, cur] - matrix[both, prev])[:, None])[0]
    return out


# --------------------------------------------------------------------------- the ranking
def rank_systems(
    campaign: Campaign,
    *,
    score: str = HUMAN,
    level: float = 0.95,
    rounds: int = 1000,
    alpha: float = CLUSTER_ALPHA,
    seed: int = 0,
    manifest: Mapping[str, Any] | None = None,
) -> Ranking:
    """Rank the systems of ``campaign`` by their mean ``score`` (see the module docstring for every number).

    ``manifest`` (how the subset was selected, e.g. :func:`read_manifest`) is recorded in the signature.
    Raises :class:`PrecometError` when the score is unknown, a system has no rating at all, or there are fewer
    than 2 systems / items.
    """
    if not 0 < level < 1:
        raise PrecometError(f"confidence level must lie in (0, 1), got {level}")
    if not 0 < alpha < 1:
        raise PrecometError(f"significance level alpha must lie in (0, 1), got {alpha}")
    matrix = np.asarray(campaign.score(score), dtype=float)
    if len(campaign.systems) < 2:
        raise PrecometError(
            f"campaign {campaign.name!r}: ranking needs at least 2 systems, got {len(campaign.systems)}"
        )
    rated = ~np.isnan(matrix)
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
    pvalues = (
        wilcoxon_less(matrix[:, order[1:]] - matrix[:, order[:-1]]) if complete else _adjacent_tests(matrix, order)
    )
    groups = split_clusters(order, pvalues, alpha=alpha)

    boot = bootstrap_means(matrix, rounds=rounds, seed=seed)[:, order]
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(boot, [(1 - level) / 2, (1 + level) / 2], axis=0)
    names = tuple(campaign.systems[i] for i in order)
    run = signature(
        "precomet rank",
        method="mean + paired item bootstrap (percentile CI) + Wilcoxon clusters (Alg. 1)",
        campaign=campaign,
        seed=seed,
        score=score,
        level=level,
        rounds=rounds,
        alpha=alpha,
        items=int(len(matrix)),
        systems=len(names),
        complete=complete,
        manifest=None if manifest is None else dict(manifest),
    )
    return Ranking(
        systems=names,
        means=means[order],
        ci_low=low,
        ci_high=high,
        n_rated=n_rated[order],
        clusters=[[campaign.systems[i] for i in members] for members in groups],
        adjacent_pvalues=np.asarray(pvalues, dtype=float),
        win_probability=win_probabilities(boot),
        level=level,
        rounds=rounds,
        seed=seed,
        signature=run,
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
    """The terminal table: rank range, cluster, system, mean, CI, ratings, p vs the previous system."""
    width = max(12, *(len(s) for s in ranking.systems))
    pct = f"{ranking.level:.0%}"
    lines = [f"{'rank':>5} {'cl':>3} {'system':<{width}} {'mean':>9} {pct + ' CI':>21} {'n':>6} {'p(prev)':>8}"]
    cluster = ranking.cluster_of()
    for i, (name, rank) in enumerate(zip(ranking.systems, ranking.rank_ranges())):
        if i and cluster[i] != cluster[i - 1]:
            lines.append("-" * len(lines[0]))
        p = "" if i == 0 else f"{ranking.adjacent_pvalues[i - 1]:.3g}"
        ci = f"[{ranking.ci_low[i]:.4g}, {ranking.ci_high[i]:.4g}]"
        lines.append(
            f"{rank:>5} {cluster[i]:>3} {name:<{width}} {ranking.means[i]:>9.4g} {ci:>21} {ranking.n_rated[i]:>6} "
            f"{p:>8}"
        )
    sig = ranking.signature
    lines.append(
        f"{len(ranking.clusters)} cluster(s) (one-sided Wilcoxon, p < {sig.get('alpha', CLUSTER_ALPHA)}); {pct} "
        "bootstrap CI"
        f" from {ranking.rounds} rounds, seed {ranking.seed}; {sig.get('items', '?')} items, score "
        f"{sig.get('score', '?')!r}"
    )
    return "\n".join(lines)


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
    "Ranking",
    "bootstrap_means",
    "check_manifest",
    "plot_ranking",
    "rank_systems",
    "ranking_table",
    "read_manifest",
    "win_probabilities",
]
