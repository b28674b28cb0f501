"""Source-based selection on human judgements: estimators distilled from the 13 human-scored (crowd DA)
WMT21-22 to-English campaigns, judged against every control that could explain them.

Stages (every choice is made on ``dev`` before ``test`` is read):

* ``dev``: leave-one-campaign-out over the 13 history campaigns (train on 12, evaluate on the held-out one
  with its own human scores), one training seed, every target x backbone in ``--targets``/``--backbones``.
* ``test``: the fixed suite (WMT23 en-de and zh-en MQM, WMT24 ESA en-cs/en-hi/en-ja, WMT21 TED en-de and
  zh-en MQM), minus any campaign that shares a source with the history (the leak guard reports it); the
  estimator of ``--target``/``--backbone`` trained on all 13 campaigns with 3 seeds + their ensemble.

Rows of each table (parity = the share of the budget at which the selector reaches random's soft pairwise
accuracy; < 100 % beats random): ``longer first`` (source length as the utility), ``length model`` (the same
estimator with the source length as its only feature), ``k-means`` (on the backbone's source vectors, k =
budget), the ``estimator`` (top-k on its prediction), ``estimator - length`` (its prediction rank with the
length rank regressed out: what it adds beyond length) and ``strata`` (the library's robust selector,
:func:`precomet.selection.strata.stratified_utility`: the best predicted item of each k-means stratum).

    .venv/bin/python benchmarks/bench_source_suite.py --stage dev
    .venv/bin/python benchmarks/bench_source_suite.py --stage test --target metric_var --backbone e5-small
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr, spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paths import RAW, RESULTS, SCRATCH  # noqa: E402

from precomet.benchmark import run_benchmark  # noqa: E402
from precomet.campaign import Campaign, source_length  # noqa: E402
from precomet.encoders import encode_cached, get_encoder  # noqa: E402
from precomet.estimator import build_targets, leave_one_campaign_out, predict_sources, train  # noqa: E402
from precomet.estimator.leakage import SourceFingerprint  # noqa: E402
from precomet.io import load  # noqa: E402
from precomet.io.wmt_release import list_release_campaigns  # noqa: E402
from precomet.selection.strata import stratified_utility  # noqa: E402
from precomet.stats import rankdata  # noqa: E402
from precomet.utilities import compute_utility  # noqa: E402
from precomet.utilities.cluster import kmeans_utility  # noqa: E402

HISTORY = RAW / "wmt-news-systems-toen"
SUITE = {
    "wmt23/en-de": (RAW / "mt-metrics-eval-v2", "wmt23/en-de", "mqm"),
    "wmt23/zh-en": (RAW / "mt-metrics-eval-v2", "wmt23/zh-en", "mqm"),
    "wmt24/en-cs": (RAW / "wmt24-esa", "en-cs", None),
    "wmt24/en-hi": (RAW / "wmt24-esa", "en-hi", None),
    "wmt24/en-ja": (RAW / "wmt24-esa", "en-ja", None),
    "ted/en-de": (RAW / "wmt-mqm-ted" / "ende" / "mqm_ted_ende.tsv", None, None),
    "ted/zh-en": (RAW / "wmt-mqm-ted" / "zhen" / "mqm_ted_zhen.tsv", None, None),
}
CACHE = SCRATCH / "encoder-cache"
HEAD = {
    "model.hidden_sizes": [256, 64],
    "model.dropout": 0.1,
    "model.head_lr": 1e-3,
    "data.batch_size": 128,
    "data.effective_batch_size": 128,
    "data.dev_fraction": 0.1,
    "trainer.max_epochs": 40,
    "trainer.accelerator": "cpu",
    "early_stopping.patience": 4,
}
"""The head and its training, fixed before any comparison (small: ~100 k parameters, CPU-friendly)."""


def complete_human(campaign: Campaign, *, min_coverage: float = 0.8) -> Campaign:
    """Systems scored on at least ``min_coverage`` of the items, then the items scored for all of them."""
    scored = ~np.isnan(campaign.score("human"))
    keep = [s for s, share in zip(campaign.systems, scored.mean(axis=0)) if share >= min_coverage]
    return campaign.restrict_systems(keep).complete("human")[0]


def load_history() -> list[Campaign]:
    out = []
    for name in list_release_campaigns(HISTORY):
        campaign = load(HISTORY, campaign=name)
        if "human" not in campaign.scores:
            continue
        campaign = complete_human(campaign)
        print(f"history {name}: {len(campaign)} items x {len(campaign.systems)} systems", flush=True)
        out.append(campaign)
    return out


def load_suite() -> dict[str, Campaign]:
    out = {}
    for name, (path, inner, human) in SUITE.items():
        campaign = replace(load(path, campaign=inner, human=human), name=name)
        out[name] = campaign.complete("human")[0]
        print(f"suite {name}: {len(out[name])} items x {len(campaign.systems)} systems", flush=True)
    return out


def partial_out_length(utility: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The prediction's rank with the length rank regressed out (least squares): what it adds beyond length."""
    y, x = rankdata(utility), rankdata(length)
    slope, intercept = np.polyfit(x, y, 1)
    return y - (slope * x + intercept)


def fit_predict(rows: list[dict], sources: list[str], *, backbone: str, seed: int, out: Path) -> np.ndarray:
    overrides = {**HEAD, "model.backbone": backbone, "data.cache_dir": str(CACHE), "seed_everything": seed}
    if out.exists():
        import shutil

        shutil.rmtree(out)
    train(rows, out_dir=out, overrides=overrides, progress=False)
    return predict_sources(out, sources, progress=False)


def evaluate(campaign: Campaign, predictions: dict[str, np.ndarray], vectors: np.ndarray, *, budget_cost: bool) -> dict:
    """Parity, SPA and Spearman with length of every selector on one campaign."""
    length = source_length(campaign.src)
    external: dict = {"longer first": length, "k-means": lambda k: kmeans_utility(vectors, budget=k, seed=0)}
    for name, pred in predictions.items():
        external[name] = pred
        if name.startswith("estimator"):
            external[f"{name} - length"] = partial_out_length(pred, length)
            external[f"strata {name}"] = lambda k, pred=pred: stratified_utility(pred, vectors, budget=k, seed=0)
    result = run_benchmark(
        campaign, external=external, seeds=100, oracle=False, progress=False, budget_cost=budget_cost
    )
    rows = {
        name: {
            "parity": row["parity"],
            "parity_by_prop": row["parity_by_prop"],
            "spa": row["spa"],
            "spearman_length": float(spearmanr(external[name], length)[0]) if not callable(external[name]) else None,
        }
        for name, row in result["methods"].items()
    }
    rows["random"] = {"spa": result["random"]["spa"] if "spa" in result["random"] else None, "parity": 1.0}
    return {"items": len(campaign), "systems": len(campaign.systems), "rows": rows, "signature": result["signature"]}


def run_dev(args: argparse.Namespace) -> dict:
    history = load_history()
    by_name = {c.name: c for c in history}
    out: dict = {"stage": "dev", "targets": {}, "head": HEAD}
    for target in args.targets:
        started = time.perf_counter()
        rows = build_targets(history, method=target, score="human", normalisation="zscore", seed=0, progress=False)
        print(f"targets {target}: {len(rows)} rows in {time.perf_counter() - started:.0f} s", flush=True)
        for backbone in args.backbones:
            per_campaign = {}
            for name in args.campaigns or sorted(by_name):
                campaign = by_name[name]
                train_rows, _ = leave_one_campaign_out(rows, name)
                where = SCRATCH / "suite-dev" / f"{target}-{backbone}"
                pred = fit_predict(train_rows, list(campaign.src), backbone=backbone, seed=0, out=where)
                length_rows = fit_predict(train_rows, list(campaign.src), backbone="length", seed=0, out=where)
                vectors = encode_cached(get_encoder(backbone), campaign.src, cache_dir=CACHE)
                truth = compute_utility(campaign, target, score="human", seed=0)
                per_campaign[name] = evaluate(
                    campaign, {"estimator": pred, "length model": length_rows}, vectors, budget_cost=False
                )
                per_campaign[name]["pearson_truth"] = float(pearsonr(pred, truth)[0])
                print(
                    name,
                    target,
                    backbone,
                    {k: round(v["parity"], 3) for k, v in per_campaign[name]["rows"].items()},
                    flush=True,
                )
            out["targets"].setdefault(target, {})[backbone] = per_campaign
    return out


def run_test(args: argparse.Namespace) -> dict:
    history = load_history()
    suite = load_suite()
    fingerprint = SourceFingerprint.of(s for c in history for s in c.src)
    rows = build_targets(history, method=args.target, score="human", normalisation="zscore", seed=0, progress=False)
    out: dict = {"stage": "test", "target": args.target, "backbone": args.backbone, "head": HEAD, "campaigns": {}}
    for name, campaign in suite.items():
        seen = int(fingerprint.contains(list(campaign.src)).sum())
        if seen:
            print(f"leak guard: {name} shares {seen} sources with the history; left out of the suite", flush=True)
            out["campaigns"][name] = {"left_out": f"{seen} sources in the training history"}
            continue
        sources = list(campaign.src)
        preds = []
        for seed in args.seeds:
            where = SCRATCH / "suite-test" / f"{args.target}-{args.backbone}-{seed}"
            preds.append(fit_predict(rows, sources, backbone=args.backbone, seed=seed, out=where))
        length_pred = fit_predict(
            rows, sources, backbone="length", seed=args.seeds[0], out=SCRATCH / "suite-test" / "length"
        )
        z = [(p - p.mean()) / (p.std() or 1.0) for p in preds]
        predictions = {f"estimator s{s}": p for s, p in zip(args.seeds, preds)}
        predictions["estimator ensemble"] = np.mean(z, axis=0)
        predictions["length model"] = length_pred
        vectors = encode_cached(get_encoder(args.backbone), sources, cache_dir=CACHE)
        truth = compute_utility(campaign, args.target, score="human", seed=0)
        result = {"items": evaluate(campaign, predictions, vectors, budget_cost=False)}
        if args.cost:
            result["cost"] = evaluate(campaign, predictions, vectors, budget_cost=True)
        result["pearson_truth"] = {k: float(pearsonr(v, truth)[0]) for k, v in predictions.items()}
        out["campaigns"][name] = result
        print(name, {k: round(v["parity"], 3) for k, v in result["items"]["rows"].items()}, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", choices=("dev", "test"), required=True)
    parser.add_argument("--targets", nargs="+", default=["metric_var", "metric_cons", "metric_avg"])
    parser.add_argument("--backbones", nargs="+", default=["e5-small", "surface"])
    parser.add_argument("--campaigns", nargs="*", help="dev: only these held-out history campaigns")
    parser.add_argument("--target", default="metric_var")
    parser.add_argument("--backbone", default="e5-small")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--cost", action="store_true", help="test: also under a cost budget (length cost model)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    result = run_dev(args) if args.stage == "dev" else run_test(args)
    result["seconds"] = time.perf_counter() - started
    result["command"] = "benchmarks/bench_source_suite.py " + " ".join(sys.argv[1:])
    path = args.out or RESULTS / f"source_suite_{args.stage}.json"
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path} ({result['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
