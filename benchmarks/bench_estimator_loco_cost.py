"""Cost budgets on the dev protocol: which knapsack objective lets the source-based estimator beat random subsets of
equal annotation cost (issue 31, part 5)?

The leave-one-campaign-out protocol of ``bench_estimator_loco.py`` (15 human-scored campaigns, 14 folds, each
held-out campaign judged on its 6-system core), with budgets in annotation cost (the source-length cost model) and
the null of random subsets of equal cost. For each knapsack objective (:mod:`precomet.selection.objective`:
``rank-length`` = percentile rank x source length, ``rank-cost`` = rank x cost, ``paper`` = the utility shifted
positive, i.e. predicted utility per predicted second), the rows are the estimator (the 3-seed ensemble of the
fold's checkpoints, reused from ``bench_estimator_loco.py`` when present), the length-only model, "longer first",
k-means on the sources, and the length-only knapsack (a constant utility: the objective's own length/cost term is
the whole signal). Pooled over the 14 folds like the item-budget run. The test suite is not read.

    .venv/bin/python benchmarks/bench_estimator_loco_cost.py [--target metric_avg]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_estimator_loco import BACKBONE, CACHE, OUT, core, fit  # noqa: E402
from history_targets import history, target_rows  # noqa: E402
from paths import RESULTS  # noqa: E402

from precomet.benchmark import BenchmarkPlan, pool_results, run_benchmark, shared_item_groups  # noqa: E402
from precomet.campaign import Campaign, source_length  # noqa: E402
from precomet.encoders import encode_cached, get_encoder  # noqa: E402
from precomet.estimator import predict_sources  # noqa: E402
from precomet.estimator.leakage import drop_sources  # noqa: E402
from precomet.estimator.targets import merge_by_source  # noqa: E402
from precomet.selection.objective import COST_OBJECTIVES  # noqa: E402
from precomet.utilities.cluster import kmeans_utility  # noqa: E402

JSON = RESULTS / "estimator_loco_cost.json"
REPORT = RESULTS / "estimator_loco_cost.md"
SEEDS = (0, 1, 2)
SEEDS_RANDOM, NULL = 30, 100
"""Random subsets for random's mean curve, and random subsets scored as methods for the null (fewer than the
item-budget run's 100 and 200: every one is a knapsack per budget, for each of the three objectives)."""


def fold_checkpoints(fold: list[str], campaigns: dict[str, Campaign], rows: list[dict], target: str) -> dict:
    """The fold's seed and length-model checkpoints: those of ``bench_estimator_loco.py`` when present (same rows,
    seeds and configuration), else trained here the same way."""
    where = OUT / target / fold[0].replace("/", "_").replace(" ", "_")
    wanted = {f"seed{s}": s for s in SEEDS} | {"length": None}
    if all((where / name / "precomet.json").is_file() for name in wanted):
        return {name: where / name for name in wanted}
    train_rows = [r for r in rows if r["campaign"] not in fold]
    for name in fold:
        train_rows, _ = drop_sources(train_rows, campaigns[name].src)
    train_rows = merge_by_source(train_rows)
    return {
        name: fit(train_rows, backbone=BACKBONE if seed is not None else "length", seed=seed or 0, out=where / name)
        for name, seed in wanted.items()
    }


def evaluate_cost(held: Campaign, checkpoints: dict) -> dict:
    """Every selector under every cost objective on one held-out core."""
    sources = list(held.src)
    preds = [predict_sources(checkpoints[f"seed{s}"], sources, progress=False) for s in SEEDS]
    ensemble = np.mean([(p - p.mean()) / (p.std() or 1.0) for p in preds], axis=0)
    vectors = encode_cached(get_encoder(BACKBONE), sources, cache_dir=CACHE)
    selectors = {
        "estimator": ensemble,
        "length model": predict_sources(checkpoints["length"], sources, progress=False),
        "longer first": source_length(held.src),
        "k-means": lambda k: kmeans_utility(vectors, budget=k, seed=0),
        "length-only knapsack": np.zeros(len(held)),
    }
    out = {}
    for objective in COST_OBJECTIVES:
        result = run_benchmark(
            held,
            BenchmarkPlan(
                seeds=SEEDS_RANDOM, null_orderings=NULL, oracle=False, budget_unit="cost", cost_objective=objective
            ),
            external=selectors,
            progress=False,
        )
        assert result.null is not None
        out[objective] = {
            "rows": {
                name: {key: row[key] for key in ("spa_gain", "parity", "p_value")}
                for name, row in result.methods.items()
            },
            "null": {key: result.null[key] for key in ("spa_gain", "parity")},
        }
    return out


def run(target: str) -> dict:
    campaigns = history()
    folds = shared_item_groups({name: c.src for name, c in campaigns.items()})
    rows = target_rows(campaigns, target)
    found: dict[str, Any] = {"target": target, "seeds": list(SEEDS), "folds": folds, "campaigns": {}}
    started = time.perf_counter()
    for fold in folds:
        checkpoints = fold_checkpoints(fold, campaigns, rows, target)
        for name in fold:
            held = core(campaigns[name])
            found["campaigns"][name] = evaluate_cost(held, checkpoints)
            gains = {o: round(100 * r["rows"]["estimator"]["spa_gain"], 1) for o, r in found["campaigns"][name].items()}
            print(f"{name}: {len(held)} items; estimator gain by objective {gains}", flush=True)
    found["seconds"] = time.perf_counter() - started
    found["command"] = "benchmarks/bench_estimator_loco_cost.py " + " ".join(sys.argv[1:])
    JSON.write_text(json.dumps(found, indent=1) + "\n")
    return found


def report(found: dict) -> str:
    lines = [
        "# Cost budgets on the dev protocol: the knapsack objective (issue 31)",
        "",
        f"Command: `.venv/bin/python {found['command'].strip()}` ({found['seconds']:.0f} s)",
        "",
        f"Target {found['target']}, 14 folds, budgets in annotation"
        f" cost (source-length model), null = {NULL} random subsets of equal cost ({SEEDS_RANDOM} for random's mean"
        " curve); pooled gain in SPA points, p against the same pooling of random subsets; parity = share of random's"
        " cost budget.",
        "",
        "| selector | " + " | ".join(f"{o}: gain, p, parity" for o in COST_OBJECTIVES) + " |",
        "|---|" + "---|" * len(COST_OBJECTIVES),
    ]
    pooled = {}
    for objective in COST_OBJECTIVES:
        results = {
            name: {"methods": c[objective]["rows"], "controls": {}, "null": c[objective]["null"]}
            for name, c in found["campaigns"].items()
        }
        pooled[objective] = pool_results(results, groups=found["folds"])["rows"]
    for name in pooled[next(iter(COST_OBJECTIVES))]:
        cells = []
        for objective in COST_OBJECTIVES:
            row = pooled[objective][name]
            p = row["p_value"]
            cells.append(f"{100 * row['spa_gain']:+.2f}, {'p' if p < 0.05 else 'n.s., p'} {p:.3f}, {row['parity']:.0%}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    REPORT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="metric_avg")
    parser.add_argument("--report", action="store_true", help="only rewrite the report from the JSON")
    args = parser.parse_args()
    found = json.loads(JSON.read_text()) if args.report else run(args.target)
    print(report(found))


if __name__ == "__main__":
    main()
