"""The benchmark loop: random baseline, each method's, control's and the oracle's row (measures per budget and
parity), and the typed result (:class:`~precomet.benchmark.result.BenchmarkResult`)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from precomet.benchmark.budgets import (
    BENCH_MEASURES,
    DEFAULT_PROPS,
    budget_value,
    evaluate_props,
    spa_at_position,
    validate_props,
)
from precomet.benchmark.null import NULL_ORDERINGS, PRIMARY, score_null, spa_gain, verdict
from precomet.benchmark.oracle import ORACLE_DESCRIPTION, greedy_oracle_order, oracle_utility
from precomet.benchmark.parity import parity_search, parity_searches, parity_shares
from precomet.benchmark.plan import LENGTH_CONTROL, check_external, circular_reason, method_specs, plan_controls
from precomet.benchmark.report import recommendation
from precomet.benchmark.result import BenchmarkResult
from precomet.benchmark.stats import random_runs, summarise_random
from precomet.campaign import HUMAN, Campaign
from precomet.costs import cost_signature, cost_source
from precomet.errors import PrecometError
from precomet.metaeval import Reference, full_reference
from precomet.parallel import check_workers, map_forked
from precomet.progress import progress as progress_bar
from precomet.selection.objective import DEFAULT_COST_OBJECTIVE
from precomet.selection.random_fill import make_random_selector
from precomet.selection.selector import Select, make_selector
from precomet.selection.units import budget_items
from precomet.signature import signature
from precomet.utilities import compute_utility, knapsack_utility

log = logging.getLogger(__name__)


def run_benchmark(
    campaign: Campaign,
    *,
    methods: Sequence[str] = (),
    external: Mapping[str, np.ndarray | Callable[[int], np.ndarray]] | None = None,
    metric: str | None = None,
    score: str = HUMAN,
    props: Sequence[float] = DEFAULT_PROPS,
    seeds: int = 100,
    budget_unit: str = "items",
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
    null_orderings: int = NULL_ORDERINGS,
    workers: int | None = None,
) -> BenchmarkResult:
    """Benchmark utility ``methods`` (names in ``UTILITY_METHODS``, computed on ``metric``) and ``external``
    utilities (``{name: array aligned with the campaign}``, or ``{name: budget -> array}`` for a budget-dependent
    selector such as :func:`precomet.selection.strata.stratified_utility`) against random selection, judged on the
    ``score`` the systems are ranked by (the human scores by default). Budgets ``props`` are shares of the items, or
    of the total annotation cost with ``budget_unit="cost"``. Returns a :class:`BenchmarkResult` (``to_dict()`` for
    JSON); with ``oracle`` it has the headroom row: greedy on the ``score`` itself, :mod:`.oracle`, flagged
    ``"usable": false``. A score-based method computed on ``metric == score`` is refused
    (:func:`circular_reason`) unless ``allow_circular``. Cluster counts follow ``cluster_rule``
    (:data:`precomet.metaeval.CLUSTER_RULES`). With ``controls`` the result has the length control row under
    ``controls`` (or the reason it is left out under ``controls_skipped``: ``length`` is among the methods).
    Every row is judged against ``null_orderings`` random orderings (random subsets of the same budget under cost
    budgets, quotas or documents) scored exactly like it (:mod:`precomet.benchmark.null`): its ``p_value`` on the
    SPA gain, ``parity_ci90`` and the null's band (``null``); 0 switches the null off (those keys are ``None``).
    Random's seeds, the null and the rows run on ``workers`` processes (default: every CPU this process may use,
    :mod:`precomet.parallel`); the result is the same for any count."""
    props = validate_props(props)
    workers = check_workers(workers)
    if isinstance(null_orderings, bool) or not isinstance(null_orderings, int) or null_orderings < 0:
        raise PrecometError(
            f"{{null_orderings}}{null_orderings!r}: expected a whole number ≥ 0 of random orderings (0: no null)",
            param="null_orderings",
        )
    external = {name: check_external(campaign, name, values) for name, values in (external or {}).items()}
    specs = method_specs(methods, external)
    if len(campaign.systems) < 2:
        raise PrecometError(
            f"campaign {campaign.name!r}: benchmarking needs at least 2 systems, got {len(campaign.systems)}"
        )
    if len(campaign) < 2:
        raise PrecometError(f"campaign {campaign.name!r}: benchmarking needs at least 2 items, got {len(campaign)}")
    small = [p for p in props if budget_items(p, len(campaign)) < 2]
    if small:
        raise PrecometError(
            f"budget proportion(s) {small} give fewer than 2 of {len(campaign)} items;"
            " use larger proportions ({props}...)",
            param="props",
        )
    if any(spec.needs_score for spec in specs.values()) and metric is None:
        available = sorted(set(campaign.scores) - {score})
        raise PrecometError(
            f"choose the metric the utilities use ({{metric}}NAME); available: {available}", param="metric"
        )
    if metric is not None:
        campaign.score(metric)  # fails early, listing the valid names
    unused = sorted(set(method_options or {}) - set(specs))
    if unused:
        raise PrecometError(
            f"options for {unused} ({{method_options}}...), which are not among the methods benchmarked"
            f" ({', '.join(specs) or 'none'})",
            param="method_options",
        )
    circular = circular_reason(list(specs), metric, score)
    if circular and not allow_circular:
        raise PrecometError(f"{circular}; pass allow_circular=True to run it anyway")
    ref = full_reference(campaign, score=score, permutations=permutations, seed=seed, cluster_rule=cluster_rule)
    select = make_selector(
        campaign,
        budget_unit=budget_unit,
        balance=balance,
        level=level,
        time_limit=time_limit,
        cost_objective=cost_objective,
    )
    control_names, skipped = plan_controls(specs, controls)
    steps = (seeds + len(specs) + len(external) + len(control_names) + int(oracle)) * len(props) + null_orderings
    bar = progress_bar(total=steps, desc=f"benchmark {campaign.name}", enabled=progress)
    tick = bar.update
    started = time.perf_counter()
    # random under a cost budget, quotas or documents: a random subset that fits (not a knapsack over noise)
    random_select = (
        None
        if select is None
        else make_random_selector(campaign, budget_unit=budget_unit, balance=balance, level=level)
    )
    runs = random_runs(ref, random_select, props, seeds=seeds, seed=seed, tick=tick, workers=workers)
    random = summarise_random(runs, len(props))
    random["seconds"] = time.perf_counter() - started
    evaluation: dict[str, Any] = dict(
        random_spa_runs=runs[:, :, 0], props=props, select=select, budget_unit=budget_unit, grid=parity_grid
    )
    started = time.perf_counter()
    null = score_null(
        ref,
        campaign,
        random_spa_runs=runs[:, :, 0],
        props=props,
        select=random_select,
        budget_unit=budget_unit,
        grid=parity_grid,
        orderings=null_orderings,
        seed=seed,
        workers=workers,
        tick=tick,
    )
    null_seconds = time.perf_counter() - started

    def row(utility_at: Callable[[int], np.ndarray], needs_budget: bool, tick: Callable[[], None]) -> dict[str, Any]:
        started = time.perf_counter()
        found = evaluate_method(ref, campaign, utility_at, needs_budget=needs_budget, tick=tick, **evaluation)
        return {**found, "seconds": time.perf_counter() - started}

    at: dict[tuple[str, str], tuple[Callable[[int], np.ndarray], bool]] = {}
    for name in [*specs, *external]:
        needs_budget = (name in specs and specs[name].needs_budget) or callable(external.get(name))
        if name in external:
            at["methods", name] = (_external_at(campaign, name, external[name]), needs_budget)
        else:
            options = (method_options or {}).get(name)
            utility = _utility_at(campaign, name, needs_budget, metric, seed, options, budget_unit=budget_unit)
            at["methods", name] = (utility, needs_budget)
    for name in control_names:
        at["controls", name] = (_utility_at(campaign, name, False, None, seed, None, budget_unit=budget_unit), False)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, (utility_at, needs_budget) in at.items():  # budget-dependent utilities (k-means, …) here, in order
        if needs_budget:
            rows[key] = row(utility_at, True, tick)
        else:
            utility_at(0)  # computed here (torch, sklearn, py-irt): the workers only meta-evaluate
    tasks: list[tuple[tuple[str, str], Callable[[], dict[str, Any]]]] = [
        (key, functools.partial(row, utility_at, False, lambda: None))
        for key, (utility_at, needs_budget) in at.items()
        if not needs_budget
    ]
    if oracle:
        oracle_row = functools.partial(
            _evaluate_oracle, ref, campaign, candidates=oracle_candidates, step=oracle_step, seed=seed, **evaluation
        )
        tasks.append((("oracle", "oracle"), oracle_row))

    def ticks(found: dict[str, Any]) -> None:
        for _ in props:
            tick()

    done = map_forked(lambda task: task[1](), tasks, workers=workers, done=ticks)  # the rows on every core
    rows.update((key, found) for (key, _), found in zip(tasks, done))
    rows = {key: verdict(found, null if null_orderings else None) for key, found in rows.items()}
    results = {name: rows["methods", name] for name in [*specs, *external]}
    control_rows = {name: rows["controls", name] for name in control_names}
    headroom = rows.get(("oracle", "oracle"))
    bar.close()

    result = BenchmarkResult(
        campaign=campaign.name,
        n_items=len(campaign),
        systems=list(campaign.systems),
        props=props,
        budgets=[budget_value(campaign, p, budget_unit=budget_unit) for p in props],
        random=random,
        methods=results,
        controls=control_rows,
        controls_skipped=skipped,
        oracle=headroom,
        null_orderings=null_orderings,
        null={"seed": seed, "seconds": null_seconds, **{key: values.tolist() for key, values in null.items()}}
        if null_orderings
        else None,
        cost={"total_seconds": float(campaign.cost.sum()), "source": cost_source(campaign)},
        signature=signature(
            "precomet benchmark",
            campaign=campaign,
            seed=seed,
            methods=[*specs, *external],
            metric=metric,
            score=score,
            props=props,
            seeds=seeds,
            budget_unit=budget_unit,
            cost=cost_signature(campaign),
            cost_objective=cost_objective if budget_unit == "cost" else None,
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
            null_orderings=null_orderings,
        ),
    )
    return result.replaced(recommendation=recommendation(result))


def _evaluate_oracle(
    ref: Reference, campaign: Campaign, *, candidates: int, step: int, seed: int, **evaluation: Any
) -> dict[str, Any]:
    """The headroom row: the greedy oracle's order (:func:`.oracle.greedy_oracle_order`) evaluated like a
    method (its prefixes; through the subset builder as utilities when budgets are in cost, quotas or documents);
    ``evaluation``: :func:`evaluate_method`'s options."""
    started = time.perf_counter()
    utility = oracle_utility(greedy_oracle_order(ref, candidates=candidates, step=step, seed=seed))
    row = evaluate_method(ref, campaign, lambda k: utility, **evaluation)
    row.update(
        usable=False,
        uses=ref.score,
        candidates=candidates,
        step=step,
        description=ORACLE_DESCRIPTION.format(step=step, candidates=candidates),
        seconds=time.perf_counter() - started,
    )
    return row


def _external_at(campaign: Campaign, name: str, values: Any) -> Callable[[int], np.ndarray]:
    """Utilities at a budget of ``k`` items: the array itself, or the callable's answer for ``k`` (memoised)."""
    if not callable(values):
        return lambda k: values
    cache: dict[int, np.ndarray] = {}

    def at(k: int) -> np.ndarray:
        if k not in cache:
            cache[k] = check_external(campaign, name, np.asarray(values(k), dtype=float))
        return cache[k]

    return at


def _utility_at(campaign, name, needs_budget, metric, seed, options, *, budget_unit) -> Callable[[int], np.ndarray]:
    """Utilities for a budget of ``k`` items, as the subset builder gets them (:func:`knapsack_utility`); computed once
    unless the method needs the budget (memoised)."""
    cache: dict[int, np.ndarray] = {}

    def at(k: int) -> np.ndarray:
        key = k if needs_budget else 0
        if key not in cache:
            values = compute_utility(
                campaign, name, metric=metric, budget=k if needs_budget else None, seed=seed, options=options
            )
            cache[key] = knapsack_utility(name, values, by_cost=budget_unit == "cost")
        return cache[key]

    return at


def evaluate_method(
    ref: Reference,
    campaign: Campaign,
    utility_at: Callable[[int], np.ndarray],
    *,
    random_spa_runs: np.ndarray,
    props: Sequence[float] = DEFAULT_PROPS,
    select: Select | None = None,
    needs_budget: bool = False,
    budget_unit: str = "items",
    grid: int = 32,
    tick: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """One method's row against random: SPA, clusters and Kendall per budget ``props`` and their means, the SPA gain
    over random (:data:`~precomet.benchmark.null.PRIMARY`) and the parity per budget and its mean (its verdict
    against random orderings: :func:`~precomet.benchmark.null.verdict`).

    ``utility_at(k)`` gives the utilities for a budget of ``k`` items (called with ``0`` unless ``needs_budget``);
    ``select(utility, prop)`` picks the subsets (:func:`make_selector`; ``None``: top-k prefixes);
    ``random_spa_runs`` is random's SPA per seed and budget, shape ``(seeds, props)`` (:func:`random_runs`'s
    ``[:, :, 0]``), whose mean per budget is the parity target. With ``budget_unit="cost"`` parity is a share of the
    annotation cost, else of the items; ``grid`` is the parity search's coarse grid. ``tick`` is called once per
    budget (progress)."""
    n = len(campaign)
    random_spa = np.asarray(random_spa_runs, dtype=float).mean(axis=0).tolist()
    memo: dict[int, float] = {}

    def spa_at(g: int) -> float:  # g = grid position: budget proportion g / n
        if g not in memo:
            memo[g] = spa_at_position(ref, select, utility_at(g), g)
        return memo[g]

    def spa_of(positions: list[int]) -> list[float]:  # nested top-k subsets: all positions in one batched call
        values = evaluate_props(ref, None, utility_at(0), [g / n for g in positions], measures=("spa",))
        return [value["spa"] for value in values]

    if needs_budget:
        found = [evaluate_props(ref, select, utility_at(budget_items(p, n)), [p])[0] for p in props]
    else:
        found = evaluate_props(ref, select, utility_at(0), props)
    for _ in props:
        tick()
    rows = np.array([[values[m] for m in BENCH_MEASURES] for values in found])
    if select is None and not needs_budget:
        positions = parity_searches(spa_of, random_spa, n_items=n, grid=grid)
    else:
        positions = [parity_search(spa_at, target, n_items=n, grid=grid) for target in random_spa]
    parity = parity_shares(campaign, props, positions, budget_unit)
    return {
        "spa": float(rows[:, 0].mean()),
        "spa_by_prop": rows[:, 0].tolist(),
        PRIMARY: spa_gain(rows[:, 0], random_spa),
        "clusters": float(rows[:, 1].mean()),
        "clusters_by_prop": rows[:, 1].tolist(),
        "corr": float(rows[:, 2].mean()),
        "corr_by_prop": rows[:, 2].tolist(),
        "parity": float(np.mean(parity)),
        "parity_by_prop": parity,
    }
