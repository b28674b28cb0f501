"""The output-safety guarantees under many interrupts (issue 33): ``precomet select`` started ``--rounds`` times for
each interrupting signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) and interrupted after a delay drawn uniformly from
``[0, --max-delay]`` seconds (start-up included, where an interrupt once ended a run with exit -2 about once in
30), two runs at a time. Each run is checked as tests/unit/test_output_safety.py checks one:

1. the input is never changed;
2. the outputs appear together or not at all (the subset and its manifest, or nothing), never a temporary;
3. an interrupted run exits 130 (or dies of the signal before precomet installs its handlers, or in Python's
   start-up before precomet runs), and never ends in success after an "Exception ignored" interrupt.

Writes benchmarks/results/interrupts.md.

    .venv/bin/python benchmarks/stress_interrupts.py --rounds 200
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from paths import REPO, RESULTS

ITEMS = "".join(
    f'{{"id": "{i}", "src": "source {i}", "tgt": {{"A": "a {i}", "B": "b {i}"}}, "scores": {{"A": {{"m": {i % 5}}},'
    f' "B": {{"m": {(i * 3) % 7}}}}}}}\n'
    for i in range(40)
)
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def one_run(signum: int, delay: float) -> tuple[str, str]:
    """``(outcome, problem)``: outcome is how the run ended; problem is empty when every guarantee held."""
    with tempfile.TemporaryDirectory(prefix="precomet-stress-") as folder:
        work = Path(folder)
        (work / "items.jsonl").write_text(ITEMS)
        argv = ["select", "--data", "items.jsonl", "--method", "metric_var", "--metric", "m", "--budget", "2"]
        child = subprocess.Popen(
            [sys.executable, "-m", "precomet", *argv, "-o", "s.jsonl"],
            cwd=work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        time.sleep(delay)
        child.send_signal(signum)
        _, err = child.communicate(timeout=120)
        names = sorted(p.name for p in work.iterdir())
        code = child.returncode
        if (work / "items.jsonl").read_text() != ITEMS:
            return "input changed", "the input was changed"
        if names not in (["items.jsonl"], ["items.jsonl", "s.jsonl", "s.manifest.json"]):
            return f"exit {code}", f"left {names}"
        if code == 0:
            return "finished first", "" if b"Exception ignored" not in err else "success after a swallowed interrupt"
        starting = code == 1 and b"KeyboardInterrupt" in err and b"precomet/cli.py" not in err
        if code == 130:
            return "exit 130", ""
        if code == -signum:
            return "killed before the handlers", ""
        if starting:
            return "interrupted in Python's start-up", ""
        return f"exit {code}", f"exit {code}: {err.decode(errors='replace')[-300:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="runs per signal (default 200)")
    parser.add_argument("--max-delay", type=float, default=1.0, help="latest interrupt, in seconds (default 1.0)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    draw = random.Random(args.seed)
    cases = [(signum, draw.uniform(0, args.max_delay)) for _ in range(args.rounds) for signum in SIGNALS]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda case: one_run(*case), cases))
    seconds = time.perf_counter() - started
    outcomes: dict[str, collections.Counter] = {s.name: collections.Counter() for s in SIGNALS}
    problems = []
    for (signum, delay), (outcome, problem) in zip(cases, results):
        outcomes[signal.Signals(signum).name][outcome] += 1
        if problem:
            problems.append(f"{signal.Signals(signum).name} at {delay:.2f} s: {problem}")
    kinds = sorted({kind for counts in outcomes.values() for kind in counts})
    lines = [
        "# Output safety under interrupts",
        "",
        f"Command: `.venv/bin/python benchmarks/stress_interrupts.py --rounds {args.rounds} --max-delay"
        f" {args.max_delay:g} --seed {args.seed}`; {len(cases)} runs of `precomet select`, two at a time,"
        f" {seconds:.0f} s.",
        "",
        f"Each run is interrupted after a delay drawn uniformly from [0, {args.max_delay:g}] s and checked: the input"
        " unchanged; the subset and its manifest together or nothing, never a temporary; exit 130 (or death by the"
        " signal before the handlers exist), never success after a swallowed interrupt.",
        "",
        "| signal | " + " | ".join(kinds) + " |",
        "|---|" + "---|" * len(kinds),
        *(f"| {name} | " + " | ".join(str(counts[k]) for k in kinds) + " |" for name, counts in outcomes.items()),
        "",
        f"Runs that broke a guarantee: {len(problems)} of {len(cases)}.",
        *(f"- {problem}" for problem in problems[:20]),
        "",
    ]
    (RESULTS / "interrupts.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
