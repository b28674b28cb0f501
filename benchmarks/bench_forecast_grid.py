"""The waves stop forecast on a large pool with small waves: every future look read in turn vs the grid of
``precomet.waves.stop.FORECAST_GRID`` looks then the first stop's bracket in turn, side by side in one run on one
live call.

The call is the fault matrix's ``race-two-next-answered`` setup (``benchmarks/waves_matrix.py``: a 20,000-item
pool of three systems, 6-item waves, wave 1 answered), run in this process with each search; the table gives both
forecasts (the report's predicted stop share and interval): the verdict is not monotone in the looks, so the grid
can miss a stop between two of its looks.

Run: ``.venv/bin/python benchmarks/bench_forecast_grid.py [--items 20000]`` (writes
``benchmarks/results/forecast-grid.md``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import waves_matrix  # noqa: E402 -- the fault matrix's pool and answers

from precomet.cli import main as precomet  # noqa: E402
from precomet.waves import stop  # noqa: E402

ARGV = "waves --data pool.jsonl --chooser random --size 6 --manifest m.json --judgements j1.jsonl --report r.json"


def _one_call(folder: Path, grid: int) -> tuple[float, dict]:
    """Seconds of the live call with the forecast reading ``grid`` looks before bisecting, and its report."""
    stop.FORECAST_GRID = grid
    before = Path.cwd()
    os.chdir(folder)
    try:
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            assert precomet(shlex.split(ARGV)) == 0
        seconds = time.perf_counter() - started
        return seconds, json.loads((folder / "r.json").read_text())
    finally:
        os.chdir(before)


def _forecast(report: dict) -> str:
    low, high = report["predicted_stop_interval"]
    return f"{report['predicted_stop_share']:.4f} [{low:.4f}, {high:.4f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="forecast-grid-"))
    waves_matrix.answered(folder, n=args.items)
    default = stop.FORECAST_GRID
    every, every_report = _one_call(folder, 10**9)  # every look in turn (the search of 0.20.0)
    grid, grid_report = _one_call(folder, default)
    keys = ("predicted_stop_share", "predicted_stop_interval")
    same = all(every_report[k] == grid_report[k] for k in keys)
    lines = [
        "Command: `.venv/bin/python benchmarks/bench_forecast_grid.py"
        + (f" --items {args.items}" if args.items != 20000 else "")
        + "`; 2 CPU cores, one live `precomet waves` call (in process) on the fault matrix's answered pool of"
        f" {args.items:,} items × 3 systems, 6-item waves.",
        "",
        "| forecast search | seconds of the call | predicted stop share [interval] |",
        "|---|---|---|",
        f"| every look in turn | {every:.1f} | {_forecast(every_report)} |",
        f"| grid of {default} looks, then the bracket in turn | {grid:.1f} | {_forecast(grid_report)} |",
        "",
        f"Ratio: **{every / grid:.1f}×** faster; the forecasts are "
        + (
            "equal."
            if same
            else "not equal: the grid missed a stop between two of its looks (the verdict is not"
            " monotone in the looks), so its forecast comes later."
        ),
        "",
    ]
    out = HERE / "results" / "forecast-grid.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
