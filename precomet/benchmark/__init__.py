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

The package, by concern: :mod:`~precomet.benchmark.budgets` (budget proportions, the selector, meta-evaluating a
utility's subsets), :mod:`~precomet.benchmark.stats` (:func:`ci90`, the random baseline),
:mod:`~precomet.benchmark.parity` (the parity search and its interval), :mod:`~precomet.benchmark.plan` (the
options, :class:`BenchmarkPlan`; methods, external utilities, control rows, the circularity check),
:mod:`~precomet.benchmark.run` (the loop, :func:`evaluate_method`), :mod:`~precomet.benchmark.result`
(:class:`BenchmarkResult`) and
:mod:`~precomet.benchmark.report` (recommendation, table, figure).
"""

from precomet.benchmark.budgets import (
    BENCH_MEASURES,
    DEFAULT_PROPS,
    budget_value,
    evaluate_props,
    parse_props,
    validate_props,
)
from precomet.benchmark.null import (
    NULL_ORDERINGS,
    PRIMARY,
    PRIMARY_MEANING,
    SIGNIFICANCE,
    null_band_text,
    null_summary,
    null_utilities,
    p_value,
    parity_interval,
    score_null,
    spa_gain,
    verdict,
)
from precomet.benchmark.parity import PARITY_MEANING, coarse_grid, parity_search, parity_searches, parity_shares
from precomet.benchmark.plan import LENGTH_CONTROL, BenchmarkPlan, circular_reason, plan_controls
from precomet.benchmark.pooled import MIN_SHARED, pool_results, pooled_table, shared_item_groups
from precomet.benchmark.report import budgets_by_cost, plot_benchmark, recommendation, summary_table
from precomet.benchmark.result import BenchmarkResult
from precomet.benchmark.run import evaluate_method, run_benchmark
from precomet.benchmark.stats import ci90, random_baseline, random_runs, summarise_random
from precomet.selection.selector import BALANCE, LEVELS, Select, make_selector, top_k

__all__ = [
    "BALANCE",
    "BENCH_MEASURES",
    "BenchmarkPlan",
    "BenchmarkResult",
    "DEFAULT_PROPS",
    "LENGTH_CONTROL",
    "LEVELS",
    "MIN_SHARED",
    "PARITY_MEANING",
    "NULL_ORDERINGS",
    "PRIMARY",
    "PRIMARY_MEANING",
    "SIGNIFICANCE",
    "Select",
    "budget_value",
    "budgets_by_cost",
    "ci90",
    "circular_reason",
    "coarse_grid",
    "evaluate_method",
    "evaluate_props",
    "make_selector",
    "parity_interval",
    "parity_search",
    "parity_searches",
    "parity_shares",
    "null_band_text",
    "null_summary",
    "null_utilities",
    "p_value",
    "score_null",
    "spa_gain",
    "verdict",
    "parse_props",
    "plan_controls",
    "plot_benchmark",
    "pool_results",
    "pooled_table",
    "shared_item_groups",
    "random_baseline",
    "random_runs",
    "recommendation",
    "run_benchmark",
    "summarise_random",
    "summary_table",
    "top_k",
    "validate_props",
]
