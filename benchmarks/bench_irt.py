"""IRT fit time and parameter recovery on synthetic data drawn from the model (py-irt 0.7.1, CPU, 1 thread).

    .venv/bin/python benchmarks/bench_irt.py [--items 2000] [--systems 15] [--epochs 1000] [--out FILE]

Goals: fit of 2000 items × 15 systems ≤ 30 s; Pearson r of recovered difficulty with the truth ≥ 0.8,
of ability ≥ 0.9. Responses: c·σ(a(θ − b)) + N(0, 0.05), clipped to [0, 1].
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from paths import RESULTS  # noqa: E402  (benchmarks/paths.py: the script's folder is on sys.path)
from report import results_file  # noqa: E402

from precomet.campaign import Campaign  # noqa: E402
from precomet.utilities.irt import fit_irt  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--systems", type=int, default=15)
    parser.add_argument("--epochs", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS / "irt.md", help="the printed table, as markdown")
    args = parser.parse_args()
    with results_file(args.out, "IRT fit time and parameter recovery (synthetic data from the model)"):
        measure(args)


def measure(args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    n, s = args.items, args.systems
    theta, b = rng.normal(0, 1, s), rng.normal(0, 1, n)
    a, c = rng.lognormal(0, 0.3, n), rng.uniform(0.7, 1.0, n)
    print("| model | items × systems | epochs | fit s | r(b) | r(θ) | r(a) | r(c) |\n|---|---|---|---|---|---|---|---|")
    for model in ("4pl", "2pl"):
        feas = c if model == "4pl" else np.ones(n)
        p = feas[:, None] / (1 + np.exp(-a[:, None] * (theta[None] - b[:, None])))
        responses = np.clip(p + rng.normal(0, 0.05, p.shape), 0, 1)
        campaign = Campaign.build(
            src=[f"x{i}" for i in range(n)], systems=[f"m{j}" for j in range(s)], scores={"r": responses}
        )
        start = time.perf_counter()
        fitted = fit_irt(campaign, metric="r", model=model, epochs=args.epochs, seed=0)
        seconds = time.perf_counter() - start
        r = lambda x, y: np.corrcoef(x, y)[0, 1] if np.std(x) > 0 else float("nan")  # noqa: E731
        print(
            f"| {model} | {n} × {s} | {args.epochs} | {seconds:.1f} | {r(fitted.difficulty, b):.3f} "
            f"| {r(fitted.ability, theta):.3f}"
            f" | {r(fitted.discrimination, a):.3f} | {r(fitted.feasibility, feas):.3f} |"
        )


if __name__ == "__main__":
    main()
