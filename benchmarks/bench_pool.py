"""Pre-selection at pool scale: read, predict and select synthetic pools of 10k to 1M sources (issue 24, part 6).

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_pool.py [--sizes 10000 100000 1000000] [--universe 10000]
       [--chunk-size 10000] [--distinct] [--out benchmarks/results/pool.md]

The pools are built from the shared history's sources: ``--universe`` distinct source texts drawn at random (seed 0)
from every source file of ../shared/data/raw (mt-metrics-eval WMT22/23, the WMT21-23 news releases of both
directions: English, Chinese, Czech, German, Japanese, Russian, Ukrainian, … sentences and paragraphs), then
sampled with replacement to each size and shuffled; every item gets a domain drawn from the domain distribution of
the documented WMT22/23 campaigns (their 5 most frequent domains). Lengths are those of the real texts.

Stages, each a fresh process of the command a user runs (wall time and peak RSS of that process):

1. ``read``: the chunked reader (``precomet.io.chunks.iter_source_chunks``) over the whole pool, nothing else;
2. ``predict``: ``precomet predict --checkpoint checkpoints/metric-avg-e5 --data pool.jsonl --chunk-size N -o``:
   read, tokenise, embed and score chunk by chunk, and write the utilities (streamed into the output set);
3. ``select``: ``precomet select --data pool.jsonl --utility-file utilities.jsonl --proportion 0.2 --cost-aware
   --balance domain -o subset.jsonl``: the certified knapsack over 20 % of the estimated annotation cost with
   equal counts from the 5 domains, the subset and its manifest written;
4. ``select --checkpoint`` (apart from the sum): the same selection with the utilities predicted in the same
   process (``--checkpoint`` instead of ``--utility-file``), from an empty encoder cache of its own.

A pool sampled with replacement repeats texts, and the embedding cache encodes each distinct text once per
process, so ``predict`` costs grow with the distinct texts, not the pool: the table gives both, the encoder's rate
per distinct text, and what an all-distinct pool of the same size would take at that rate. ``--distinct`` builds
pools of distinct texts instead (the history holds about 29,000: sizes up to that) and extrapolates end-to-end time
and peak memory to 1,000,000 distinct sources with the measured growth exponents (issue 35).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from paths import RAW, REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)

CHECKPOINT = REPO / "checkpoints" / "metric-avg-e5"
MEASURE = r"""
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:])
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
print(f"MEASURED {done.returncode} {seconds:.3f} {peak:.3f}")
"""
READ = r"""
import sys
from precomet.io.chunks import iter_source_chunks
n = sum(len(ids) for ids, _ in iter_source_chunks(sys.argv[1], chunk_size=int(sys.argv[2])))
print(n)
"""


def source_texts() -> list[str]:
    """Every distinct non-empty source line of the shared history (sorted, so the draw is reproducible)."""
    files = [
        *sorted((RAW / "mt-metrics-eval-v2").glob("wmt2*/sources/*.txt")),
        *sorted((RAW / "wmt-news-systems").glob("wmt2*/txt/sources/*")),
        *sorted((RAW / "wmt-news-systems-toen").glob("wmt2*/txt/sources/*")),
    ]
    texts = {line.strip() for path in files for line in path.read_text(encoding="utf-8").splitlines()}
    return sorted(t for t in texts if t)


def domain_shares() -> dict[str, float]:
    """The 5 most frequent domains of the documented WMT22/23 campaigns and their shares among them."""
    counts: Counter[str] = Counter()
    for path in sorted((RAW / "mt-metrics-eval-v2").glob("wmt2*/documents/*.docs")):
        counts.update(line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines() if line)
    top = dict(counts.most_common(5))
    total = sum(top.values())
    return {name: count / total for name, count in top.items()}


def build_pool(
    path: Path, size: int, universe: list[str], shares: dict[str, float], seed: int, *, distinct: bool = False
) -> int:
    """Write ``size`` items (ids ``p0``, ``p1``, …) to canonical JSONL, drawn with replacement from ``universe``
    (or, ``distinct``, its first ``size`` texts); returns the number of distinct texts."""
    rng = np.random.default_rng([seed, size])
    picks = np.arange(size) if distinct else rng.integers(0, len(universe), size)
    domains = rng.choice(list(shares), size=size, p=list(shares.values()))
    with path.open("w", encoding="utf-8") as handle:
        for i, (pick, domain) in enumerate(zip(picks, domains)):
            handle.write(json.dumps({"id": f"p{i}", "src": universe[pick], "domain": str(domain)}, ensure_ascii=False))
            handle.write("\n")
    return len(np.unique(picks))


def measured(command: list[str], *, cache: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in GiB) of ``command`` run in its own process with the encoder cache in ``cache``
    (empty at first: nothing cached by earlier runs); a failure stops the benchmark."""
    env = {**os.environ, "PRECOMET_CACHE": str(cache)}
    args = [sys.executable, "-c", MEASURE, *command]
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    line = [row for row in done.stdout.splitlines() if row.startswith("MEASURED")][-1].split()
    if line[1] != "0":
        raise SystemExit(f"{' '.join(command)} failed ({line[1]}):\n{done.stderr[-3000:]}")
    return float(line[2]), float(line[3])


def run_size(size: int, args: argparse.Namespace, universe: list[str], shares: dict[str, float]) -> dict:
    precomet = [sys.executable, "-m", "precomet", "--no-progress"]
    with tempfile.TemporaryDirectory(prefix="precomet-pool-") as scratch:
        folder = Path(scratch)
        pool, utilities, subset = folder / "pool.jsonl", folder / "utilities.jsonl", folder / "subset.jsonl"
        distinct = build_pool(pool, size, universe, shares, seed=0, distinct=args.distinct)
        cache = folder / "encoder-cache"
        stages = {
            "read": measured([sys.executable, "-c", READ, str(pool), str(args.chunk_size)], cache=cache),
            "predict": measured(
                [*precomet, "predict", "--checkpoint", str(CHECKPOINT), "--data", str(pool)]
                + ["--chunk-size", str(args.chunk_size), "-o", str(utilities)],
                cache=cache,
            ),
            "select": measured(
                [*precomet, "select", "--data", str(pool), "--utility-file", str(utilities), "--proportion", "0.2"]
                + ["--cost-aware", "--balance", "domain", "-o", str(subset)],
                cache=cache,
            ),
        }
        manifest = json.loads(subset.with_name("subset.manifest.json").read_text(encoding="utf-8"))
        chosen = sum(1 for line in subset.read_text(encoding="utf-8").splitlines() if line.strip())
        one_command = measured(  # predict and select in one process, from its own empty encoder cache
            [*precomet, "select", "--data", str(pool), "--checkpoint", str(CHECKPOINT), "--proportion", "0.2"]
            + ["--cost-aware", "--balance", "domain", "-o", str(folder / "subset-checkpoint.jsonl")],
            cache=folder / "encoder-cache-select",
        )
    result = {"size": size, "distinct": distinct, "stages": stages, "chosen": chosen, "one_command": one_command}
    result["status"] = manifest["status"]
    print(json.dumps(result), flush=True)
    return result


def exponent(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) on log(size): how the time grows with the pool."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def report(results: list[dict], args: argparse.Namespace, universe: int, shares: dict[str, float]) -> str:
    rate = results[0]["distinct"] / results[0]["stages"]["predict"][0]  # the smallest pool: nearly all distinct
    lines = [
        "# Pre-selection at pool scale: read, predict, select (2 CPU cores)",
        "",
        "Command: `PYTHONPATH=. .venv/bin/python benchmarks/bench_pool.py --sizes "
        + " ".join(str(r["size"]) for r in results)
        + f" --universe {args.universe} --chunk-size {args.chunk_size}"
        + (" --distinct`" if args.distinct else "`"),
        "",
        ("Pools of distinct sources: the first N" if args.distinct else "Pools sampled with replacement")
        + f" of {universe:,} distinct history sources (multilingual sentences and"
        " paragraphs, in random order), domains drawn from the 5 most frequent WMT22/23 domains ("
        + ", ".join(f"{name} {share:.0%}" for name, share in shares.items())
        + "). Estimator: checkpoints/metric-avg-e5 (multilingual-e5-small). Selection: certified knapsack over 20 %"
        " of the estimated annotation cost, equal counts from the 5 domains. Each stage is a fresh process with an"
        " empty encoder cache; peak = its maximum RSS. `select --checkpoint`: the same selection predicted and made"
        " in one process (`precomet select --checkpoint checkpoints/metric-avg-e5 --data pool.jsonl --proportion 0.2"
        " --cost-aware --balance domain`), from an empty cache of its own.",
        "",
        "| sources | distinct texts | read s | predict s | select s | end to end s | peak GiB | chosen | status"
        " | `select --checkpoint` s | its peak GiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s = r["stages"]
        total = sum(seconds for seconds, _ in s.values())
        peak = max(gib for _, gib in s.values())
        lines.append(
            f"| {r['size']:,} | {r['distinct']:,} | {s['read'][0]:.1f} | {s['predict'][0]:.1f} | {s['select'][0]:.1f}"
            f" | {total:.1f} | {peak:.2f} | {r['chosen']:,} | {r['status']}"
            + (" | {:.1f} | {:.2f} |".format(*r["one_command"]) if "one_command" in r else " | – | – |")
        )
    sizes = [r["size"] for r in results]
    lines.append("")
    if len(results) > 1:
        for stage in ("read", "predict", "select"):
            slope = exponent(sizes, [r["stages"][stage][0] for r in results])
            lines.append(f"- growth exponent of {stage} time ({sizes[0]:,} to {sizes[-1]:,}): {slope:.2f}")
        total = [sum(seconds for seconds, _ in r["stages"].values()) for r in results]
        lines.append(f"- growth exponent end to end: {exponent(sizes, total):.2f}")
        if args.distinct:  # a start-up cost pulls the fitted exponent below 1: the linear estimate is the bound
            peaks = [max(gib for _, gib in r["stages"].values()) for r in results]
            power = total[-1] * (1_000_000 / sizes[-1]) ** exponent(sizes, total)
            marginal = (total[-1] - total[-2]) / (sizes[-1] - sizes[-2])  # seconds per further source
            linear = total[-1] + marginal * (1_000_000 - sizes[-1])
            memory = peaks[-1] * (1_000_000 / sizes[-1]) ** max(exponent(sizes, peaks), 0.0)
            lines.append(
                f"- 1,000,000 distinct sources, extrapolated: {power / 3600:.2f} h with the end-to-end exponent,"
                f" {linear / 3600:.2f} h at the marginal rate of the last two sizes ({1 / marginal:.0f} sources/s);"
                f" the larger, {max(power, linear) / 3600:.2f} h, is the estimate; peak memory"
                f" {memory:.2f} GiB (peak exponent {exponent(sizes, peaks):.2f})"
            )
    largest = results[-1]["size"]
    lines.append(
        f"- predict on the {results[0]['size']:,}-source pool: {rate:.0f} distinct texts/s; an all-distinct pool of"
        f" {largest:,} sources would take about {largest / rate / 3600:.1f} h to predict at that rate"
    )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--universe", type=int, default=10_000, help="distinct history texts to sample from")
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--distinct", action="store_true", help="pools of distinct texts (the universe's first N)")
    parser.add_argument("--out", type=Path, help="default: benchmarks/results/pool.md (pool-distinct.md)")
    args = parser.parse_args()
    args.out = args.out or RESULTS / ("pool-distinct.md" if args.distinct else "pool.md")
    texts = source_texts()
    chosen = np.random.default_rng(0).choice(len(texts), size=min(args.universe, len(texts)), replace=False)
    universe = [texts[i] for i in sorted(chosen)]
    shares = domain_shares()
    started = time.perf_counter()
    results = [run_size(size, args, universe, shares) for size in sorted(args.sizes)]
    args.out.write_text(report(results, args, len(universe), shares), encoding="utf-8")
    print(f"wrote {args.out} ({math.ceil(time.perf_counter() - started)} s)")


if __name__ == "__main__":
    main()
