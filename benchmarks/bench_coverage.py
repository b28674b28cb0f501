"""What the shipped estimator's "not trained on this" warnings say on real campaigns, and what they cost.

Usage: .venv/bin/python benchmarks/bench_coverage.py [--out benchmarks/results/coverage.md]

For the sources of campaigns the shipped checkpoint (checkpoints/metric-avg-e5, trained on WMT22 zh-en) was not
trained on, the numbers behind docs/estimator.md's "Languages and sources it was not trained on":

- the languages ``predict`` identifies (``precomet.estimator.languages``, the sample ``predict`` draws) and the
  share of sources lying farther from the training sources than 99 % of those do (``report_coverage``, the
  share ``predict`` warns about from 5 %);
- how many WMT22/23 zh-en sources py3langid gives a regional variety of Chinese (Wu ``wuu``, Cantonese ``yue``),
  which the package counts as Chinese;
- the time to identify the languages of 2,000 sources (the sample size of ``predict``), median of 5 after the
  identifier's model is loaded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from paths import RAW, REPO, RESULTS  # benchmarks/paths.py (the script's folder is on sys.path)

CHECKPOINT = REPO / "checkpoints" / "metric-avg-e5"
SOURCES = {  # campaign -> how its sources are read
    "WMT23 en-de (English)": ("text", RAW / "mt-metrics-eval-v2" / "wmt23" / "sources" / "en-de.txt"),
    "WMT23 zh-en (Chinese, another year)": ("text", RAW / "mt-metrics-eval-v2" / "wmt23" / "sources" / "zh-en.txt"),
    "TED zh-en (Chinese talks)": ("mqm", RAW / "wmt-mqm-ted" / "zhen" / "mqm_ted_zhen.tsv"),
    "WMT22 zh-en (the training campaign)": ("text", RAW / "mt-metrics-eval-v2" / "wmt22" / "sources" / "zh-en.txt"),
}
VARIETIES = ("WMT22 zh-en (the training campaign)", "WMT23 zh-en (Chinese, another year)")


def read_sources(kind: str, path: Path) -> list[str]:
    """The distinct sources of a campaign, in order."""
    if kind == "text":
        lines = path.read_text(encoding="utf-8").splitlines()
    else:
        from precomet.io import load

        lines = [str(s) for s in load(path).src]
    return list(dict.fromkeys(line for line in lines if line.strip()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=RESULTS / "coverage.md")
    args = parser.parse_args()
    missing = [str(path) for _, path in SOURCES.values() if not path.exists()]
    if missing:
        print(f"skipped: the real data is absent ({', '.join(missing)})", file=sys.stderr)
        return 1

    import py3langid

    from precomet.estimator.checkpoint import load_estimator
    from precomet.estimator.coverage import coverage_warning, report_coverage
    from precomet.estimator.languages import SourceSample, describe, language_identifier
    from precomet.outputs.atomic import atomic_write

    estimator = load_estimator(CHECKPOINT, device="cpu")
    rows, every_source = [], []
    for name, (kind, path) in SOURCES.items():
        sources = read_sources(kind, path)
        every_source += sources
        sample = SourceSample()
        sample.add(sources)
        coverage = report_coverage(estimator, sample.sources, what="checkpoint metric-avg-e5")
        assert coverage is not None, "the shipped checkpoint records its coverage"
        warns = coverage_warning(coverage["far_share"], coverage["measured"]) is not None
        rows.append((name, len(sources), describe(sample.profile()), coverage, warns))

    varieties = []
    for name in VARIETIES:
        sources = read_sources(*SOURCES[name])
        codes = [py3langid.classify(text)[0] for text in sources]
        varieties.append((name, len(sources), codes.count("wuu"), codes.count("yue")))

    language_identifier()  # the model is loaded once per process; timed apart from the identification
    sample = SourceSample()
    sample.add(every_source)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        sample.profile()
        times.append(time.perf_counter() - start)

    lines = [
        "# The shipped estimator's warnings on campaigns it was not trained on",
        "",
        "Command: `.venv/bin/python benchmarks/bench_coverage.py`",
        "",
        f"Checkpoint: checkpoints/metric-avg-e5 (trained on WMT22 zh-en); coverage radius"
        f" {rows[0][3]['radius']:.4f} (cosine distance within which 99 % of its training sources lie). Distinct"
        " sources of each campaign; languages and coverage measured on the sample `predict` draws (all sources up"
        " to 2,000). `predict` and `select --checkpoint` warn from a far share of 5 %.",
        "",
        "| campaign | distinct sources | languages found | far from the training sources | warns |",
        "|---|---|---|---|---|",
    ]
    for name, count, languages, coverage, warns in rows:
        share = 100 * coverage["far_share"]
        lines.append(f"| {name} | {count:,} | {languages} | {share:.2f} % | {'yes' if warns else 'no'} |")
    lines += [
        "",
        "Regional varieties of Chinese in py3langid's raw answer (the package counts them as `zh`):",
        "",
        "| campaign | distinct sources | Wu (`wuu`) | Cantonese (`yue`) | together |",
        "|---|---|---|---|---|",
    ]
    for name, count, wuu, yue in varieties:
        lines.append(
            f"| {name} | {count:,} | {100 * wuu / count:.1f} % | {100 * yue / count:.1f} % |"
            f" {100 * (wuu + yue) / count:.1f} % |"
        )
    lines += [
        "",
        f"Identifying the languages of a 2,000-source sample (of the {len(every_source):,} sources above, the"
        f" identifier's model already loaded), median of 5: {statistics.median(times):.2f} s",
    ]
    with atomic_write(args.out) as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
