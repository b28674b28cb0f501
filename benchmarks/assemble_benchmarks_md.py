"""Write BENCHMARKS.md from the files under benchmarks/results/: results files, each written by its benchmark
script under the command that produced it (``benchmarks/regenerate.py`` runs them all), and hand-written findings
(``FINDINGS``), each starting with a ``Reads:`` line naming the results files it interprets. Run after any
benchmark script (``make benchmarks`` does):

    .venv/bin/python benchmarks/assemble_benchmarks_md.py [--out PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECTIONS = (  # (file under benchmarks/results/, what it measures) in reading order; findings after their tables
    (
        "null.md",
        "The verdict's null: random orderings scored as methods, the primary statistic, calibration (issue 30)",
    ),
    ("metaeval.md", "Selection quality: output-based methods vs random and vs subset2evaluate (issue 5)"),
    ("metaeval_speed.md", "Meta-evaluation speed vs subset2evaluate (issue 5)"),
    ("metaeval_speed-findings.md", "Meta-evaluation speed: what makes it fast"),
    ("startup.md", "Whole-process time and start-up: precomet benchmark vs subset2evaluate (issue 13)"),
    ("oracle.md", "Headroom: the oracle row of precomet benchmark (issue 14)"),
    ("crowd.md", "Artificial crowd, seed 002 Table 4 (issue 14)"),
    ("crowd-findings.md", "Artificial crowd: reading"),
    ("kmeans.md", "k-means on outputs and weighted k-means vs k-means on sources (issue 14)"),
    ("kmeans-findings.md", "k-means variants: reading"),
    ("rank.md", "precomet rank: speed (issue 14)"),
    ("utility-speed.md", "Utilities: speed, peer comparison, real campaigns (issue 3)"),
    ("irt.md", "Utilities: IRT fit time and recovery (issue 3)"),
    ("utilities-findings.md", "Utilities: goals and readings (issue 3)"),
    ("knapsack.md", "Subset building: knapsack speed and optimality vs subset2evaluate (issue 4)"),
    ("knapsack-pool.md", "Subset building at pool scale: 1M and 10M items (issue 24)"),
    ("pool.md", "Pre-selection at pool scale: 10k to 1M sources, read, predict, select (issue 24)"),
    ("pool-distinct.md", "Pre-selection of distinct sources, extrapolated to 1M (issue 35)"),
    ("predict-speed.md", "Prediction speed of the shipped estimator on 2 CPU cores, each engine (issues 24, 35)"),
    ("e5-gpu.md", "The shipped encoder on one GPU: sources/s and agreement with the CPU (issue 35)"),
    ("predict-gpu.md", "`precomet predict` on one GPU end to end: one device, Lightning, torchrun (issue 35)"),
    ("predict-resume.md", "A resumed `precomet predict`: time against the chunks still missing (issue 35)"),
    ("warm-cache.md", "A warm encoder cache loads no model: cold and warm runs of the encoders (issue 53)"),
    ("waves-matrix.md", "`precomet waves` under bad input, faults and races: 215 cases classified (issue 51)"),
    ("spa-kernel.md", "The SPA sign-flip kernel against a single-core GEMM ceiling, by part (issue 53)"),
    ("chunk-precision.md", "`predict --chunk-size`: how far chunked utilities are from one chunk (issue 51)"),
    ("select-findings.md", "Subset building: readings (issue 4)"),
    (
        "cost-aware.md",
        "Cost-aware selection at equal real annotation cost: objectives vs random, paper protocol (issue 11)",
    ),
    (
        "cost-aware-findings.md",
        "Cost-aware selection: one cost scale, the length-only control, choice of the default (issues 11, 22)",
    ),
    ("source-suite.md", "Source-based selection on human judgements, with every length control (issue 19)"),
    (
        "estimator_loco.md",
        "Source-based estimator: leave-one-campaign-out over 15 human-scored campaigns, the dev protocol (issue 31)",
    ),
    ("ensemble-stability.md", "Source-based estimator: the training seed, single heads and ensembles (issue 31)"),
    ("estimator_loco_cost.md", "Source-based estimator under cost budgets: the knapsack objective on dev (issue 31)"),
    ("finetune-gpu.md", "Source-based estimator: fine-tuning the encoder on one GPU, on the dev protocol (issue 31)"),
    ("estimator_loco-findings.md", "Source-based estimator on the human-scored history: reading (issue 31)"),
    ("coverage.md", "Source-based estimator: its warnings on campaigns it was not trained on (issue 31)"),
    ("da_alignment.md", "Crowd-DA segment scores of the WMT21-22 to-English releases, aligned by document (issue 31)"),
    ("diffuse-speed.md", "Pairwise: DiffUse selection speed (issue 7)"),
    ("diffuse-protocol.md", "Pairwise: DiffUse success rate (issue 7)"),
    ("pairwise-findings.md", "Pairwise: DiffUse, annotate-until-decided, ratings: readings (issue 7)"),
    ("waves-replay.md", "Annotating in waves until the ranking is settled: replay on 9 judged campaigns"),
    ("forecast-grid.md", "The waves stop forecast on a large pool: every look in turn vs a grid (issue 61)"),
    ("loading.md", "Loading real campaigns (issue 2)"),
    ("first_hour.md", "A new user's first hour: the demo and the fast test loop (issue 21)"),
    ("interrupts.md", "Output safety under interrupts at random moments (issue 33)"),
    ("inner-imports.md", "Imports inside functions and the start-up they save (issue 33)"),
)
FINDINGS = frozenset(
    {
        "metaeval_speed-findings.md",
        "crowd-findings.md",
        "kmeans-findings.md",
        "utilities-findings.md",
        "select-findings.md",
        "cost-aware-findings.md",
        "pairwise-findings.md",
        "estimator_loco-findings.md",
    }
)
"""The hand-written files of SECTIONS; every other one is written by a script of benchmarks/regenerate.py."""
HEADER = """# BENCHMARKS

Measured on the project's machines (2 shared CPU cores, no GPU, except where a section names its GPU; absolute
times drift with load, so speed claims are ratios measured side by side in one run). Every results section names
the command that produced it; hand-written findings name the results they read, and every number in them is one
of those results (`tests/unit/test_benchmarks_md.py`). This file is assembled from `benchmarks/results/` by
`benchmarks/assemble_benchmarks_md.py`; `make benchmarks` (`benchmarks/regenerate.py`) re-runs every benchmark
and assembles it. Peer = subset2evaluate 1.0.27 in its own venv (`benchmarks/peer_env.sh`).
"""


def _demote(lines: list[str]) -> list[str]:
    """Headings one level deeper (outside code fences): a results file's ``#`` title becomes ``###``."""
    out, fenced = [], False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        heading = not fenced and line.startswith("#") and line.lstrip("#").startswith(" ")
        out.append("##" + line if heading else line)
    return out


def render(results: Path = HERE / "results") -> str:
    """BENCHMARKS.md: the header, then every section of SECTIONS read from ``results``."""
    parts = [HEADER]
    for name, title in SECTIONS:
        path = results / name
        body = path.read_text(encoding="utf-8").strip() if path.exists() else "_not measured yet_"
        source = "Hand-written findings" if name in FINDINGS else "Source"
        parts.append(
            f"\n---\n\n## {title}\n\n_{source}: `benchmarks/results/{name}`_\n\n"
            + "\n".join(_demote(body.splitlines()))
            + "\n"
        )
    return "".join(parts)


def main(out: Path = HERE.parent / "BENCHMARKS.md") -> None:
    """Write :func:`render` to ``out`` (the sibling scripts call it with no argument)."""
    out.write_text(render(), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE.parent / "BENCHMARKS.md", help="default: BENCHMARKS.md")
    main(parser.parse_args().out)
