"""Held-out-campaign evaluation of source-based estimators (PreCOMET^src) from ../shared/data/raw.

For each test campaign (default: WMT23 en-de MQM and TED en-de MQM) and each target method, targets are
built from every OTHER campaign (per-campaign z-score of the human-score utility), a MiniLM estimator is
trained with configs/precomet-minilm.yaml (FROZEN encoder, cached features: a CPU-budget choice, not the
paper's fine-tuned XLM-R), the test campaign's sources are scored, and we report Pearson / Kendall
between predicted and true utilities and write utility files (signature line, then ``{"id", "utility"}``) for
``precomet benchmark --utility-file``.

    .venv/bin/python training/heldout.py --out benchmarks/out/estimator [--methods diversity metric_var ...]
        [--train-seeds 0 1 2]   # one estimator per training seed (single-seed parities vary by ±15 points)
Then, per test campaign, the printed ``precomet benchmark`` command; ``training/ensemble.py`` averages the
per-seed predictions.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau, pearsonr

RAW = Path(os.environ.get("PRECOMET_RAW_DATA", Path(__file__).resolve().parents[2] / "shared" / "data" / "raw"))
REPO = Path(__file__).resolve().parents[1]
# name -> (path, campaign-inside-path); WMT23 ESA re-annotation is left out: same sources as WMT23 en-de.
CAMPAIGNS = {
    "wmt23/en-de": (RAW / "mt-metrics-eval-v2", "wmt23/en-de"),
    "wmt23/zh-en": (RAW / "mt-metrics-eval-v2", "wmt23/zh-en"),
    "wmt22/zh-en": (RAW / "mt-metrics-eval-v2", "wmt22/zh-en"),
    "ted/en-de": (RAW / "wmt-mqm-ted" / "ende" / "mqm_ted_ende.tsv", None),
    "ted/zh-en": (RAW / "wmt-mqm-ted" / "zhen" / "mqm_ted_zhen.tsv", None),
    "wmt24/en-cs": (RAW / "wmt24-esa", "en-cs"),
    "wmt24/en-hi": (RAW / "wmt24-esa", "en-hi"),
    "wmt24/en-ja": (RAW / "wmt24-esa", "en-ja"),
}
BENCH_DATA = {
    "wmt23/en-de": "--data {raw}/mt-metrics-eval-v2 --campaign wmt23/en-de --human mqm",
    "ted/en-de": "--data {raw}/wmt-mqm-ted/ende/mqm_ted_ende.tsv",
}


def load_all(names: list[str]) -> dict:
    from dataclasses import replace

    from precomet.io import load

    loaded = {}
    for name in names:
        path, inner = CAMPAIGNS[name]
        campaign = load(path, campaign=inner, human="mqm" if "mt-metrics-eval" in str(path) else None)
        loaded[name] = replace(campaign, name=name)
        print(f"loaded {name}: {len(campaign)} items x {len(campaign.systems)} systems", flush=True)
    return loaded


def stem(args: argparse.Namespace, seed: int) -> str:
    """File-name suffix of a training run: none for --seed, ``.seedK`` for the other --train-seeds."""
    return "" if seed == args.seed else f".seed{seed}"


def run_one(
    args: argparse.Namespace, *, test: str, method: str, seed: int, rows: list, campaign, true: np.ndarray
) -> dict:
    """Train on ``rows``, predict the held-out ``campaign``, write its scores file; the result entry."""
    from precomet.estimator import predict_campaign, train

    t0 = time.perf_counter()
    name = f"{test.replace('/', '_')}.{method}{stem(args, seed)}"
    result = train(
        rows,
        out_dir=args.out / name,
        config=REPO / "configs" / "precomet-minilm.yaml",
        overrides={"trainer.accelerator": "cpu", "seed_everything": seed},
        progress=False,
    )
    train_s = time.perf_counter() - t0
    predicted = predict_campaign(args.out / name, campaign, progress=False)
    scores = args.out / f"{name}.scores.jsonl"
    write_scores(scores, args.out / name, campaign, predicted, seed=seed)
    return {
        "test": test,
        "method": method,
        "seed": seed,
        "train_rows": len(rows),
        "train_s": round(train_s, 1),
        "dev_pearson": result.dev_metrics.get("val_pearson"),
        "pearson": float(pearsonr(predicted, true)[0]),
        "kendall": float(kendalltau(predicted, true)[0]),
        "scores": str(scores),
    }


def write_scores(path: Path, checkpoint: Path, campaign, predicted: np.ndarray, *, seed: int) -> None:
    """A utility file with its signature line (as ``precomet predict`` writes), so that ``precomet benchmark
    --utility-file`` checks the training-source fingerprint against the test campaign."""
    from precomet.estimator.checkpoint import read_meta
    from precomet.io.utility_files import write_utilities
    from precomet.signature import signature

    meta = read_meta(checkpoint)
    signed = signature(
        "training/heldout.py",
        method="estimator",
        campaign=campaign,
        seed=seed,
        checkpoint=str(checkpoint),
        target=meta.target.model_dump(mode="json", exclude_unset=True),
        training_sources=meta.training_sources,
    )
    write_utilities(path, campaign.ids, np.asarray(predicted, dtype=float), signed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "estimator")
    parser.add_argument("--tests", nargs="+", default=["wmt23/en-de", "ted/en-de"])
    parser.add_argument(
        "--methods", nargs="+", default=["metric_var", "metric_cons", "diversity", "metric_avg", "irt_diffdisc"]
    )
    parser.add_argument(
        "--campaigns",
        nargs="+",
        default=["wmt23/en-de", "ted/en-de", "wmt24/en-cs", "wmt24/en-hi", "wmt24/en-ja"],
        help="default: the English-source campaigns (MiniLM has an English vocabulary)",
    )
    parser.add_argument(
        "--diversity-similarity", default="chrf", help="chrf (default here: CPU budget) or embedding (the paper)"
    )
    parser.add_argument(
        "--embed-cache",
        type=Path,
        default=REPO / "benchmarks" / "out" / "embed-cache",
        help="shared sentence-embedding cache for embedding diversity",
    )
    parser.add_argument("--irt-epochs", type=int, default=1000, help="py-irt epochs for irt_diffdisc targets")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the targets (IRT fit) and of the first training run"
    )
    parser.add_argument(
        "--train-seeds", type=int, nargs="+", help="training seeds (default: --seed); one estimator per seed"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import torch

    torch.set_num_threads(args.threads)
    from precomet.estimator.leakage import drop_sources
    from precomet.estimator.targets import build_targets

    args.out.mkdir(parents=True, exist_ok=True)
    campaigns = load_all(args.campaigns)
    results = []
    for method in args.methods:  # method-major, so that partial runs report whole methods
        utilities = {}
        for name, campaign in campaigns.items():
            t0 = time.perf_counter()
            options = (
                {"similarity": args.diversity_similarity, "cache_dir": str(args.embed_cache)}
                if method == "diversity"
                else None
            )
            options = {"epochs": args.irt_epochs} if method.startswith("irt") else options
            utilities[name] = build_targets(
                [campaign], method=method, normalisation="zscore", seed=args.seed, options=options
            )
            print(f"targets {method} on {name}: {time.perf_counter() - t0:.1f} s", flush=True)
        for test in args.tests:
            # leave the test campaign out, and every row of another campaign with one of its source texts
            rows, _ = drop_sources(
                [r for name, part in utilities.items() if name != test for r in part], campaigns[test].src
            )
            for train_seed in args.train_seeds or [args.seed]:
                results.append(
                    run_one(
                        args,
                        test=test,
                        method=method,
                        seed=train_seed,
                        rows=rows,
                        campaign=campaigns[test],
                        true=np.array([r["target"] for r in utilities[test]]),
                    )
                )
                print(json.dumps(results[-1]), flush=True)
                (args.out / "heldout.json").write_text(json.dumps(results, indent=2) + "\n")
    for test in args.tests:
        specs = " ".join(
            f"--utility-file {e['method']}_src{stem(args, e['seed'])}={e['scores']}"
            for e in results
            if e["test"] == test
        )
        print(
            f"precomet benchmark {BENCH_DATA[test].format(raw=RAW)} {specs} --seeds 100 "
            f"-o {args.out}/{test.replace('/', '_')}.bench.json"
        )


if __name__ == "__main__":
    main()
