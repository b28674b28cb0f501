"""One fixed subset judged against random subsets of the same size or the same annotation cost (``benchmark
--subset``): the subset a user chose (or annotated) is scored like every benchmark row — SPA against the full
data, significance clusters, Kendall's tau of the system order — and placed in the distribution of random subsets
drawn the same way, which are the null: its percentile there and a one-sided p-value (the share of random
subsets at least as good, counting the subset itself).

A random subset of the same cost is the longest prefix of a random ordering whose cost does not exceed the
subset's, so it spends at most what the subset spends."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.costs import item_seconds
from precomet.errors import PrecometError
from precomet.metaeval.evaluation import evaluate_indices, evaluate_orderings
from precomet.metaeval.reference import full_reference

FIXED_MEASURES = ("spa", "clusters", "kendall")
"""What is measured on the subset and on each random subset (``kendall``: tau of the system order)."""
SUBSET_LEVEL = 0.05
"""The one-sided p-value below which the subset is called better (or, mirrored, worse) than random subsets."""


@dataclass(frozen=True)
class FixedSubsetJudgement:
    """A subset's measures, the random subsets' measures (``random[measure]``: one value per random subset), the
    percentile and one-sided p-value of each measure, and how the random subsets were matched (``match``:
    ``"items"`` or ``"cost"``)."""

    n_items: int
    n_subset: int
    subset_cost: float
    match: str
    subset: dict[str, float]
    random: dict[str, np.ndarray]
    percentile: dict[str, float]
    p_value: dict[str, float]
    p_worse: dict[str, float]
    random_sizes: np.ndarray

    @property
    def verdict(self) -> str:
        """``better``, ``worse`` or ``indistinguishable`` from random subsets, by SPA at :data:`SUBSET_LEVEL`."""
        if self.p_value["spa"] < SUBSET_LEVEL:
            return "better"
        if self.p_worse["spa"] < SUBSET_LEVEL:
            return "worse"
        return "indistinguishable"

    def to_dict(self) -> dict[str, Any]:
        random = {
            measure: {
                "mean": float(values.mean()),
                "ci90": [float(np.quantile(values, 0.05)), float(np.quantile(values, 0.95))],
            }
            for measure, values in self.random.items()
        }
        return {
            "n_items": self.n_items,
            "n_subset": self.n_subset,
            "subset_cost": self.subset_cost,
            "match": self.match,
            "n_random": len(self.random_sizes),
            "random_sizes": {"min": int(self.random_sizes.min()), "max": int(self.random_sizes.max())},
            "subset": dict(self.subset),
            "random": random,
            "percentile": dict(self.percentile),
            "p_value": dict(self.p_value),
            "p_worse": dict(self.p_worse),
            "verdict": self.verdict,
        }


def judge_subset(
    campaign: Campaign,
    positions: np.ndarray,
    *,
    score: str = HUMAN,
    match: str = "items",
    n_random: int = 1000,
    permutations: int = 1000,
    seed: int = 0,
    cluster_rule: str = "paper",
) -> FixedSubsetJudgement:
    """Judge the subset at campaign ``positions`` against ``n_random`` random subsets of the same number of items
    (``match="items"``) or of at most the same annotation seconds (``match="cost"``, every output of an item judged:
    :func:`precomet.costs.item_seconds`)."""
    if match not in ("items", "cost"):
        raise PrecometError(f"match must be 'items' or 'cost', got {match!r}")
    positions = np.unique(np.asarray(positions, dtype=int))
    n = len(campaign)
    if not 2 <= len(positions) < n:
        raise PrecometError(
            f"the subset has {len(positions)} of the {n} rated items; judging it needs at least 2 and fewer than all"
        )
    ref = full_reference(campaign, score=score, permutations=permutations, seed=seed, cluster_rule=cluster_rule)
    subset = evaluate_indices(ref, positions, measures=FIXED_MEASURES)
    rng = np.random.default_rng(seed)
    orders = np.stack([rng.permutation(n) for _ in range(n_random)])
    cost = item_seconds(campaign)
    budget = float(cost[positions].sum())
    if match == "items":
        sizes = np.full(n_random, len(positions))
    else:  # the longest prefix within the subset's cost (never more than it spends)
        spent = np.cumsum(cost[orders], axis=1)
        sizes = (spent <= budget * (1 + 1e-12)).sum(axis=1)
        if sizes.min() < 2:
            raise PrecometError(
                f"the subset's annotation cost ({budget:,.6g} s) buys fewer than 2 items of some random orderings;"
                " judge it by its number of items (--budget-unit items)"
            )
    random = np.empty((n_random, len(FIXED_MEASURES)))
    for size in np.unique(sizes):
        rows = np.flatnonzero(sizes == size)
        random[rows] = evaluate_orderings(ref, list(orders[rows]), [int(size)], measures=FIXED_MEASURES)[:, 0, :]
    by_measure = {measure: random[:, m] for m, measure in enumerate(FIXED_MEASURES)}
    return FixedSubsetJudgement(
        n_items=n,
        n_subset=len(positions),
        subset_cost=budget,
        match=match,
        subset=subset,
        random=by_measure,
        percentile={m: _percentile(v, subset[m]) for m, v in by_measure.items()},
        p_value={m: float((1 + np.sum(v >= subset[m])) / (1 + len(v))) for m, v in by_measure.items()},
        p_worse={m: float((1 + np.sum(v <= subset[m])) / (1 + len(v))) for m, v in by_measure.items()},
        random_sizes=sizes,
    )


def _percentile(values: np.ndarray, value: float) -> float:
    """Where ``value`` lies among ``values``, in percent (ties count half)."""
    return float(100 * (np.sum(values < value) + 0.5 * np.sum(values == value)) / len(values))


def fixed_table(judgement: FixedSubsetJudgement, *, name: str) -> str:
    """The judgement as a few lines: the subset's measures beside the random subsets' mean and 90 % range, its
    percentile and p-value, and the verdict."""
    unit = (
        f"{judgement.n_subset} items"
        if judgement.match == "items"
        else f"at most {judgement.subset_cost:,.6g} s of annotation time"
    )
    lines = [
        f"subset {name}: {judgement.n_subset} of {judgement.n_items} rated items; against {len(judgement.random_sizes)}"
        f" random subsets of {unit}",
        f"{'measure':<10}{'subset':>9}{'random mean':>13}{'random 5-95%':>18}{'percentile':>12}{'p':>8}",
    ]
    for measure in FIXED_MEASURES:
        values, mine = judgement.random[measure], judgement.subset[measure]
        scale, fmt = (100, "{:.2f}%") if measure == "spa" else (1, "{:.3g}")
        low, high = np.quantile(values, [0.05, 0.95]) * scale
        lines.append(
            f"{measure:<10}{fmt.format(mine * scale):>9}{fmt.format(values.mean() * scale):>13}"
            f"{fmt.format(low) + '–' + fmt.format(high):>18}{judgement.percentile[measure]:>11.1f}%"
            f"{judgement.p_value[measure]:>8.3f}"
        )
    verdict = {
        "better": "better than random subsets (p < 0.05 by SPA)",
        "worse": "worse than random subsets (p < 0.05 by SPA, one-sided the other way)",
        "indistinguishable": "indistinguishable from random subsets by SPA",
    }[judgement.verdict]
    lines.append(f"verdict: {verdict}; p = share of random subsets at least as good, counting the subset itself")
    return "\n".join(lines)


def plot_fixed(judgement: FixedSubsetJudgement, path: str | Path, *, name: str) -> None:
    """Histograms of the random subsets' SPA and cluster count with the subset's value as a line."""
    from matplotlib.figure import Figure  # a bare Figure: no pyplot state, no backend switch

    fig = Figure(figsize=(10, 3.8))
    for ax, measure, label, scale in zip(
        fig.subplots(1, 2), ("spa", "clusters"), ("SPA (%)", "significance clusters"), (100, 1)
    ):
        values = judgement.random[measure] * scale
        bins: Any = np.arange(values.min() - 0.5, values.max() + 1.5) if measure == "clusters" else 30
        ax.hist(values, bins=bins, color="0.75", label=f"{len(values)} random subsets")
        ax.axvline(
            judgement.subset[measure] * scale,
            color="C3",
            linewidth=2,
            label=f"{name}: percentile {judgement.percentile[measure]:.0f}, p {judgement.p_value[measure]:.3f}",
        )
        ax.set_xlabel(label)
        ax.set_ylabel("random subsets")
        ax.legend(fontsize=8)
    unit = "size" if judgement.match == "items" else "annotation cost"
    fig.suptitle(
        f"subset of {judgement.n_subset} of {judgement.n_items} rated items vs random subsets of the same {unit}"
    )
    fig.tight_layout()
    fig.savefig(path)


def judgement_result(judgement: FixedSubsetJudgement, *, name: str, signature: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON ``benchmark --subset`` writes: the judgement and the run's signature."""
    return {"subset": name, **judgement.to_dict(), "signature": dict(signature)}
