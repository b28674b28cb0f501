"""The verdict's instrument: random orderings scored as methods, on the real campaigns -> benchmarks/results/null.md.

Usage: .venv/bin/python benchmarks/bench_null.py [--orderings 200] [--seeds 100]

For the development campaign WMT22 zh-en MQM and every campaign of the source suite (WMT23 en-de/zh-en MQM, WMT24
ESA en-cs/en-hi/en-ja, WMT21 TED en-de/zh-en MQM) under item budgets (5-50 %), and for WMT23 en-de/zh-en also
under cost budgets:

1. **Which statistic carries the p-value.** The null (``--orderings`` random orderings, scored like a method) of
   parity (first crossing, the paper's "data needed") and of the SPA gain (the whole curve), and how far the
   true per-item utilities (MetricAvg, MetricVar on the human scores themselves: circular, an upper bound) stand
   from each null's median in units of the null's spread (z = distance / sd; and the 5-95 % band's width over the
   distance). The statistic with the larger separation has the smaller null spread relative to what a useful
   utility achieves.
2. **Calibration.** ``--orderings`` other random orderings benchmarked as methods (the public path): the share
   called significant (p < 0.05) and the share whose parity interval lies wholly below 100 % (both should be
   about 5 %), beside the share whose point parity is below 90 % (what the bare point value "showed").
3. **Cost.** ``run_benchmark`` on 1,000 simulated items x 12 systems with the null switched off and on, side by
   side in one process (2 workers): the ratio must stay within 2x.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
from paths import RAW, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)
from report import results_file  # benchmarks/report.py

from precomet.benchmark import BenchmarkPlan, run_benchmark
from precomet.io import load
from precomet.simulate import simulate_campaign

DEV = "wmt22/zh-en"
"""The source suite's development campaign: the statistic's choice is read there first, then on the suite."""
CAMPAIGNS: dict[str, tuple[Path, dict[str, Any]]] = {
    DEV: (RAW / "mt-metrics-eval-v2", {"campaign": "wmt22/zh-en", "human": "mqm"}),
    "wmt23/en-de": (RAW / "mt-metrics-eval-v2", {"campaign": "wmt23/en-de", "human": "mqm"}),
    "wmt23/zh-en": (RAW / "mt-metrics-eval-v2", {"campaign": "wmt23/zh-en", "human": "mqm"}),
    "wmt24/en-cs": (RAW / "wmt24-esa", {"campaign": "en-cs"}),
    "wmt24/en-hi": (RAW / "wmt24-esa", {"campaign": "en-hi"}),
    "wmt24/en-ja": (RAW / "wmt24-esa", {"campaign": "en-ja"}),
    "ted/en-de": (RAW / "wmt-mqm-ted" / "ende" / "mqm_ted_ende.tsv", {}),
    "ted/zh-en": (RAW / "wmt-mqm-ted" / "zhen" / "mqm_ted_zhen.tsv", {}),
}
COST = ("wmt23/en-de", "wmt23/zh-en")
TRUE = ("metric_avg", "metric_var")


def separation(value: float, null: np.ndarray, *, higher_is_better: bool) -> tuple[float, float]:
    """(z, band width / distance): how far ``value`` lies from the null's median in the better direction."""
    distance = (value - np.median(null)) * (1 if higher_is_better else -1)
    p05, p95 = np.percentile(null, [5, 95])
    return float(distance / null.std()), float((p95 - p05) / distance) if distance > 0 else float("inf")


def campaign_rows(name: str, campaign, *, budget_unit: str, orderings: int, seeds: int) -> dict:
    """One campaign: the null of both statistics, the true utilities' separation, and the calibration run."""
    judged = run_benchmark(
        campaign,
        BenchmarkPlan(
            methods=list(TRUE),
            metric="human",
            allow_circular=True,
            budget_unit=budget_unit,
            seeds=seeds,
            null_orderings=orderings,
            oracle=False,
            controls=False,
        ),
        progress=False,
    )
    assert judged.null is not None  # null_orderings > 0
    null = {key: np.asarray(judged.null[key]) for key in ("parity", "spa_gain")}
    out: dict = {"null": null, "true": {}}
    for method in TRUE:
        row = judged.methods[method]
        out["true"][method] = {
            "parity": (row["parity"], *separation(row["parity"], null["parity"], higher_is_better=False)),
            "spa_gain": (row["spa_gain"], *separation(row["spa_gain"], null["spa_gain"], higher_is_better=True)),
            "p": row["p_value"],
            "parity_p": row["parity_p_value"],
        }
    utilities = {f"u{r}": np.random.default_rng([r, 4242]).random(len(campaign)) for r in range(orderings)}
    randoms = run_benchmark(
        campaign,
        BenchmarkPlan(budget_unit=budget_unit, seeds=seeds, null_orderings=orderings, oracle=False, controls=False),
        external=utilities,
        progress=False,
    )
    rows = list(randoms.methods.values())
    out["calibration"] = {
        "significant": float(np.mean([r["p_value"] < 0.05 for r in rows])),
        "interval_below": float(np.mean([r["parity_ci90"][1] < 1 for r in rows])),
        "point_below_90": float(np.mean([r["parity"] < 0.9 for r in rows])),
    }
    return out


def cost_of_the_null(orderings: int, seeds: int, *, oracle: bool) -> tuple[float, float]:
    """Seconds of ``run_benchmark`` without and with the null, side by side (the default run has the oracle row)."""
    campaign = simulate_campaign(n_items=1000, n_systems=12, seed=0)
    times = []
    for null_orderings in (0, orderings):
        started = time.perf_counter()
        run_benchmark(
            campaign,
            BenchmarkPlan(
                methods=["metric_avg", "metric_var"],
                metric="MetricSim",
                seeds=seeds,
                null_orderings=null_orderings,
                oracle=oracle,
            ),
            progress=False,
            workers=2,
        )
        times.append(time.perf_counter() - started)
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orderings", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=100)
    args = parser.parse_args()
    found = {}
    for name, (path, options) in CAMPAIGNS.items():
        campaign = load(path, **options)
        for unit in ("items", "cost") if name in COST else ("items",):
            started = time.perf_counter()
            found[name, unit] = campaign_rows(
                name, campaign, budget_unit=unit, orderings=args.orderings, seeds=args.seeds
            )
            print(f"{name} ({unit}): {time.perf_counter() - started:.0f} s", flush=True)
    off, on = cost_of_the_null(args.orderings, args.seeds, oracle=True)
    bare_off, bare_on = cost_of_the_null(args.orderings, args.seeds, oracle=False)
    with results_file(RESULTS / "null.md", "The verdict's null: random orderings scored as methods (issue 30)"):
        print("## 1. Null spread of parity and of the SPA gain, and where the true utility stands\n")
        print(
            "Null = the random orderings (random subsets of equal cost under cost budgets). True utilities = MetricAvg"
            " / MetricVar on the human scores themselves (circular: an upper bound). z = distance from the null's"
            " median in the better direction / the null's sd; band/dist = width of the null's 5-95 % band / that"
            " distance (smaller is better).\n"
        )
        print(
            "| campaign | budgets | null parity median (5–95 %) | null gain median (5–95 %), points | true utility |"
            " parity | z | band/dist | p (parity) | gain | z | band/dist | p (gain) |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        z_wins: dict[bool, list[bool]] = {True: [], False: []}  # dev campaign, suite campaigns
        for (name, unit), f in found.items():
            null = f["null"]
            band_p = "{:.0f} % ({:.0f}–{:.0f} %)".format(*(100 * np.percentile(null["parity"], [50, 5, 95])))
            band_g = "{:+.1f} ({:+.1f} to {:+.1f})".format(*(100 * np.percentile(null["spa_gain"], [50, 5, 95])))
            for method, t in f["true"].items():
                (pv, pz, pw), (gv, gz, gw) = t["parity"], t["spa_gain"]
                z_wins[name == DEV].append(gz > pz)
                print(
                    f"| {name} | {unit} | {band_p} | {band_g} | {method} | {100 * pv:.0f} % | {pz:.2f} | {pw:.2f} |"
                    f" {t['parity_p']:.3f} | {100 * gv:+.1f} | {gz:.2f} | {gw:.2f} | {t['p']:.3f} |"
                )
        print(
            f"\nThe SPA gain separates the true utility from the null further than parity (larger z) in"
            f" {sum(z_wins[True])} of {len(z_wins[True])} cases on the development campaign {DEV} and in"
            f" {sum(z_wins[False])} of {len(z_wins[False])} on the suite campaigns: it carries the p-value; parity"
            " keeps its meaning and its own null band.\n"
        )
        print("## 2. Calibration: random orderings benchmarked as methods\n")
        print(
            f"{args.orderings} random utilities benchmarked through `run_benchmark` (external utilities) against the"
            f" default null of {args.orderings} other orderings. Under item budgets they are random orderings: about"
            " 5 % should be significant. Under cost budgets they go through the methods' knapsack, whose cost objective"
            " (rank-length: percentile rank x source length) prefers long items whatever the utility, while the null"
            " is random subsets of equal cost: what is significant there is the knapsack's length preference (the"
            " length control, a constant utility through the same knapsack, measures it), not luck.\n"
        )
        print("| campaign | budgets | p < 0.05 | parity interval wholly below 100 % | point parity below 90 % |")
        print("|---|---|---|---|---|")
        for (name, unit), f in found.items():
            c = f["calibration"]
            print(
                f"| {name} | {unit} | {100 * c['significant']:.1f} % | {100 * c['interval_below']:.1f} % |"
                f" {100 * c['point_below_90']:.1f} % |"
            )
        print("\n## 3. Cost of the null\n")
        print(
            f"`run_benchmark` on 1,000 simulated items x 12 systems (2 methods, length control, oracle, {args.seeds}"
            f" random seeds, 2 workers), side by side in one process: without the null {off:.1f} s, with"
            f" {args.orderings} orderings {on:.1f} s: **{on / off:.2f}x** (goal: at most 2x). Without the oracle row"
            f" (`--no-oracle`) the run is {bare_off:.1f} s without the null and {bare_on:.1f} s with it"
            f" ({bare_on / bare_off:.2f}x): each random ordering costs about as much as a method's row (its parity"
            " search: the coarse grid and a bisection per budget), so the null dominates a run without the oracle."
        )


if __name__ == "__main__":
    main()
