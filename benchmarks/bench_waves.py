"""Replay of "annotate in waves until the ranking is settled" (precomet.waves) on every dense campaign.

Usage: nice -n 10 .venv/bin/python benchmarks/bench_waves.py [--runs 100] [--campaigns wmt23/en-de,...]
       [--choosers random,learn,...] [--out-dir benchmarks/results] [--quick] [--render-only]

Per campaign (every cell judged; truth = the human score), each row replays ``--runs`` runs (run ``r`` seeded
``(0, r)`` for every row, so runs are paired across rows) with waves of 5 % of the items, target pairwise
agreement 0.95, confidence 0.9, rule ``guaranteed`` unless said otherwise:

* ``random``, ``length`` (longer source first), ``prior`` (MetricVar of the campaign's metric), ``learn`` (prior =
  MetricVar, features = the metric's per-item mean/spread; without a metric: no prior, length only),
  ``learn/length-only`` (learn from source length alone: the length-only model control);
* ``random+ppi``, ``learn+ppi``: the same with the weighted estimates' predictor reading the metric (``replay(...,
  metric=)``: prediction-powered AIPW); metric campaigns only. ``learn+ppi`` is what ``precomet waves`` does by
  default with ``--utility metric_var --metric M`` (chooser ``learn``, rule guaranteed, the metric's predictor);
  without a metric its default is the ``learn`` row. The pooled ``default`` row is that: ``learn+ppi`` where the
  campaign has a metric, ``learn`` elsewhere;
* ``estimator``, ``learn+estimator``: the shipped source-based estimator (checkpoints/metric-avg-e5) as the prior
  (chooser ``prior``; chooser ``learn`` with the metric's features where there is a metric); predictor = system
  means. Its predictions are cached under benchmarks/out/waves-estimator/ (git-ignored);
* ``random+alloc``, ``learn+alloc``: system-level allocation;
* ``random/expected``, ``learn/expected``: rule ``expected``;
* ``random/fixed-look``, ``learn/fixed-look``: an ABLATION, ``ReplaySettings(anytime=False)``: the whole error level
  0.1 is spent at every look. Not valid under optional stopping; it measures the smallest share of cells a bound
  of this kind could stop at if it did not pay for looking after every wave.

Every run also records SPA and the significance clusters of the items judged for every system at its stop, against
``full_reference(campaign, seed=0)``.

Metric choosers read: WMT22 zh-en ``metricx_xxl_MQM_2020``, WMT23 ``MetricX-23-c``; WMT24 ESA, TED and SummEval have
no metric in the data, so ``prior`` and the ``+ppi`` rows are skipped there and ``learn`` learns from source length
only. SummEval's truth is ``human`` = coherence + consistency + fluency + relevance (the loader's sum).

p vs baseline: one-sided Wilcoxon signed-rank (``alternative="less"``) on ``cells_row[r] − cells_baseline[r]``;
the baseline is random under the same rule, allocation and look level, with the plain predictor (NaN when the
differences are all zero). A second comparison (``also``): ``learn+ppi`` vs ``random+ppi``, and each fixed-look row
vs its anytime counterpart.

Dev/test split, fixed before reading any result: dev = WMT22 zh-en, TED en-de; test = the rest. Pooled over the
split's groups (WMT24 en-cs/en-hi/en-ja share their sources: one group, its per-run share the mean of the three):
per run ``r`` the mean over groups of the run's cell share; its median over runs, the share of (campaign, run)
reaching the target, and the paired Wilcoxon p-values on the pooled per-run values.

Also times one replay of a synthetic 2000-item × 15-system campaign (precomet.simulate; 100 runs, waves 5 %, random,
guaranteed). Writes ``<out-dir>/waves-replay.{json,md}`` (``--quick``: 10 runs on 2 campaigns into benchmarks/out/).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shlex
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from paths import RAW, REPO, RESULTS, SCRATCH  # benchmarks/paths.py (the script's folder is on sys.path)
from scipy.stats import wilcoxon

from precomet.campaign import HUMAN, source_length
from precomet.io import load
from precomet.metaeval.reference import full_reference
from precomet.simulate import simulate_campaign
from precomet.utilities import compute_utility
from precomet.waves.choosers import Chooser, metric_features
from precomet.waves.plan import parse_wave_size
from precomet.waves.replay import ReplaySettings, replay

WAVE = "5%"
TARGET = 0.95
CONFIDENCE = 0.9
SEED = 0
CHECKPOINT = REPO / "checkpoints" / "metric-avg-e5"
ESTIMATOR_CACHE = SCRATCH / "waves-estimator"

MTME = RAW / "mt-metrics-eval-v2"
CAMPAIGNS = {  # key: (title, path, load options, metric or None)
    "wmt22/zh-en": ("WMT22 zh-en MQM", MTME, {"campaign": "wmt22/zh-en", "human": "mqm"}, "metricx_xxl_MQM_2020"),
    "wmt23/en-de": ("WMT23 en-de MQM", MTME, {"campaign": "wmt23/en-de", "human": "mqm"}, "MetricX-23-c"),
    "wmt23/zh-en": ("WMT23 zh-en MQM", MTME, {"campaign": "wmt23/zh-en", "human": "mqm"}, "MetricX-23-c"),
    "wmt24/en-cs": ("WMT24 ESA en-cs", RAW / "wmt24-esa", {"campaign": "en-cs"}, None),
    "wmt24/en-hi": ("WMT24 ESA en-hi", RAW / "wmt24-esa", {"campaign": "en-hi"}, None),
    "wmt24/en-ja": ("WMT24 ESA en-ja", RAW / "wmt24-esa", {"campaign": "en-ja"}, None),
    "ted/en-de": ("TED en-de MQM", RAW / "wmt-mqm-ted" / "ende" / "mqm_ted_ende.tsv", {}, None),
    "ted/zh-en": ("TED zh-en MQM", RAW / "wmt-mqm-ted" / "zhen" / "mqm_ted_zhen.tsv", {}, None),
    "summeval": ("SummEval (sum of 4 dims)", RAW / "summeval" / "SummEval.data.pkl", {}, None),
}
DEV = ("wmt22/zh-en", "ted/en-de")
GROUP = {"wmt24/en-cs": "wmt24-esa", "wmt24/en-hi": "wmt24-esa", "wmt24/en-ja": "wmt24-esa"}  # shared sources
QUICK_CAMPAIGNS = ("wmt23/en-de", "ted/zh-en")


@dataclass(frozen=True)
class Row:
    """One replayed configuration. ``prior``: ``"metric_var"`` (the campaign's metric; none without one) or
    ``"estimator"``; ``learn`` also reads the metric's features where there is a metric. ``ppi``: the predictor reads
    the metric. ``baseline``/``also``: the rows it is compared with (paired one-sided Wilcoxon)."""

    chooser: str
    baseline: str
    prior: str | None = None
    rule: str = "guaranteed"
    allocation: bool = False
    ppi: bool = False
    anytime: bool = True
    needs_metric: bool = False
    also: str | None = None
    ablation: bool = False
    metric_features: bool = True  # False: learn reads source length only (the length-only model control)


ROWS = {
    "random": Row("random", "random"),
    "length": Row("length", "random"),
    "prior": Row("prior", "random", prior="metric_var", needs_metric=True),
    "learn": Row("learn", "random", prior="metric_var"),
    "learn/length-only": Row("learn", "random", metric_features=False),
    "random+ppi": Row("random", "random", ppi=True, needs_metric=True),
    "learn+ppi": Row("learn", "random", prior="metric_var", ppi=True, needs_metric=True, also="random+ppi"),
    "estimator": Row("prior", "random", prior="estimator"),
    "learn+estimator": Row("learn", "random", prior="estimator"),
    "random/expected": Row("random", "random/expected", rule="expected"),
    "learn/expected": Row("learn", "random/expected", prior="metric_var", rule="expected"),
    "random/fixed-look": Row("random", "random/fixed-look", anytime=False, also="random", ablation=True),
    "learn/fixed-look": Row(
        "learn", "random/fixed-look", prior="metric_var", anytime=False, also="learn", ablation=True
    ),
    "random+alloc": Row("random", "random+alloc", allocation=True),
    "learn+alloc": Row("learn", "random+alloc", prior="metric_var", allocation=True),
}
DEFAULT = {True: "learn+ppi", False: "learn"}
"""The row ``precomet waves`` runs by default, with (``--utility metric_var --metric M``) and without a metric."""


def one_sided_p(cells: np.ndarray, other_cells: np.ndarray) -> float:
    """Wilcoxon signed-rank p of "fewer cells than the other" (paired by run); NaN when every difference is zero."""
    d = np.asarray(cells, dtype=float) - np.asarray(other_cells, dtype=float)
    if not np.any(d != 0):
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(wilcoxon(d, alternative="less").pvalue)


def make_chooser(name: str, length: np.ndarray, prior: np.ndarray | None, features: np.ndarray | None):
    def build() -> Chooser:
        if name in ("random", "length"):
            return Chooser(name, length=length)
        if name == "prior":
            return Chooser("prior", length=length, prior=prior)
        return Chooser("learn", length=length, prior=prior, features=features)

    return build


def estimator_predictions(key: str, sources: list[str]) -> dict:
    """The shipped estimator's utilities of ``sources`` (cached by checkpoint and sources), how many of them it was
    trained on, and the seconds the prediction took (0 when read from the cache)."""
    from precomet.estimator import load_estimator
    from precomet.estimator.leakage import fingerprint_in
    from precomet.estimator.pool import checkpoint_fingerprint, predict_in_chunks

    digest = hashlib.sha256(checkpoint_fingerprint(CHECKPOINT).encode())
    for source in sources:
        digest.update(source.encode("utf-8") + b"\x1f")
    signature = digest.hexdigest()[:16]
    path = ESTIMATOR_CACHE / f"{key.replace('/', '-')}-{signature}.npz"
    if path.exists():
        kept = np.load(path)
        return {"utility": kept["utility"], "seen": int(kept["seen"]), "seconds": 0.0, "cached": True}
    estimator = load_estimator(CHECKPOINT)
    fingerprint = fingerprint_in(estimator.meta, where=str(CHECKPOINT / "precomet.json"))
    seen = int(fingerprint.contains(sources).sum()) if fingerprint is not None else -1
    started = time.perf_counter()
    utility = np.asarray(predict_in_chunks(estimator, sources), dtype=float)
    seconds = time.perf_counter() - started
    ESTIMATOR_CACHE.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp.npz")
    np.savez(temporary, utility=utility, seen=seen)
    temporary.replace(path)
    return {"utility": utility, "seen": seen, "seconds": seconds, "cached": False}


def prepare(key: str, need_estimator: bool) -> dict:
    """The campaign's truth, chooser inputs, wave size and reference (loading is cheap: done again for each phase)."""
    title, path, options, metric = CAMPAIGNS[key]
    campaign = load(path, campaign=options.get("campaign"), human=options.get("human"))
    metric_scores = np.asarray(campaign.score(metric), dtype=float) if metric is not None else None
    prepared: dict[str, Any] = {
        "campaign": campaign,
        "truth": np.asarray(campaign.score(HUMAN), dtype=float),
        "length": source_length(campaign.src),
        "metric_var": None,
        "features": None,
        "size": parse_wave_size(WAVE, len(campaign)),
        "metric_scores": None,
        "reference": full_reference(campaign, seed=0),
        "estimator": None,
        "estimator_info": None,
    }
    if metric is not None and metric_scores is not None:
        prepared["metric_var"] = np.asarray(compute_utility(campaign, "metric_var", metric=metric), dtype=float)
        prepared["metric_scores"] = metric_scores
        prepared["features"] = metric_features(metric_scores)
    if need_estimator:
        try:
            predicted = estimator_predictions(key, [str(s) for s in campaign.src])
            prepared["estimator"] = predicted.pop("utility")
            prepared["estimator_info"] = predicted
        except Exception as err:  # noqa: BLE001 - e.g. no encoder offline: the estimator rows say why they skipped
            prepared["estimator_info"] = {"error": f"{type(err).__name__}: {err}"}
    return prepared


def run_campaign(key: str, rows: list[str], runs: int, out: dict | None = None) -> dict:
    """Replay ``rows`` on campaign ``key`` (``runs`` runs each), adding them to ``out`` (a new record if None)."""
    title, _, _, metric = CAMPAIGNS[key]
    p = prepare(key, need_estimator=any(ROWS[r].prior == "estimator" for r in rows))
    campaign, truth = p["campaign"], p["truth"]
    if out is None:
        out = {
            "title": title,
            "items": int(truth.shape[0]),
            "systems": int(truth.shape[1]),
            "hours_total": float(np.sum(campaign.cost)) / 3600,
            "metric": metric,
            "split": "dev" if key in DEV else "test",
            "group": GROUP.get(key, key),
            "default_row": DEFAULT[metric is not None],
            "rows": {},
        }
    if p["estimator_info"] is not None:
        out["estimator"] = p["estimator_info"]
    for row in rows:
        spec = ROWS[row]
        if spec.needs_metric and metric is None:
            out["rows"][row] = {"skipped": "no metric in this campaign"}
            continue
        if spec.prior == "estimator" and p["estimator"] is None:
            out["rows"][row] = {"skipped": f"estimator unavailable: {p['estimator_info']['error']}"}
            continue
        prior = p["estimator"] if spec.prior == "estimator" else p["metric_var"] if spec.prior else None
        features = p["features"] if spec.chooser == "learn" and spec.metric_features else None
        settings = ReplaySettings(
            size=p["size"],
            target=TARGET,
            confidence=CONFIDENCE,
            rule=spec.rule,
            allocation=spec.allocation,
            anytime=spec.anytime,
        )
        started = time.perf_counter()
        result = replay(
            truth,
            make_chooser(spec.chooser, p["length"], prior, features),
            settings,
            doc=campaign.doc,
            cost=campaign.cost,
            runs=runs,
            seed=SEED,
            campaign=key,
            metric=p["metric_scores"] if spec.ppi else None,
            reference=p["reference"],
        )
        wall = time.perf_counter() - started
        summary = result.summary()
        summary.pop("campaign", None)
        summary.update(
            row=row,
            rule=spec.rule,
            allocation=spec.allocation,
            ppi=spec.ppi,
            anytime=spec.anytime,
            prior=spec.prior if prior is not None else None,
            wall_s=wall,
            cell_shares=result.cell_shares().tolist(),
            agreements=[r.agreement for r in result.runs],
            reached=[bool(r.agreement >= TARGET - 1e-12) for r in result.runs],
            exhausted=float(np.mean([not r.stopped for r in result.runs])),
        )
        out["rows"][row] = summary
        print(
            f"{key:12s} {row:18s} cells {summary['cells_share']['median']:.3f}"
            f" [{summary['cells_share']['p10']:.3f}, {summary['cells_share']['p90']:.3f}]"
            f" agree {summary['agreement_mean']:.3f} reached {summary['reached_target']:.2f}"
            f" spa {summary['spa_mean'] or float('nan'):.3f} waves {summary['waves_median']:.0f}"
            f" {wall:.1f} s ({runs} runs)",
            flush=True,
        )
    return out


def _paired(res: dict, row: str, other: str | None) -> float | None:
    mine, theirs = res["rows"].get(row, {}), res["rows"].get(other or "", {})
    if "cell_shares" not in mine or "cell_shares" not in theirs or other == row:
        return None
    return one_sided_p(mine["cell_shares"], theirs["cell_shares"])


def add_p_values(res: dict) -> None:
    for row, summary in res["rows"].items():
        if "skipped" in summary:
            continue
        summary["p_vs_baseline"] = _paired(res, row, ROWS[row].baseline)
        summary["p_vs_also"] = _paired(res, row, ROWS[row].also)


def _resolve(res: dict, row: str) -> str:
    """The campaign's row behind ``row`` (``default``: learn+ppi with a metric, learn without)."""
    return res["default_row"] if row == "default" else row


def pooled(results: dict, rows: list[str], split: str) -> dict:
    """Per row: the pooled per-run share over the split's groups (module docstring), and its verdicts."""
    out = {}
    for row in [*rows, "default"]:
        if row == "default" and not {"learn", "learn+ppi", "random"} <= set(rows):
            continue
        spec = ROWS[DEFAULT[True] if row == "default" else row]
        base_row = "random" if row == "default" else spec.baseline
        groups: dict[str, list[str]] = {}
        for key, res in results.items():
            if res["split"] != split:
                continue
            have = res["rows"].get(_resolve(res, row), {})
            base = res["rows"].get(base_row, {})
            if "cell_shares" in have and "cell_shares" in base:
                groups.setdefault(res["group"], []).append(key)
        if not groups:
            continue

        def per_run(name: str, groups: dict[str, list[str]] = groups) -> np.ndarray:
            shares = [
                [results[k]["rows"][_resolve(results[k], name)]["cell_shares"] for k in ks] for ks in groups.values()
            ]
            return np.mean([np.mean(group, axis=0) for group in shares], axis=0)

        keys = [k for ks in groups.values() for k in ks]
        mine, base = per_run(row), per_run(base_row)
        runs_of = [results[k]["rows"][_resolve(results[k], row)] for k in keys]
        record = {
            "groups": {g: ks for g, ks in groups.items()},
            "cells_share_median": float(np.median(mine)),
            "baseline": base_row,
            "baseline_cells_share_median": float(np.median(base)),
            "reached_target": float(np.mean(np.concatenate([r["reached"] for r in runs_of]))),
            "agreement_mean": float(np.mean(np.concatenate([r["agreements"] for r in runs_of]))),
            "p_vs_baseline": one_sided_p(mine, base) if row != base_row else float("nan"),
            "per_run": mine.tolist(),
        }
        also = spec.also if row != "default" else None
        if also and all("cell_shares" in results[k]["rows"].get(also, {}) for k in keys):
            other = per_run(also)
            record.update(
                also=also, also_cells_share_median=float(np.median(other)), p_vs_also=one_sided_p(mine, other)
            )
        out[row] = record
    return out


def synthetic_timing(runs: int) -> dict:
    campaign = simulate_campaign(n_items=2000, n_systems=15, seed=0)
    truth = np.asarray(campaign.score(HUMAN), dtype=float)
    length = source_length(campaign.src)
    settings = ReplaySettings(size=parse_wave_size(WAVE, len(campaign)), target=TARGET, confidence=CONFIDENCE)
    started = time.perf_counter()
    result = replay(
        truth,
        lambda: Chooser("random", length=length),
        settings,
        doc=campaign.doc,
        cost=campaign.cost,
        runs=runs,
        seed=SEED,
        campaign="sim-2000x15",
    )
    seconds = time.perf_counter() - started
    summary = result.summary()
    print(f"synthetic 2000 x 15, {runs} runs, random, guaranteed: {seconds:.1f} s", flush=True)
    return {
        "items": 2000,
        "systems": 15,
        "runs": runs,
        "seconds": seconds,
        "cells_share": summary["cells_share"],
        "agreement_mean": summary["agreement_mean"],
        "reached_target": summary["reached_target"],
    }


def fmt_p(p) -> str:
    if p is None:
        return ""
    if isinstance(p, float) and np.isnan(p):
        return "NaN"
    return f"{p:.2g}" if p >= 0.001 else f"{p:.0e}"


def fmt(value, spec: str) -> str:
    return "" if value is None else format(value, spec)


def describe() -> list[str]:
    """The paragraphs above the tables."""
    return [
        f"Every run starts with nothing judged and draws waves of {WAVE} of the items until the stop rule says the"
        f" pairwise agreement with the full campaign's ranking reaches {TARGET} (confidence {CONFIDENCE});"
        " run r seeded (0, r) for every row (paired). cells = share of the campaign's cells judged at the stop, median"
        " [p10, p90]; items/hours = medians; agree = realised agreement at the stop, mean over runs; reached = share"
        f" of runs whose realised agreement is >= {TARGET}; SPA / clusters = soft pairwise accuracy and significance"
        " clusters of the items judged for every system at the stop (with +alloc fewer items are), against the full"
        " campaign (mean over runs);"
        " p vs base = one-sided Wilcoxon signed-rank of fewer cells than the baseline row (random under the same"
        " rule, allocation and look level, plain predictor; paired by run; NaN = identical); p vs also = the same"
        " against a second row (learn+ppi: random+ppi; a fixed-look row: its anytime counterpart); wall = seconds for"
        " the row's runs.",
        "",
        "Rows (rule guaranteed unless named): random; length = longer source first; prior = MetricVar of the"
        " campaign's metric; learn = within-campaign learning from the MetricVar prior and the metric's per-item"
        " mean/spread (no metric: from source length only); learn/length-only = learn from source length alone (the"
        " length-only model control); +ppi = the weighted estimates' predictor reads the"
        " metric (prediction-powered AIPW); estimator = the shipped source-based estimator checkpoints/metric-avg-e5"
        " as the prior (chooser prior); learn+estimator = learn from that prior (plus the metric's features where"
        " there is a metric; plain predictor); /expected = rule expected; +alloc = system-level allocation;"
        " /fixed-look = ABLATION, the whole error level 0.1 spent at every look (anytime=False): not valid under"
        " optional stopping, it shows how few cells a bound of this kind could stop at without paying for looking"
        " after every wave.",
        "",
        "**Default of `precomet waves`** (chooser learn, rule guaranteed, the metric's predictor when `--metric` is"
        " given, here with `--utility metric_var`): the learn+ppi row on a campaign with a metric, the learn row"
        " without one (marked (default) below); the pooled `default` row is that mix.",
        "",
        "Metrics: WMT22 zh-en metricx_xxl_MQM_2020, WMT23 MetricX-23-c. WMT24 ESA, TED and SummEval have no metric in"
        " the data: prior and the +ppi rows are skipped there. SummEval truth = coherence + consistency + fluency +"
        " relevance. The estimator was trained on WMT22 zh-en: its prior there is read on its own training sources"
        " (seen counts below).",
        "",
        "Split fixed before reading results: dev = WMT22 zh-en, TED en-de; test = the rest.",
    ]


def render(data: dict) -> str:
    niced = f", nice {data['nice']}" if data.get("nice") else ""
    lines = [
        "# Waves replay (precomet.waves)",
        "",
        f"Command: `{data['command']}`",
        "",
        f"Date: {data['date']} (wall {data['wall_s']:.0f} s in all; 2 shared cores{niced}); {data['runs']} runs per"
        " row"
        + (f" ({data['alloc_runs']} for +alloc rows)" if data["alloc_runs"] != data["runs"] else "")
        + ("." if data.get("finished") else " — PARTIAL, still running."),
        "",
        *describe(),
        "",
        f"Code: {data['commit']}.",
        "",
        "| campaign | split | N×S | row | runs | cells [p10, p90] | items | hours (of total) | waves | agree | reached"
        " | SPA | clusters | p vs base | p vs also | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    flags = []
    estimator_lines = []
    for key, res in data["campaigns"].items():
        if "error" in res:
            lines.append(f"| {key} | | | | | error: {res['error']} | | | | | | | | | | |")
            flags.append(f"{key}: error {res['error']}")
            continue
        info = res.get("estimator")
        if info:
            estimator_lines.append(
                f"{key}: error {info['error']}"
                if "error" in info
                else f"{key}: {info['seen']} of {res['items']} sources seen in training,"
                + (" read from the cache" if info["cached"] else f" predicted in {info['seconds']:.1f} s")
            )
        for row, s in res["rows"].items():
            shape = f"{res['items']}×{res['systems']}"
            name = row + (" (default)" if row == res.get("default_row") else "")
            if "skipped" in s:
                lines.append(
                    f"| {key} | {res['split']} | {shape} | {name} | | skipped ({s['skipped']}) | | | | | | | | | | |"
                )
                continue
            c = s["cells_share"]
            lines.append(
                f"| {key} | {res['split']} | {shape} | {name} | {s['runs']}"
                f" | {c['median']:.3f} [{c['p10']:.3f}, {c['p90']:.3f}]"
                f" | {s['items_share']['median']:.3f} | {s['hours']['median']:.2f} ({res['hours_total']:.1f})"
                f" | {s['waves_median']:.0f} | {s['agreement_mean']:.3f} | {s['reached_target']:.2f}"
                f" | {fmt(s.get('spa_mean'), '.3f')} | {fmt(s.get('clusters_mean'), '.1f')}"
                f" | {fmt_p(s.get('p_vs_baseline'))} | {fmt_p(s.get('p_vs_also'))}"
                f" | {s['wall_s']:.1f} |"
            )
            if s["rule"] == "guaranteed" and s["reached_target"] < 0.9:
                what = "ablation, no optional-stopping guarantee" if ROWS[row].ablation else "guaranteed rule"
                flags.append(f"{key} {row}: reached {s['reached_target']:.2f} < 0.9 ({what})")
            if s["rule"] == "expected" and s["agreement_mean"] < TARGET:
                flags.append(
                    f"{key} {row}: mean realised agreement {s['agreement_mean']:.3f} < {TARGET} (rule expected)"
                )
            if s["wall_s"] > 180:
                flags.append(f"{key} {row}: {s['wall_s']:.0f} s for {s['runs']} runs")
    if estimator_lines:
        lines += [
            "",
            "Estimator prior (checkpoints/metric-avg-e5, fp32 CPU; seconds of the first prediction, whose encoder"
            " vectors come from precomet's shared disk cache where an earlier run embedded the same sources; later"
            " runs read benchmarks/out/waves-estimator/):",
            "",
        ] + [f"- {x}" for x in estimator_lines]
    for split in ("test", "dev"):
        pool = data["pooled"].get(split) or {}
        if not pool:
            continue
        lines += [
            "",
            f"## Pooled over {split.upper()} groups (per run: mean over groups of the cell share; WMT24 ESA"
            " en-cs/hi/ja averaged into one group first)",
            "",
            "| row | groups | pooled cells median | baseline: median | reached (campaign, run) | agree | p vs base"
            " | also: median | p vs also |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row, p in pool.items():
            label = row + (" (ablation)" if row in ROWS and ROWS[row].ablation else "")
            also = f"{p['also']}: {p['also_cells_share_median']:.3f}" if "also" in p else ""
            lines.append(
                f"| {label} | {len(p['groups'])} ({', '.join(p['groups'])}) | {p['cells_share_median']:.3f}"
                f" | {p['baseline']}: {p['baseline_cells_share_median']:.3f} | {p['reached_target']:.3f}"
                f" | {p['agreement_mean']:.3f} | {fmt_p(p['p_vs_baseline'])} | {also} | {fmt_p(p.get('p_vs_also'))} |"
            )
    lines += render_ablation(data)
    syn = data.get("synthetic")
    if syn:
        lines += [
            "",
            "## Speed",
            "",
            f"One replay of a synthetic {syn['items']}-item × {syn['systems']}-system campaign (precomet.simulate,"
            f" seed 0), {syn['runs']} runs, waves {WAVE}, random, guaranteed: **{syn['seconds']:.1f} s** (goal <= 120 s"
            f" on 2 cores); cells median {syn['cells_share']['median']:.3f}, agree {syn['agreement_mean']:.3f},"
            f" reached {syn['reached_target']:.2f}.",
        ]
    lines += ["", "## Flags", ""] + ([f"- {f}" for f in flags] or ["- none"])
    return "\n".join(lines) + "\n"


def render_ablation(data: dict) -> list[str]:
    """The price of the guarantee: fixed-look rows against their anytime counterparts, pooled."""
    rows = []
    for split in ("test", "dev"):
        pool = data["pooled"].get(split) or {}
        for row in ("random/fixed-look", "learn/fixed-look"):
            p = pool.get(row)
            if not p or "also" not in p:
                continue
            anytime = pool.get(p["also"], {})
            rows.append(
                f"| {split} | {row} | {p['cells_share_median']:.3f} | {p['also']}:"
                f" {p['also_cells_share_median']:.3f} | {p['reached_target']:.3f}"
                f" | {fmt(anytime.get('reached_target'), '.3f')} | {p['agreement_mean']:.3f} |"
            )
    if not rows:
        return []
    return [
        "",
        "## The price of the guarantee (ABLATION: fixed-look level, not valid under optional stopping)",
        "",
        "A fixed-look row spends the whole error level 0.1 at every look (`ReplaySettings(anytime=False)`): the"
        " smallest share of cells a lower bound of this kind could stop at if looking after every wave cost nothing."
        " Its calibration (share of (campaign, run) whose realised agreement reaches the target) is what is lost by"
        " not paying for optional stopping; the anytime rows are the ones to run a campaign on.",
        "",
        "| split | ablation row | pooled cells median | anytime row: median | reached (ablation) | reached (anytime)"
        " | agree (ablation) |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]


def commit() -> str:
    """HEAD, and whether precomet/ differs from it (the uncommitted diff's hash; read-only git)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        diff = subprocess.run(["git", "diff", "HEAD", "--", "precomet"], cwd=REPO, capture_output=True).stdout
        changed = f" (precomet/ modified: diff sha256 {hashlib.sha256(diff).hexdigest()[:12]})" if diff else ""
        return head.stdout.strip() + changed
    except OSError:
        return "unknown"


def save(data: dict, out_dir: Path, stem: str, rows: list[str], started: float) -> None:
    """Write the JSON and markdown (after every campaign: partial results can be read while it runs)."""
    ok = {k: v for k, v in data["campaigns"].items() if "error" not in v}
    for res in ok.values():
        add_p_values(res)
    data["pooled"] = {split: pooled(ok, rows, split) for split in ("test", "dev")}
    data["wall_s"] = time.perf_counter() - started
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.json").write_text(json.dumps(data, indent=1) + "\n")
    (out_dir / f"{stem}.md").write_text(render(data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--alloc-runs", type=int, default=None, help="runs of the +alloc rows (default --runs)")
    parser.add_argument("--campaigns", default=",".join(CAMPAIGNS), help="comma-separated keys of CAMPAIGNS")
    parser.add_argument("--choosers", default=",".join(ROWS), help="comma-separated rows (their baselines added)")
    parser.add_argument("--out-dir", type=Path, default=None, help="default benchmarks/results (--quick: out/)")
    parser.add_argument("--quick", action="store_true", help="10 runs on 2 campaigns, into benchmarks/out/")
    parser.add_argument("--synthetic-runs", type=int, default=None, help="runs of the 2000x15 timing (0: skip)")
    parser.add_argument("--render-only", action="store_true", help="rewrite waves-replay.md from its JSON")
    args = parser.parse_args()
    if args.render_only:
        out_dir = args.out_dir or RESULTS
        data = json.loads((out_dir / "waves-replay.json").read_text())
        (out_dir / "waves-replay.md").write_text(render(data))
        print(f"wrote {out_dir / 'waves-replay.md'} from its JSON", flush=True)
        return
    explicit = {a.split("=")[0] for a in sys.argv[1:]}
    if args.quick:
        if "--runs" not in explicit:
            args.runs = 10
        if "--campaigns" not in explicit:
            args.campaigns = ",".join(QUICK_CAMPAIGNS)
    out_dir = args.out_dir or (SCRATCH if args.quick else RESULTS)
    alloc_runs = args.alloc_runs if args.alloc_runs is not None else args.runs
    synthetic_runs = args.synthetic_runs if args.synthetic_runs is not None else (args.runs if args.quick else 100)
    keys = [k.strip() for k in args.campaigns.split(",") if k.strip()]
    unknown = [k for k in keys if k not in CAMPAIGNS]
    if unknown:
        parser.error(f"unknown campaigns {unknown}; choose from {list(CAMPAIGNS)}")
    rows = [r.strip() for r in args.choosers.split(",") if r.strip()]
    if [r for r in rows if r not in ROWS]:
        parser.error(f"unknown rows {[r for r in rows if r not in ROWS]}; choose from {list(ROWS)}")
    wanted = set(rows) | {ROWS[r].baseline for r in rows} | {str(ROWS[r].also) for r in rows if ROWS[r].also}
    wanted |= {ROWS[r].baseline for r in list(wanted)}
    rows = [r for r in ROWS if r in wanted]  # baselines first, fixed order
    phases = [
        ([r for r in rows if not ROWS[r].allocation], args.runs),
        ([r for r in rows if ROWS[r].allocation], alloc_runs),
    ]

    started = time.perf_counter()
    stem = "waves-replay-quick" if args.quick else "waves-replay"
    data = {
        "command": shlex.join([".venv/bin/python", "benchmarks/bench_waves.py", *sys.argv[1:]]),
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nice": os.nice(0),
        "runs": args.runs,
        "alloc_runs": alloc_runs,
        "wave": WAVE,
        "target": TARGET,
        "confidence": CONFIDENCE,
        "dev": list(DEV),
        "commit": commit(),
        "campaigns": {},
    }
    for number, (phase_rows, runs) in enumerate(phases):
        if not phase_rows:
            continue
        for key in keys:
            if "error" in data["campaigns"].get(key, {}):
                continue
            try:
                data["campaigns"][key] = run_campaign(key, phase_rows, runs, data["campaigns"].get(key))
            except Exception as err:  # noqa: BLE001 - one campaign's failure is recorded, the rest still run
                print(f"{key}: ERROR {type(err).__name__}: {err}", flush=True)
                data["campaigns"][key] = {"error": f"{type(err).__name__}: {err}"}
            save(data, out_dir, stem, rows, started)
        if number == 0 and synthetic_runs > 0:
            data["synthetic"] = synthetic_timing(synthetic_runs)
            save(data, out_dir, stem, rows, started)
    if synthetic_runs > 0 and "synthetic" not in data:
        data["synthetic"] = synthetic_timing(synthetic_runs)
    data["finished"] = True
    save(data, out_dir, stem, rows, started)
    for split, pool in data["pooled"].items():
        for row, p in pool.items():
            print(
                f"pooled {split} {row:18s} groups {len(p['groups'])} cells {p['cells_share_median']:.3f}"
                f" ({p['baseline']} {p['baseline_cells_share_median']:.3f}) reached {p['reached_target']:.3f}"
                f" p {fmt_p(p['p_vs_baseline'])}"
                + (
                    f"; vs {p['also']} {p['also_cells_share_median']:.3f} p {fmt_p(p['p_vs_also'])}"
                    if "also" in p
                    else ""
                ),
                flush=True,
            )
    print(f"wrote {out_dir / stem}.json and .md", flush=True)


if __name__ == "__main__":
    main()
