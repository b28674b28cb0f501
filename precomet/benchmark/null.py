"""The null of random orderings: what a selector that knows nothing scores, and the verdict against it.

A single ordering's SPA curve is noisy, so its parity (a first crossing) is often well below 100 % by luck alone:
random orderings reach 42–67 % at their 5th percentile on the WMT campaigns. :func:`score_null` therefore scores
``orderings`` random orderings (under cost budgets, quotas or documents: random subsets of the same budget) exactly
as a method is scored — same budgets, same random baseline, same parity search — and :func:`verdict` compares a
method's row with them:

* the **primary statistic** is the SPA gain (:data:`PRIMARY_MEANING`), which uses the whole curve and has a much
  smaller null spread than parity relative to what a useful utility gains (``benchmarks/bench_null.py``);
  ``p_value`` is the one-sided share of random orderings that gain at least as much, with the +1 correction;
* ``parity_ci90`` models the method's own luck as a random ordering's: the observed parity is the true one plus a
  null draw's deviation from 100 %, so the interval is ``[parity − (p95 − 1), parity − (p05 − 1)]`` (clipped at 0).
  A random ordering's interval lies wholly below 100 % exactly when its parity is below the null's 5th
  percentile: 5 % of the time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from precomet.benchmark.budgets import evaluate_props, spa_at_position
from precomet.benchmark.parity import coarse_grid, parity_search, parity_searches, parity_shares
from precomet.campaign import Campaign
from precomet.metaeval import Reference, evaluate_orderings, evaluate_prefixes
from precomet.parallel import map_forked
from precomet.selection.selector import Select, top_k
from precomet.selection.units import budget_items

NULL_ORDERINGS = 200
"""Random orderings a benchmark scores by default (``null_orderings``; 0 switches the null off)."""
PRIMARY = "spa_gain"
PRIMARY_MEANING = (
    "SPA gain = the method's SPA minus random's mean SPA at the same budget, averaged over the budgets (0 = as"
    " random; higher is better): the statistic p-values are computed on"
)
SIGNIFICANCE = 0.05
"""A selection "beats random" (and its saving is quoted) only with ``p_value`` below this."""
_NULL_STREAM = 7919  # keeps the null's seeds apart from random baseline's ([seed, r])
_BATCH = 25  # orderings per forked task (progress granularity)


def null_utilities(n_items: int, orderings: int, *, seed: int) -> list[np.ndarray]:
    """The random utilities behind the null's orderings, independent of the random baseline's seeds."""
    return [np.random.default_rng([seed, r, _NULL_STREAM]).random(n_items) for r in range(orderings)]


def spa_gain(spa_by_prop: Sequence[float] | np.ndarray, random_spa_by_prop: Sequence[float] | np.ndarray) -> float:
    """The primary statistic: mean over budgets of SPA minus random's mean SPA."""
    return float(np.mean(np.asarray(spa_by_prop, dtype=float) - np.asarray(random_spa_by_prop, dtype=float)))


def score_null(
    ref: Reference,
    campaign: Campaign,
    *,
    random_spa_runs: np.ndarray,
    props: Sequence[float],
    select: Select | None,
    budget_unit: str = "items",
    grid: int = 32,
    orderings: int = NULL_ORDERINGS,
    seed: int = 0,
    workers: int | None = 1,
    tick: Callable[[], None] = lambda: None,
) -> dict[str, np.ndarray]:
    """Score ``orderings`` random orderings as methods: ``{"spa_gain": (N,), "parity": (N,)}``.

    ``select`` is random's selector (``None``: top-k prefixes; else random subsets that fit the budget, e.g. of
    equal cost); ``random_spa_runs`` random's SPA per seed and budget (the parity targets and the gain's
    reference). Top-k orderings share their work: the SPA of every ordering at every budget and at the coarse grid
    positions up to the largest budget in one batched call per batch, then each ordering's search (the rest of the
    grid only where a target is not reached yet, and the bisection). ``tick`` is called once per ordering."""
    n = len(campaign)
    targets = np.asarray(random_spa_runs, dtype=float).mean(axis=0)
    utilities = null_utilities(n, orderings, seed=seed)
    batches = [range(start, min(start + _BATCH, orderings)) for start in range(0, orderings, _BATCH)]

    def batch(rows: range) -> np.ndarray:
        if select is None:
            found = _top_k_batch(ref, [utilities[r] for r in rows], props, targets, grid=grid)
        else:
            found = [_selected(ref, select, utilities[r], props, targets, grid=grid) for r in rows]
        out = np.empty((len(found), 2))
        for i, (spa, positions) in enumerate(found):
            out[i] = spa_gain(spa, targets), np.mean(parity_shares(campaign, props, positions, budget_unit))
        return out

    def ticks(values: np.ndarray) -> None:
        for _ in range(len(values)):
            tick()

    if orderings < 1:
        return {"spa_gain": np.empty(0), "parity": np.empty(0)}
    values = np.concatenate(map_forked(batch, batches, workers=workers, done=ticks))
    return {"spa_gain": values[:, 0], "parity": values[:, 1]}


def _top_k_batch(
    ref: Reference, utilities: list[np.ndarray], props: Sequence[float], targets: np.ndarray, *, grid: int
) -> list[tuple[list[float], list[int]]]:
    """SPA at the budgets and parity positions of top-k orderings: one batched pass over the budgets and the coarse
    grid up to the largest budget for all of them, then :func:`parity_searches` per ordering on those values."""
    n = len(ref)
    sizes = [budget_items(p, n) for p in props]
    coarse = coarse_grid(n, grid=grid).tolist()
    head = min((g for g in coarse if g >= max(sizes)), default=n)  # most orderings reach every target by here
    known = sorted(set(sizes) | {g for g in coarse if g <= head})
    orders = [top_k(u, n) for u in utilities]
    values = evaluate_orderings(ref, orders, known, measures=("spa",))[:, :, 0]
    found = []
    for order, row in zip(orders, values):
        memo = dict(zip(known, row.tolist()))

        def spa_of(positions: list[int], order: np.ndarray = order, memo: dict[int, float] = memo) -> list[float]:
            missing = [g for g in positions if g not in memo]
            if missing:
                computed = evaluate_prefixes(ref, order, missing, measures=("spa",))
                memo.update((g, value["spa"]) for g, value in zip(missing, computed))
            return [memo[g] for g in positions]

        positions = parity_searches(spa_of, targets.tolist(), n_items=n, grid=grid, first=head)
        found.append(([memo[k] for k in sizes], positions))
    return found


def _selected(
    ref: Reference, select: Select, utility: np.ndarray, props: Sequence[float], targets: np.ndarray, *, grid: int
) -> tuple[list[float], list[int]]:
    """SPA at the budgets and parity positions of one random draw through ``select`` (as a method's row)."""
    n = len(ref)
    spa = [value["spa"] for value in evaluate_props(ref, select, utility, props, measures=("spa",))]
    memo: dict[int, float] = {}

    def spa_at(g: int) -> float:
        if g not in memo:
            memo[g] = spa_at_position(ref, select, utility, g)
        return memo[g]

    return spa, [parity_search(spa_at, float(t), n_items=n, grid=grid) for t in targets]


def null_summary(null: Mapping[str, np.ndarray]) -> dict[str, float | int]:
    """The null's size, median and 5–95 % band of parity and SPA gain (the ``null`` object of every row)."""
    out: dict[str, float | int] = {"orderings": len(null["parity"])}
    for key in ("parity", PRIMARY):
        values = np.asarray(null[key], dtype=float)
        out[f"{key}_median"], out[f"{key}_p05"], out[f"{key}_p95"] = map(float, np.percentile(values, [50, 5, 95]))
    return out


def p_value(value: float, null: np.ndarray | Sequence[float], *, higher_is_better: bool = True) -> float:
    """One-sided share of null draws that do at least as well as ``value``, with the +1 correction: in (0, 1]."""
    null = np.asarray(null, dtype=float)
    as_good = null >= value if higher_is_better else null <= value
    return float((1 + int(as_good.sum())) / (1 + len(null)))


def parity_interval(parity: float, null_parity: np.ndarray | Sequence[float]) -> list[float]:
    """90 % interval of a parity whose luck is a random ordering's (module docstring): ``[parity − (p95 − 1),
    parity − (p05 − 1)]``, the lower end clipped at 0."""
    p05, p95 = np.percentile(np.asarray(null_parity, dtype=float), [5, 95])
    return [max(0.0, float(parity - (p95 - 1.0))), float(parity - (p05 - 1.0))]


def verdict(row: Mapping[str, Any], null: Mapping[str, np.ndarray] | None) -> dict[str, Any]:
    """``row`` (a method's, control's or the oracle's) with its verdict against the ``null``: ``p_value`` (on the
    SPA gain), ``parity_p_value``, ``parity_ci90``, ``spa_gain_ci90`` and the ``null`` summary; all ``None``
    without a null."""
    if null is None or len(null["parity"]) == 0:
        return {
            **row,
            "p_value": None,
            "parity_p_value": None,
            "parity_ci90": None,
            "spa_gain_ci90": None,
            "null": None,
        }
    gains = np.asarray(null[PRIMARY], dtype=float)
    g05, g95 = np.percentile(gains, [5, 95])
    return {
        **row,
        "p_value": p_value(row[PRIMARY], gains),
        "parity_p_value": p_value(row["parity"], null["parity"], higher_is_better=False),
        "parity_ci90": parity_interval(row["parity"], null["parity"]),
        "spa_gain_ci90": [float(row[PRIMARY] - g95), float(row[PRIMARY] - g05)],
        "null": null_summary(null),
    }


def null_band_text(null: Mapping[str, Any]) -> str:
    """The null summary (:func:`null_summary`) in words: parity median and 5–95 % band, SPA gain in SPA points."""
    return (
        f"parity median {100 * null['parity_median']:.0f} % (5–95 %: {100 * null['parity_p05']:.0f}–"
        f"{100 * null['parity_p95']:.0f} %),"
        f" SPA gain median {100 * null['spa_gain_median']:+.1f} ({100 * null['spa_gain_p05']:+.1f} to"
        f" {100 * null['spa_gain_p95']:+.1f}) points"
    )
