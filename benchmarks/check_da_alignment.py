"""Do the crowd-DA segment scores of the WMT21-22 to-English campaigns belong to the source lines the loader puts
them on (SID k = the k-th line of the test set sorted by document id, SOURCES.md §9)? For each campaign: the
pooled Pearson of the segment DA (z) with sentence chrF of the same (item, system) cell, aligned, read as
SID = line (the release's documentation, and precomet before issue 31), and with the items shuffled (20
permutations: what no alignment gives). On WMT22 zh-en also with the MQM and MetricX scores of the same campaign
(mt-metrics-eval).

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
from precomet.io.wmt_release import list_release_campaigns, load_wmt_release, sid_lines  # noqa: E402
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


def as_sid_equals_line(campaign, scores: np.ndarray) -> np.ndarray:
    """The loaded (document-aligned) scores as they would sit with ``SID = line``: SID ``k``'s row on line ``k-1``."""
    order = sid_lines(list(campaign.doc))
    if list(campaign.ids) != [str(i) for i in range(len(campaign))]:
        raise SystemExit(f"{campaign.name}: lines were dropped; the SID = line view needs every line")
    moved = np.empty_like(scores)
    moved[np.arange(len(order))] = scores[order]  # row k (line k) gets SID k + 1, which the loader put on order[k]
    return moved


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    lines = [
        "# Crowd-DA segment scores: aligned through the documents vs. read as SID = source line",
        "",
        "Command: `.venv/bin/python benchmarks/check_da_alignment.py`. Pearson over every (item, system) cell with a",
        "DA score, each system's column centred (system quality left out). `aligned` = as the loader reads them since",
        "issue 31 (SID k = the k-th line of the test set sorted by document id, SOURCES.md §9); `SID = line` = as the",
        "release documents them (and precomet read them before); `shuffled` = items permuted (mean, largest |r| of",
        "20 permutations): what scores that belong to no particular line give.",
        "",
        "| campaign | cells | DA~chrF aligned | DA~chrF as SID = line | DA~chrF shuffled (mean, max abs) |",
        "|---|---|---|---|---|",
    ]
    for name in list_release_campaigns(HISTORY):
        campaign = load_wmt_release(HISTORY, name)
        if "human" not in campaign.scores or campaign.ref is None:
            continue
        da, chrf = campaign.score("human"), reference_scores(campaign, "chrf")
        mean, top = shuffled(da, chrf)
        r_aligned, r_line = pooled(da, chrf), pooled(as_sid_equals_line(campaign, da), chrf)
        cells = int((~np.isnan(da)).sum())
        lines.append(f"| {name} | {cells} | {r_aligned:.3f} | {r_line:.3f} | {mean:.3f}, {top:.3f} |")
        print(lines[-1], flush=True)
    release = load_wmt_release(HISTORY, "wmt22/zh-en")
    mqm = load(RAW / "mt-metrics-eval-v2", campaign="wmt22/zh-en", human="mqm")
    systems = [s for s in release.systems if s in mqm.systems]
    aligned = release.restrict_systems(systems).score("human")
    naive = as_sid_equals_line(release, aligned)
    by_src = {s: i for i, s in enumerate(mqm.src)}
    rows = [by_src[s] for s in release.src]
    m = mqm.restrict_systems(systems).score("human")[rows]
    x = mqm.restrict_systems(systems).score("metricx_xxl_MQM_2020")[rows]
    lines += [
        "",
        f"WMT22 zh-en, {len(systems)} systems in both: DA~MQM aligned {pooled(aligned, m):.3f}, as SID = line"
        f" {pooled(naive, m):.3f} (shuffled {shuffled(aligned, m)[0]:.3f}); DA~MetricX aligned"
        f" {pooled(aligned, x):.3f}, as SID = line {pooled(naive, x):.3f}; MQM~MetricX {pooled(m, x):.3f} (crowd DA"
        " averages 1–2 judgements per cell).",
    ]
    print("\n".join(lines[-2:]))
    (RESULTS / "da_alignment.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
