"""Source-based selection: estimators distilled from historical campaigns, judged against every control that
could explain them, on a fixed test suite.

History (what an estimator learns from):

* human-scored and aligned with its sources: WMT22 zh-en MQM (mt-metrics-eval), targets on the human scores;
  with ``--history da`` (test stage) also the 14 crowd-DA campaigns of WMT21-22 into English, the history of
  ``benchmarks/bench_estimator_loco.py`` (its leave-one-campaign-out protocol is their dev stage);
* output-only: the WMT21-22 release campaigns (from English and into English, 9 source languages), targets
  on sentence chrF against the reference (proxies: see docs/estimator.md).

Stages (every choice is made on ``dev`` before ``test`` is read):

* ``dev``: the estimator trained on the output-only history, evaluated on WMT22 zh-en with its MQM scores, for
  every target x backbone in ``--targets``/``--backbones``, one training seed.
* ``test``: the fixed suite (WMT23 en-de and zh-en MQM, WMT24 ESA en-cs/en-hi/en-ja, WMT21 TED en-de and
  zh-en MQM); every training row that shares a source, a sentence or a long run with a suite campaign is dropped
  (the leak guard, :func:`precomet.estimator.leakage.drop_sources`, reports how many); the estimator of
  ``--target``/``--backbone`` trained on the whole history with 3 seeds + their ensemble.

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
from paths import RAW, REPO, RESULTS, SCRATCH  # noqa: E402
from report import parity_band  # noqa: E402  (benchmarks/report.py)

from precomet.benchmark import BenchmarkPlan, null_summary, pool_results, run_benchmark, shared_item_groups  # noqa: E402
from precomet.campaign import HUMAN, Campaign, source_length  # noqa: E402
from precomet.encoders import encode_cached, get_encoder  # noqa: E402
from precomet.estimator import build_targets, predict_sources, train  # noqa: E402
from precomet.estimator.checkpoint import read_meta  # noqa: E402
from precomet.estimator.leakage import SourceFingerprint, drop_sources  # noqa: E402
from precomet.estimator.targets import merge_by_source  # noqa: E402
from precomet.io import load  # noqa: E402
from precomet.io.wmt_release import list_release_campaigns, load_wmt_release  # noqa: E402
from precomet.selection.strata import stratified_utility  # noqa: E402
from precomet.stats import rankdata  # noqa: E402
from precomet.utilities import compute_utility  # noqa: E402
from precomet.utilities.cluster import kmeans_utility  # noqa: E402
from precomet.utilities.reference import with_reference_score  # noqa: E402

OUTPUT_ONLY = (RAW / "wmt-news-systems", RAW / "wmt-news-systems-toen")
DEV = {"wmt22/zh-en": (RAW / "mt-metrics-eval-v2", "wmt22/zh-en", "mqm")}
"""Human-scored history aligned with its sources; also the dev campaign (its release twin is skipped)."""
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
CONFIG = REPO / "configs" / "precomet-e5.yaml"
"""The head and its training (fixed before any comparison); the backbone is set per run."""


def load_human(spec: dict, *, complete: bool = True) -> dict[str, Campaign]:
    """The campaigns of ``spec``; with ``complete`` only the items scored for every system (what is evaluated),
    without it every source (what the leak guard holds out)."""
    out = {}
    for name, (path, inner, human) in spec.items():
        out[name] = replace(load(path, campaign=inner, human=human, complete=complete), name=name)
        print(f"{name}: {len(out[name])} items x {len(out[name].systems)} systems", flush=True)
    return out


def output_only_rows(method: str) -> list[dict]:
    """Target rows of the output-only history on sentence chrF (campaigns named like the dev set skipped)."""
    rows = []
    for root in OUTPUT_ONLY:
        for name in list_release_campaigns(root):
            if name in DEV or name.startswith("wmt23"):  # WMT23 sentences are inside the suite's WMT23 paragraphs
                continue
            campaign = with_reference_score(replace(load_wmt_release(root, name), name=f"{root.name}:{name}"), "chrf")
            rows += build_targets([campaign], method=method, metric="chrF", seed=0, progress=False)
    return merge_by_source(rows)


def partial_out_length(utility: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The prediction's rank with the length rank regressed out (least squares): what it adds beyond length."""
    y, x = rankdata(utility), rankdata(length)
    slope, intercept = np.polyfit(x, y, 1)
    return y - (slope * x + intercept)


def fit(rows: list[dict], *, backbone: str, seed: int, out: Path) -> Path:
    """Train one estimator on ``rows`` into ``out`` (replaced); returns ``out``."""
    overrides = {"model.backbone": backbone, "data.cache_dir": str(CACHE), "seed_everything": seed}
    if out.exists():
        import shutil

        shutil.rmtree(out)
    started = time.perf_counter()
    train(rows, out_dir=out, config=CONFIG, overrides=overrides, progress=False)
    print(f"trained {backbone} seed {seed} on {len(rows)} rows in {time.perf_counter() - started:.0f} s", flush=True)
    return out


def evaluate(campaign: Campaign, predictions: dict[str, np.ndarray], vectors: np.ndarray, *, budget_unit: str) -> dict:
    """Parity, SPA and Spearman with length of every selector on one campaign."""
    length = source_length(campaign.src)
    external: dict = {"longer first": length, "k-means": lambda k: kmeans_utility(vectors, budget=k, seed=0)}
    if budget_unit == "cost":  # the knapsack with nothing but the source length (its cost objective) to go on
        external["constant utility"] = np.zeros(len(campaign))
    for name, pred in predictions.items():
        external[name] = pred
        if name in ("estimator", "estimator ensemble"):  # strata, length-free and length-combined rows
            external[f"{name} - length"] = partial_out_length(pred, length)
            external[f"{name} + length"] = rankdata(pred) + rankdata(length)  # equal weights, fixed before any run
            external[f"strata {name}"] = lambda k, pred=pred: stratified_utility(pred, vectors, budget=k, seed=0)
    result = run_benchmark(
        campaign, BenchmarkPlan(seeds=100, oracle=False, budget_unit=budget_unit), external=external, progress=False
    )
    rows = {
        name: {
            **{key: row[key] for key in VERDICT},
            "spearman_length": _spearman(external[name], length),
        }
        for name, row in result.methods.items()
    }
    return {
        "items": len(campaign),
        "systems": len(campaign.systems),
        "random_spa": result.random["spa"],
        "rows": rows,
        "null": {key: result.null[key] for key in ("spa_gain", "parity")} if result.null else None,
        "signature": result.to_dict()["signature"],
    }


VERDICT = ("parity", "parity_by_prop", "spa", "spa_gain", "p_value", "parity_p_value", "parity_ci90", "null")
"""What each selector's row keeps of its benchmark row: parity, SPA and the verdict against random orderings."""


def estimators(rows: list[dict], *, backbone: str, seeds: list[int], where: str) -> dict[str, list[Path]]:
    """Checkpoints of the estimator (one per seed) and of the length model, trained once on ``rows``."""
    return {
        "estimator": [fit(rows, backbone=backbone, seed=s, out=SCRATCH / where / str(s)) for s in seeds],
        "length model": [fit(rows, backbone="length", seed=seeds[0], out=SCRATCH / where / "length")],
    }


def predictions_of(checkpoints: dict[str, list[Path]], sources: list[str]) -> dict[str, np.ndarray]:
    """Each checkpoint's predictions; with several seeds also their ensemble (mean of z-scored predictions)."""
    seeds = checkpoints["estimator"]
    preds = [predict_sources(c, sources, progress=False) for c in seeds]
    out = {f"estimator s{c.name}": p for c, p in zip(seeds, preds)} if len(preds) > 1 else {"estimator": preds[0]}
    if len(preds) > 1:
        out["estimator ensemble"] = np.mean([(p - p.mean()) / (p.std() or 1.0) for p in preds], axis=0)
    out["length model"] = predict_sources(checkpoints["length model"][0], sources, progress=False)
    return out


def run_stage(
    campaigns: dict[str, Campaign],
    held_out: dict[str, Campaign],
    rows: list[dict],
    *,
    target: str,
    backbone: str,
    seeds: list[int],
    cost: bool,
    where: str,
    ship: Path | None = None,
    shipped: Path | None = None,
) -> dict:
    out: dict = {}
    for name, campaign in held_out.items():  # every source of the campaign, also those not evaluated
        rows, dropped = drop_sources(rows, campaign.src)  # exact and near duplicates (shared sentence or run)
        print(f"leak guard: {dropped} training rows share a source, sentence or long run with {name}", flush=True)
        out[name] = {"leak_guard_dropped_rows": dropped}
    fingerprint = SourceFingerprint.of(r["src"] for r in rows)
    assert not any(fingerprint.contains(list(c.src)).any() for c in held_out.values())
    started = time.perf_counter()
    checkpoints = estimators(rows, backbone=backbone, seeds=seeds, where=f"{where}/{target}-{backbone}")
    train_seconds = time.perf_counter() - started
    if ship is not None:  # the first seed's estimator, without its Lightning resume files
        import shutil

        if ship.exists() and not (ship / "precomet.json").is_file():
            raise SystemExit(f"--ship {ship}: exists and is not a checkpoint directory; not replaced")
        if ship.exists():
            shutil.rmtree(ship)
        shutil.copytree(checkpoints["estimator"][0], ship, ignore=shutil.ignore_patterns("lightning"))
        print(f"shipped {checkpoints['estimator'][0]} -> {ship}", flush=True)
    if shipped is not None:  # the shipped artifact itself, read beside the estimators trained here
        seen = SourceFingerprint.from_json(read_meta(shipped).training_sources, where=str(shipped))
        leaks = {name: int(seen.contains(list(c.src)).sum()) for name, c in held_out.items()}
        assert not any(leaks.values()), f"{shipped} was trained on suite sources: {leaks}"
    for name, campaign in campaigns.items():
        started = time.perf_counter()
        predictions = predictions_of(checkpoints, list(campaign.src))
        if shipped is not None:
            predictions["shipped estimator"] = predict_sources(shipped, list(campaign.src), progress=False)
        predict_seconds = time.perf_counter() - started
        vectors = encode_cached(get_encoder(backbone), list(campaign.src), cache_dir=CACHE)
        truth = compute_utility(campaign, target, metric="human", seed=0)
        result = {"items": evaluate(campaign, predictions, vectors, budget_unit="items")}
        if cost:
            result["cost"] = evaluate(campaign, predictions, vectors, budget_unit="cost")
        result["pearson_truth"] = {k: float(pearsonr(v, truth)[0]) for k, v in predictions.items()}
        out[name].update(result, training_rows=len(rows), train_seconds=train_seconds, predict_seconds=predict_seconds)
        print(
            name, target, backbone, {k: round(v["parity"], 3) for k, v in result["items"]["rows"].items()}, flush=True
        )
    return out


def dev_folds(campaign: Campaign, k: int = 2) -> list[Campaign]:
    """``k`` parts of the dev campaign by document (a stable hash of the document name)."""
    import hashlib

    part = np.array([int(hashlib.sha1(d.encode()).hexdigest(), 16) % k for d in campaign.doc])
    return [replace(campaign.take(np.flatnonzero(part == f)), name=f"{campaign.name} fold {f}") for f in range(k)]


def run_dev(args: argparse.Namespace) -> dict:
    """Every target x backbone on the dev campaign: trained on the output-only history (``proxy``), on the other
    half of the dev campaign's human scores (``human``, 2 folds by document), or on both."""
    (dev,) = load_human(DEV).values()
    folds = dev_folds(dev)
    out: dict = {"stage": "dev", "history": args.history, "config": str(CONFIG.relative_to(REPO)), "results": {}}
    for target in args.targets:
        proxy = output_only_rows(target) if args.history in ("proxy", "both") else []
        for backbone in args.backbones:
            key = f"{args.history} {target} {backbone}"
            where = f"suite-dev/{args.history}"  # runs of different histories never share a folder
            if args.history == "proxy":  # the whole dev campaign, trained on the output-only history
                parts = [(dev, proxy)]
            else:  # each half, trained on the other half's human scores (and the proxy rows with "both")
                parts = [
                    (fold, merge_by_source(proxy + build_targets(others, method=target, metric=HUMAN, progress=False)))
                    for fold, others in ((f, [o for o in folds if o is not f]) for f in folds)
                ]
            out["results"][key] = {}
            for campaign, rows in parts:
                out["results"][key].update(
                    run_stage(
                        {campaign.name: campaign},
                        {campaign.name: campaign},
                        rows,
                        target=target,
                        backbone=backbone,
                        seeds=[0],
                        cost=False,
                        where=where,
                    )
                )
    return out


def run_test(args: argparse.Namespace) -> dict:
    human = load_human(DEV)
    rows = output_only_rows(args.target) if args.history in ("proxy", "both") else []
    if args.history in ("human", "both"):
        rows += build_targets(list(human.values()), method=args.target, metric="human", seed=0, progress=False)
    if args.history == "da":  # the 15 human-scored campaigns of the leave-one-campaign-out dev protocol
        from history_targets import history, target_rows

        rows = target_rows(history(), args.target)
    suite = load_human(SUITE)
    every_source = load_human(SUITE, complete=False)
    out: dict = {"stage": "test", "history": args.history, "target": args.target, "backbone": args.backbone}
    out["config"] = str(CONFIG.relative_to(REPO))
    out["groups"] = shared_item_groups({name: campaign.src for name, campaign in suite.items()})
    out["campaigns"] = run_stage(
        suite,
        every_source,
        merge_by_source(rows),
        target=args.target,
        backbone=args.backbone,
        seeds=args.seeds,
        cost=args.cost,
        where="suite-test",
        ship=args.ship,
        shipped=args.shipped,
    )
    if args.shipped is not None:
        out["shipped"] = {
            "checkpoint": str(args.shipped),
            "ensemble": read_meta(args.shipped).as_dict().get("ensemble"),
        }
    return out


def run_speed(args: argparse.Namespace) -> dict:
    """Encoding (cold, a sample of history sources), targets + training on the whole output-only history (warm
    cache), and prediction with the shipped checkpoint, in one run."""
    import tempfile

    rows = merge_by_source(output_only_rows("metric_cons"))
    out: dict = {"stage": "speed", "history_rows": len(rows)}
    sample = [r["src"] for r in rows[:: max(1, len(rows) // 1000)]][:1000]
    for name in ("e5-small", "surface"):
        with tempfile.TemporaryDirectory() as cold:
            started = time.perf_counter()
            encode_cached(get_encoder(name), sample, cache_dir=cold)
            out[f"cold_encode_per_s_{name}"] = len(sample) / (time.perf_counter() - started)
            started = time.perf_counter()
            encode_cached(get_encoder(name), sample, cache_dir=cold)
            out[f"warm_encode_per_s_{name}"] = len(sample) / (time.perf_counter() - started)
    out["cold_encode_per_s"] = out["cold_encode_per_s_e5-small"]
    started = time.perf_counter()
    rows = merge_by_source(output_only_rows("metric_cons"))
    out["targets_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    fit(rows, backbone="e5-small", seed=0, out=SCRATCH / "speed")
    out["warm_train_seconds"] = time.perf_counter() - started
    out["cold_history_estimate_seconds"] = len({r["src"] for r in rows}) / out["cold_encode_per_s"]
    for name, path in (
        ("zh", "mt-metrics-eval-v2/wmt23/sources/zh-en.txt"),
        ("en", "wmt-news-systems/wmt22/txt/sources/generaltest2022.en-de.src.en"),
    ):
        lines = [line.strip() for line in (RAW / path).open(encoding="utf-8") if line.strip()][:500]
        started = time.perf_counter()
        predict_sources(REPO / "checkpoints" / "metric-avg-e5", lines, progress=False)
        out[f"predict_{name}_per_s"] = len(lines) / (time.perf_counter() - started)
    print(out, flush=True)
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{100 * value:.0f}"


def report_dev(paths: list[Path]) -> list[str]:
    """One row per dev configuration: mean parity (%) over its dev parts for every selector."""
    lines = [
        "| history | target | backbone | longer first | length model | k-means | estimator | estimator − length"
        " | strata | Pearson with true utility | Spearman with length |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for path in paths:
        for key, parts in json.loads(path.read_text())["results"].items():
            rows = [p["items"]["rows"] for p in parts.values() if "items" in p]
            mean = {n: float(np.mean([r[n]["parity"] for r in rows])) for n in rows[0]}
            pearson = np.mean([p["pearson_truth"]["estimator"] for p in parts.values() if "items" in p])
            rho = np.mean([r["estimator"]["spearman_length"] for r in rows])
            cells = [mean.get(n) for n in SELECTORS]
            lines.append(
                f"| {' | '.join(key.split())} | "
                + " | ".join(_pct(c) for c in cells)
                + f" | {pearson:.2f} | {rho:.2f} |"
            )
    return lines


SELECTORS = ("longer first", "length model", "k-means", "estimator", "estimator - length", "strata estimator")


def report_test(path: Path, *, budget: str = "items") -> list[str]:
    """Parity (%) per suite campaign and selector with its p-value against random orderings, and the verdict pooled
    over the campaigns (those sharing items merged: they count once)."""
    result = json.loads(path.read_text())
    campaigns = {n: c for n, c in result["campaigns"].items() if budget in c}
    names = list(campaigns)
    selectors = list(next(iter(campaigns.values()))[budget]["rows"])
    pooled = pooled_verdicts(result, budget)
    lines = [
        f"| selector | {' | '.join(names)} | mean | pooled gain (SPA points) | pooled p |",
        "|---|" + "---|" * (len(names) + 3),
    ]
    for sel in selectors:
        rows = [campaigns[n][budget]["rows"][sel] for n in names]
        cells = [_pct(row["parity"]) + _mark(row.get("p_value")) for row in rows]
        verdict = pooled["rows"].get(sel) if pooled else None
        tail = f"{100 * verdict['spa_gain']:+.1f} | {verdict['p_value']:.3f}" if verdict else "– | –"
        lines.append(f"| {sel} | " + " | ".join(cells) + f" | {_pct(np.mean([r['parity'] for r in rows]))} | {tail} |")
    per_campaign = [
        f"{n} {parity_band(null_summary(c[budget]['null']))}" for n, c in campaigns.items() if c[budget].get("null")
    ]
    if per_campaign:
        lines += ["", "Null per campaign, random orderings' parity, median (5–95 %): " + "; ".join(per_campaign) + "."]
    if pooled:
        band = pooled["null"]
        lines += [
            "",
            f"Parity (%) per campaign; * = p < 0.05 against {pooled['null_orderings']} random orderings scored the same"
            " way (on the SPA gain), otherwise indistinguishable from random whatever the point value. Pooled: mean"
            " over groups of campaigns that share items (" + "; ".join(" + ".join(g) for g in pooled["groups"]) + "),"
            f" against pooled random orderings: their pooled parity {100 * band['parity_median']:.0f} % (5–95 %"
            f" {100 * band['parity_p05']:.0f}–{100 * band['parity_p95']:.0f} %), pooled gain"
            f" {100 * band['spa_gain_p05']:+.1f} to {100 * band['spa_gain_p95']:+.1f} points.",
            "",
        ]
    if budget == "items":
        lines += ["| correlation | " + " | ".join(names) + " | mean |", "|---|" + "---|" * (len(names) + 1)]
        for label, field in (("Pearson with the true utility", "pearson_truth"),):
            for sel in campaigns[names[0]][field]:
                values = [campaigns[n][field][sel] for n in names]
                lines.append(
                    f"| {label}: {sel} | " + " | ".join(f"{v:.2f}" for v in values) + f" | {np.mean(values):.2f} |"
                )
        for sel in selectors:
            values = [campaigns[n][budget]["rows"][sel].get("spearman_length") for n in names]
            if all(v is not None for v in values):
                lines.append(
                    f"| Spearman with length: {sel} | "
                    + " | ".join(f"{v:.2f}" for v in values)
                    + f" | {np.mean(values):.2f} |"
                )
    return lines


def pooled_verdicts(result: dict, budget: str) -> dict | None:
    """:func:`precomet.benchmark.pool_results` over the suite's campaigns (``None`` for a JSON without nulls)."""
    campaigns = {n: c[budget] for n, c in result["campaigns"].items() if budget in c}
    if not campaigns or any(not c.get("null") for c in campaigns.values()):
        return None
    as_results = {n: {"methods": c["rows"], "controls": {}, "null": c["null"]} for n, c in campaigns.items()}
    groups = [[n for n in group if n in campaigns] for group in result.get("groups", [[n] for n in campaigns])]
    return pool_results(as_results, groups=[g for g in groups if g])


def _spearman(utility, length: np.ndarray) -> float | None:
    """Spearman of a utility with the source length (``None`` for a budget-dependent or constant utility)."""
    if callable(utility) or np.ptp(utility) == 0:
        return None
    return float(spearmanr(utility, length)[0])


def _mark(p: float | None) -> str:
    return "*" if p is not None and p < 0.05 else ""


def write_report(results: Path = RESULTS) -> Path:
    """``results``/source-suite.md from the dev and test JSON files present there (default benchmarks/results)."""
    dev = sorted(results.glob("source_suite_dev_*.json"))
    lines = [
        "# Source-based selection on human judgements, with every control (issue 19)",
        "",
        "Command: `.venv/bin/python benchmarks/bench_source_suite.py --stage report` (from the JSON of the dev, test",
        "and speed runs below, each under its own command)",
        "",
        "Parity (%) = the share of the budget at which a selector reaches random's soft pairwise accuracy, averaged",
        "over budgets 5-50 % (100 random seeds); below 100 beats random only with p < 0.05 against random orderings.",
        "`longer first`: the source length as the utility; `length model`: the same estimator and head with the",
        "source length as its only feature;",
        "`k-means`: k-means (k = budget) on the backbone's source vectors; `estimator`: top-k on the prediction;",
        "`estimator - length`: its rank with the length rank regressed out (what it adds beyond length);",
        "`estimator + length`: the sum of its rank and the length rank; `strata`:",
        "the best predicted item of each k-means stratum (`precomet.selection.strata`). Pearson: prediction vs the",
        "same utility computed on the campaign's human scores. Script: `benchmarks/bench_source_suite.py`.",
        "",
        "## Dev: WMT22 zh-en MQM, two halves by document (every choice was made here)",
        "",
    ]
    for path in dev:
        command = json.loads(path.read_text()).get("command", "")
        lines.append(f"`{command}`")
        lines.append("")
    if dev:
        lines += report_dev(dev)
        best = min(
            (float(np.mean([p["items"]["rows"][sel]["parity"] for p in parts.values() if "items" in p])), key, sel)
            for path in dev
            for key, parts in json.loads(path.read_text())["results"].items()
            for sel in ("estimator", "strata estimator")
        )
        lines += [
            "",
            f"Lowest dev parity: {best[1]} with {best[2]} ({100 * best[0]:.0f} %): the configuration tested below."
            " Dev parity chooses a configuration; it is no verdict against random (the test suite's p-values are).",
        ]
    for path in sorted(results.glob("source_suite_test*.json")):
        result = json.loads(path.read_text())
        shipped = result.get("shipped")
        also = f", and the shipped checkpoint {shipped['checkpoint']}" if shipped else ""
        lines += [
            "",
            f"## Test suite: {result['target']} on {result['backbone']}, history {result['history']}{also}",
            "",
        ]
        if shipped and shipped.get("ensemble"):
            members = shipped["ensemble"]
            lines += [
                f"`shipped estimator`: the checkpoint as `training/ship_estimator.sh` wrote it, {members['members']}"
                f" heads (seeds {', '.join(map(str, members['seeds']))}) predicting together",
                "",
            ]
        lines += [f"`{result['command']}` ({result['seconds']:.0f} s)", "", "Budgets in items:", ""]
        lines += report_test(path)
        if any("cost" in c for c in result["campaigns"].values()):
            lines += ["", "Budgets in annotation cost (length model 0.15 · chars + 33.7 s for every campaign):", ""]
            lines += report_test(path, budget="cost")
        dropped = {n: c.get("leak_guard_dropped_rows") for n, c in result["campaigns"].items()}
        lines += ["", f"Leak guard (training rows dropped for sharing a source, sentence or run): {dropped}."]
    speed_path = results / "source_suite_speed.json"
    if speed_path.exists():
        sp = json.loads(speed_path.read_text())
        lines += [
            "",
            "## Speed (2 CPU cores, no GPU)",
            "",
            f"`{sp['command']}`: e5-small encodes {sp['cold_encode_per_s']:.0f} sources/s cold and"
            f" {sp['warm_encode_per_s_e5-small']:.0f}/s from its disk cache (a 1,000-source sample); `surface`"
            f" {sp['cold_encode_per_s_surface']:.0f}/s. The whole output-only history, {sp['history_rows']:,} distinct"
            f" sources, would take {sp['cold_history_estimate_seconds'] / 60:.0f} min to encode cold; with a warm"
            f" cache its targets take {sp['targets_seconds']:.0f} s and training {sp['warm_train_seconds']:.0f} s."
            f" The shipped checkpoint predicts {sp['predict_zh_per_s']:.0f} Chinese and {sp['predict_en_per_s']:.0f}"
            " English sources/s: below the 300/s goal, the price of a multilingual encoder on CPU.",
        ]
    out = results / "source-suite.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stage", choices=("dev", "test", "speed", "report"), required=True)
    parser.add_argument("--targets", nargs="+", default=["metric_var", "metric_cons", "metric_avg"])
    parser.add_argument("--backbones", nargs="+", default=["e5-small", "surface"])
    parser.add_argument(
        "--history",
        choices=("proxy", "human", "both", "da"),
        default="both",
        help="dev: train on the output-only history (chrF proxy), the other half of the dev campaign (human) or both;"
        " test: also 'da', the 14 crowd-DA campaigns and WMT22 zh-en MQM (benchmarks/bench_estimator_loco.py)",
    )
    parser.add_argument("--target", default="metric_var")
    parser.add_argument("--backbone", default="e5-small")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--cost", action="store_true", help="test: also under a cost budget (length cost model)")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="report: the folder of the JSON files and the report"
    )
    parser.add_argument("--ship", type=Path, help="test: copy the first seed's checkpoint here (e.g. checkpoints/NAME)")
    parser.add_argument(
        "--shipped",
        type=Path,
        help="test: also read this checkpoint (e.g. checkpoints/metric-avg-e5, as training/ship_estimator.sh wrote"
        " it) as the row 'shipped estimator'; refused if it was trained on a suite source",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.stage == "report":
        print(f"wrote {write_report(args.results)}")
        return
    started = time.perf_counter()
    result = {"dev": run_dev, "test": run_test, "speed": run_speed}[args.stage](args)
    result["seconds"] = time.perf_counter() - started
    result["command"] = "benchmarks/bench_source_suite.py " + " ".join(sys.argv[1:])
    default = f"source_suite_{args.stage}" + (f"_{args.history}" if args.stage == "dev" else "") + ".json"
    path = args.out or RESULTS / default
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path} ({result['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
