"""Whole-process time of ``precomet benchmark`` vs subset2evaluate 1.0.27 doing the same work, side by side in one
run, and the start-up (import) time of precomet's commands. Writes benchmarks/results/startup.md.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_startup.py [--items 1000] [--systems 12] [--seeds 100]
       [--repeats 3] [--campaign wmt23/en-de] [--before REV] [--out benchmarks/results/startup.md]

Users run precomet as a process, so this times processes, imports included. The work is the one whose compute alone
benchmarks/bench_metaeval.py compares (benchmarks/results/metaeval_speed.md) and that make_benchmarks_md.py runs for
the peer: MetricAvg, MetricVar and MetricCons on the metric plus ``--seeds`` random orderings, each cut at the 10
budgets 5 %..50 % and meta-evaluated by SPA, cluster count and Kendall τ — for precomet the command ``precomet
benchmark --methods metric_avg,metric_var,metric_cons --no-oracle`` (it also searches each method's parity budget,
which the peer does not, and scores the null's random orderings; a second precomet column runs it with
``--null-orderings 0 --workers 1``, the peer's work in one process), for the peer one ``python`` process running
``select_subset.basic`` and ``eval_spa`` / ``eval_clucor`` (its CLI selects one method per process and has no
random-seed loop). Data: a seeded simulated campaign (``--items`` × ``--systems``, human score and metric
``MetricSim``; precomet.simulate) or, with ``--campaign``, a real mt-metrics-eval campaign (MQM, MetricX-23-c) from
../shared/data/raw. Both sides read the same items from a file (precomet: canonical JSONL; the peer: its JSON list).
Both run with one BLAS/OpenMP thread (OMP/OPENBLAS/MKL_NUM_THREADS=1), as in bench_metaeval.py, and from compiled
bytecode (an untimed first run of every command; PYTHONDONTWRITEBYTECODE is dropped for the timed processes). Runs
alternate between the two tools; the table gives each run and the medians. ``--before REV`` also times the same
command from the source tree of a git revision (``git archive``; e.g. the commit before a change) in the same
alternation.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from paths import RAW, REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)

from precomet import metaeval
from precomet.benchmark.budgets import BENCH_MEASURES, DEFAULT_PROPS
from precomet.benchmark.null import NULL_ORDERINGS
from precomet.io import load
from precomet.selection.units import budget_items

METHODS = ("metric_avg", "metric_var", "metric_cons")
SAME_WORK = "precomet, the peer's work"
"""The same command without the null's random orderings, in one process: the work the peer does (plus parity)."""
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

PEER_SCRIPT = r"""
import json, sys
import numpy as np
import subset2evaluate.select_subset as sel
import subset2evaluate.evaluate as ev
data, metric, seeds = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
def run(ordered):
    spa = ev.eval_spa(ordered, data)
    clu, cor = ev.eval_clucor(ordered, data)
    return [float(np.mean(spa)), float(np.mean(clu)), float(np.mean(cor))]
out = {m: run(sel.basic(data, method=m, metric=metric)) for m in ("metric_avg", "metric_var", "metric_cons")}
out["random"] = np.mean([run(sel.basic(data, method="random", seed=s)) for s in range(seeds)], axis=0).tolist()
json.dump(out, open(sys.argv[4], "w"))
"""


def write_data(args: argparse.Namespace, folder: Path) -> tuple[Path, Path, str, str]:
    """The campaign as canonical JSONL (ours) and the peer's JSON list; returns paths, metric and a description."""
    from precomet.io import load, write_jsonl

    if args.campaign:
        campaign, metric = load(args.raw / "mt-metrics-eval-v2", campaign=args.campaign, human="mqm"), "MetricX-23-c"
        what = f"{args.campaign} (MQM, {metric})"
    else:
        from precomet.simulate import METRIC, simulate_campaign

        campaign, metric = simulate_campaign(n_items=args.items, n_systems=args.systems, seed=0), METRIC
        what = f"simulated campaign (precomet.simulate, seed 0; human + {metric})"
    ours, theirs = folder / "items.jsonl", folder / "items.json"
    write_jsonl(campaign, ours)
    human, scores = campaign.score("human"), campaign.score(metric)
    theirs.write_text(
        json.dumps(
            [
                {
                    "src": campaign.src[i],
                    "scores": {
                        s: {"human": float(human[i, j]), metric: float(scores[i, j])}
                        for j, s in enumerate(campaign.systems)
                    },
                }
                for i in range(len(campaign))
            ]
        )
    )
    return ours, theirs, metric, f"{what}, {len(campaign)} items × {len(campaign.systems)} systems"


def process_env(tree: Path | None = None) -> dict[str, str]:
    """The environment of a timed process: one BLAS thread, ``tree`` first on PYTHONPATH, and bytecode caching on
    (PYTHONDONTWRITEBYTECODE dropped): an installed package runs from compiled bytecode — the peer's ``pip install``
    compiled its own — so precomet's source tree must not be recompiled at every start either."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"} | ONE_THREAD
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])
    return env


def run_process(argv: list[str], *, tree: Path | None = None) -> float:
    """Wall seconds of one process, from spawn to exit (it must succeed), in :func:`process_env`."""
    env = process_env(tree)
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, cwd=tree or REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def import_seconds(argv: list[str], tree: Path) -> float:
    """Seconds the process spent importing (``-X importtime``: the sum of the top-level cumulative times)."""
    env = process_env(tree)
    err = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        check=True,
        env=env,
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ).stderr
    total = 0
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cumulative, name = line.split("|")
            if cumulative.strip().isdigit() and not name.startswith("  "):  # top level: one space of indent
                total += int(cumulative)
    return total / 1e6


def metaeval_seconds(data: Path, orderings: int, repeats: int) -> float:
    """Median in-process seconds of the meta-evaluation alone — the full-set reference and ``orderings`` orderings'
    nested subsets at the default budgets (SPA, clusters, Kendall), as ``evaluate_orderings`` batches them — after
    one untimed warm-up: no start, import or reading."""
    campaign = load(data)
    sizes = [budget_items(prop, len(campaign)) for prop in DEFAULT_PROPS]
    orders = [np.random.default_rng(seed).permutation(len(campaign)) for seed in range(orderings)]
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        metaeval.evaluate_orderings(metaeval.full_reference(campaign), orders, sizes, measures=BENCH_MEASURES)
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _commit(revision: str = "HEAD") -> str:
    """The short commit of ``revision`` in this repository (``+ changes`` for a working tree with uncommitted ones)."""
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", revision], capture_output=True, text=True, check=True
    ).stdout.strip()
    if revision != "HEAD":
        return head
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    return head + (" + changes" if dirty else "")


def _export(revision: str, folder: Path) -> Path:
    """The source tree of ``revision`` (``git archive``) under ``folder``."""
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=RAW)
    parser.add_argument("--campaign", help="a real mt-metrics-eval campaign instead of the simulated one")
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--systems", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", metavar="REV", help="also time precomet at this git revision (e.g. main)")
    parser.add_argument("--out", type=Path, default=RESULTS / "startup.md")
    args = parser.parse_args()
    peer = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "peer_env.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"precomet": REPO}
        commits = {"precomet": _commit()}
        if args.before:
            trees["precomet before"] = _export(args.before, Path(tmp, "before"))
            commits["precomet before"] = _commit(args.before)
        ours_data, peer_data, metric, what = write_data(args, Path(tmp))
        out_json = str(Path(tmp, "ours.json"))
        bench = [
            sys.executable,
            "-m",
            "precomet",
            "benchmark",
            "--data",
            str(ours_data),
            "--methods",
            ",".join(METHODS),
            "--metric",
            metric,
            "--seeds",
            str(args.seeds),
            "--no-oracle",
            "-o",
            out_json,
        ]
        peer_argv = [peer, "-c", PEER_SCRIPT, str(peer_data), metric, str(args.seeds), str(Path(tmp, "peer.json"))]
        light = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
            "precomet --help": [sys.executable, "-m", "precomet", "--help"],
            "precomet info --data items.jsonl": [sys.executable, "-m", "precomet", "info", "--data", str(ours_data)],
        }
        same_work = [*bench[:-2], "--null-orderings", "0", "--workers", "1", *bench[-2:]]
        runs: dict[str, list[float]] = {name: [] for name in [*trees, SAME_WORK, "subset2evaluate"]}
        light_runs: dict[tuple[str, str], list[float]] = {}
        for tree in trees.values():  # one untimed run of each command writes the bytecode caches
            for argv in (bench, *light.values()):
                run_process(argv, tree=tree)
        run_process(peer_argv)
        for repeat in range(args.repeats):
            for name, tree in trees.items():
                runs[name].append(run_process(bench, tree=tree))
            runs[SAME_WORK].append(run_process(same_work, tree=REPO))
            runs["subset2evaluate"].append(run_process(peer_argv))
            print(f"run {repeat + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items()), flush=True)
            for name, tree in trees.items():
                for label, argv in light.items():
                    light_runs.setdefault((name, label), []).append(run_process(argv, tree=tree))
        imports = {
            name: statistics.median(import_seconds(bench, tree) for _ in range(args.repeats))
            for name, tree in trees.items()
        }
        compute = metaeval_seconds(ours_data, len(METHODS) + args.seeds, args.repeats)
        ours_json = json.loads(Path(out_json).read_text())
        peer_json = json.loads(Path(tmp, "peer.json").read_text())
    median = {name: statistics.median(times) for name, times in runs.items()}
    ratio = median["subset2evaluate"] / median["precomet"]
    same_ratio = median["subset2evaluate"] / median[SAME_WORK]
    data = f"--campaign {args.campaign}" if args.campaign else f"--items {args.items} --systems {args.systems}"
    command = (
        f"`PYTHONPATH=. .venv/bin/python benchmarks/bench_startup.py {data} --seeds {args.seeds}"
        f" --repeats {args.repeats}" + (f" --before {args.before}" if args.before else "") + "`"
    )
    before = f"; before ({commits['precomet before']}): " if args.before else ""
    lines = [
        f"# Whole-process time: precomet benchmark vs subset2evaluate 1.0.27 ({args.seeds} random seeds)",
        "",
        f"Command: {command}",
        "",
        f"Data: {what}. precomet: `precomet benchmark --data items.jsonl --methods {','.join(METHODS)}"
        f" --metric {metric} --seeds {args.seeds} --no-oracle -o out.json` (also searches each method's parity"
        f" budget and scores the null's {NULL_ORDERINGS} random orderings, which the peer has no counterpart of;"
        f" _{SAME_WORK}_ = the same command with `--null-orderings 0 --workers 1`);"
        " peer: one `python` process running `select_subset.basic` + `eval_spa` + `eval_clucor` for the"
        f" same 3 methods and {args.seeds} random seeds (10 budgets 5–50 %). One BLAS thread on both sides; both run"
        " from compiled bytecode (an untimed first run of each command writes precomet's caches; pip compiled the"
        " peer's at install); runs alternate. Source trees: "
        + ", ".join(f"{name} = {commit}" for name, commit in commits.items())
        + ".",
        "",
        "| run | " + " | ".join(runs) + " |",
        "|---" * (1 + len(runs)) + "|",
        *[
            f"| {r + 1} | " + " | ".join(f"{times[r]:.2f} s" for times in runs.values()) + " |"
            for r in range(args.repeats)
        ],
        "| **median** | " + " | ".join(f"**{median[name]:.2f} s**" for name in runs) + " |",
        "",
        f"- **whole-process speed-up vs subset2evaluate: {ratio:.0f}×** (median over median)"
        + (f"{before}{median['subset2evaluate'] / median['precomet before']:.0f}×" if args.before else "")
        + f"; doing only the peer's work ({SAME_WORK}: `--null-orderings 0 --workers 1`, no null, one process):"
        f" **{same_ratio:.0f}×**; 50× the peer would be {median['subset2evaluate'] / 50:.2f} s for the whole process",
        "- importing on the `precomet benchmark` path (`-X importtime`, sum of the top-level cumulative times, median"
        f" of {args.repeats} runs):"
        f" {imports['precomet']:.2f} s" + (f"{before}{imports['precomet before']:.2f} s" if args.before else ""),
        f"- the rest of the precomet process — reading the items, the random baseline, the methods with their parity"
        f" search, writing the JSON — takes {median['precomet'] - imports['precomet']:.2f} s (whole minus imports):"
        " what is left is the meta-evaluation itself (benchmarks/results/metaeval_speed.md)",
        f"- the meta-evaluation alone, in-process ({len(METHODS) + args.seeds} orderings × {len(DEFAULT_PROPS)}"
        " budgets,"
        f" SPA with the sign-flip tests, clusters, Kendall; full-set reference included; median of {args.repeats}"
        f" after a warm-up): {compute:.2f} s; with the imports, {imports['precomet'] + compute:.2f} s, not counting"
        " Python's start, reading the items, the parity search or writing the JSON"
        + (
            f" — above the {median['subset2evaluate'] / 50:.2f} s that 50× the peer allows"
            if imports["precomet"] + compute > median["subset2evaluate"] / 50
            else ""
        ),
        "- mean SPA over budgets, ours / peer: "
        + ", ".join(f"{m} {ours_json['methods'][m]['spa']:.4f} / {peer_json[m][0]:.4f}" for m in METHODS)
        + f", random {ours_json['random']['spa']:.4f} / {peer_json['random'][0]:.4f} (same utilities for avg/var;"
        " our MetricCons is Spearman, the peer's Kendall; different random draws)",
        "",
        "What keeps the start short: scipy is not imported at all (average ranks, the normal CDF of the Wilcoxon"
        " tail and the Student-t quantile in numpy and `math`: `precomet.stats`, checked against scipy in"
        " tests/unit/test_stats.py), nor sklearn, torch, transformers, Lightning,"
        " matplotlib, pulp, sacrebleu, pyro, py-irt, datasets, pyarrow, tqdm (bars off: no tqdm import) or yaml"
        " (`cli.main` imports only the module of the command it runs); tests/unit/test_imports.py guards this."
        " numpy remains.",
        "",
        "Start-up of light commands (median of the same runs):",
        "",
        "| command | " + " | ".join(trees) + " |",
        "|---" * (1 + len(trees)) + "|",
        *[
            f"| `{label}` | "
            + " | ".join(f"{statistics.median(light_runs[name, label]):.2f} s" for name in trees)
            + " |"
            for label in light
        ],
    ]
    print("\n".join(lines))
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
