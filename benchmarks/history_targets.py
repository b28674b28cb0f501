"""The human-scored history of the source-based estimator's development protocol and its targets per item, shared by
``bench_estimator_loco.py``, ``bench_source_suite.py`` (``--history da``), ``bench_estimator_loco_cost.py`` and
``bench_finetune_gpu.py``: the 14 crowd-DA campaigns of WMT21-22 into English and WMT22 zh-en MQM (see
``bench_estimator_loco.py``'s docstring)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
from paths import RAW  # benchmarks/paths.py (the script's folder is on sys.path)

from precomet.campaign import HUMAN, Campaign
from precomet.estimator.targets import normalise_targets
from precomet.io import load
from precomet.io.wmt_release import list_release_campaigns, load_wmt_release
from precomet.utilities import compute_utility
from precomet.utilities.additive import fit_additive
from precomet.utilities.metric import spearman_rows

DA_ROOT = RAW / "wmt-news-systems-toen"
MQM = {"mqm wmt22/zh-en": (RAW / "mt-metrics-eval-v2", "wmt22/zh-en", "mqm")}
MIN_SCORED = 3
"""The naive ``metric_avg`` target keeps items with at least this many scored systems (issue 31's first try)."""


def history() -> dict[str, Campaign]:
    """Every human-scored history campaign with all its items (unscored cells NaN), by name."""
    out = {f"da {name}": load_wmt_release(DA_ROOT, name) for name in list_release_campaigns(DA_ROOT)}
    for name, (path, campaign, human) in MQM.items():
        out[name] = load(path, campaign=campaign, human=human, complete=False)
    return {name: replace(c, name=name) for name, c in out.items() if HUMAN in c.scores}


def raw_target(campaign: Campaign, target: str) -> np.ndarray:
    """One campaign's raw target per item (NaN: no target for that item)."""
    scores = campaign.score(HUMAN)
    if target == "metric_avg":
        scored = (~np.isnan(scores)).sum(axis=1)
        with warnings.catch_warnings():  # an item without any score: NaN, dropped below
            warnings.simplefilter("ignore", RuntimeWarning)
            values = -np.nanmean(scores, axis=1)
        return np.where(scored >= min(MIN_SCORED, len(campaign.systems)), values, np.nan)
    if target == "metric_cons":
        return sparse_consistency(campaign)
    return compute_utility(campaign, target, metric=HUMAN)


def sparse_consistency(campaign: Campaign) -> np.ndarray:
    """MetricCons on sparse cells: the Spearman correlation of an item's scores with the system effects of the
    additive model (:func:`precomet.utilities.additive.fit_additive`), over the systems that scored it (NaN below
    ``MIN_SCORED`` systems; 0 for an item whose scores are all equal, as ``metric_cons``)."""
    scores = np.asarray(campaign.score(HUMAN), dtype=float)
    counts = campaign.scores.get(f"{HUMAN}_n")
    weights = np.ones_like(scores) if counts is None else np.where(np.isnan(counts), 1.0, counts)
    _, systems = fit_additive(scores, weights)
    out = np.full(len(campaign), np.nan)
    for i, row in enumerate(scores):
        scored = ~np.isnan(row) & ~np.isnan(systems)
        if scored.sum() >= min(MIN_SCORED, len(campaign.systems)):
            out[i] = spearman_rows(row[scored][None, :], systems[scored])[0]
    return out


def target_rows(campaigns: dict[str, Campaign], target: str) -> list[dict]:
    """Rows ``{src, target, campaign, doc, id}``, z-scored per campaign (not yet merged by source)."""
    rows = []
    for name, campaign in campaigns.items():
        raw = raw_target(campaign, target)
        keep = np.flatnonzero(np.isfinite(raw))
        values = normalise_targets(raw[keep], "zscore")
        rows += [
            {
                "src": campaign.src[i],
                "target": float(v),
                "campaign": name,
                "doc": campaign.doc[i],
                "domain": campaign.domain[i],
                "id": campaign.ids[i],
            }
            for i, v in zip(keep, values)
        ]
    return rows
