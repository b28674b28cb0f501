"""The artificial-crowd protocol (seed 002 §4.2, Table 4): utilities computed on ``K`` randomly drawn systems,
subsets meta-evaluated on the *remaining* systems.

Run ``r`` (of ``runs``) draws the crowd ``M'`` — ``K`` distinct systems, ``default_rng([seed, 14, r])`` — computes every
utility on ``M'`` only (:func:`precomet.utilities.compute_utility` with ``systems=M'``), and meta-evaluates the top-k
subsets of every budget against the full set on ``M \\ M'`` (SPA, clusters, Kendall τ-b). Random selection is
evaluated on the same remaining systems in the same run (``seeds`` random orderings per run, averaged), so each
method has a paired random value per run. Budgets are item counts (top-k prefixes).

Work reused across runs: the item sign flips (they depend only on item ids) are drawn once and each run's
reference takes its columns; the random orderings are drawn once and re-scored per run; utilities that do not
depend on the systems (``kmeans``, ``random``: sources only) are computed once per budget; a crowd drawn twice
reuses its utilities; each text is embedded once per process (:mod:`precomet.encoders.memory`), or once at all
with ``cache_dir`` in the options.

Reported per method: mean SPA / clusters / Kendall over runs and budgets, the 90 % t-interval of a single run
(``mean ± t·s``, as the paper's ± and the benchmark's random band), and the paired difference to random
(mean and 90 % t-interval of the *mean* over runs). With ``controls`` the length control row (longer sources
first; system-free, so one ordering for every run) is reported the same way under ``controls``, or the reason it
is left out under ``controls_skipped``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from precomet.benchmark.budgets import BENCH_MEASURES, validate_props
from precomet.benchmark.plan import LENGTH_CONTROL, plan_controls
from precomet.benchmark.stats import ci90
from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.metaeval import evaluate_orderings, reference_from_matrix
from precomet.progress import progress as progress_bar
from precomet.record import Record, as_json
from precomet.selection.selector import top_k
from precomet.selection.units import budget_items
from precomet.signature import Signature, signature
from precomet.significance import item_signs
from precomet.utilities import UTILITY_METHODS, compute_utility

log = logging.getLogger(__name__)


def draw_crowds(systems: Sequence[str], *, k: int, runs: int, seed: int = 0) -> list[tuple[str, ...]]:
    """``runs`` crowds of ``k`` distinct systems each (campaign order inside a crowd)."""
    if not 1 <= k <= len(systems) - 2:
        raise PrecometError(
            f"crowd size must be in 1..{len(systems) - 2} (at least 2 systems must remain to evaluate on), got {k}"
        )
    if runs < 1:
        raise PrecometError(f"crowd runs must be at least 1, got {runs}")
    out = []
    for r in range(runs):
        chosen = np.sort(np.random.default_rng([seed, 14, r]).choice(len(systems), size=k, replace=False))
        out.append(tuple(systems[i] for i in chosen))
    return out


@dataclass(frozen=True)
class CrowdResult(Record):
    """The artificial-crowd benchmark on one campaign: ``runs`` crowds of ``crowd`` systems (``crowds``, the
    systems drawn per run), each method's utilities computed on its crowd and meta-evaluated on the other systems.
    ``random``, ``methods`` and ``controls`` hold one row each: ``spa``, ``clusters``, ``corr`` with their
    ``*_by_prop`` lists and single-run 90 % intervals ``*_ci90``; methods and controls add the paired difference
    to random (``spa_minus_random``, its ``_ci90``, ``runs_above_random``). As JSON, ``n_items`` is ``items``."""

    campaign: str
    n_items: int = field(metadata={"key": "items"})
    systems: Sequence[str]
    props: Sequence[float]
    crowd: int
    runs: int
    crowds: Sequence[Sequence[str]]
    random: Mapping[str, Any]
    methods: Mapping[str, Mapping[str, Any]]
    controls: Mapping[str, Mapping[str, Any]]
    controls_skipped: Mapping[str, str]
    signature: Signature

    def with_signature(self, **parameters: Any) -> CrowdResult:
        """A copy whose signature also records ``parameters`` (e.g. the command line's input file)."""
        return self.replaced(signature=self.signature.with_parameters(**parameters))


def run_crowd_benchmark(
    campaign: Campaign,
    *,
    methods: Sequence[str],
    crowd: int,
    runs: int = 100,
    metric: str | None = None,
    score: str = HUMAN,
    props: Sequence[float] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5),
    seeds: int = 100,
    permutations: int = 1000,
    seed: int = 0,
    method_options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: bool | None = None,
    controls: bool = True,
    cluster_rule: str = "paper",
) -> CrowdResult:
    """The artificial-crowd benchmark (see the module docstring): a :class:`CrowdResult` (``to_dict()`` for JSON).
    Cluster counts follow ``cluster_rule`` (:data:`precomet.metaeval.CLUSTER_RULES`)."""
    props = validate_props(props)
    names = list(methods)
    if not names:
        raise PrecometError("the artificial crowd needs utility methods ({methods}...)", param="methods")
    unknown = [m for m in names if m not in UTILITY_METHODS]
    if unknown:
        raise PrecometError(f"unknown method(s) {unknown}; valid: {', '.join(UTILITY_METHODS)}")
    if any(UTILITY_METHODS[m].needs_score for m in names) and metric is None:
        available = sorted(set(campaign.scores) - {score})
        raise PrecometError(
            f"choose the metric the utilities use ({{metric}}NAME); available: {available}", param="metric"
        )
    if seeds < 1:
        raise PrecometError(f"{{seeds}}{seeds}: the random baseline needs at least 1 seed", param="seeds")
    n = len(campaign)
    sizes = np.array([budget_items(p, n) for p in props])
    if sizes.min() < 2:
        raise PrecometError(
            f"budget proportion(s) give fewer than 2 of {n} items; use larger proportions ({{props}}...)", param="props"
        )
    by_size = np.argsort(sizes, kind="stable")
    sorted_sizes = sizes[by_size].tolist()
    crowds = draw_crowds(campaign.systems, k=crowd, runs=runs, seed=seed)
    signs = item_signs(campaign.ids, permutations=permutations, seed=seed)
    random_orders = [top_k(np.random.default_rng([seed, r]).random(n), int(sizes.max())) for r in range(seeds)]
    options = dict(method_options or {})
    control_names, skipped = plan_controls(names, controls)
    control_orders = {  # system-free: the same ordering in every run
        c: top_k(compute_utility(campaign, c, seed=seed), int(sizes.max())) for c in control_names
    }
    control_runs = {c: np.empty((runs, len(props), len(BENCH_MEASURES))) for c in control_names}

    utilities: dict[tuple, np.ndarray] = {}
    seconds = dict.fromkeys(names, 0.0)

    def utility(method: str, members: tuple[str, ...], k: int | None) -> np.ndarray:
        key = (method, None if UTILITY_METHODS[method].system_free else members, k)
        if key not in utilities:
            started = time.perf_counter()
            utilities[key] = compute_utility(
                campaign, method, metric=metric, systems=list(members), budget=k, seed=seed, options=options.get(method)
            )
            seconds[method] += time.perf_counter() - started
        return utilities[key]

    random_runs = np.empty((runs, len(props), len(BENCH_MEASURES)))
    method_runs = {m: np.empty((runs, len(props), len(BENCH_MEASURES))) for m in names}
    started_all = time.perf_counter()
    bar = progress_bar(total=runs, desc=f"crowd {crowd} on {campaign.name}", enabled=progress)
    for r, members in enumerate(crowds):
        rest = [s for s in campaign.systems if s not in members]
        matrix = np.asarray(campaign.score(score), dtype=float)[:, campaign.system_index(rest)]
        ref = reference_from_matrix(
            campaign, matrix, score=score, signs=signs, seed=seed, systems=rest, cluster_rule=cluster_rule
        )
        values = evaluate_orderings(
            ref, random_orders, sorted_sizes, measures=BENCH_MEASURES
        )  # (seeds, props, measures)
        random_runs[r, by_size] = values.mean(axis=0)
        for c, order in control_orders.items():
            control_runs[c][r, by_size] = evaluate_orderings(ref, [order], sorted_sizes, measures=BENCH_MEASURES)[0]
        for m in names:
            if UTILITY_METHODS[m].needs_budget:  # one utility per budget (e.g. k-means with k = budget)
                for q, k in enumerate(sizes):
                    u = utility(m, members, int(k))
                    method_runs[m][r, q] = evaluate_orderings(
                        ref, [top_k(u, int(k))], [int(k)], measures=BENCH_MEASURES
                    )[0, 0]
            else:
                u = utility(m, members, None)
                if np.isnan(u).any():
                    raise PrecometError(
                        f"utility {m!r} is NaN for {int(np.isnan(u).sum())} item(s) with crowd {list(members)}"
                    )
                method_runs[m][r, by_size] = evaluate_orderings(
                    ref, [top_k(u, int(sizes.max()))], sorted_sizes, measures=BENCH_MEASURES
                )[0]
        bar.update()
    bar.close()
    random_spa = random_runs[:, :, 0].mean(axis=1)  # per run, averaged over budgets
    return CrowdResult(
        campaign=campaign.name,
        n_items=n,
        systems=list(campaign.systems),
        props=props,
        crowd=crowd,
        runs=runs,
        crowds=[list(c) for c in crowds],
        random={
            **_summary(random_runs),
            "seeds_per_run": seeds,
            "seconds": time.perf_counter() - started_all - sum(seconds.values()),
        },
        methods={
            m: {
                **_summary(method_runs[m]),
                **_paired(method_runs[m][:, :, 0].mean(axis=1), random_spa),
                "utility_seconds": seconds[m],
            }
            for m in names
        },
        controls={
            c: {**_summary(control_runs[c]), **_paired(control_runs[c][:, :, 0].mean(axis=1), random_spa)}
            for c in control_names
        },
        controls_skipped=skipped,
        signature=signature(
            "precomet benchmark --crowd",
            campaign=campaign,
            seed=seed,
            methods=names,
            crowd=crowd,
            runs=runs,
            metric=metric,
            score=score,
            props=props,
            seeds=seeds,
            permutations=permutations,
            method_options=options,
            controls=[LENGTH_CONTROL] if controls else [],
            cluster_rule=cluster_rule,
        ),
    )


def _summary(runs: np.ndarray) -> dict[str, Any]:
    """Means over runs and budgets, per budget, and the single-run 90 % t-interval of the budget-averaged value."""
    out: dict[str, Any] = {}
    for m, key in enumerate(("spa", "clusters", "corr")):
        per_run = runs[:, :, m].mean(axis=1)
        out[key] = float(per_run.mean())
        out[f"{key}_by_prop"] = runs[:, :, m].mean(axis=0).tolist()
        out[f"{key}_ci90"] = list(ci90(per_run))
    return out


def _paired(method_spa: np.ndarray, random_spa: np.ndarray) -> dict[str, Any]:
    """SPA minus random's, paired by run: mean, 90 % t-interval of the mean, share of runs above random."""
    diff = method_spa - random_spa
    return {
        "spa_minus_random": float(diff.mean()),
        "spa_minus_random_ci90": list(ci90(diff, of_mean=True)),
        "runs_above_random": float(np.mean(diff > 0)),
    }


def crowd_table(result: Record | Mapping[str, Any]) -> str:
    """Plain text: mean SPA ± single-run 90 % half-width, clusters, Kendall, SPA − random (paired, 90 % CI of the
    mean)."""
    result = as_json(result)
    width = max(20, *(len(name) + 1 for name in result["methods"]))
    lines = [
        f"artificial crowd: {result['crowd']} systems drawn per run, {result['runs']} runs, evaluated on the others",
        f"{'method':<{width}} {'SPA':>7} {'±90%':>6} {'clusters':>8} {'kendall':>8} {'SPA-random [90% CI]':>24} "
        f"{'>rand':>6}",
    ]
    r = result["random"]
    lines.append(
        f"{'random':<{width}} {r['spa']:>7.2%} {(r['spa_ci90'][1] - r['spa_ci90'][0]) / 2:>6.2%} {r['clusters']:>8.2f} "
        f"{r['corr']:>8.3f}"
    )
    rows = [(f"{name} (control)", row) for name, row in result.get("controls", {}).items()]
    for name, m in [*rows, *result["methods"].items()]:
        lo, hi = m["spa_minus_random_ci90"]
        diff = f"{m['spa_minus_random']:+.2%} [{lo:+.2%}, {hi:+.2%}]"
        lines.append(
            f"{name:<{width}} {m['spa']:>7.2%} {(m['spa_ci90'][1] - m['spa_ci90'][0]) / 2:>6.2%} {m['clusters']:>8.2f}"
            f" {m['corr']:>8.3f} {diff:>24} {m['runs_above_random']:>6.0%}"
        )
    lines += [f"{name} control: left out ({reason})" for name, reason in result.get("controls_skipped", {}).items()]
    return "\n".join(lines)
