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
)
from precomet.benchmark.null import PRIMARY, score_null, spa_gain, verdict
from precomet.benchmark.oracle import ORACLE_DESCRIPTION, greedy_oracle_order, oracle_utility
from precomet.benchmark.parity import parity_search, parity_searches, parity_shares
from precomet.benchmark.plan import (
    LENGTH_CONTROL,
    BenchmarkPlan,
    check_external,
    circular_reason,
    method_specs,
    plan_controls,
)
from precomet.benchmark.report import recommendation
from precomet.benchmark.result import BenchmarkResult
from precomet.benchmark.stats import random_runs, summarise_random
from precomet.campaign import Campaign
from precomet.costs import cost_signature, cost_source, item_seconds
from precomet.deprecated import plan_from_keywords
from precomet.errors import PrecometError
from precomet.metaeval import Reference, full_reference
from precomet.parallel import check_workers, map_forked
from precomet.progress import progress as progress_bar
from precomet.selection.random_fill import make_random_selector
from precomet.selection.selector import Select, make_selector
from precomet.selection.units import budget_items
from precomet.signature import Signature, signature
from precomet.utilities import compute_utility, knapsack_utility

log = logging.getLogger(__name__)


DEFAULT_PLAN = BenchmarkPlan()
"""The plan of a :func:`run_benchmark` call that gives none: every option at its default (no methods)."""


def run_benchmark(
    campaign: Campaign,
    plan: BenchmarkPlan = DEFAULT_PLAN,
    *,
    external: Mapping[str, np.ndarray | Callable[[int], np.ndarray]] | None = None,
    progress: bool | None = None,
    workers: int | None = None,
    **deprecated: Any,
) -> BenchmarkResult:
    """Benchmark the utility methods of ``plan`` (:class:`BenchmarkPlan`: names in ``UTILITY_METHODS``, computed on
    ``plan.metric``) and ``external`` utilities (``{name: array aligned with the campaign}``, or ``{name: budget ->
    array}`` for a budget-dependent selector such as :func:`precomet.selection.strata.stratified_utility`) against
    random selection, judged on the ``plan.score`` the systems are ranked by (the human scores by default). Budgets
    ``plan.props`` are shares of the items, or of the total annotation cost with ``budget_unit="cost"``. Returns a
    :class:`BenchmarkResult` (``to_dict()`` for JSON); with ``plan.oracle`` it has the headroom row: greedy on the
    score itself, :mod:`.oracle`, flagged ``"usable": false``. A score-based method computed on ``metric == score``
    is refused (:func:`circular_reason`) unless ``plan.allow_circular``. Cluster counts follow ``plan.cluster_rule``
    (:data:`precomet.metaeval.CLUSTER_RULES`). With ``plan.controls`` the result has the length control row under
    ``controls`` (or the reason it is left out under ``controls_skipped``: ``length`` is among the methods).
    Every row is judged against ``plan.null_orderings`` random orderings (random subsets of the same budget under
    cost budgets, quotas or documents) scored exactly like it (:mod:`precomet.benchmark.null`): its ``p_value`` on
    the SPA gain, ``parity_ci90`` and the null's band (``null``); 0 switches the null off (those keys are ``None``).

    The plan holds the options, the keywords what is not an option: ``external`` is data (arrays aligned with this
    campaign, or selectors: the signature records their names only), and ``progress`` and ``workers`` say how to
    run, not what: the result is the same with or without a bar, and for any count of ``workers`` processes
    (default: every CPU this process may use, :mod:`precomet.parallel`) that run random's seeds, the null and the
    rows. The options as keyword arguments (``run_benchmark(campaign, methods=[...], seed=1)``, the form before
    0.19.0) still work, with a :class:`DeprecationWarning`, until precomet 0.20.0."""
    plan = plan_from_keywords("run_benchmark", BenchmarkPlan, plan, deprecated, default=DEFAULT_PLAN)
    workers = check_workers(workers)
    external = {name: check_external(campaign, name, values) for name, values in (external or {}).items()}
    specs, circular = _check_plan(campaign, plan, external)
    props, seed = list(plan.props), plan.seed
    ref = full_reference(
        campaign, score=plan.score, permutations=plan.permutations, seed=seed, cluster_rule=plan.cluster_rule
    )
    select = make_selector(
        campaign,
        budget_unit=plan.budget_unit,
        balance=plan.balance,
        level=plan.level,
        time_limit=plan.time_limit,
        cost_objective=plan.cost_objective,
    )
    control_names, skipped = plan_controls(specs, plan.controls)
    rows_per_budget = plan.seeds + len(specs) + len(external) + len(control_names) + int(plan.oracle)
    bar = progress_bar(
        total=rows_per_budget * len(props) + plan.null_orderings, desc=f"benchmark {campaign.name}", enabled=progress
    )
    runs, random, null = _random_and_null(campaign, plan, ref, select is not None, workers=workers, tick=bar.update)
    evaluation: dict[str, Any] = dict(
        random_spa_runs=runs[:, :, 0], props=props, select=select, budget_unit=plan.budget_unit, grid=plan.parity_grid
    )
    at = _utilities(campaign, plan, specs, external, control_names)
    rows = _rows(campaign, plan, ref, at, evaluation, workers=workers, tick=bar.update)
    rows = {key: verdict(found, null if plan.null_orderings else None) for key, found in rows.items()}
    bar.close()

    result = BenchmarkResult(
        campaign=campaign.name,
        n_items=len(campaign),
        systems=list(campaign.systems),
        props=props,
        budgets=[budget_value(campaign, p, budget_unit=plan.budget_unit) for p in props],
        random=random,
        methods={name: rows["methods", name] for name in [*specs, *external]},
        controls={name: rows["controls", name] for name in control_names},
        controls_skipped=skipped,
        oracle=rows.get(("oracle", "oracle")),
        null_orderings=plan.null_orderings,
        null=null,
        cost={
            "total_seconds": float(item_seconds(campaign).sum()),
            "judgements": int(campaign.judgements().sum()),
            "source": cost_source(campaign),
        },
        signature=_signature(campaign, plan, [*specs, *external], circular),
    )
    return result.replaced(recommendation=recommendation(result))


def _check_plan(
    campaign: Campaign, plan: BenchmarkPlan, external: Mapping[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """The registry entries of the plan's methods and the circularity reason (:func:`circular_reason`), after the
    checks that need the campaign: 2 systems and 2 items at least, every budget at least 2 items, the metric (given
    where a method needs one, and known), options only for methods benchmarked, no circular evaluation unless
    allowed."""
    specs = method_specs(plan.methods, external)
    if len(campaign.systems) < 2:
        raise PrecometError(
            f"campaign {campaign.name!r}: benchmarking needs at least 2 systems, got {len(campaign.systems)}"
        )
    if len(campaign) < 2:
        raise PrecometError(f"campaign {campaign.name!r}: benchmarking needs at least 2 items, got {len(campaign)}")
    small = [p for p in plan.props if budget_items(p, len(campaign)) < 2]
    if small:
        raise PrecometError(
            f"budget proportion(s) {small} give fewer than 2 of {len(campaign)} items;"
            " use larger proportions ({props}...)",
            param="props",
        )
    if any(spec.needs_score for spec in specs.values()) and plan.metric is None:
        available = sorted(set(campaign.scores) - {plan.score})
        raise PrecometError(
            f"choose the metric the utilities use ({{metric}}NAME); available: {available}", param="metric"
        )
    if plan.metric is not None:
        campaign.score(plan.metric)  # fails early, listing the valid names
    unused = sorted(set(plan.method_options or {}) - set(specs))
    if unused:
        raise PrecometError(
            f"options for {unused} ({{method_options}}...), which are not among the methods benchmarked"
            f" ({', '.join(specs) or 'none'})",
            param="method_options",
        )
    circular = circular_reason(list(specs), plan.metric, plan.score)
    if circular and not plan.allow_circular:
        raise PrecometError(f"{circular}; pass allow_circular=True to run it anyway")
    return specs, circular


def _random_and_null(
    campaign: Campaign, plan: BenchmarkPlan, ref: Reference, subsets: bool, *, workers: int, tick: Callable[[], None]
) -> tuple[np.ndarray, dict[str, Any], dict[str, Any] | None]:
    """Random selection's runs (seeds × budgets × measures) and summary, and the null's record for the result
    (``None`` without null orderings). With ``subsets`` (a cost budget, quotas or documents) random draws a random
    subset that fits, not a knapsack over noise."""
    props, seed = list(plan.props), plan.seed
    started = time.perf_counter()
    random_select = (
        make_random_selector(campaign, budget_unit=plan.budget_unit, balance=plan.balance, level=plan.level)
        if subsets
        else None
    )
    runs = random_runs(ref, random_select, props, seeds=plan.seeds, seed=seed, tick=tick, workers=workers)
    random = summarise_random(runs, len(props))
    random["seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    null = score_null(
        ref,
        campaign,
        random_spa_runs=runs[:, :, 0],
        props=props,
        select=random_select,
        budget_unit=plan.budget_unit,
        grid=plan.parity_grid,
        orderings=plan.null_orderings,
        seed=seed,
        workers=workers,
        tick=tick,
    )
    seconds = time.perf_counter() - started
    if not plan.null_orderings:
        return runs, random, None
    return runs, random, {"seed": seed, "seconds": seconds, **{key: values.tolist() for key, values in null.items()}}


UtilityAt = tuple[Callable[[int], np.ndarray], bool]
"""A row's utilities for a budget of ``k`` items, and whether they depend on the budget."""


def _utilities(
    campaign: Campaign,
    plan: BenchmarkPlan,
    specs: Mapping[str, Any],
    external: Mapping[str, Any],
    control_names: Sequence[str],
) -> dict[tuple[str, str], UtilityAt]:
    """Every row's utilities, keyed ``("methods", name)`` (the plan's methods, then the external utilities) and
    ``("controls", name)``; computed on first use."""
    at: dict[tuple[str, str], UtilityAt] = {}
    for name in [*specs, *external]:
        needs_budget = (name in specs and specs[name].needs_budget) or callable(external.get(name))
        if name in external:
            at["methods", name] = (_external_at(campaign, name, external[name]), needs_budget)
        else:
            options = (plan.method_options or {}).get(name)
            utility = _utility_at(
                campaign, name, needs_budget, plan.metric, plan.seed, options, budget_unit=plan.budget_unit
            )
            at["methods", name] = (utility, needs_budget)
    for name in control_names:
        utility = _utility_at(campaign, name, False, None, plan.seed, None, budget_unit=plan.budget_unit)
        at["controls", name] = (utility, False)
    return at


def _rows(
    campaign: Campaign,
    plan: BenchmarkPlan,
    ref: Reference,
    at: Mapping[tuple[str, str], UtilityAt],
    evaluation: dict[str, Any],
    *,
    workers: int,
    tick: Callable[[], None],
) -> dict[tuple[str, str], dict[str, Any]]:
    """Every row evaluated (:func:`evaluate_method`; ``evaluation``: its options), keyed like ``at``, and the oracle's
    under ``("oracle", "oracle")`` with ``plan.oracle``. Budget-dependent utilities (k-means, …) are evaluated here,
    in order; the others are computed here (torch, sklearn, py-irt) and meta-evaluated on ``workers`` processes."""

    def row(utility_at: Callable[[int], np.ndarray], needs_budget: bool, tick: Callable[[], None]) -> dict[str, Any]:
        started = time.perf_counter()
        found = evaluate_method(ref, campaign, utility_at, needs_budget=needs_budget, tick=tick, **evaluation)
        return {**found, "seconds": time.perf_counter() - started}

    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for key, (utility_at, needs_budget) in at.items():
        if needs_budget:
            rows[key] = row(utility_at, True, tick)
        else:
            utility_at(0)
    tasks: list[tuple[tuple[str, str], Callable[[], dict[str, Any]]]] = [
        (key, functools.partial(row, utility_at, False, lambda: None))
        for key, (utility_at, needs_budget) in at.items()
        if not needs_budget
    ]
    if plan.oracle:
        oracle_row = functools.partial(
            _evaluate_oracle,
            ref,
            campaign,
            candidates=plan.oracle_candidates,
            step=plan.oracle_step,
            seed=plan.seed,
            **evaluation,
        )
        tasks.append((("oracle", "oracle"), oracle_row))

    def ticks(found: dict[str, Any]) -> None:
        for _ in plan.props:
            tick()

    done = map_forked(lambda task: task[1](), tasks, workers=workers, done=ticks)  # the rows on every core
    rows.update((key, found) for (key, _), found in zip(tasks, done))
    return rows


def _signature(campaign: Campaign, plan: BenchmarkPlan, methods: list[str], circular: str | None) -> Signature:
    """The result's signature: every option of the plan (those that apply), the rows' names and the campaign's."""
    oracle = plan.oracle
    return signature(
        "precomet benchmark",
        campaign=campaign,
        seed=plan.seed,
        methods=methods,
        metric=plan.metric,
        score=plan.score,
        props=list(plan.props),
        seeds=plan.seeds,
        budget_unit=plan.budget_unit,
        cost=cost_signature(campaign),
        cost_objective=plan.cost_objective if plan.budget_unit == "cost" else None,
        balance=plan.balance,
        level=plan.level,
        permutations=plan.permutations,
        cluster_rule=plan.cluster_rule,
        parity_grid=plan.parity_grid,
        method_options=plan.method_options,
        time_limit=plan.time_limit,
        oracle=oracle,
        oracle_candidates=plan.oracle_candidates if oracle else None,
        oracle_step=plan.oracle_step if oracle else None,
        allow_circular=plan.allow_circular,
        circular=circular is not None,
        controls=[LENGTH_CONTROL] if plan.controls else [],
        null_orderings=plan.null_orderings,
    )


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
