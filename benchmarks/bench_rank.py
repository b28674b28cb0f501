"""Speed of ``precomet rank`` (issue 14 goal: 100k items × 30 systems, 1000 bootstrap rounds in ≤ 5 s on 2 cores)
and writes benchmarks/results/rank.md.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_rank.py [--items 100000] [--systems 30] [--rounds 1000]
       [--repeat 3] [--missing 0.1] [--out benchmarks/results/rank.md]

Synthetic scores (seeded normal, one column per system) in a :class:`precomet.Campaign`; each row is the best and
the median wall time of ``--repeat`` full :func:`precomet.rank.rank_systems` calls (means, bootstrap CIs, Wilcoxon
clusters, win probabilities, data hash for the signature), plus the bootstrap step alone. The complete case and a
case with ``--missing`` of the ratings missing (NaN) are both timed. Also times the naive per-round loop
(``matrix[rng.integers(...)].mean(0)``) on the same data as the reference implementation it replaces.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from paths import REPO  # benchmarks/paths.py (the script's folder is on sys.path)

import precomet
from precomet.campaign import Campaign
from precomet.rank import bootstrap_means, rank_systems


def campaign(items: int, systems: int, missing: float, seed: int = 0) -> Campaign:
    rng = np.random.default_rng(seed)
    scores = rng.normal(0, 25, size=(items, systems)) + np.linspace(0, 3, systems)
    if missing:
        scores[rng.random(scores.shape) < missing] = np.nan
    names = [f"sys{j:02d}" for j in range(systems)]
    return Campaign.build(
        ids=[f"i{i}" for i in range(items)],
        src=[f"s{i}" for i in range(items)],
        systems=names,
        scores={"human": scores},
        name=f"synthetic-{items}x{systems}",
    )


def timed(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--systems", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--missing", type=float, default=0.1)
    parser.add_argument(
        "--naive-rounds", type=int, default=100, help="rounds of the naive loop (extrapolated to --rounds)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "rank.md")
    args = parser.parse_args()

    rows = []
    for missing in (0.0, args.missing):
        data = campaign(args.items, args.systems, missing)
        label = "complete" if not missing else f"{missing:.0%} missing"
        best, med = timed(lambda data=data: rank_systems(data, rounds=args.rounds), args.repeat)
        rows.append((f"rank_systems, {label}", best, med))
        matrix = data.score("human")
        best, med = timed(lambda matrix=matrix: bootstrap_means(matrix, rounds=args.rounds), args.repeat)
        rows.append((f"bootstrap_means only, {label}", best, med))
    matrix = campaign(args.items, args.systems, 0.0).score("human")

    def naive():
        rng = np.random.default_rng(0)
        for _ in range(args.naive_rounds):
            matrix[rng.integers(0, len(matrix), len(matrix))].mean(axis=0)

    best, med = timed(naive, 1)
    scale = args.rounds / args.naive_rounds
    rows.append(
        (f"naive loop (index + mean per round; {args.naive_rounds} rounds × {scale:g})", best * scale, med * scale)
    )

    command = "PYTHONPATH=. .venv/bin/python benchmarks/bench_rank.py " + " ".join(sys.argv[1:])
    lines = [
        "# precomet rank: speed",
        "",
        f"Command: `{command.strip()}`  ",
        f"Synthetic campaign: {args.items} items × {args.systems} systems ({args.items * args.systems:,} ratings), "
        f"{args.rounds} bootstrap rounds; best / median of {args.repeat} calls; {os.cpu_count()} CPU cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}, precomet {precomet.__version__}. "
        "Goal (issue 14): ≤ 5 s.",
        "",
        "| step | best s | median s |",
        "|---|---|---|",
        *[f"| {name} | {best:.2f} | {med:.2f} |" for name, best, med in rows],
        "",
        "`rank_systems` = system means, paired item bootstrap (multiplicities from one `bincount` per chunk of rounds, "
        "times the score matrix), percentile CIs, Wilcoxon clusters (the default WMT rule, testing only the pairs it "
        "reads) and win probabilities, plus the data hash of the signature. The naive row is the per-round "
        "fancy-index-and-mean loop it replaces, extrapolated.",
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
