"""Do the crowd-DA segment scores of the WMT21-22 to-English campaigns belong to the source lines they are
loaded on (SID = 1-based line, SOURCES.md §9)? For each campaign: the pooled Pearson of the segment DA (z) with
sentence chrF of the same (item, system) cell, as loaded and with the items shuffled (20 permutations: what
no alignment gives). On WMT22 zh-en also with the MQM and MetricX scores of the same campaign (mt-metrics-eval),
and with the DA rows reordered by document name (a partial alignment found by hand).

    .venv/bin/python benchmarks/check_da_alignment.py   # writes benchmarks/results/da_alignment.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.stats import pearsonr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paths import RAW, RESULTS  # noqa: E402

from precomet.io import load  # noqa: E402
from precomet.io.wmt_release import list_release_campaigns, load_wmt_release  # noqa: E402
from precomet.utilities.reference import reference_scores  # noqa: E402

HISTORY = RAW / "wmt-news-systems-toen"


def pooled(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson over the cells both score, each system's column centred first (system quality left out: only
    which items are hard for a system counts, which is what a wrong item order destroys)."""
    ok = ~np.isnan(a) & ~np.isnan(b)
    a, b = np.where(ok, a, np.nan), np.where(ok, b, np.nan)
    a, b = a - np.nanmean(a, axis=0), b - np.nanmean(b, axis=0)
    return float(pearsonr(a[ok], b[ok])[0])


def shuffled(a: np.ndarray, b: np.ndarray, *, n: int = 20) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    values = [pooled(a[rng.permutation(len(a))], b) for _ in range(n)]
    return float(np.mean(values)), float(np.max(np.abs(values)))


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    lines = [
        "# Crowd-DA segment scores vs. the source lines they are loaded on",
        "",
        "Command: `.venv/bin/python benchmarks/check_da_alignment.py`. Pearson over every (item, system) cell with a",
        "DA score, each system's column centred (system quality left out); `shuffled` = the same with the items",
        "permuted (mean, largest |r| of 20 permutations): what scores that belong to no particular line give.",
        "",
        "| campaign | cells | DA~chrF as loaded | DA~chrF shuffled (mean, max abs) |",
        "|---|---|---|---|",
    ]
    for name in list_release_campaigns(HISTORY):
        campaign = load_wmt_release(HISTORY, name)
        if "human" not in campaign.scores or campaign.ref is None:
            continue
        da, chrf = campaign.score("human"), reference_scores(campaign, "chrf")
        mean, top = shuffled(da, chrf)
        lines.append(f"| {name} | {int((~np.isnan(da)).sum())} | {pooled(da, chrf):.3f} | {mean:.3f}, {top:.3f} |")
        print(lines[-1], flush=True)
    release = load_wmt_release(HISTORY, "wmt22/zh-en")
    mqm = load(RAW / "mt-metrics-eval-v2", campaign="wmt22/zh-en", human="mqm")
    systems = [s for s in release.systems if s in mqm.systems]
    d = release.restrict_systems(systems).score("human")
    by_src = {s: i for i, s in enumerate(mqm.src)}
    rows = [by_src[s] for s in release.src]
    m = mqm.restrict_systems(systems).score("human")[rows]
    x = mqm.restrict_systems(systems).score("metricx_xxl_MQM_2020")[rows]
    docs = [line.split("\t")[1].strip() for line in (RAW / "mt-metrics-eval-v2/wmt22/documents/zh-en.docs").open()]
    order = np.argsort([docs[r] for r in rows], kind="stable")
    by_doc = np.full_like(d, np.nan)
    by_doc[order] = d  # SID k -> the k-th line when lines are sorted by document name
    lines += [
        "",
        f"WMT22 zh-en, {len(systems)} systems in both: DA~MQM as loaded {pooled(d, m):.3f} (shuffled"
        f" {shuffled(d, m)[0]:.3f}); DA~MetricX as loaded {pooled(d, x):.3f}; MQM~MetricX {pooled(m, x):.3f}.",
        f"DA rows reordered by document name: DA~MQM {pooled(by_doc, m):.3f}, DA~MetricX {pooled(by_doc, x):.3f}.",
    ]
    print("\n".join(lines[-3:]))
    (RESULTS / "da_alignment.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
