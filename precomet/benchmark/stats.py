"""Statistics of the random baseline: the 90 % Student-t interval (:func:`ci90`) and random selection's runs and
their summary."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from precomet.benchmark.budgets import BENCH_MEASURES, evaluate_props
from precomet.errors import PrecometError
from precomet.metaeval import Reference, evaluate_orderings
from precomet.parallel import map_forked
from precomet.selection.selector import Select, top_k
from precomet.selection.units import budget_items
from precomet.stats import t_quantile

_SEED_BATCH = 25  # random orderings meta-evaluated per batched call (progress granularity)


def ci90(values: Sequence[float] | np.ndarray, *, of_mean: bool = False) -> tuple[float, float]:
    """90 % Student-t interval of a single run: ``mean ± t(0.95, R−1) · s`` (s with ddof=1); with ``of_mean``
    the interval of the mean (``s / √R``)."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    half = t_quantile(0.95, len(values) - 1) * float(values.std(ddof=1)) / (np.sqrt(len(values)) if of_mean else 1.0)
    return float(values.mean() - half), float(values.mean() + half)


def random_baseline(
    ref: Reference,
    select: Select | None,
    props: Sequence[float],
    *,
    seeds: int = 100,
    seed: int = 0,
    tick: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """Random selection with ``seeds`` seeds: per-prop means and 90 % intervals of SPA, clusters, Kendall."""
    return summarise_random(random_runs(ref, select, props, seeds=seeds, seed=seed, tick=tick), len(props))


def random_runs(
    ref: Reference,
    select: Select | None,
    props: Sequence[float],
    *,
    seeds: int = 100,
    seed: int = 0,
    tick: Callable[[], None] = lambda: None,
    workers: int | None = 1,
) -> np.ndarray:
    """The random runs behind :func:`random_baseline`: array ``(seeds, props, BENCH_MEASURES)``; batches of seeds
    run on ``workers`` processes (:func:`precomet.parallel.map_forked`; the same numbers for any count)."""
    if seeds < 1:
        raise PrecometError(f"{{seeds}}{seeds}: the random baseline needs at least 1 seed", param="seeds")
    utilities = [np.random.default_rng([seed, r]).random(len(ref)) for r in range(seeds)]
    size = _SEED_BATCH if select is None else 1  # a selector's knapsacks are slow enough to go one seed at a time
    batches = [range(start, min(start + size, seeds)) for start in range(0, seeds, size)]
    if select is None:  # nested top-k subsets: each batch of seeds' orderings in one batched call
        sizes = np.array([budget_items(prop, len(ref)) for prop in props])
        by_size = np.argsort(sizes, kind="stable")

        def batch(rows: range) -> np.ndarray:
            orders = [top_k(utilities[r], int(sizes.max())) for r in rows]
            out = np.zeros((len(rows), len(props), len(BENCH_MEASURES)))
            out[:, by_size] = evaluate_orderings(ref, orders, sizes[by_size].tolist(), measures=BENCH_MEASURES)
            return out

    else:

        def batch(rows: range) -> np.ndarray:
            found = [evaluate_props(ref, select, utilities[r], props) for r in rows]
            return np.array([[[values[m] for m in BENCH_MEASURES] for values in run] for run in found])

    def ticks(values: np.ndarray) -> None:
        for _ in range(values.shape[0] * values.shape[1]):
            tick()

    return np.concatenate(map_forked(batch, batches, workers=workers, done=ticks))


def summarise_random(runs: np.ndarray, n_props: int) -> dict[str, Any]:
    """Per-prop means and 90 % single-run intervals of the random runs (:func:`random_runs`)."""
    seeds = runs.shape[0]
    spa, clu, cor = (runs[:, :, k] for k in range(3))
    return {
        "spa": float(spa.mean()),
        "spa_by_prop": spa.mean(axis=0).tolist(),
        "spa_ci90_by_prop": [list(ci90(spa[:, q])) for q in range(n_props)],
        "clusters": float(clu.mean()),
        "clusters_by_prop": clu.mean(axis=0).tolist(),
        "clusters_ci90_by_prop": [list(ci90(clu[:, q])) for q in range(n_props)],
        "corr": float(cor.mean()),
        "corr_by_prop": cor.mean(axis=0).tolist(),
        "seeds": seeds,
    }
