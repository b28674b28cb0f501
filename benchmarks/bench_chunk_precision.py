"""How far `precomet predict --chunk-size C` is from one chunk (issue 51): the largest absolute difference of the
utilities, per chunk size, on real sources with the shipped estimator.

Usage: PYTHONPATH=. .venv/bin/python benchmarks/bench_chunk_precision.py [--n 150] [--sizes 1 7]
       [--out benchmarks/results/chunk-precision.md]

The first ``--n`` sources of WMT23 en-de (mt-metrics-eval) are predicted once as one chunk and once per chunk size
in ``--sizes`` (the same process, batch size 16). Chunks change the length-sorted batches, so float32 sums run in
another order: the table says by how much, next to the utilities' magnitude and the float32 spacing there.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from bench_pool import CHECKPOINT  # benchmarks/ is on sys.path
from paths import RAW, RESULTS

SOURCES = RAW / "mt-metrics-eval-v2" / "wmt23" / "sources" / "en-de.txt"


def utilities(estimator, sources: list[str], chunk_size: int) -> np.ndarray:
    from precomet.estimator.pool import predict_pool

    ids = [str(i) for i in range(len(sources))]
    chunks = [(ids[i : i + chunk_size], sources[i : i + chunk_size]) for i in range(0, len(sources), chunk_size)]
    values: list[float] = []

    def write(ids, chunk_values) -> None:
        values.extend(float(v) for v in chunk_values)

    predict_pool(estimator, iter(chunks), write=write, resume_dir=None, n_items=len(sources), batch_size=16)
    return np.asarray(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 7])
    parser.add_argument("--out", default=str(RESULTS / "chunk-precision.md"))
    args = parser.parse_args()
    if not SOURCES.is_file():
        sys.exit(f"skipped: {SOURCES} is absent (see ../shared/data/raw/SOURCES.md)")
    sources = SOURCES.read_text(encoding="utf-8").splitlines()[: args.n]
    from precomet.estimator.checkpoint import load_estimator  # torch: after --help

    estimator = load_estimator(CHECKPOINT)
    whole = utilities(estimator, sources, len(sources))
    scale = float(np.abs(whole).max())
    lines = [
        "# `predict --chunk-size`: distance from one chunk",
        "",
        f"Command: `PYTHONPATH=. .venv/bin/python benchmarks/bench_chunk_precision.py --n {args.n} --sizes"
        f" {' '.join(map(str, args.sizes))}`",
        "",
        f"{len(sources)} WMT23 en-de sources, checkpoint `{CHECKPOINT.name}`; utilities up to {scale:.3g} in"
        f" magnitude (float32 spacing there: {float(np.spacing(np.float32(scale))):.2g}).",
        "",
        "| chunk size | largest absolute difference | identical utilities |",
        "|---:|---:|---:|",
    ]
    for size in args.sizes:
        diff = np.abs(utilities(estimator, sources, size) - whole)
        lines.append(f"| {size} | {diff.max():.2g} | {int((diff == 0).sum())} of {len(diff)} |")
        print(lines[-1], flush=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
