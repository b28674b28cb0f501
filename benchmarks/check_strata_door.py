"""Does the strata selector pick the same items through the embedding door as from the source suite's vectors?

The source suite (``bench_source_suite.py``) passes ``encode_cached``'s e5-small vectors to
``precomet.selection.strata.stratified_utility`` as they come (float32, unit length to float rounding); since 0.19.0
``select/benchmark --selector strata`` embeds through ``precomet.utilities.embed.embed_texts`` (float64,
L2-normalised again). For the dev and test campaigns of the suite, at 5, 10, 25 and 50 % budgets and seeds 0-2, with
the shipped checkpoint's prediction and with a random prediction, this counts the selections that differ and prints
how far the vectors are apart. A property of the two inputs, not a quality verdict.

    .venv/bin/python benchmarks/check_strata_door.py [CAMPAIGN ...]
"""

from __future__ import annotations

import argparse
import sys

from paths import REPO


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("campaigns", nargs="*", help="campaigns of the source suite (default: its dev and test ones)")
    args = parser.parse_args()

    import numpy as np
    from bench_source_suite import DEV, SUITE

    from precomet.encoders import encode_cached, get_encoder
    from precomet.estimator import predict_sources
    from precomet.io import load
    from precomet.selection.strata import stratified_utility
    from precomet.utilities.embed import embed_texts

    campaigns = {**DEV, **SUITE}
    unknown = sorted(set(args.campaigns) - set(campaigns))
    if unknown:
        parser.error(f"unknown campaign(s) {unknown}; valid: {', '.join(campaigns)}")
    total = differ = 0
    print("| campaign | items | max abs(norm - 1), suite's vectors | selections that differ |")
    print("|---|---:|---:|---:|")
    for name in args.campaigns or campaigns:
        path, inner, human = campaigns[name]
        src = list(load(path, campaign=inner, human=human).src)
        suite = encode_cached(get_encoder("e5-small"), src, progress=False)
        door = embed_texts(src, encoder="e5-small", use="strata")
        norm_error = float(np.abs(np.linalg.norm(suite.astype(np.float64), axis=1) - 1).max())
        predictions = {
            "shipped": predict_sources(REPO / "checkpoints" / "metric-avg-e5", src, progress=False),
            "random": np.random.default_rng(0).random(len(src)),
        }
        cases = changed = 0
        for budget in sorted({max(1, round(len(src) * p)) for p in (0.05, 0.1, 0.25, 0.5)}):
            for seed in range(3):
                for predicted in predictions.values():
                    a = np.argsort(-stratified_utility(predicted, suite, budget=budget, seed=seed), kind="stable")
                    b = np.argsort(-stratified_utility(predicted, door, budget=budget, seed=seed), kind="stable")
                    cases += 1
                    changed += set(a[:budget]) != set(b[:budget])
        total, differ = total + cases, differ + changed
        print(f"| {name} | {len(src):,} | {norm_error:.1e} | {changed} of {cases} |", flush=True)
    print(f"\n{differ} of {total} selections differ.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
