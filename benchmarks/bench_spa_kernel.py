"""The verdict's sign-flip kernel against the machine (issue 53): achieved GFLOP/s beside a measured single-core
GEMM ceiling, and where the kernel's time goes.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_spa_kernel.py [--items 1000] [--systems 12] [--orderings 303]
       [--repeats 5] [--out benchmarks/results/spa-kernel.md]

Data: the simulated campaign of benchmarks/bench_startup.py (precomet.simulate, seed 0), its full-set reference
(1,000 sign flips), ``--orderings`` random orderings (303 = the default ``benchmark`` of startup.md: 3 methods,
100 random seeds and the null's 200 orderings) and 10 budgets of 5-50 %: the SPA of every prefix, as
``evaluate_orderings`` computes it (``_spa_prefixes``). One BLAS thread throughout; medians of ``--repeats``.

* **ceiling**: a 2,048³ single-precision GEMM (numpy → OpenBLAS), the machine's best FLOP rate for one core;
* **useful FLOPs**: 2 · orderings · largest budget · systems · sign flips (each item's scores times its sign flips,
  summed once per ordering); achieved GFLOP/s = useful FLOPs / time;
* **parts**: the same loop with only the gathers (items' scores and sign flips of each block), with the gathers and
  the batched products (the sums), and whole (the p-value counting on top).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from paths import RESULTS  # benchmarks/ is on sys.path

from precomet.metaeval.evaluation import _spa_prefixes
from precomet.metaeval.reference import full_reference
from precomet.significance import one_blas_thread
from precomet.simulate import simulate_campaign


def median_seconds(run, repeats: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def sums_only(ref, heads: np.ndarray, sizes: list[int], *, products: bool) -> np.ndarray:
    """The sign-flip sums of ``_spa_prefixes`` without the p-values (``products=False``: the gathers alone)."""
    values = ref.matrix if ref.exact is None else ref.exact
    partial = np.zeros((len(heads), values.shape[1], ref.permutations), dtype=values.dtype)
    start = 0
    for k in sizes:
        block = heads[:, start:k]
        scores, signs = values[block], ref.signs[block].astype(values.dtype)
        if products:
            partial += np.matmul(scores.transpose(0, 2, 1), signs)
        start = k
    return partial


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--systems", type=int, default=12)
    parser.add_argument("--orderings", type=int, default=303)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS / "spa-kernel.md"))
    args = parser.parse_args()
    campaign = simulate_campaign(n_items=args.items, n_systems=args.systems, seed=0)
    ref = full_reference(campaign)
    rng = np.random.default_rng(0)
    sizes = [max(2, round(args.items * share / 100)) for share in range(5, 55, 5)]
    heads = np.stack([rng.permutation(args.items)[: sizes[-1]] for _ in range(args.orderings)])
    flops = 2.0 * args.orderings * sizes[-1] * args.systems * ref.permutations
    square = np.random.default_rng(1).random((2048, 2048), dtype=np.float32)
    with one_blas_thread():
        ceiling = 2 * 2048**3 / median_seconds(lambda: square @ square, args.repeats) / 1e9
        gathers = median_seconds(lambda: sums_only(ref, heads, sizes, products=False), args.repeats)
        sums = median_seconds(lambda: sums_only(ref, heads, sizes, products=True), args.repeats)
        whole = median_seconds(lambda: _spa_prefixes(ref, heads, sizes), args.repeats)
    dtype = "float32 (scores on a whole-number grid: exact sums)" if ref.exact is not None else "float64"
    rows = [
        ("gathers (scores, sign flips per block)", gathers),
        ("gathers + batched products (the sums)", sums),
        ("whole kernel (sums + p-value counting)", whole),
    ]
    lines = [
        "# The SPA sign-flip kernel against a single-core GEMM",
        "",
        f"Command: `PYTHONPATH=. .venv/bin/python benchmarks/bench_spa_kernel.py --items {args.items} --systems"
        f" {args.systems} --orderings {args.orderings} --repeats {args.repeats}`",
        "",
        f"Simulated campaign {args.items} × {args.systems} (seed 0), {ref.permutations} sign flips, {args.orderings}"
        f" orderings × {len(sizes)} budgets ({sizes[0]}–{sizes[-1]} items), sums in {dtype}; one BLAS thread,"
        f" median of {args.repeats}.",
        "",
        f"- GEMM ceiling (2,048³ sgemm, one core): **{ceiling:.1f} GFLOP/s**",
        f"- useful FLOPs of the sums: {flops / 1e9:.2f} GFLOP; at the ceiling: {flops / ceiling / 1e9:.3f} s",
        "",
        "| part | seconds | useful GFLOP/s | share of the ceiling |",
        "|---|---:|---:|---:|",
    ]
    for name, seconds in rows:
        rate = flops / seconds / 1e9
        lines.append(f"| {name} | {seconds:.3f} | {rate:.1f} | {rate / ceiling:.0%} |")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__":
    main()
