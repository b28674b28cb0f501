"""Wall times a new user meets in the first hour, as medians on this machine kind: ``precomet demo`` (what
``make demo`` runs once the venv exists) and the fast test loop (``make test-fast``). Writes
``benchmarks/results/first_hour.md`` with the conditions (cores, load average before each run), which the README's
time claims cite.

Usage: .venv/bin/python benchmarks/bench_first_hour.py [--repeats 3] [--out benchmarks/results/first_hour.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from paths import REPO, RESULTS

COMMANDS = {
    "precomet demo (make demo, venv in place)": lambda out: [sys.executable, "-m", "precomet", "demo", "-o", out],
    # what the Makefile runs (since issue 33: pytest -n 2 -m "not slow", both cores)
    "fast test loop (make test-fast)": lambda out: ["make", "--no-print-directory", "test-fast"],
}


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "first_hour.md")
    args = parser.parse_args()
    rows = []
    for name, command in COMMANDS.items():
        seconds, loads = [], []
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as scratch:
                loads.append(os.getloadavg()[0])
                seconds.append(timed(command(str(Path(scratch) / "demo-output"))))
        rows.append((name, statistics.median(seconds), min(seconds), max(seconds), statistics.median(loads)))
        print(f"{name}: median {rows[-1][1]:.1f} s ({', '.join(f'{s:.1f}' for s in seconds)})", flush=True)
    lines = [
        "# First-hour wall times",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_first_hour.py --repeats {args.repeats}`; {os.cpu_count()} CPU"
        f" cores, Python {platform.python_version()}, {platform.machine()}; medians of {args.repeats} runs.",
        "",
        "| what | median (s) | min (s) | max (s) | 1-min load average before a run (median) |",
        "|---|---|---|---|---|",
        *(f"| {n} | {m:.1f} | {lo:.1f} | {hi:.1f} | {load:.1f} |" for n, m, lo, hi, load in rows),
        "",
        "Times grow with the machine's load: a busy 2-core machine (load 4 and more) takes several times as long.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
