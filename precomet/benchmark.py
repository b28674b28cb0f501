"""Benchmark selection methods against random selection over a range of budgets (paper §5, Figure 4, Table 5).

For each budget proportion ``p`` (default 5 %, 10 %, …, 50 %) every method's utility picks a subset, which is
meta-evaluated against the full campaign (SPA, cluster count, Kendall τ-b of system means). Random selection
is run with ``seeds`` seeds (default 100) and summarised by its mean and 90 % Student-t interval of a single
run (``mean ± t₀.₉₅,R−1 · s``, the band of the paper's figures). The **parity proportion** (Eq. 12) of a
method is, averaged over budgets ``B``, the smallest budget ``C`` at which the method's SPA reaches random's
mean SPA at ``B``, divided by ``B`` (:data:`PARITY_MEANING`). Its 90 % interval (``parity_ci90``) is a bootstrap
over random's seeds and the budgets, computed from the SPA values the parity search already evaluated
(:func:`parity_interval`); :func:`recommendation` turns the best parity into one sentence.

A **control row** (``controls``, :data:`LENGTH_CONTROL`) shows what source length alone achieves: the ``length``
utility (longer sources first; under a cost budget the same knapsack, with the same cost objective, and a constant
utility), evaluated like a method, with its own parity against random.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError, SolverGapWarning
from precomet.metaeval import (
    Reference,
    evaluate_indices,
    evaluate_orderings,
    evaluate_prefixes,
    full_reference,
)
from precomet.progress import progress as progress_bar
from precomet.selection.objective import DEFAULT_COST_OBJECTIVE
from precomet.selection.random_fill import make_random_selector
from precomet.selection.units import budget_items
from precomet.signature import signature

log = logging.getLogger(__name__)

DEFAULT_PROPS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
BENCH_MEASURES = ("spa", "clusters", "kendall")
LEVELS = ("item", "doc")
BALANCE = (None, "domain")
_SEED_BATCH = 25  # random orderings meta-evaluated per batched call (progress granularity)
PARITY_RESAMPLES = 1000  # bootstrap resamples behind parity_ci90
PARITY_MEANING = (
    "parity = the share of the budget a method needs to reach the accuracy (SPA) random selection reaches with the"
    " whole budget, averaged over the budgets (below 100 %: the method saves annotation)"
)

LENGTH_CONTROL = "length"
"""The control row: the ``length`` utility method (:mod:`precomet.utilities.length`), run like any method."""

Select = Callable[[np.ndarray, float], np.ndarray]


# --------------------------------------------------------------------------- budgets and selection
def parse_props(text: str) -> list[float]:
    """``"0.05:0.5:0.05"`` (start:stop:step, stop included) or ``"0.1,0.25,0.5"`` -> validated proportions."""
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            if step <= 0:
                raise ValueError
            props = list(np.round(np.arange(start, stop + step / 2, step), 10))
        else:
            props = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise PrecometError(f"props={text!r}: expected start:stop:step or a comma list of proportions") from None
    return validate_props(props)


def validate_props(props: Sequence[float]) -> list[float]:
    """Proportions must lie in (0, 1]; at least one."""
    props = [float(p) for p in props]
    bad = [p for p in props if not 0 < p <= 1]
    if not props or bad:
        raise PrecometError(f"budget proportions props= must lie in (0, 1], got {bad or 'none'}")
    twice = sorted({p for p in props if props.count(p) > 1})
    if twice:
        raise PrecometError(f"budget proportions props= give {twice} twice")
    return props


def top_k(utility: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest utilities (stable: earlier items win ties)."""
    return np.argsort(-np.asarray(utility, dtype=float), kind="stable")[:k]


def make_selector(
    campaign: Campaign,
    *,
    budget_cost: bool = False,
    balance: str | None = None,
    level: str = "item",
    time_limit: float = 10.0,
    cost_objective: str = DEFAULT_COST_OBJECTIVE,
) -> Select | None:
    """``select(utility, prop) -> positions`` through the subset builder (:func:`precomet.select.select_subset`)
    with the cost budget ``prop · total cost`` (knapsack over ``cost_objective``), domain quotas and/or
    document units; ``None`` when no option is
    set: plain top-k, whose nested subsets :func:`evaluate_props` meta-evaluates in one pass.

    A benchmark makes hundreds of selections, so a knapsack the solver has not certified optimal within
    ``time_limit`` seconds is used as found (its gap is logged at debug level)."""
    if level not in LEVELS:
        raise PrecometError(f"unknown level {level!r}; valid: {list(LEVELS)}")
    if balance not in BALANCE:
        raise PrecometError(f"unknown balance {balance!r}; valid: {[b for b in BALANCE if b]}")
    n = len(campaign)
    if not budget_cost and balance is None and level == "item":
        return None

    import warnings

    from precomet.campaign import source_length
    from precomet.select import select_subset

    total = float(campaign.cost.sum())
    length = source_length(campaign.src)

    def select(utility: np.ndarray, prop: float) -> np.ndarray:
        with warnings.catch_warnings():  # the gap is logged below; hundreds of selections need no warning each
            warnings.simplefilter("ignore", SolverGapWarning)
            chosen = select_subset(
                utility,
                cost=campaign.cost if budget_cost else None,
                domain=campaign.domain if balance else None,
                doc=campaign.doc if level == "doc" else None,
                budget=None if budget_cost else budget_items(prop, n),
                budget_cost=prop * total if budget_cost else None,
                balance=balance,
                level=level,
                time_limit=time_limit,
                allow_gap=True,
                cost_objective=cost_objective,
                length=length,
            )
        if chosen.status != "optimal":
            log.debug("budget %.3f: knapsack gap %.2g accepted after %.0f s", prop, chosen.gap, time_limit)
        return np.asarray(chosen.indices, dtype=int)

    return select


def evaluate_props(
    ref: Reference,
    select: Select | None,
    utility: np.ndarray,
    props: Sequence[float],
    *,
    measures: Sequence[str] = BENCH_MEASURES,
) -> list[dict[str, float]]:
    """Meta-evaluate the subset ``utility`` selects at every budget proportion (in the order given)."""
    if select is not None:
        return [evaluate_indices(ref, select(utility, prop), measures=measures) for prop in props]
    sizes = np.array([budget_items(prop, len(ref)) for prop in props])
    order = np.argsort(sizes, kind="stable")
    values = evaluate_prefixes(ref, top_k(utility, int(sizes.max())), sizes[order].tolist(), measures=measures)
    out: list[dict[str, float]] = [{}] * len(props)
    for position, value in zip(order, values):
        out[position] = value
    return out


def budget_value(campaign: Campaign, prop: float, *, budget_cost: bool) -> float:
    """The budget a proportion stands for: item count, or annotation cost with ``budget_cost``."""
    return prop * float(campaign.cost.sum()) if budget_cost else float(budget_items(prop, len(campaign)))


# --------------------------------------------------------------------------- random baseline and parity
def ci90(values: Sequence[float] | np.ndarray, *, of_mean: bool = False) -> tuple[float, float]:
    """90 % Student-t interval of a single run: ``mean ± t(0.95, R−1) · s`` (s with ddof=1); with ``of_mean``
    the interval of the mean (``s / √R``)."""
    from scipy.special import stdtrit  # = scipy.stats.t.ppf(0.95, df), without importing scipy.stats

    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    half = float(stdtrit(len(values) - 1, 0.95) * values.std(ddof=1)) / (np.sqrt(len(values)) if of_mean else 1.0)
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
) -> np.ndarray:
    """The random runs behind :func:`random_baseline`: array ``(seeds, props, BENCH_MEASURES)``."""
    if seeds < 1:
        raise PrecometError(f"seeds={seeds}: the random baseline needs at least 1 seed")
    runs = np.zeros((seeds, len(props), len(BENCH_MEASURES)))
    utilities = [np.random.default_rng([seed, r]).random(len(ref)) for r in range(seeds)]
    if select is None:  # nested top-k subsets: all seeds' orderings in batched calls
        sizes = np.array([budget_items(prop, len(ref)) for prop in props])
        by_size = np.argsort(sizes, kind="stable")
        for start in range(0, seeds, _SEED_BATCH):
            orders = [top_k(u, int(sizes.max())) for u in utilities[start : start + _SEED_BATCH]]
            runs[start : start + _SEED_BATCH, by_size] = evaluate_orderings(
                ref, orders, sizes[by_size].tolist(), measures=BENCH_MEASURES
            )
            for _ in range(len(orders) * len(props)):
                tick()
    else:
        for r, utility in enumerate(utilities):
            for q, values in enumerate(evaluate_props(ref, select, utility, props)):
                runs[r, q] = [values[m] for m in BENCH_MEASURES]
                tick()
    return runs


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


def coarse_grid(n_items: int, *, grid: int = 32, start: int = 2) -> np.ndarray:
    """The grid positions :func:`parity_search` tries first: ``grid`` evenly spaced positions ``start..n_items``."""
    return np.unique(np.linspace(start, n_items, max(2, grid)).round().astype(int))


def parity_search(
    spa_at: Callable[[int], float], target: float, *, n_items: int, grid: int = 32, start: int = 2
) -> int:
    """Smallest grid position ``g`` (budget proportion ``g / n_items``) with ``spa_at(g) ≥ target``.

    A coarse pass over ``grid`` evenly spaced positions finds the first one that reaches the target, then
    bisection between it and the previous coarse position finds the crossing (exactly the smallest when SPA
    grows with the budget inside that interval). ``spa_at`` should be memoised by the caller.
    """
    previous = start - 1
    for g in coarse_grid(n_items, grid=grid, start=start):
        if spa_at(int(g)) >= target:
            lo, hi = previous, int(g)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if spa_at(mid) >= target:
                    hi = mid
                else:
                    lo = mid
            return hi
        previous = int(g)
    log.warning("SPA never reaches %.4f, not even on the full budget; parity capped at the full set", target)
    return n_items


def parity_searches(
    spa_of: Callable[[list[int]], list[float]],
    targets: Sequence[float],
    *,
    n_items: int,
    grid: int = 32,
    start: int = 2,
) -> list[int]:
    """:func:`parity_search` for several targets in lockstep, for an ``spa_of(positions)`` that evaluates many
    positions at once (nested top-k prefixes: one batched call): the whole coarse grid in one call, then each
    bisection round's midpoints of all targets in one call. Same answers as :func:`parity_search` per target."""
    coarse = [int(g) for g in coarse_grid(n_items, grid=grid, start=start)]
    spa = dict(zip(coarse, spa_of(coarse)))
    brackets: list[list[int] | None] = []  # [lo, hi] per target: spa(hi) ≥ target > spa(lo) (or lo = start − 1)
    for target in targets:
        reached = [position for position, g in enumerate(coarse) if spa[g] >= target]
        if not reached:
            log.warning("SPA never reaches %.4f, not even on the full budget; parity capped at the full set", target)
            brackets.append(None)
        else:
            brackets.append([coarse[reached[0] - 1] if reached[0] > 0 else start - 1, coarse[reached[0]]])
    while True:
        open_brackets = [
            (target, bracket)
            for target, bracket in zip(targets, brackets)
            if bracket is not None and bracket[1] - bracket[0] > 1
        ]
        if not open_brackets:
            return [n_items if bracket is None else bracket[1] for bracket in brackets]
        mids = sorted({(lo + hi) // 2 for _, (lo, hi) in open_brackets})
        spa.update(zip(mids, spa_of(mids)))
        for target, bracket in open_brackets:
            mid = sum(bracket) // 2
            if spa[mid] >= target:
                bracket[1] = mid
            else:
                bracket[0] = mid


def replayed_position(
    spa_at: Callable[[int], float],
    evaluated: Mapping[int, float],
    target: float,
    *,
    n_items: int,
    grid: int = 32,
    start: int = 2,
) -> float:
    """:func:`parity_search`'s answer for ``target``, replayed on the SPA values it already ``evaluated``: the same
    coarse pass (a coarse position not evaluated yet is asked of the memoised ``spa_at``) and the same bisection
    while its midpoints are known; at the first unknown midpoint, the linear interpolation between the bracket's
    ends (fractional). For a target the search ran with, the answer is the search's own (every midpoint known)."""
    previous = start - 1
    for g in coarse_grid(n_items, grid=grid, start=start):
        g = int(g)
        if (evaluated[g] if g in evaluated else spa_at(g)) >= target:
            lo, hi = previous, g
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if mid not in evaluated:
                    low = evaluated.get(lo, -np.inf)
                    if not np.isfinite(low):
                        return float(hi)
                    share = (target - low) / (evaluated[hi] - low)
                    return lo + float(np.clip(share, 0.0, 1.0)) * (hi - lo)
                if evaluated[mid] >= target:
                    hi = mid
                else:
                    lo = mid
            return float(hi)
        previous = g
    return float(n_items)


def parity_interval(
    position_for: Callable[[float], float],
    random_spa_runs: np.ndarray,
    parity_of: Callable[[float, int], float],
    *,
    resamples: int = PARITY_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """90 % bootstrap interval (5th and 95th percentile) of the parity over random's seeds and the budgets.

    Each resample draws random's seeds with replacement (the targets become the resampled seeds' mean SPA per
    budget), finds each budget's parity position with ``position_for(target)`` (:func:`replayed_position`: no
    new subsets beyond a few coarse grid points), and averages the parities (``parity_of(position, budget
    index)``) of budgets drawn with replacement. ``random_spa_runs`` = random's SPA, shape ``(seeds, budgets)``.
    """
    runs = np.asarray(random_spa_runs, dtype=float)
    n_seeds, n_props = runs.shape
    rng = np.random.default_rng([seed, 21])
    values = np.empty(resamples)
    for b in range(resamples):
        targets = runs[rng.integers(0, n_seeds, n_seeds)].mean(axis=0)
        parities = np.array([parity_of(position_for(float(targets[q])), q) for q in range(n_props)])
        values[b] = parities[rng.integers(0, n_props, n_props)].mean()
    bounds = np.percentile(values, [5, 95])
    return float(bounds[0]), float(bounds[1])


def circular_reason(methods: Sequence[str], metric: str | None, score: str) -> str | None:
    """Why benchmarking ``methods`` on ``metric`` against ``score`` is circular, or ``None``: a score-based utility
    computed from the very scores the subsets are evaluated on (which do not exist before annotation)."""
    if metric is None or metric != score or not methods:
        return None
    from precomet.utilities import UTILITY_METHODS

    reading = [m for m in methods if m in UTILITY_METHODS and UTILITY_METHODS[m].needs_score]
    if not reading:
        return None
    return (
        f"method(s) {', '.join(reading)} would compute their utility from {metric!r}, the very score the subsets are"
        f" evaluated on: a circular evaluation that needs the annotations it is meant to save"
    )


# --------------------------------------------------------------------------- the benchmark loop
def run_benchmark(
    campaign: Campaign,
    *,
    methods: Sequence[str] = (),
    external: Mapping[str, np.ndarray | Callable[[int], np.ndarray]] | None = None,
    metric: str | None = None,
    score: str = HUMAN,
    props: Sequence[float] = DEFAULT_PROPS,
    seeds: int = 100,
    budget_cost: bool = False,
    cost_objective: str = DEFAULT_COST_OBJECTIVE,
    balance: str | None = None,
    level: str = "item",
    permutations: int = 1000,
    cluster_rule: str = "paper",
    seed: int = 0,
    parity_grid: int = 32,
    method_options: Mapping[str, Mapping[str, Any]] | None = None,
    time_limit: float = 10.0,
    progress: bool | None = None,
    oracle: bool = True,
    oracle_candidates: int = 100,
    oracle_step: int = 10,
    allow_circular: bool = False,
    controls: bool = True,
) -> dict[str, Any]:
    """Benchmark utility ``methods`` (names in ``UTILITY_METHODS``, computed on ``metric``) and ``external``
    utilities (``{name: array aligned with the campaign}``, or ``{name: budget -> array}`` for a budget-dependent
    selector such as :func:`precomet.selection.strata.stratified_utility`) against random selection. Returns the
    JSON-ready result (``props``, ``random``, ``methods``, ``signature``, and with ``oracle`` the headroom row
    ``oracle``: greedy on the ``score`` itself, :mod:`precomet.oracle`, flagged ``"usable": false``), ``cost`` (total
    annotation seconds and where they came from) and ``recommendation`` (:func:`recommendation`); see the module
    docstring. A score-based method computed on ``metric == score`` is refused (:func:`circular_reason`) unless
    ``allow_circular``. Cluster counts follow ``cluster_rule`` (:data:`precomet.metaeval.CLUSTER_RULES`). With
    ``controls`` the result has the length control row under ``controls`` (or the reason it is left out under
    ``controls_skipped``: ``length`` is among the methods)."""
    props = validate_props(props)
    external = {name: _check_external(campaign, name, values) for name, values in (external or {}).items()}
    specs = _method_specs(methods, external)
    if len(campaign.systems) < 2:
        raise PrecometError(
            f"campaign {campaign.name!r}: benchmarking needs at least 2 systems, got {len(campaign.systems)}"
        )
    small = [p for p in props if budget_items(p, len(campaign)) < 2]
    if small:
        raise PrecometError(
            f"budget proportion(s) {small} give fewer than 2 of {len(campaign)} items;"
            " use larger proportions (props=...)"
        )
    if any(spec.needs_score for spec in specs.values()) and metric is None:
        available = sorted(set(campaign.scores) - {score})
        raise PrecometError(f"choose the metric the utilities use (metric=NAME); available: {available}")
    if metric is not None:
        campaign.score(metric)  # fails early, listing the valid names
    circular = circular_reason(list(specs), metric, score)
    if circular and not allow_circular:
        raise PrecometError(f"{circular}; pass allow_circular=True to run it anyway")
    ref = full_reference(campaign, score=score, permutations=permutations, seed=seed, cluster_rule=cluster_rule)
    select = make_selector(
        campaign,
        budget_cost=budget_cost,
        balance=balance,
        level=level,
        time_limit=time_limit,
        cost_objective=cost_objective,
    )
    control_names, skipped = plan_controls(specs, controls)
    steps = (seeds + len(specs) + len(external) + len(control_names) + int(oracle)) * len(props)
    bar = progress_bar(total=steps, desc=f"benchmark {campaign.name}", enabled=progress)
    started = time.perf_counter()
    # random under a cost budget, quotas or documents: a random subset that fits (not a knapsack over noise)
    random_select = (
        None
        if select is None
        else make_random_selector(campaign, budget_cost=budget_cost, balance=balance, level=level)
    )
    runs = random_runs(ref, random_select, props, seeds=seeds, seed=seed, tick=lambda: bar.update())
    random = summarise_random(runs, len(props))
    random["seconds"] = time.perf_counter() - started
    results = {}
    for name in [*specs, *external]:
        started = time.perf_counter()
        needs_budget = (name in specs and specs[name].needs_budget) or callable(external.get(name))
        if name in external:
            utility_at = _external_at(campaign, name, external[name])
        else:
            utility_at = _utility_at(
                campaign, name, needs_budget, metric, seed, (method_options or {}).get(name), budget_cost=budget_cost
            )
        results[name] = _evaluate_method(
            ref,
            select,
            utility_at,
            needs_budget,
            props,
            random["spa_by_prop"],
            campaign,
            budget_cost,
            parity_grid,
            bar,
            random_spa_runs=runs[:, :, 0],
            seed=seed,
        )
        results[name]["seconds"] = time.perf_counter() - started
    control_rows = {}
    for name in control_names:
        started = time.perf_counter()
        utility_at = _utility_at(campaign, name, False, None, seed, None, budget_cost=budget_cost)
        control_rows[name] = _evaluate_method(
            ref,
            select,
            utility_at,
            False,
            props,
            random["spa_by_prop"],
            campaign,
            budget_cost,
            parity_grid,
            bar,
            random_spa_runs=runs[:, :, 0],
            seed=seed,
        )
        control_rows[name]["seconds"] = time.perf_counter() - started
    headroom = None
    if oracle:
        headroom = _evaluate_oracle(
            ref,
            select,
            props,
            random["spa_by_prop"],
            campaign,
            budget_cost,
            parity_grid,
            bar,
            candidates=oracle_candidates,
            step=oracle_step,
            seed=seed,
            random_spa_runs=runs[:, :, 0],
        )
    bar.close()
    from precomet.costs import cost_signature, cost_source

    result = {
        "campaign": campaign.name,
        "items": len(campaign),
        "systems": list(campaign.systems),
        "props": props,
        "budgets": [budget_value(campaign, p, budget_cost=budget_cost) for p in props],
        "random": random,
        "methods": results,
        "controls": control_rows,
        "controls_skipped": skipped,
        **({"oracle": headroom} if oracle else {}),
        "cost": {"total_seconds": float(campaign.cost.sum()), "source": cost_source(campaign)},
        "signature": signature(
            "precomet benchmark",
            campaign=campaign,
            seed=seed,
            methods=[*specs, *external],
            metric=metric,
            score=score,
            props=props,
            seeds=seeds,
            budget_cost=budget_cost,
            cost=cost_signature(campaign),
            cost_objective=cost_objective if budget_cost else None,
            balance=balance,
            level=level,
            permutations=permutations,
            cluster_rule=cluster_rule,
            parity_grid=parity_grid,
            method_options=method_options,
            time_limit=time_limit,
            oracle=oracle,
            oracle_candidates=oracle_candidates if oracle else None,
            oracle_step=oracle_step if oracle else None,
            allow_circular=allow_circular,
            circular=circular is not None,
            controls=[LENGTH_CONTROL] if controls else [],
        ),
    }
    result["recommendation"] = recommendation(result)
    return result


def _evaluate_oracle(
    ref, select, props, random_spa, campaign, budget_cost, grid, bar, *, candidates, step, seed, random_spa_runs
) -> dict[str, Any]:
    """The headroom row: the greedy oracle's order (:func:`precomet.oracle.greedy_oracle_order`) evaluated like a
    method (its prefixes; through the subset builder as utilities when budgets are in cost, quotas or documents)."""
    from precomet.oracle import ORACLE_DESCRIPTION, greedy_oracle_order, oracle_utility

    started = time.perf_counter()
    utility = oracle_utility(greedy_oracle_order(ref, candidates=candidates, step=step, seed=seed))
    row = _evaluate_method(
        ref,
        select,
        lambda k: utility,
        False,
        props,
        random_spa,
        campaign,
        budget_cost,
        grid,
        bar,
        random_spa_runs=random_spa_runs,
        seed=seed,
    )
    row.update(
        usable=False,
        uses=ref.score,
        candidates=candidates,
        step=step,
        description=ORACLE_DESCRIPTION.format(step=step, candidates=candidates),
        seconds=time.perf_counter() - started,
    )
    return row


def plan_controls(methods: Collection[str], controls: bool) -> tuple[list[str], dict[str, str]]:
    """The control rows to evaluate beside utility ``methods``, and those left out with the reason (one line each):
    the length control is not repeated when ``length`` is among the methods. (It needs source texts, which every
    campaign has: :meth:`Campaign.build` refuses an empty source.)"""
    if not controls:
        return [], {}
    if LENGTH_CONTROL in methods:
        return [], {LENGTH_CONTROL: f"{LENGTH_CONTROL!r} is benchmarked as a method"}
    return [LENGTH_CONTROL], {}


def _method_specs(methods: Sequence[str], external: Mapping[str, Any]) -> dict[str, Any]:
    names = list(methods)
    if not names and not external:
        raise PrecometError(
            "nothing to benchmark: give utility methods (methods=...)"
            " and/or external utilities (external={NAME: utilities})"
        )
    clash = sorted(set(names) & set(external))
    if clash or len(set(names)) != len(names):
        raise PrecometError(
            f"method names must be unique; repeated: {clash or sorted({m for m in names if names.count(m) > 1})}"
        )
    if not names:
        return {}
    from precomet.utilities import UTILITY_METHODS

    unknown = [m for m in names if m not in UTILITY_METHODS]
    if unknown:
        raise PrecometError(
            f"unknown method(s) {unknown}; valid: {', '.join(UTILITY_METHODS)}"
            " (or external utilities: external={NAME: utilities})"
        )
    return {m: UTILITY_METHODS[m] for m in names}


def _check_external(campaign: Campaign, name: str, values: Any) -> Any:
    if callable(values):  # budget-dependent: checked at each budget
        return values
    values = np.asarray(values, dtype=float)
    if values.shape != (len(campaign),):
        raise PrecometError(f"scores {name!r}: expected {len(campaign)} utilities, got shape {values.shape}")
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise PrecometError(
            f"scores {name!r}: utility of item {campaign.ids[bad[0]]!r} is not finite ({len(bad)} item(s))"
        )
    return values


def _external_at(campaign: Campaign, name: str, values: Any) -> Callable[[int], np.ndarray]:
    """Utilities at a budget of ``k`` items: the array itself, or the callable's answer for ``k`` (memoised)."""
    if not callable(values):
        return lambda k: values
    cache: dict[int, np.ndarray] = {}

    def at(k: int) -> np.ndarray:
        if k not in cache:
            cache[k] = _check_external(campaign, name, np.asarray(values(k), dtype=float))
        return cache[k]

    return at


def _utility_at(campaign, name, needs_budget, metric, seed, options, *, budget_cost) -> Callable[[int], np.ndarray]:
    """Utilities for a budget of ``k`` items, as the subset builder gets them (:func:`knapsack_utility`); computed once
    unless the method needs the budget (memoised)."""
    from precomet.utilities import compute_utility, knapsack_utility

    cache: dict[int, np.ndarray] = {}

    def at(k: int) -> np.ndarray:
        key = k if needs_budget else 0
        if key not in cache:
            values = compute_utility(
                campaign, name, score=metric, budget=k if needs_budget else None, seed=seed, options=options
            )
            cache[key] = knapsack_utility(name, values, cost_budget=budget_cost)
        return cache[key]

    return at


def _evaluate_method(
    ref, select, utility_at, needs_budget, props, random_spa, campaign, budget_cost, grid, bar, *, random_spa_runs, seed
) -> dict[str, Any]:
    n = len(campaign)
    memo: dict[int, float] = {}

    def spa_at(g: int) -> float:  # g = grid position: budget proportion g / n
        if g not in memo:
            try:
                memo[g] = evaluate_props(ref, select, utility_at(g), [g / n], measures=("spa",))[0]["spa"]
            except PrecometError as err:  # e.g. a budget below the smallest document: nothing reached yet
                log.debug("parity search: budget %d/%d infeasible (%s)", g, n, err)
                memo[g] = -np.inf
        return memo[g]

    def spa_of(positions: list[int]) -> list[float]:  # nested top-k subsets: all positions in one batched call
        values = evaluate_props(ref, None, utility_at(0), [g / n for g in positions], measures=("spa",))
        found = [value["spa"] for value in values]
        memo.update(zip(positions, found))  # the parity interval replays the search on these
        return found

    if needs_budget:
        found = [evaluate_props(ref, select, utility_at(budget_items(p, n)), [p])[0] for p in props]
    else:
        found = evaluate_props(ref, select, utility_at(0), props)
    bar.update(len(props))
    rows = np.array([[values[m] for m in BENCH_MEASURES] for values in found])
    if select is None and not needs_budget:
        positions = parity_searches(spa_of, random_spa, n_items=n, grid=grid)
    else:
        positions = [parity_search(spa_at, target, n_items=n, grid=grid) for target in random_spa]
    parity = [
        budget_value(campaign, g / n, budget_cost=budget_cost) / budget_value(campaign, prop, budget_cost=budget_cost)
        for prop, g in zip(props, positions)
    ]

    def parity_of(position: float, q: int) -> float:  # a (fractional) grid position as a share of budget q
        if budget_cost:
            return position / n / props[q]
        return position / budget_items(props[q], n)

    interval = parity_interval(
        lambda target: replayed_position(spa_at, memo, target, n_items=n, grid=grid),
        random_spa_runs,
        parity_of,
        seed=seed,
    )
    return {
        "spa": float(rows[:, 0].mean()),
        "spa_by_prop": rows[:, 0].tolist(),
        "clusters": float(rows[:, 1].mean()),
        "clusters_by_prop": rows[:, 1].tolist(),
        "corr": float(rows[:, 2].mean()),
        "corr_by_prop": rows[:, 2].tolist(),
        "parity": float(np.mean(parity)),
        "parity_by_prop": parity,
        "parity_ci90": list(interval),
    }


# --------------------------------------------------------------------------- output
def recommendation(result: Mapping[str, Any]) -> dict[str, Any]:
    """The one-line answer to "how much can I save?": the usable method with the lowest parity, as a share of the
    items or of the annotation time/cost, with its 90 % interval — or, when no method's parity is below 100 %,
    the advice to annotate a random sample. A best parity below 100 % whose interval reaches 100 % is called
    "not clearly better than random". The ``random`` utility method (one random draw) is never recommended. When the
    length control row needs no more than the best method, the text says so (the utility adds nothing beyond length).
    Returns ``{"method", "parity", "parity_ci90", "unit", "text", "length_parity"}`` (``method`` ``None`` when none
    beats random; ``length_parity`` ``None`` without the control row)."""
    from precomet.costs import cost_unit

    budget_cost = bool(result["signature"].get("budget_cost"))
    unit = cost_unit(result.get("cost", {}).get("source", "")) if budget_cost else "items"
    rows = {  # the "random" utility is a random sample: its parity is the luck of one draw, not a method to advise
        name: m for name, m in result["methods"].items() if np.isfinite(m["parity"]) and name != "random"
    }
    control = result.get("controls", {}).get(LENGTH_CONTROL)
    length = float(control["parity"]) if control else None
    if not rows:
        return {
            "method": None,
            "parity": None,
            "parity_ci90": None,
            "unit": unit,
            "text": "no method to recommend",
            "length_parity": length,
        }
    best = min(rows, key=lambda name: rows[name]["parity"])
    parity = float(rows[best]["parity"])
    low, high = rows[best].get("parity_ci90", (parity, parity))
    interval = f"90 % interval {_percent(low)}–{_percent(high)}"
    answer = {"parity": parity, "parity_ci90": [low, high], "unit": unit, "length_parity": length}
    if parity >= 1.0:
        text = (
            f"no method beats random here: annotate a random sample (the best, {best}, needs {_percent(parity)} of"
            f" the {unit} to match random; {interval})"
        )
        if length is not None and length < 1.0:
            text = (
                f"no method beats random here, but source length does: select by length (method"
                f" {LENGTH_CONTROL!r}: the length control needs {_percent(length)} of the {unit}; the best method,"
                f" {best}, needs {_percent(parity)}, {interval})"
            )
        return {"method": None, "text": text, **answer}
    text = f"{best}: random's accuracy with {_percent(parity)} of the {unit} ({interval})"
    if budget_cost and unit == "annotation time":
        text += f", i.e. {round(60 * parity)} min per hour of random annotation"
    if high >= 1.0:
        text += "; not clearly better than random (the interval reaches 100 %)"
    if length is not None and length <= parity:
        text += f"; the length control alone needs {_percent(length)}: the utility adds nothing beyond length here"
    return {"method": best, "text": text, **answer}


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def summary_table(result: Mapping[str, Any]) -> str:
    """A plain-text summary: the annotation cost and budgets (hours and minutes, with the cost's source), mean SPA,
    clusters, Kendall, parity with its 90 % interval per method (random first, then the control rows), what parity
    means, and the recommendation."""
    from precomet.costs import format_duration

    width = max(20, *(len(name) + 1 for name in result["methods"]))
    lines = []
    cost = result.get("cost")
    if cost:
        lines.append(
            f"annotation cost: {format_duration(cost['total_seconds'])} for {result['items']} items ({cost['source']})"
        )
        props = result["props"]
        if result["signature"].get("budget_cost"):
            spent = [format_duration(p * cost["total_seconds"]) for p in (min(props), max(props))]
            lines.append(f"budgets: {_percent(min(props))}–{_percent(max(props))} of it ({spent[0]} – {spent[1]})")
        else:
            items = [budget_items(p, result["items"]) for p in (min(props), max(props))]
            spent = [format_duration(p * cost["total_seconds"]) for p in (min(props), max(props))]
            lines.append(
                f"budgets: {items[0]}–{items[1]} items ({_percent(min(props))}–{_percent(max(props))} of the items;"
                f" about {spent[0]} – {spent[1]} at the mean item cost)"
            )
    lines.append(
        f"{'method':<{width}} {'SPA':>7} {'clusters':>8} {'kendall':>8} {'parity':>7} {'90% interval':>13} "
        f"{'seconds':>8}"
    )
    r = result["random"]
    lines.append(
        f"{'random':<{width}} {r['spa']:>7.2%} {r['clusters']:>8.2f} {r['corr']:>8.3f} {'':>7} {'':>13} "
        f"{r['seconds']:>8.1f}"
    )
    rows = [(f"{name} (control)", row) for name, row in result.get("controls", {}).items()]
    rows += list(result["methods"].items())
    if result.get("oracle"):
        rows.append(("oracle (not usable)", result["oracle"]))
    for name, m in rows:
        low, high = m.get("parity_ci90", (np.nan, np.nan))
        lines.append(
            f"{name:<{width}} {m['spa']:>7.2%} {m['clusters']:>8.2f} {m['corr']:>8.3f} {m['parity']:>7.1%} "
            f"{f'{low:.0%}–{high:.0%}':>13} {m['seconds']:>8.1f}"
        )
    for name, reason in result.get("controls_skipped", {}).items():
        lines.append(f"{name} control: left out ({reason})")
    if result.get("oracle"):
        lines.append(f"  {result['oracle']['description']}")
    lines.append(f"{PARITY_MEANING}; interval: bootstrap over random's seeds and the budgets")
    if result.get("recommendation"):
        lines.append(f"recommendation: {result['recommendation']['text']}")
    return "\n".join(lines)


def plot_benchmark(result: Mapping[str, Any], path: str | Path) -> None:
    """Paper Figure 4: SPA vs budget per method with random's 90 % band, a cluster-count panel, and a parity panel
    (each method's parity per budget, its mean as a horizontal line with the 90 % interval as a band; 100 % =
    random). Control rows are grey dash-dotted lines labelled ``(control)``."""
    from matplotlib.figure import Figure  # a bare Figure: no pyplot state, no backend switch

    x = 100 * np.asarray(result["props"])
    random = result["random"]
    fig = Figure(figsize=(16, 4.4))
    ax_spa, ax_clu, ax_par = fig.subplots(1, 3)
    rows = [
        (f"{name} (control)", m, dict(color="0.55", linestyle="-.", linewidth=1.4), "")
        for name, m in result.get("controls", {}).items()
    ]
    rows += [(name, m, dict(marker="o", markersize=3), "") for name, m in result["methods"].items()]
    if result.get("oracle"):
        rows.append(
            (
                "oracle",
                result["oracle"],
                dict(color="black", linestyle=":", linewidth=1.2),
                " (human scores; not a selector)",
            )
        )
    unit = "annotation cost" if result["signature"].get("budget_cost") else "items"
    for ax, key in ((ax_spa, "spa"), (ax_clu, "clusters")):
        scale = 100 if key == "spa" else 1
        band = np.asarray(random[f"{key}_ci90_by_prop"]) * scale
        ax.fill_between(x, band[:, 0], band[:, 1], color="0.8", alpha=0.6, linewidth=0)
        ax.plot(
            x,
            np.asarray(random[f"{key}_by_prop"]) * scale,
            color="0.3",
            linestyle="--",
            label=f"Random {_mean(random, key)}",
        )
        for name, m, style, note in rows:
            ax.plot(x, np.asarray(m[f"{key}_by_prop"]) * scale, label=f"{name} {_mean(m, key)}{note}", **style)
        ax.set_xlabel(f"budget (% of {unit})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    ax_par.axhline(100, color="0.3", linestyle="--", label="Random (100 %)")
    span = float(x.max() - x.min()) or 10.0
    for i, (name, m, style, _) in enumerate(rows):
        (line,) = ax_par.plot(x, 100 * np.asarray(m["parity_by_prop"]), alpha=0.45, **style)
        mean = 100 * m["parity"]
        low, high = (100 * v for v in m.get("parity_ci90", (m["parity"], m["parity"])))
        ax_par.errorbar(
            float(x.max()) + span * 0.07 * (i + 1),
            mean,
            yerr=[[max(mean - low, 0.0)], [max(high - mean, 0.0)]],
            fmt="D",
            markersize=5,
            capsize=3,
            color=line.get_color(),
        )
        line.set_label(f"{name} {mean:.0f}% ({low:.0f}–{high:.0f}%)")
    ax_par.set_xlabel(f"budget (% of {unit})")
    ax_par.set_ylabel("parity: % of the budget to match random")
    ax_par.set_title("lines: parity per budget; ◆ right: mean with 90% interval", fontsize=8)
    ax_par.grid(alpha=0.3)
    ax_par.legend(fontsize=8, loc="best")
    ax_spa.set_ylabel("soft pairwise accuracy (%)")
    ax_clu.set_ylabel("cluster count")
    fig.suptitle(
        f"{result['campaign']}: {result['items']} items × {len(result['systems'])} systems; random band = 90% "
        f"t-interval ({random['seeds']} runs)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _mean(row: Mapping[str, Any], key: str) -> str:
    return f"{row[key] * 100:.1f}%" if key == "spa" else f"{row[key]:.2f}"
