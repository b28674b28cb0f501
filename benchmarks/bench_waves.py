"""Replay of "annotate in waves until the ranking is settled" (precomet.waves) on every dense campaign, under the
default target ``separated`` and the old ``all-pairs`` side by side.

Usage: nice -n 10 .venv/bin/python benchmarks/bench_waves.py [--runs 100] [--alloc-runs N]
       [--campaigns wmt23/en-de,...] [--choosers random,learn,...] [--targets separated,all-pairs]
       [--out-dir benchmarks/results] [--quick] [--render-only]

Per campaign (every cell judged; truth = the human score), each row replays ``--runs`` runs (run ``r`` seeded
``(0, r)`` for every row and target, so runs are paired across rows) with ``WaveSettings(size=5 % of the items,
target=Target(kind, share=0.95), confidence=0.9, rule="guaranteed")``, once per target:

* ``separated`` (the default of ``precomet waves``): the share is over the pairs the full campaign separates (a pair
  whose full-set difference lies within 1.96 full-set standard errors is a true tie and cannot be wrong);
* ``all-pairs`` (the target of precomet 0.16–0.19): every pair counts.

"agree" and "reached" are judged against the truth computed from every cell (``ReplayResult.summary()``:
``agreement_mean`` under the target, ``plain_agreement_mean`` over all pairs, ``reached_target`` = share of runs
whose agreement under the target is >= 0.95; ``true_ties`` = pairs the full campaign does not separate).

Rows:

* ``random``; ``length`` (longer source first); ``prior`` (MetricVar of the campaign's metric; metric campaigns
  only);
* ``learn``: prior = MetricVar, features = the metric's per-item mean/spread, and the weighted estimates' predictor
  reads the metric (``replay(..., metric=)``: prediction-powered AIPW) — shown as ``learn+ppi``; without a metric:
  no prior, learns from source length, plain predictor. This is what ``precomet waves`` does by default
  (``--utility metric_var --metric M``; without a metric: ``learn``), marked (default);
* ``estimator``: the shipped source-based estimator (checkpoints/metric-avg-e5) as the prior (chooser ``prior``,
  plain predictor). Its predictions are cached under benchmarks/out/waves-estimator/ (git-ignored);
* ``random+alloc``, ``length+alloc``, ``learn+alloc``, ``prior+alloc``, ``estimator+alloc``: the same with
  system-level allocation (``--alloc-runs`` runs);
* ``random/excuse-ties`` (target separated only): an ABLATION, ``WaveSettings(excuse_ties=True)``: pairs whose
  *estimated* difference lies within their tie width are never counted wrong. Not a valid bound (it ignores the
  separated pairs such an estimate hides); it is what a prototype that stopped near 30 % of the cells did, and its
  calibration is the point.

Every run also records SPA and the significance clusters of the items judged for every system at its stop, against
``full_reference(campaign, seed=0)``.

Metric choosers read: WMT22 zh-en ``metricx_xxl_MQM_2020``, WMT23 ``MetricX-23-c``; WMT24 ESA, TED and SummEval have
no metric in the data, so ``prior`` is skipped there and ``learn`` learns from source length only. SummEval's truth
is ``human`` = coherence + consistency + fluency + relevance (the loader's sum).

p vs random: one-sided Wilcoxon signed-rank (``alternative="less"``) on ``cells_row[r] − cells_random[r]``, random
under the same target and allocation (NaN when the differences are all zero).

Dev/test split, fixed before reading any result: dev = WMT22 zh-en, TED en-de; test = the rest. Pooled over the
split's groups (WMT24 en-cs/en-hi/en-ja share their sources: one group, its per-run share the mean of the three),
per row and target: per run ``r`` the mean over groups of the run's cell share; its median over runs, the share of
(campaign, run) reaching the target, the smallest per-campaign reached share, and the paired Wilcoxon p on the
pooled per-run values.

The bars of issue 59 are checked under the default target (rule guaranteed, confidence 0.9): calibration (>= 90 %
of runs reach >= 0.95 on the truly separated pairs on every campaign, every chooser, with and without allocation;
ablations excluded), savings (default row: pooled test median <= 30 % of the cells and <= 40 % on every campaign)
and fewer cells than random waves at p < 0.05 pooled (test).

Also times one replay of a synthetic 2000-item × 15-system campaign (precomet.simulate; 100 runs, waves 5 %, random,
guaranteed, target separated). Writes ``<out-dir>/waves-replay.{json,md}`` (``--quick``: 10 runs on 2 campaigns into
benchmarks/out/waves-replay-quick.*).
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
from precomet.waves.choosers import make_chooser as registered_chooser
from precomet.waves.plan import parse_wave_size
from precomet.waves.replay import replay
from precomet.waves.step import WaveSettings
from precomet.waves.target import Target

WAVE = "5%"
SHARE = 0.95
CONFIDENCE = 0.9
RULE = "guaranteed"
SEED = 0
TARGETS = ("separated", "all-pairs")
DEFAULT_TARGET = "separated"
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
    the metric where the campaign has one. ``targets``: the targets it runs under."""

    chooser: str
    prior: str | None = None
    allocation: bool = False
    ppi: bool = False
    needs_metric: bool = False
    excuse_ties: bool = False  # the ablation
    targets: tuple[str, ...] = TARGETS

    @property
    def baseline(self) -> str:
        """Random waves under the same allocation (and the same target)."""
        return "random+alloc" if self.allocation else "random"

    @property
    def ablation(self) -> bool:
        return self.excuse_ties


_BASE = {
    "random": Row("random"),
    "length": Row("length"),
    "prior": Row("prior", prior="metric_var", needs_metric=True),
    "learn": Row("learn", prior="metric_var", ppi=True),
    "estimator": Row("prior", prior="estimator"),
}
ROWS = {
    **_BASE,
    **{f"{name}+alloc": Row(**{**row.__dict__, "allocation": True}) for name, row in _BASE.items()},
    "random/excuse-ties": Row("random", excuse_ties=True, targets=(DEFAULT_TARGET,)),
}
DEFAULT_ROW = "learn"
"""The row ``precomet waves`` runs by default (learn+ppi with ``--metric``, learn without)."""


def label(row: str, has_metric: bool) -> str:
    """The row's name as shown: ``learn`` reads the metric's predictor where there is one (``learn+ppi``)."""
    name = row.replace("learn", "learn+ppi", 1) if ROWS[row].ppi and has_metric else row
    return name + (" (default)" if row == DEFAULT_ROW else "") + (" ABLATION" if ROWS[row].ablation else "")


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
            return registered_chooser(name, length)
        if name == "prior":
            return registered_chooser("prior", length, prior=prior)
        return registered_chooser("learn", length, prior=prior, features=features)

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
    if metric is not None:
        metric_scores = np.asarray(campaign.score(metric), dtype=float)
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


def run_campaign(key: str, rows: list[str], targets: list[str], runs: int, out: dict | None = None) -> dict:
    """Replay ``rows`` under ``targets`` on campaign ``key`` (``runs`` runs each), adding them to ``out``."""
    title, _, _, metric = CAMPAIGNS[key]
    p = prepare(key, need_estimator=any(ROWS[r].prior == "estimator" for r in rows))
    campaign, truth = p["campaign"], p["truth"]
    n_systems = truth.shape[1]
    if out is None:
        out = {
            "title": title,
            "items": int(truth.shape[0]),
            "systems": int(n_systems),
            "pairs": n_systems * (n_systems - 1) // 2,
            "true_ties": {t: int(Target(t, share=SHARE).true_ties(truth).sum()) for t in TARGETS},
            "hours_total": float(np.sum(campaign.cost)) * n_systems / 3600,  # every cell at its seconds per output
            "metric": metric,
            "split": "dev" if key in DEV else "test",
            "group": GROUP.get(key, key),
            "rows": {t: {} for t in TARGETS},
        }
    if p["estimator_info"] is not None and "estimator" not in out:  # the first phase's (the later ones read the cache)
        out["estimator"] = p["estimator_info"]
    for row in rows:
        spec = ROWS[row]
        for target in [t for t in targets if t in spec.targets]:
            if spec.needs_metric and metric is None:
                out["rows"][target][row] = {"skipped": "no metric in this campaign"}
                continue
            if spec.prior == "estimator" and p["estimator"] is None:
                out["rows"][target][row] = {"skipped": f"estimator unavailable: {p['estimator_info']['error']}"}
                continue
            prior = p["estimator"] if spec.prior == "estimator" else p["metric_var"] if spec.prior else None
            features = p["features"] if spec.chooser == "learn" else None
            ppi = spec.ppi and p["metric_scores"] is not None
            settings = WaveSettings(
                size=p["size"],
                target=Target(target, share=SHARE),
                confidence=CONFIDENCE,
                rule=RULE,
                allocation=spec.allocation,
                excuse_ties=spec.excuse_ties,
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
                metric=p["metric_scores"] if ppi else None,
                reference=p["reference"],
            )
            wall = time.perf_counter() - started
            summary = result.summary()
            summary.pop("campaign", None)
            summary.update(
                row=row,
                label=label(row, metric is not None),
                target=target,
                allocation=spec.allocation,
                ppi=ppi,
                prior=spec.prior if prior is not None else None,
                excuse_ties=spec.excuse_ties,
                wall_s=wall,
                cell_shares=result.cell_shares().tolist(),
                agreements=[r.agreement for r in result.runs],
                plain_agreements=[r.plain_agreement for r in result.runs],
                reached=[bool(r.agreement >= SHARE - 1e-12) for r in result.runs],
                exhausted=float(np.mean([not r.stopped for r in result.runs])),
            )
            out["rows"][target][row] = summary
            print(
                f"{key:12s} {target:9s} {row:18s} cells {summary['cells_share']['median']:.3f}"
                f" [{summary['cells_share']['p10']:.3f}, {summary['cells_share']['p90']:.3f}]"
                f" agree {summary['agreement_mean']:.3f} (all {summary['plain_agreement_mean']:.3f})"
                f" reached {summary['reached_target']:.2f} ties {summary['true_ties']}/{out['pairs']}"
                f" waves {summary['waves_median']:.0f} {wall:.1f} s ({runs} runs)",
                flush=True,
            )
    return out


def add_p_values(res: dict) -> None:
    for rows in res["rows"].values():
        for row, summary in rows.items():
            base = rows.get(ROWS[row].baseline, {})
            if "cell_shares" not in summary:
                continue
            ok = "cell_shares" in base and row != ROWS[row].baseline
            summary["p_vs_random"] = one_sided_p(summary["cell_shares"], base["cell_shares"]) if ok else None


def pooled(results: dict, rows: list[str], split: str, target: str) -> dict:
    """Per row under ``target``: the pooled per-run share over the split's groups (module docstring), its verdicts."""
    out = {}
    for row in rows:
        base_row = ROWS[row].baseline
        groups: dict[str, list[str]] = {}
        for key, res in results.items():
            have, base = res["rows"][target].get(row, {}), res["rows"][target].get(base_row, {})
            if res["split"] == split and "cell_shares" in have and "cell_shares" in base:
                groups.setdefault(res["group"], []).append(key)
        if not groups:
            continue

        def per_run(name: str, groups: dict[str, list[str]] = groups) -> np.ndarray:
            shares = [[results[k]["rows"][target][name]["cell_shares"] for k in ks] for ks in groups.values()]
            return np.mean([np.mean(group, axis=0) for group in shares], axis=0)

        keys = [k for ks in groups.values() for k in ks]
        mine, base = per_run(row), per_run(base_row)
        runs_of = {k: results[k]["rows"][target][row] for k in keys}
        worst = min(keys, key=lambda k: runs_of[k]["reached_target"])
        out[row] = {
            "groups": groups,
            "cells_share_median": float(np.median(mine)),
            "baseline": base_row,
            "baseline_cells_share_median": float(np.median(base)),
            "reached_target": float(np.mean(np.concatenate([r["reached"] for r in runs_of.values()]))),
            "reached_min": runs_of[worst]["reached_target"],
            "reached_min_campaign": worst,
            "agreement_mean": float(np.mean(np.concatenate([r["agreements"] for r in runs_of.values()]))),
            "p_vs_random": one_sided_p(mine, base) if row != base_row else None,
            "per_run": mine.tolist(),
        }
    return out


def bars(data: dict, target: str) -> dict | None:
    """Issue 59's bars under ``target`` (module docstring), on the rows and campaigns run."""
    ok = {k: v for k, v in data["campaigns"].items() if "error" not in v}
    reached = [
        (s["reached_target"], key, s["label"])
        for key, res in ok.items()
        for s in res["rows"][target].values()
        if "reached_target" in s and not s["excuse_ties"]
    ]
    default = {
        k: v["rows"][target][DEFAULT_ROW]
        for k, v in ok.items()
        if "cells_share" in v["rows"][target].get(DEFAULT_ROW, {})
    }
    pool = data["pooled"].get("test", {}).get(target, {}).get(DEFAULT_ROW)
    if not reached or not default or not pool:
        return None
    worst_cells = max(default, key=lambda k: default[k]["cells_share"]["median"])
    low = min(reached)
    below = sorted(r for r in reached if r[0] < 0.9)
    return {
        "calibration_min": low[0],
        "calibration_min_at": f"{low[1]} {low[2]}",
        "calibration_configs": len(reached),
        "calibration_below": [f"{k} {name}: {v:.2f}" for v, k, name in below],
        "calibration_met": not below,
        "pooled_test_median": pool["cells_share_median"],
        "pooled_met": pool["cells_share_median"] <= 0.30,
        "campaign_max": default[worst_cells]["cells_share"]["median"],
        "campaign_max_at": worst_cells,
        "campaign_met": default[worst_cells]["cells_share"]["median"] <= 0.40,
        "p_vs_random": pool["p_vs_random"],
        "random_median": pool["baseline_cells_share_median"],
        "p_met": pool["p_vs_random"] is not None and pool["p_vs_random"] < 0.05,
    }


def synthetic_timing(runs: int) -> dict:
    campaign = simulate_campaign(n_items=2000, n_systems=15, seed=0)
    truth = np.asarray(campaign.score(HUMAN), dtype=float)
    length = source_length(campaign.src)
    settings = WaveSettings(
        size=parse_wave_size(WAVE, len(campaign)), target=Target(DEFAULT_TARGET, share=SHARE), confidence=CONFIDENCE
    )
    started = time.perf_counter()
    result = replay(
        truth,
        lambda: registered_chooser("random", length),
        settings,
        doc=campaign.doc,
        cost=campaign.cost,
        runs=runs,
        seed=SEED,
        campaign="sim-2000x15",
    )
    seconds = time.perf_counter() - started
    summary = result.summary()
    print(f"synthetic 2000 x 15, {runs} runs, random, guaranteed, separated: {seconds:.1f} s", flush=True)
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
        f"Every run starts with nothing judged and draws waves of {WAVE} of the items until the stop rule (rule"
        f" {RULE}, confidence {CONFIDENCE}) says the share of pairs ordered as on the full campaign reaches {SHARE}"
        " under the target; run r seeded (0, r) for every row and target (paired). Targets: **separated** (the"
        " default of `precomet waves`: the share is over the pairs the full campaign separates; a pair within 1.96"
        " full-set standard errors of its per-item differences is a true tie and cannot be wrong) and **all-pairs**"
        " (every pair counts; the target of precomet 0.16–0.19). true ties = pairs the full campaign does not separate"
        " under the separated target, computed from every cell.",
        "",
        "cells = share of the campaign's cells judged at the stop, median [p10, p90]; items/hours = medians (hours ="
        " annotator time: the judged cells, each at its item's seconds per judgement of one output; of total = every"
        " cell); agree ="
        " realised agreement at the stop under the target, against the truth from every cell, mean over runs; all ="
        " the same over all pairs; reached = share of runs whose agreement under the target is >= 0.95; exh = share"
        " of runs that exhausted the pool; SPA / clusters = soft pairwise accuracy and significance clusters of the"
        " items judged for every system at the stop (with +alloc fewer items are), against the full campaign (mean"
        " over runs); p = one-sided Wilcoxon signed-rank of fewer cells than random under the same target and"
        " allocation (paired by run; NaN = identical); wall = seconds for the row's runs.",
        "",
        "Rows: random; length = longer source first; prior = MetricVar of the campaign's metric; learn ="
        " within-campaign learning from the MetricVar prior and the metric's per-item mean/spread, with the weighted"
        " estimates' predictor reading the metric (learn+ppi: prediction-powered AIPW); without a metric: from source"
        " length only, plain predictor; estimator = the shipped source-based estimator checkpoints/metric-avg-e5 as"
        " the prior (chooser prior, plain predictor); +alloc = system-level allocation. **random/excuse-ties** ="
        " ABLATION, `WaveSettings(excuse_ties=True)` under the separated target: pairs whose *estimated* difference"
        " lies within their tie width are never counted wrong — not a valid bound (it ignores the separated pairs such"
        " an estimate hides); it is what a prototype that stopped near 30 % of the cells did, and its calibration"
        " (reached) is the point.",
        "",
        "**Default of `precomet waves`** (chooser learn, rule guaranteed, target separated, the metric's predictor"
        " when `--metric` is given, here with `--utility metric_var`): learn+ppi on a campaign with a metric, learn"
        " without one (marked (default)).",
        "",
        "Metrics: WMT22 zh-en metricx_xxl_MQM_2020, WMT23 MetricX-23-c. WMT24 ESA, TED and SummEval have no metric in"
        " the data: prior is skipped there. SummEval truth = coherence + consistency + fluency + relevance. The"
        " estimator was trained on WMT22 zh-en: its prior there is read on its own training sources (seen counts"
        " below).",
        "",
        "Split fixed before reading results: dev = WMT22 zh-en, TED en-de; test = the rest.",
    ]


def render_bars(data: dict) -> list[str]:
    """Issue 59's bars: met or not under the default target, with the all-pairs numbers beside for comparison."""
    got = {t: bars(data, t) for t in TARGETS}
    b = got.get(DEFAULT_TARGET)
    if b is None:
        return [
            "",
            "## The bars of issue 59",
            "",
            "Not checked: the default row, random or a test campaign was not run.",
        ]
    o = got.get("all-pairs")  # beside, for comparison (None when not run)

    def beside(text: Any) -> str:
        return f" (all-pairs target, for comparison: {text})" if o else ""

    def met(flag: bool) -> str:
        return "**MET**" if flag else "**NOT MET**"

    below = "; ".join(b["calibration_below"]) or "none"
    return [
        "",
        "## The bars of issue 59 (default target separated, rule guaranteed, confidence 0.9)",
        "",
        f"- **Calibration**: >= 90 % of runs reach >= 0.95 on the truly separated pairs, on every campaign, every"
        f" chooser, with and without allocation (ablation excluded): {met(b['calibration_met'])} — lowest reached"
        f" share {b['calibration_min']:.2f} ({b['calibration_min_at']}) over {b['calibration_configs']}"
        f" (campaign, row) configurations; below 0.90: {below}"
        + beside(
            o
            and f"lowest {o['calibration_min']:.2f} at {o['calibration_min_at']};"
            f" {len(o['calibration_below'])} of {o['calibration_configs']} below 0.90"
        )
        + ".",
        f"- **Savings, pooled**: default row pooled test median <= 30 % of the cells: {met(b['pooled_met'])} —"
        f" {b['pooled_test_median']:.3f} (random {b['random_median']:.3f})"
        + beside(o and f"{o['pooled_test_median']:.3f}, random {o['random_median']:.3f}")
        + ".",
        f"- **Savings, every campaign**: default row median <= 40 % on every campaign: {met(b['campaign_met'])} —"
        f" largest {b['campaign_max']:.3f} ({b['campaign_max_at']})"
        + beside(o and f"largest {o['campaign_max']:.3f} ({o['campaign_max_at']})")
        + ".",
        f"- **Fewer cells than random waves**, pooled test, p < 0.05: {met(b['p_met'])} — p ="
        f" {fmt_p(b['p_vs_random'])} (random: {b['random_median']:.3f} of the cells)"
        + beside(o and f"p = {fmt_p(o['p_vs_random'])}")
        + ".",
    ]


def render(data: dict) -> str:
    niced = f", nice {data['nice']}" if data.get("nice") else ""
    targets = [t for t in TARGETS if t in data.get("targets", TARGETS)]
    lines = [
        "# Waves replay (precomet.waves): target separated vs all-pairs",
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
        *render_bars(data),
        "",
        "## Per campaign, both targets side by side",
        "",
        "| campaign | split | N×S | true ties | row | "
        + " | ".join(f"{t}: cells [p10, p90] | agree | reached | p" for t in targets)
        + " |",
        "|---|---|---|---|---|" + "---|---|---|---|" * len(targets),
    ]
    detail = [
        "",
        "## Detail",
        "",
        "| campaign | target | row | runs | cells [p10, p90] | items | hours (of total) | waves | agree | all | reached"
        " | exh | SPA | clusters | p vs random | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    flags = []
    estimator_lines = []
    for key, res in data["campaigns"].items():
        if "error" in res:
            lines.append(f"| {key} | | | | error: {res['error']} |" + " | | | |" * len(targets))
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
        shape = f"{res['items']}×{res['systems']}"
        ties = f"{res['true_ties'][DEFAULT_TARGET]}/{res['pairs']}"
        names = list(dict.fromkeys(r for t in targets for r in res["rows"][t]))
        for row in [r for r in ROWS if r in names]:
            cells = []
            for t in targets:
                s = res["rows"][t].get(row)
                if s is None:
                    cells.append(" | | |")
                elif "skipped" in s:
                    cells.append(f"skipped ({s['skipped']}) | | |")
                else:
                    c = s["cells_share"]
                    cells.append(
                        f"{c['median']:.3f} [{c['p10']:.3f}, {c['p90']:.3f}] | {s['agreement_mean']:.3f}"
                        f" | {s['reached_target']:.2f} | {fmt_p(s.get('p_vs_random'))}"
                    )
            shown = label(row, res["metric"] is not None)
            lines.append(f"| {key} | {res['split']} | {shape} | {ties} | {shown} | " + " | ".join(cells) + " |")
        for t in targets:
            for row, s in res["rows"][t].items():
                if "skipped" in s:
                    continue
                c = s["cells_share"]
                detail.append(
                    f"| {key} | {t} | {s['label']} | {s['runs']} | {c['median']:.3f} [{c['p10']:.3f}, {c['p90']:.3f}]"
                    f" | {s['items_share']['median']:.3f} | {s['hours']['median']:.2f} ({res['hours_total']:.1f})"
                    f" | {s['waves_median']:.0f} | {s['agreement_mean']:.3f} | {s['plain_agreement_mean']:.3f}"
                    f" | {s['reached_target']:.2f} | {s['exhausted']:.2f} | {fmt(s.get('spa_mean'), '.3f')}"
                    f" | {fmt(s.get('clusters_mean'), '.1f')} | {fmt_p(s.get('p_vs_random'))} | {s['wall_s']:.1f} |"
                )
                if s["reached_target"] < 0.9:
                    what = "ABLATION, not a valid bound" if ROWS[row].ablation else "guaranteed rule"
                    flags.append(f"{key} {t} {s['label']}: reached {s['reached_target']:.2f} < 0.9 ({what})")
                if s["wall_s"] > 180:
                    flags.append(f"{key} {t} {s['label']}: {s['wall_s']:.0f} s for {s['runs']} runs")
    for split in ("test", "dev"):
        pools = {t: data["pooled"].get(split, {}).get(t) or {} for t in targets}
        names = [r for r in ROWS if any(r in pools[t] for t in targets)]
        if not names:
            continue
        lines += [
            "",
            f"## Pooled over {split.upper()} groups (per run: mean over groups of the cell share; WMT24 ESA"
            " en-cs/hi/ja averaged into one group first)",
            "",
            "cells = median over runs of the pooled share; reached = share of (campaign, run) reaching the target;"
            " min = smallest per-campaign reached share; p = paired one-sided Wilcoxon of fewer cells than random"
            " under the same target and allocation.",
            "",
            "| row | groups | " + " | ".join(f"{t}: cells | reached | min (campaign) | p" for t in targets) + " |",
            "|---|---|" + "---|---|---|---|" * len(targets),
        ]
        for row in names:
            cells, groups = [], ""
            for t in targets:
                p = pools[t].get(row)
                if p is None:
                    cells.append(" | | |")
                    continue
                groups = f"{len(p['groups'])} ({', '.join(p['groups'])})"
                cells.append(
                    f"{p['cells_share_median']:.3f} | {p['reached_target']:.3f}"
                    f" | {p['reached_min']:.2f} ({p['reached_min_campaign']}) | {fmt_p(p['p_vs_random'])}"
                )
            name = row.replace("learn", "learn(+ppi)", 1) if ROWS[row].ppi else row
            name += " (default)" if row == DEFAULT_ROW else " ABLATION" if ROWS[row].ablation else ""
            lines.append(f"| {name} | {groups} | " + " | ".join(cells) + " |")
    lines += detail
    if estimator_lines:
        lines += [
            "",
            "Estimator prior (checkpoints/metric-avg-e5, fp32 CPU; seconds of the first prediction, whose encoder"
            " vectors come from precomet's shared disk cache where an earlier run embedded the same sources; later"
            " runs read benchmarks/out/waves-estimator/):",
            "",
        ] + [f"- {x}" for x in estimator_lines]
    syn = data.get("synthetic")
    if syn:
        lines += [
            "",
            "## Speed",
            "",
            f"One replay of a synthetic {syn['items']}-item × {syn['systems']}-system campaign (precomet.simulate,"
            f" seed 0), {syn['runs']} runs, waves {WAVE}, random, guaranteed, target {DEFAULT_TARGET}:"
            f" **{syn['seconds']:.1f} s** (goal <= 120 s on 2 cores); cells median {syn['cells_share']['median']:.3f},"
            f" agree {syn['agreement_mean']:.3f}, reached {syn['reached_target']:.2f}.",
        ]
    lines += ["", "## Flags", ""] + ([f"- {f}" for f in flags] or ["- none"])
    return "\n".join(lines) + "\n"


def commit() -> str:
    """HEAD, and whether precomet/ differs from it (hash of the uncommitted diff and untracked files; read-only)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        diff = subprocess.run(["git", "diff", "HEAD", "--", "precomet"], cwd=REPO, capture_output=True).stdout
        new = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "--", "precomet"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout.split()
        digest = hashlib.sha256(diff)
        for name in sorted(new):
            digest.update(name.encode() + b"\0" + (REPO / name).read_bytes())
        changed = (
            f" (precomet/ modified: {len(new)} untracked file(s) and the diff, sha256 {digest.hexdigest()[:12]})"
            if diff or new
            else ""
        )
        return head.stdout.strip() + changed
    except OSError:
        return "unknown"


def save(data: dict, out_dir: Path, stem: str, rows: list[str], started: float) -> None:
    """Write the JSON and markdown (after every campaign: partial results can be read while it runs)."""
    ok = {k: v for k, v in data["campaigns"].items() if "error" not in v}
    for res in ok.values():
        add_p_values(res)
    data["pooled"] = {split: {t: pooled(ok, rows, split, t) for t in data["targets"]} for split in ("test", "dev")}
    data["bars"] = {t: bars(data, t) for t in data["targets"]}
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
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated targets")
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
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if [t for t in targets if t not in TARGETS]:
        parser.error(f"unknown targets {[t for t in targets if t not in TARGETS]}; choose from {list(TARGETS)}")
    rows = [r.strip() for r in args.choosers.split(",") if r.strip()]
    if [r for r in rows if r not in ROWS]:
        parser.error(f"unknown rows {[r for r in rows if r not in ROWS]}; choose from {list(ROWS)}")
    wanted = set(rows) | {ROWS[r].baseline for r in rows}
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
        "share": SHARE,
        "confidence": CONFIDENCE,
        "rule": RULE,
        "targets": targets,
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
                data["campaigns"][key] = run_campaign(key, phase_rows, targets, runs, data["campaigns"].get(key))
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
    for split, by_target in data["pooled"].items():
        for target, pool in by_target.items():
            for row, p in pool.items():
                print(
                    f"pooled {split} {target:9s} {row:18s} groups {len(p['groups'])}"
                    f" cells {p['cells_share_median']:.3f}"
                    f" ({p['baseline']} {p['baseline_cells_share_median']:.3f}) reached {p['reached_target']:.3f}"
                    f" min {p['reached_min']:.2f} ({p['reached_min_campaign']}) p {fmt_p(p['p_vs_random'])}",
                    flush=True,
                )
    for target, b in data["bars"].items():
        print(f"bars {target}: {b}", flush=True)
    print(f"wrote {out_dir / stem}.json and .md", flush=True)


if __name__ == "__main__":
    main()
