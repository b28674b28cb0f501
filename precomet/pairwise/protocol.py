"""The DiffUse evaluation protocol (Ashury-Tahan et al., 2024, §5.3 and §6.2).

For every pair of systems and every seed, a random ``test_fraction`` (80%) of the items is the test set;
the oracle's preference on an item is the system with the higher score (human by default), a tie when the
scores differ by at most ``margin``. The *test winner* is the system preferred on more test items (or a
tie). A selection of ``budget`` items *succeeds* when its majority preference equals the test winner.
DiffUse is compared with uniform random samples of the same size across budgets, and in the iterative
mode (Algorithm 1 vs random order, stopping at ``sf <= p``) by annotations used and the shares of
success / error / inconclusive runs (the paper's Tables 2–3). Embeddings are computed once; the Ward
linkage once per (pair, seed); every budget is a cut of it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, cast

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.pairwise.diffuse import diffuse_tree, iterate_order, iterate_tree, sign_oracle
from precomet.progress import progress as progress_bar
from precomet.signature import signature
from precomet.utilities.diffuse import Encoder, embed_outputs, encoder_name

log = logging.getLogger(__name__)

METHODS = ("diffuse", "random")
DEFAULT_BUDGETS = tuple(range(5, 201, 5))


def preference_signs(first: np.ndarray, second: np.ndarray, *, margin: float = 0.0) -> np.ndarray:
    """+1 where ``first`` is higher by more than ``margin``, −1 where lower, 0 otherwise."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin) or margin < 0:
        raise PrecometError(
            f"margin must be a finite number >= 0 (score differences within it are ties), got {margin!r}"
        )
    delta = np.asarray(first, dtype=float) - np.asarray(second, dtype=float)
    if np.isnan(delta).any():
        raise PrecometError("preference scores contain NaN; drop incomplete items first")
    return np.where(delta > margin, 1, np.where(delta < -margin, -1, 0)).astype(np.int8)


@dataclass(frozen=True)
class PairwiseEvaluation:
    """Aggregated success rates per (method, budget) and iterative outcomes per (method, p)."""

    success: list[dict[str, Any]]
    iterative: list[dict[str, Any]]
    signature: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict, as ``precomet diffuse --evaluate -o`` writes it."""
        return {"signature": dict(self.signature), "success": self.success, "iterative": self.iterative}

    def to_markdown(self) -> str:
        lines = [
            "| budget | " + " | ".join(f"{m} success %" for m in METHODS) + " |",
            "|---:|" + "---:|" * len(METHODS),
        ]
        by_budget: dict[int, dict[str, dict]] = {}
        for row in self.success:
            by_budget.setdefault(int(row["budget"]), {})[str(row["method"])] = row
        for budget, rows in sorted(by_budget.items()):
            lines.append(
                f"| {budget} | "
                + " | ".join(f"{100 * rows[m]['success']:.1f} ± {100 * rows[m]['stderr']:.1f}" for m in METHODS)
                + " |"
            )
        lines += [
            "",
            "| p | method | # annotations | error % | success % | inconclusive % | avg distance |"
            " avg dist. (error) | avg dist. (success) | avg dist. (inconcl.) |",
            "|---|---|" + "---:|" * 8,
        ]
        for row in self.iterative:
            cells = [
                f"{row['annotations']:.2f}",
                *(f"{100 * row[k]:.2f}" for k in ("error", "success", "inconclusive")),
                *(f"{row[k]:.3f}" for k in ("distance", "distance_error", "distance_success", "distance_inconclusive")),
            ]
            lines.append(f"| {row['p']} | {row['method']} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def evaluate_pairwise(
    campaign: Campaign,
    *,
    score: str = HUMAN,
    systems: Sequence[str] | None = None,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    seeds: int = 10,
    test_fraction: float = 0.8,
    margin: float = 0.0,
    higher_is_better: bool = True,
    p_values: Sequence[float] = (0.2, 0.1),
    n_min: int = 5,
    max_budget: int = 200,
    encoder: Encoder = None,
    cache_dir: str | Path | None = None,
    embeddings: np.ndarray | None = None,
) -> PairwiseEvaluation:
    """Run the protocol over all pairs of ``systems`` (default all) and ``seeds`` test-set draws.
    ``embeddings`` ``(N, S, D)`` aligned to ``systems`` skip the encoder."""
    systems = list(campaign.systems if systems is None else systems)
    columns = campaign.system_index(systems)
    if len(systems) < 2:
        raise PrecometError(f"the pairwise protocol needs at least two systems, got {systems}")
    if not 0 < test_fraction <= 1:
        raise PrecometError(f"test_fraction must be in (0, 1], got {test_fraction}")
    if seeds < 1:
        raise PrecometError(f"seeds must be >= 1, got {seeds}")
    matrix = campaign.score(score)[:, columns] * (1.0 if higher_is_better else -1.0)
    n_test = int(round(test_fraction * len(campaign)))
    usable = sorted({int(b) for b in budgets if 1 <= b <= n_test})
    if len(usable) < len(set(budgets)):
        log.warning("skipping budgets above the %d test items or below 1", n_test)
    if not usable and not p_values:
        raise PrecometError(f"no budget fits the {n_test} test items")
    if embeddings is None:
        embeddings = embed_outputs(campaign, systems=systems, encoder=encoder, cache_dir=cache_dir)
    elif embeddings.shape[:2] != (len(campaign), len(systems)):
        raise PrecometError(
            f"embeddings of shape {embeddings.shape} do not match {len(campaign)} items × {len(systems)} systems"
        )
    embeddings = np.asarray(embeddings, dtype=np.float64)
    hits: dict[tuple[str, int], list[Any]] = {(m, b): [] for m in METHODS for b in usable}
    outcomes: dict[tuple[str, float], list[tuple[int, str, float]]] = {(m, p): [] for m in METHODS for p in p_values}
    pairs = list(combinations(range(len(systems)), 2))
    progress = progress_bar(total=len(pairs) * seeds, desc="pairs × seeds")
    for i, j in pairs:
        signs = preference_signs(matrix[:, i], matrix[:, j], margin=margin)
        for seed in range(seeds):
            rng = np.random.default_rng([seed, i, j])
            test = np.sort(rng.choice(len(campaign), n_test, replace=False))
            labels = signs[test]
            winner = int(np.sign(labels.sum()))
            distance = abs(float((labels == 1).mean() - (labels == -1).mean()))
            tree = diffuse_tree(embeddings[test, i] - embeddings[test, j])
            for budget in usable:
                hits["diffuse", budget].append(np.sign(labels[tree.select(budget)].sum()) == winner)
                hits["random", budget].append(
                    np.sign(labels[rng.choice(n_test, budget, replace=False)].sum()) == winner
                )
            oracle = sign_oracle(labels)
            cap = min(max_budget, n_test)
            for p in p_values:
                runs = {
                    "diffuse": iterate_tree(tree, oracle, p=p, n_min=n_min, max_budget=cap),
                    "random": iterate_order(rng.permutation(n_test), oracle, p=p, n_min=n_min, max_budget=cap),
                }
                for method, run in runs.items():
                    outcome = (
                        "inconclusive"
                        if not run.decided
                        else "success"
                        if {"a": 1, "b": -1}[cast(str, run.winner)] == winner  # decided: winner is set
                        else "error"
                    )
                    outcomes[method, p].append((run.n_annotations, outcome, distance))
            progress.update()
    progress.close()
    success = [
        dict(method=m, budget=b, success=float(np.mean(v)), stderr=float(np.std(v) / np.sqrt(len(v))), runs=len(v))
        for (m, b), v in hits.items()
    ]
    iterative = [_iterative_row(m, p, v) for (m, p), v in outcomes.items()]
    run_signature = signature(
        "precomet diffuse protocol",
        method="diffuse-protocol",
        campaign=campaign,
        score=score,
        systems=systems,
        pairs=len(pairs),
        seeds=seeds,
        test_fraction=test_fraction,
        test_items=n_test,
        margin=margin,
        p_values=list(p_values),
        n_min=n_min,
        max_budget=max_budget,
        encoder=encoder_name(encoder),
    )
    return PairwiseEvaluation(success, iterative, run_signature)


def _iterative_row(method: str, p: float, runs: list[tuple[int, str, float]]) -> dict[str, Any]:
    used = np.array([r[0] for r in runs], dtype=float)
    kind = np.array([r[1] for r in runs])
    dist = np.array([r[2] for r in runs])
    row: dict[str, Any] = dict(
        method=method, p=p, runs=len(runs), annotations=float(used.mean()), distance=float(dist.mean())
    )
    for name in ("success", "error", "inconclusive"):
        row[name] = float((kind == name).mean())
        row[f"distance_{name}"] = float(dist[kind == name].mean()) if (kind == name).any() else float("nan")
    return row
