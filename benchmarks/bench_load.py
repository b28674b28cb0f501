"""Time every loader on ../shared/data/raw and write benchmarks/results/loading.md.

Usage: .venv/bin/python benchmarks/bench_load.py [--raw PATH] [--repeat 5] [--out benchmarks/results/loading.md]

Each row is the best (minimum) and the median wall time of ``--repeat`` cold calls (no caching between
calls); the goal for WMT23 zh-en (1976 items, 15 systems + human, 12 metrics) is ≤ 2 s.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from paths import REPO  # benchmarks/paths.py (the script's folder is on sys.path)

import precomet
from precomet.campaign import Campaign
from precomet.io import annotation_cost, load, load_mqm_tsv, load_summ_pickle, load_wmt23_esa, load_wmt24_esa


def cases(raw: Path) -> list[tuple[str, str, Callable[[], Campaign]]]:
    mtme, esa23 = raw / "mt-metrics-eval-v2", raw / "wmt23-esa-campaign"
    ende_docs = mtme / "wmt23" / "documents" / "en-de.docs"
    return [
        (
            "mt-metrics-eval wmt23/zh-en (mqm, complete)",
            "load(mtme, campaign='wmt23/zh-en', human='mqm')",
            lambda: load(mtme, campaign="wmt23/zh-en", human="mqm"),
        ),
        (
            "mt-metrics-eval wmt23/zh-en (all 1976 items)",
            "load(..., complete=False)",
            lambda: load(mtme, campaign="wmt23/zh-en", human="mqm", complete=False),
        ),
        (
            "mt-metrics-eval wmt23/en-de (mqm)",
            "load(mtme, campaign='wmt23/en-de', human='mqm')",
            lambda: load(mtme, campaign="wmt23/en-de", human="mqm"),
        ),
        (
            "MQM TSV TED en-de",
            "load_mqm_tsv(mqm_ted_ende.tsv)",
            lambda: load_mqm_tsv(raw / "wmt-mqm-ted/ende/mqm_ted_ende.tsv"),
        ),
        (
            "MQM TSV TED zh-en",
            "load_mqm_tsv(mqm_ted_zhen.tsv)",
            lambda: load_mqm_tsv(raw / "wmt-mqm-ted/zhen/mqm_ted_zhen.tsv"),
        ),
        (
            "MQM avg_seg_scores TED zh-en",
            "load(mqm_ted_zhen.avg_seg_scores.tsv)",
            lambda: load(raw / "wmt-mqm-ted/zhen/mqm_ted_zhen.avg_seg_scores.tsv"),
        ),
        ("WMT24 ESA en-ja", "load_wmt24_esa(wmt24-esa, 'en-ja')", lambda: load_wmt24_esa(raw / "wmt24-esa", "en-ja")),
        ("WMT24 ESA en-cs", "load_wmt24_esa(wmt24-esa, 'en-cs')", lambda: load_wmt24_esa(raw / "wmt24-esa", "en-cs")),
        (
            "SummEval pickle",
            "load_summ_pickle(SummEval.data.pkl)",
            lambda: load_summ_pickle(raw / "summeval/SummEval.data.pkl"),
        ),
        (
            "REALSumm pickle",
            "load_summ_pickle(REALSumm.data.pkl)",
            lambda: load_summ_pickle(raw / "realsumm/REALSumm.data.pkl"),
        ),
        (
            "WMT23 ESA-1 as human protocol",
            "load_wmt23_esa(mtme, esa23, protocol='ESA-1')",
            lambda: load_wmt23_esa(mtme, esa23, protocol="ESA-1"),
        ),
        (
            "annotation_cost wmt23/en-de (8 Appraise CSVs)",
            "annotation_cost(campaign, esa23, docs=...)",
            (lambda base: lambda: annotation_cost(base, esa23, docs=ende_docs))(
                load(mtme, campaign="wmt23/en-de", human="mqm")
            ),
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raw", type=Path, default=REPO.parent / "shared" / "data" / "raw")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "loading.md")
    args = parser.parse_args()
    if not args.raw.exists():
        raise SystemExit(f"real data not found at {args.raw}")
    rows = []
    for label, call, fn in cases(args.raw):
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            campaign = fn()
            times.append(time.perf_counter() - start)
        shape = f"{len(campaign)} × {len(campaign.systems)}, {len(campaign.scores)} score(s)"
        rows.append((label, call, shape, min(times), statistics.median(times)))
        print(f"{label:48s} {shape:34s} best {min(times):6.3f} s  median {statistics.median(times):6.3f} s")
    lines = [
        "# Loading benchmark",
        "",
        f"Command: `.venv/bin/python benchmarks/bench_load.py --repeat {args.repeat}`  ",
        f"precomet {precomet.__version__}, Python {platform.python_version()}, {platform.machine()},"
        " shared 2-core machine (other jobs running; absolute times drift).",
        "",
        "| input | call | items × systems, scores | best (s) | median (s) |",
        "|---|---|---|---:|---:|",
        *[f"| {label} | `{call}` | {shape} | {best:.3f} | {median:.3f} |" for label, call, shape, best, median in rows],
        "",
        "Goal: WMT23 zh-en into a Campaign in ≤ 2 s.",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
