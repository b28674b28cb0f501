"""Re-run the benchmarks and reassemble BENCHMARKS.md: the one list of every benchmark, its exact commands and the
results files they write (``make benchmarks`` runs the cheap ones).

    .venv/bin/python benchmarks/regenerate.py            # every cheap benchmark, then BENCHMARKS.md
    .venv/bin/python benchmarks/regenerate.py --all      # also the expensive ones (estimator training, IRT crowds)
    .venv/bin/python benchmarks/regenerate.py --only kmeans --only rank   # these, cheap or expensive
    .venv/bin/python benchmarks/regenerate.py --list     # the registry with estimated minutes; runs nothing

A benchmark that needs the peer (subset2evaluate in benchmarks/.peer-venv: ``bash benchmarks/peer_env.sh``) or the
real data (../shared/data/raw, or ``PRECOMET_RAW_DATA``) that is absent is skipped with the reason printed; the run
ends non-zero when any benchmark was skipped or failed, after reassembling BENCHMARKS.md from what is there.
Minutes: measured on the 2 shared CPU cores with a warm embedding cache (benchmarks/out/embed-cache, shared by the
scripts), two benchmarks at a time (issue 22's regeneration); crowd and source-suite-dev/speed are estimates from
their results files. The cheap set takes about an hour: longer than the 30 minutes aimed at, mostly the
meta-evaluation, the utility speed table and k-means (which embeds the same sources once per budget).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from assemble_benchmarks_md import main as assemble  # sibling script (benchmarks/ is on sys.path)
from paths import RAW, REPO  # benchmarks/paths.py

PEER = REPO / "benchmarks" / ".peer-venv" / "bin" / "python"


@dataclass(frozen=True)
class Benchmark:
    """One registry entry: ``commands`` (script and arguments, run in order from the repository root) write
    ``writes`` (files under benchmarks/results/); ``minutes`` is the estimated run time on 2 shared cores."""

    name: str
    commands: tuple[tuple[str, ...], ...]
    writes: tuple[str, ...]
    minutes: float
    expensive: bool = False
    peer: bool = False
    data: bool = True


REGISTRY = (
    Benchmark(
        "metaeval",
        (
            (
                "benchmarks/make_benchmarks_md.py",
                *("--seeds", "100", "--variant-seeds", "100", "--peer-seeds", "100", "--irt-epochs", "1000"),
            ),
        ),
        ("metaeval.md",),
        14,
        peer=True,
    ),
    Benchmark(
        "metaeval-speed",
        (
            (
                "benchmarks/bench_metaeval.py",
                *("--campaign", "wmt23/en-de", "--seeds", "100", "--out", "benchmarks/results/metaeval_speed.md"),
            ),
        ),
        ("metaeval_speed.md",),
        0.2,
        peer=True,
    ),
    Benchmark(
        "startup",
        (
            (
                "benchmarks/bench_startup.py",
                *("--items", "1000", "--systems", "12", "--seeds", "100", "--repeats", "5"),
            ),
        ),
        ("startup.md",),
        2.8,
        peer=True,
        data=False,
    ),
    Benchmark("null", (("benchmarks/bench_null.py",),), ("null.md",), 4),
    Benchmark("oracle", (("benchmarks/bench_oracle.py",),), ("oracle.md",), 0.2),
    Benchmark(
        "crowd",
        (("benchmarks/bench_crowd.py", "--only", "en-de"), ("benchmarks/bench_crowd.py", "--only", "zh-en")),
        ("crowd.md",),
        15,
        expensive=True,
    ),
    Benchmark("kmeans", (("benchmarks/bench_kmeans.py",),), ("kmeans.md",), 2.4),
    Benchmark("rank", (("benchmarks/bench_rank.py",),), ("rank.md",), 1, data=False),
    Benchmark("utility-speed", (("benchmarks/bench_utilities.py",),), ("utility-speed.md",), 12, peer=True),
    Benchmark("irt", (("benchmarks/bench_irt.py",),), ("irt.md",), 0.3, data=False),
    Benchmark(
        "knapsack", (("benchmarks/bench_select.py", "--plain-cbc"),), ("knapsack.md",), 0.4, peer=True, data=False
    ),
    Benchmark("knapsack-pool", (("benchmarks/bench_select.py", "--pool"),), ("knapsack-pool.md",), 2, data=False),
    Benchmark("pool", (("benchmarks/bench_pool.py",),), ("pool.md",), 12),
    Benchmark(
        "pool-distinct",
        (("benchmarks/bench_pool.py", "--sizes", "5000", "10000", "25000", "--universe", "30000", "--distinct"),),
        ("pool-distinct.md",),
        8,
    ),
    Benchmark(
        "predict-speed",
        (("benchmarks/bench_predict_speed.py", "--n", "200", "--repeats", "2"),),
        ("predict-speed.md",),
        4,
    ),
    Benchmark(  # the table from the recorded GPU run (measuring needs a GPU machine: the script's docstring)
        "e5-gpu",
        (("benchmarks/bench_e5_gpu.py", "report", "--measured", "benchmarks/results/e5_gpu.json"),),
        ("e5-gpu.md",),
        0.2,
        data=False,
    ),
    Benchmark("coverage", (("benchmarks/bench_coverage.py",),), ("coverage.md",), 3.5),
    Benchmark(
        "predict-resume",
        (("benchmarks/bench_predict_resume.py", "--n", "6000", "--chunk-size", "1000"),),
        ("predict-resume.md",),
        6,
    ),
    Benchmark(
        "warm-cache",
        (("benchmarks/bench_warm_cache.py", "--encoder", "minilm", "--encoder", "e5-small"),),
        ("warm-cache.md",),
        4,
    ),
    Benchmark(
        "waves-matrix",
        (("benchmarks/waves_matrix.py", "--write", "--before", "benchmarks/results/waves-matrix-before.json"),),
        ("waves-matrix.md",),
        8,
        data=False,
    ),
    Benchmark("spa-kernel", (("benchmarks/bench_spa_kernel.py",),), ("spa-kernel.md",), 1, data=False),
    Benchmark("chunk-precision", (("benchmarks/bench_chunk_precision.py",),), ("chunk-precision.md",), 0.5),
    Benchmark(  # the table from the recorded GPU run (measuring needs a GPU machine: the script's docstring)
        "predict-gpu",
        (("benchmarks/bench_predict_gpu.py", "report", "--measured", "benchmarks/results/predict_gpu.json"),),
        ("predict-gpu.md",),
        0.2,
        data=False,
    ),
    Benchmark(
        "cost-aware",
        (
            ("benchmarks/bench_cost_aware.py", "--paper-seeds", "20"),
            ("benchmarks/bench_cost_aware.py", "--explore", "--seeds", "30"),
        ),
        ("cost-aware.md",),
        5,
    ),
    Benchmark(
        "source-suite-dev",
        tuple(
            (
                "benchmarks/bench_source_suite.py",
                *("--stage", "dev", "--history", history, "--targets", *targets, "--backbones", backbone),
                *("--out", f"benchmarks/results/source_suite_dev_{history}_{backbone.split('-')[0]}.json"),
            )
            for history, targets, backbone in (
                ("human", ("metric_var", "metric_cons", "metric_avg"), "e5-small"),
                ("human", ("metric_var", "metric_cons", "metric_avg"), "surface"),
                ("proxy", ("metric_var", "metric_cons"), "e5-small"),
            )
        ),
        ("source_suite_dev_human_e5.json", "source_suite_dev_human_surface.json", "source_suite_dev_proxy_e5.json"),
        36,
        expensive=True,
    ),
    Benchmark(
        "source-suite-test",
        (
            (
                "benchmarks/bench_source_suite.py",
                *("--stage", "test", "--history", "human", "--target", "metric_avg", "--backbone", "e5-small"),
                *("--seeds", "0", "1", "2", "--cost"),  # the shipped estimator: training/ship_estimator.sh
            ),
        ),
        ("source_suite_test.json",),
        21,
        expensive=True,
    ),
    Benchmark(
        "estimator-loco",
        (
            ("benchmarks/bench_estimator_loco.py", "--headroom"),
            (
                "benchmarks/bench_estimator_loco.py",
                *("--targets", "item_effect", "metric_avg", "--seeds", "0", "1", "2"),
            ),
        ),
        ("estimator_loco_headroom.json", "estimator_loco.json", "estimator_loco.md"),
        45,
        expensive=True,
    ),
    Benchmark(
        "source-suite-test-shipped",
        (
            (
                "benchmarks/bench_source_suite.py",
                *("--stage", "test", "--history", "human", "--target", "metric_avg", "--backbone", "e5-small"),
                *("--seeds", "0", "1", "2", "--cost", "--shipped", "checkpoints/metric-avg-e5"),
                *("--out", "benchmarks/results/source_suite_test_shipped.json"),
            ),
        ),
        ("source_suite_test_shipped.json",),
        17,
        expensive=True,
    ),
    Benchmark(
        "ensemble-stability",
        (("benchmarks/bench_ensemble_stability.py",),),
        ("ensemble_stability.json", "ensemble-stability.md"),
        3.2,
        expensive=True,
    ),
    Benchmark(  # the verdict of the recorded GPU fine-tuning runs (fitting needs a GPU machine: the docstring)
        "finetune-gpu",
        (("benchmarks/bench_finetune_gpu.py", "report", "--measured", "benchmarks/results/finetune_gpu_runs.json"),),
        ("finetune_gpu.json", "finetune-gpu.md"),
        0.5,
    ),
    Benchmark(
        "estimator-loco-cost",
        (("benchmarks/bench_estimator_loco_cost.py",),),
        ("estimator_loco_cost.json", "estimator_loco_cost.md"),
        71,
        expensive=True,
    ),
    Benchmark(
        "source-suite-speed",
        (("benchmarks/bench_source_suite.py", "--stage", "speed"),),
        ("source_suite_speed.json",),
        3,
        expensive=True,
    ),
    Benchmark(
        "source-suite",
        (("benchmarks/bench_source_suite.py", "--stage", "report"),),
        ("source-suite.md",),
        0.1,
        data=False,
    ),
    Benchmark("da-alignment", (("benchmarks/check_da_alignment.py",),), ("da_alignment.md",), 0.7),
    Benchmark(
        "diffuse-speed",
        (("benchmarks/bench_diffuse.py", "speed", "--end-to-end"),),
        ("diffuse-speed.md",),
        3.6,
        peer=True,
    ),
    Benchmark("diffuse-protocol", (("benchmarks/bench_diffuse.py", "protocol"),), ("diffuse-protocol.md",), 3.2),
    Benchmark(  # the shipped estimator's predictions are kept in benchmarks/out/waves-estimator (first run: +5 min)
        "waves-replay",
        (("benchmarks/bench_waves.py", "--runs", "100"),),
        ("waves-replay.json", "waves-replay.md"),
        8,
    ),
    Benchmark("forecast-grid", (("benchmarks/bench_forecast_grid.py",),), ("forecast-grid.md",), 2, data=False),
    Benchmark("loading", (("benchmarks/bench_load.py", "--repeat", "5"),), ("loading.md",), 0.1),
    Benchmark("first-hour", (("benchmarks/bench_first_hour.py", "--repeats", "3"),), ("first_hour.md",), 6, data=False),
    Benchmark(
        "interrupts",
        (("benchmarks/stress_interrupts.py", "--rounds", "400", "--seed", "1"),),
        ("interrupts.md",),
        7,
        data=False,
    ),
    Benchmark(
        "inner-imports", (("benchmarks/inner_imports.py", "--repeats", "3"),), ("inner-imports.md",), 6, data=False
    ),
)
"""Every benchmark behind BENCHMARKS.md. Expensive = estimator training or IRT crowds (run with --all or --only)."""


def command_text(argv: tuple[str, ...]) -> str:
    """How a command is written in the results files: ``.venv/bin/python SCRIPT ARGS``."""
    return " ".join([".venv/bin/python", *(f'"{a}"' if " " in a else a for a in argv)])


def skip_reason(bench: Benchmark) -> str | None:
    """Why ``bench`` cannot run on this machine, or None."""
    if bench.peer and not PEER.exists():
        return f"needs the peer venv {PEER.relative_to(REPO)} (create it with: bash benchmarks/peer_env.sh)"
    if bench.data and not RAW.exists():
        return f"needs the real data at {RAW} (set PRECOMET_RAW_DATA)"
    return None


def chosen(names: list[str] | None, everything: bool) -> list[Benchmark]:
    """The benchmarks to run: ``names`` (each must be in the registry), else every cheap one (all with
    ``everything``)."""
    if not names:
        return [b for b in REGISTRY if everything or not b.expensive]
    known = {b.name: b for b in REGISTRY}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}; valid: {', '.join(known)}")
    return [known[n] for n in names]


def list_registry() -> None:
    for b in REGISTRY:
        needs = ", ".join(x for x, on in (("expensive", b.expensive), ("peer", b.peer), ("data", b.data)) if on)
        print(f"{b.name:20} ~{b.minutes:g} min  [{needs}]  -> {', '.join(b.writes)}")
        for argv in b.commands:
            print(f"    {command_text(argv)}")
    cheap = sum(b.minutes for b in REGISTRY if not b.expensive)
    print(f"cheap benchmarks: ~{cheap:g} min in all; with --all: ~{sum(b.minutes for b in REGISTRY):g} min")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", metavar="NAME", help="run this benchmark (repeatable)")
    parser.add_argument("--all", action="store_true", help="also the expensive benchmarks")
    parser.add_argument("--list", action="store_true", help="print the registry and stop")
    args = parser.parse_args()
    if args.list:
        list_registry()
        return 0
    problems = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    for bench in chosen(args.only, args.all):
        reason = skip_reason(bench)
        if reason:
            print(f"== {bench.name}: SKIPPED: {reason}", flush=True)
            problems.append(f"{bench.name} skipped")
            continue
        started = time.perf_counter()
        for argv in bench.commands:
            print(f"== {bench.name}: {command_text(argv)}", flush=True)
            if subprocess.run([sys.executable, *argv], cwd=REPO, env=env).returncode:
                problems.append(f"{bench.name} failed: {command_text(argv)}")
                break
        print(f"== {bench.name}: {(time.perf_counter() - started) / 60:.1f} min", flush=True)
    assemble()
    for problem in problems:
        print(f"NOT REGENERATED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
