"""Meta-evaluation speed and agreement: precomet vs subset2evaluate 1.0.27 on identical subsets.

Usage: .venv/bin/python benchmarks/bench_metaeval.py [--campaign wmt23/en-de] [--seeds 100] [--out FILE]

The loop is the paper's output-based benchmark: 6 method orderings (MetricAvg / MetricVar / MetricCons
on MetricX-23-c and on COMET; utilities computed once, not timed) and ``--seeds`` random orderings, each cut at
10 budgets (5 %..50 %), and for every subset SPA + cluster count + Kendall τ-b against the full set.
Both tools meta-evaluate exactly the same subsets; the peer runs in benchmarks/.peer-venv via subprocess.
Prints the speed ratio, the SPA agreement (vs the permutation noise of SPA itself), cluster-count
agreement and the peer's item-order dependence.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from paths import REPO  # benchmarks/paths.py (the script's folder is on sys.path)

from precomet import metaeval as me
from precomet.io import load

PROPS = np.linspace(0.05, 0.5, 10)

PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
import scipy.stats  # imported before timing, as on our side
from subset2evaluate.evaluate import eval_subset_spa, eval_subset_clusters, eval_subset_correlation
data = json.load(open(sys.argv[1]))
subsets = json.load(open(sys.argv[2]))
start = time.perf_counter()
out = []
for idx in subsets:
    new = [data[i] for i in idx]
    out.append([eval_subset_spa(new, data), eval_subset_clusters(new), eval_subset_correlation(new, data)])
seconds = time.perf_counter() - start
rev = [eval_subset_spa([data[i] for i in idx[::-1]], data) for idx in subsets[:20]]
json.dump({"seconds": seconds, "values": out, "reversed_spa": rev}, open(sys.argv[3], "w"))
"""


def orderings(campaign, seeds: int) -> dict[str, np.ndarray]:
    """Utility orderings (best first): metric moments on two metrics, then random permutations."""
    out = {}
    for metric in ("MetricX-23-c", "COMET"):
        m = campaign.score(metric)
        means = m.mean(axis=0)
        cons = [me.kendall_tau_b(row, means) for row in m]
        for name, utility in (("avg", -m.mean(axis=1)), ("var", m.var(axis=1)), ("cons", np.array(cons))):
            out[f"metric_{name}[{metric}]"] = np.argsort(-utility, kind="stable")
    for seed in range(seeds):
        out[f"random#{seed}"] = np.random.default_rng(seed).permutation(len(campaign))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=REPO.parent / "shared" / "data" / "raw")
    parser.add_argument("--campaign", default="wmt23/en-de")
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--out", type=Path, help="also write the summary (markdown) here")
    args = parser.parse_args()
    peer = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "peer_env.sh")], capture_output=True, text=True, check=True
    ).stdout.strip()

    campaign = load(args.raw / "mt-metrics-eval-v2", campaign=args.campaign, human="mqm")
    n = len(campaign)
    ranked = list(orderings(campaign, args.seeds).values())
    sizes = [int(n * p) for p in PROPS]
    subsets = [order[:k] for order in ranked for k in sizes]

    measures = ("spa", "clusters", "kendall")
    # warm-up outside the timing (imports, BLAS thread-pool scan), as the peer script imports before timing
    me.evaluate_orderings(me.full_reference(campaign, seed=1, permutations=64), ranked[:1], sizes[:1])
    start = time.perf_counter()  # what precomet benchmark does: every ranking's nested top-k subsets, batched
    ref = me.full_reference(campaign)
    ours = me.evaluate_orderings(ref, ranked, sizes, measures=measures).reshape(-1, len(measures))
    ours_seconds = time.perf_counter() - start
    start = time.perf_counter()  # the same subsets one by one
    single = np.array([[me.evaluate_indices(ref, idx, measures=measures)[k] for k in measures] for idx in subsets])
    single_seconds = time.perf_counter() - start
    assert np.allclose(single, ours, rtol=0, atol=1e-12)

    with tempfile.TemporaryDirectory() as tmp:
        data_file, subsets_file, out_file = Path(tmp, "data.json"), Path(tmp, "subsets.json"), Path(tmp, "out.json")
        human = campaign.score("human")
        data = [
            {
                "src": campaign.src[i],
                "scores": {s: {"human": float(human[i, j])} for j, s in enumerate(campaign.systems)},
            }
            for i in range(n)
        ]
        data_file.write_text(json.dumps(data))
        subsets_file.write_text(json.dumps([idx.tolist() for idx in subsets]))
        # one BLAS/OpenMP thread, as on our side: with threads the peer's time swung 9-119 s with machine load
        one_thread = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        subprocess.run(
            [peer, "-c", PEER_SCRIPT, str(data_file), str(subsets_file), str(out_file)], check=True, env=one_thread
        )
        result = json.loads(out_file.read_text())
    theirs = np.array(result["values"], dtype=float)

    # permutation noise of SPA itself: our SPA of the same subsets under 10 different permutation seeds
    probe = subsets[:: max(1, len(subsets) // 100)]
    noise = np.std(
        [[me.spa_indices(me.full_reference(campaign, seed=s), idx) for idx in probe] for s in range(10)], axis=0, ddof=1
    )
    diff = ours[:, 0] - theirs[:, 0]
    ours_rev = [me.spa_indices(ref, idx[::-1]) for idx in subsets[:20]]
    noise_ratio = np.mean(np.abs(diff[:: max(1, len(subsets) // 100)]) / (np.sqrt(2) * np.maximum(noise, 1e-12)))
    lines = [
        f"# Meta-evaluation loop: precomet vs subset2evaluate 1.0.27 ({args.campaign}, MQM, "
        f"{n} items × {len(campaign.systems)} systems)",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_metaeval.py --campaign {args.campaign} --seeds {args.seeds}`",
        "",
        f"- subsets meta-evaluated: {len(subsets)} (6 method orderings + {args.seeds} random, × 10 budgets 5–50 %), "
        "each SPA (1000 permutations) + clusters + Kendall τ-b",
        (
            f"- precomet: {ours_seconds:.2f} s (incl. the full-set reference; "
            "`evaluate_orderings`: nested budgets share the SPA"
            " products, all orderings batched, one vectorised Wilcoxon per budget); "
            f"subset by subset {single_seconds:.2f} s;"
            f" subset2evaluate: {result['seconds']:.1f} s"
        ),
        f"- **speed-up: {result['seconds'] / ours_seconds:.0f}×** (both sides single-threaded) "
        f"(subset by subset: {result['seconds'] / single_seconds:.0f}×)",
        f"- SPA, ours − peer on identical subsets: mean {diff.mean():+.4f}, mean |·| {np.abs(diff).mean():.4f}, "
        f"max |·| {np.abs(diff).max():.4f}",
        (
            "- SPA permutation noise (std of our SPA over 10 permutation seeds, same subsets): "
            f"mean {noise.mean():.4f}, max {noise.max():.4f}"
            f" → |ours − peer| / (√2·noise) mean {noise_ratio:.2f}"
        ),
        f"- cluster count equal on {np.mean(ours[:, 1] == theirs[:, 1]):.1%} of subsets "
        f"(mean ours {ours[:, 1].mean():.3f}, peer {theirs[:, 1].mean():.3f})",
        f"- Kendall τ-b equal on {np.mean(np.isclose(ours[:, 2], theirs[:, 2])):.1%} of subsets",
        (
            "- item-order dependence, 20 subsets evaluated forwards and reversed: "
            f"peer max |ΔSPA| {np.max(np.abs(np.array(result['reversed_spa']) - theirs[:20, 0])):.4f};"
            f" precomet max |ΔSPA| {np.max(np.abs(np.array(ours_rev) - ours[:20, 0])):.4f}"
        ),
    ]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
