"""Artificial crowd on WMT23 en-de and zh-en (seed 002 Table 4) -> benchmarks/results/crowd.md
(+ JSON in benchmarks/out/crowd).

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_crowd.py [--crowd 4] [--runs 100] [--seeds 100]
       [--irt-runs 10] [--irt-epochs 500] [--cache benchmarks/out/embed-cache] [--render-only]

MetricAvg / MetricVar / MetricCons (MetricX-23-c) and Diversity (all-MiniLM-L6-v2 cosine, embedding cache) run
``--runs`` crowds; DiffDisc (py-irt 4PL, one fit per crowd) runs the first ``--irt-runs`` crowds only (same crowds,
so its random column is computed on those runs): 10 fits took 388 s on en-de and 226 s on zh-en (2 shared cores),
so 100 would take about an hour per campaign.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from paths import RAW, REPO  # benchmarks/paths.py (the script's folder is on sys.path)

from precomet.benchmark.crowd import crowd_table, run_crowd_benchmark
from precomet.io import load

OUT = REPO / "benchmarks" / "out" / "crowd"
NAMES = {
    "metric_avg": "MetricAvg",
    "metric_var": "MetricVar",
    "metric_cons": "MetricCons",
    "diversity": "Diversity",
    "irt_diffdisc": "DiffDisc",
}
PAPER = {
    "random": "91.8 ± 0.89",
    "metric_avg": "92.0",
    "metric_var": "92.5",
    "metric_cons": "92.3",
    "diversity": "92.6",
    "irt_diffdisc": "91.9",
}
LPS = ("en-de", "zh-en")


def run(args) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for lp in args.only or LPS:
        campaign = load(RAW / "mt-metrics-eval-v2", campaign=f"wmt23/{lp}", human="mqm")
        jobs = [
            (
                "main",
                ["metric_avg", "metric_var", "metric_cons", "diversity"],
                args.runs,
                {"diversity": {"cache_dir": str(args.cache)}},
            ),
            ("irt", ["irt_diffdisc"], args.irt_runs, {"irt_diffdisc": {"epochs": args.irt_epochs}}),
        ]
        for tag, methods, runs, options in jobs:
            if runs < 1 or tag in args.skip.split(","):
                continue
            started = time.perf_counter()
            crowd_result = run_crowd_benchmark(
                campaign,
                methods=methods,
                crowd=args.crowd,
                runs=runs,
                metric="MetricX-23-c",
                seeds=args.seeds,
                method_options=options,
                progress=False,
            )
            result = {**crowd_result.to_dict(), "wall_seconds": time.perf_counter() - started}
            (OUT / f"wmt23-{lp}.{tag}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
            print(crowd_table(result), f"\n{lp} {tag}: {result['wall_seconds']:.0f} s", flush=True)


def cell(result, name) -> str:
    m = result["random"] if name == "random" else result["methods"][name]
    half = (m["spa_ci90"][1] - m["spa_ci90"][0]) / 2
    return f"{100 * m['spa']:.1f} ± {100 * half:.1f}"


def diff(result, name) -> str:
    if name == "random":
        return "–"
    m = result["methods"][name]
    lo, hi = m["spa_minus_random_ci90"]
    return f"{100 * m['spa_minus_random']:+.2f} [{100 * lo:+.2f}, {100 * hi:+.2f}]"


def render() -> None:
    results = {
        (lp, tag): json.loads((OUT / f"wmt23-{lp}.{tag}.json").read_text())
        for lp in LPS
        for tag in ("main", "irt")
        if (OUT / f"wmt23-{lp}.{tag}.json").exists()
    }
    first = next(iter(results.values()))
    main_run, irt = results.get((LPS[0], "main")), results.get((LPS[0], "irt"))
    options = (
        f"--crowd {first['crowd']} --seeds {first['signature']['seeds']}"
        + (f" --runs {main_run['runs']}" if main_run else "")
        + (
            f" --irt-runs {irt['runs']} --irt-epochs {irt['signature']['method_options']['irt_diffdisc']['epochs']}"
            if irt
            else ""
        )
    )
    command = (
        f"PYTHONPATH=. .venv/bin/python benchmarks/bench_crowd.py {options} --only en-de`, then `... --only zh-en`, "
        "then `... --render-only"
    )
    lines = [
        "# Artificial crowd (seed 002 §4.2, Table 4)",
        "",
        f"Command: `{command.strip()}`  ",
        f"Each run draws {first['crowd']} of the campaign's systems (en-de 12, zh-en 15), computes the utility on "
        "those 4 only (MetricX-23-c for the metric-based ones), and meta-evaluates the top-k subsets at budgets 5–50 % "
        "against the full MQM set on the *remaining* systems; random selection (mean of "
        f"{first['random']['seeds_per_run']} random orderings per run) is evaluated on the same remaining systems. SPA "
        "(%) averaged over budgets, then over runs; ± = 90 % t-interval of a single run (as the paper's ±); Δ = SPA − "
        "random paired by run, mean and 90 % t-interval of the mean. Paper = Table 4 (9 WMT23 pairs averaged, "
        "artificial crowd column).",
        "",
        "| method | en-de SPA | en-de Δ vs random | zh-en SPA | zh-en Δ vs random | runs | paper (Table 4) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in ("random", "metric_avg", "metric_var", "metric_cons", "diversity"):
        row = [NAMES.get(name, "Random")]
        for lp in LPS:
            r = results.get((lp, "main"))
            row += [cell(r, name), diff(r, name)] if r else ["–", "–"]
        row += [str(results[(LPS[0], "main")]["runs"]) if (LPS[0], "main") in results else "–", PAPER[name]]
        lines.append("| " + " | ".join(row) + " |")
    if any(tag == "irt" for _, tag in results):
        for name in ("random", "irt_diffdisc"):
            row = [("Random (same runs as DiffDisc)" if name == "random" else "DiffDisc")]
            for lp in LPS:
                r = results.get((lp, "irt"))
                row += [cell(r, name), diff(r, name)] if r else ["–", "–"]
            row += [
                str(results[(LPS[0], "irt")]["runs"]) if (LPS[0], "irt") in results else "–",
                PAPER[name] if name != "random" else "–",
            ]
            lines.append("| " + " | ".join(row) + " |")
    walls = ", ".join(f"{lp} {tag} {r['wall_seconds']:.0f} s" for (lp, tag), r in results.items())
    lines += [
        "",
        f"Wall time (2 shared cores; includes utilities): {walls}. "
        + (
            f"DiffDisc runs only the first {irt['runs']} crowds "
            f"(py-irt 4PL, {irt['signature']['method_options']['irt_diffdisc']['epochs']} epochs, "
            f"one fit per crowd): {irt['runs']} crowds took {irt['wall_seconds']:.0f} s on {LPS[0]}, so "
            f"{first['runs']} would take about {irt['wall_seconds'] / irt['runs'] * first['runs'] / 60:.0f} min. "
            if irt
            else ""
        )
        + "Reused across runs: sign flips (drawn once from item ids), the random orderings (drawn once, re-scored per "
        "run), and output embeddings (cache). JSON: benchmarks/out/crowd/ (not committed).",
    ]
    (REPO / "benchmarks" / "results" / "crowd.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crowd", type=int, default=4)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--irt-runs", type=int, default=10)
    parser.add_argument("--irt-epochs", type=int, default=500)
    parser.add_argument("--cache", type=Path, default=REPO / "benchmarks" / "out" / "embed-cache")
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument(
        "--only", type=lambda t: t.split(","), help="language pairs to (re)run, e.g. en-de (others: kept JSON)"
    )
    parser.add_argument("--skip", default="", help="comma list of jobs to skip: main, irt")
    args = parser.parse_args()
    if not args.render_only:
        run(args)
    render()


if __name__ == "__main__":
    main()
