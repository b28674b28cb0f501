"""Write BENCHMARKS.md from the result files under benchmarks/results/ (each written by its own benchmark
script, with the command that produced it). Run after any benchmark script:

    .venv/bin/python benchmarks/assemble_benchmarks_md.py
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SECTIONS = (  # (results file, what it measures) in reading order
    ("metaeval.md", "Selection quality: output-based methods vs random and vs subset2evaluate (issue 5)"),
    ("metaeval_speed.md", "Meta-evaluation speed vs subset2evaluate (issue 5)"),
    ("startup.md", "Whole-process time and start-up: precomet benchmark vs subset2evaluate (issue 13)"),
    ("oracle.md", "Headroom: the oracle row of precomet benchmark (issue 14)"),
    ("crowd.md", "Artificial crowd, seed 002 Table 4 (issue 14)"),
    ("kmeans.md", "k-means on outputs and weighted k-means vs k-means on sources (issue 14)"),
    ("rank.md", "precomet rank: speed (issue 14)"),
    ("utilities.md", "Utilities: speed, peer comparison, IRT recovery, real campaigns (issue 3)"),
    ("select.md", "Subset building: knapsack speed and optimality vs subset2evaluate (issue 4)"),
    (
        "cost-aware.md",
        "Cost-aware selection at equal real annotation cost: objectives vs random, paper protocol (issue 11)",
    ),
    ("cost-aware-findings.md", "Cost-aware selection: choice of the default, where it does not help, speed (issue 11)"),
    ("source-suite.md", "Source-based selection on human judgements, with every length control (issue 19)"),
    ("da_alignment.md", "Crowd-DA segment scores of the WMT21-22 to-English releases vs their source lines (issue 19)"),
    (
        "estimator-protocol.md",
        "Source-based estimator on chrF-proxy targets: the paper's protocol (issue 10, superseded)",
    ),
    ("estimator-findings.md", "Source-based estimator on chrF-proxy targets: findings, speed (issue 10, superseded)"),
    ("pairwise.md", "Pairwise: DiffUse, annotate-until-decided, ratings (issue 7)"),
    ("loading.md", "Loading real campaigns (issue 2)"),
    ("first_hour.md", "A new user's first hour: the demo and the fast test loop (issue 21)"),
)
HEADER = """# BENCHMARKS

Measured on the project's machines (2 shared CPU cores, no GPU; absolute times drift with load, so speed
claims are ratios measured side by side in one run). Every section names the command that produced it;
this file is assembled from `benchmarks/results/*.md` by `benchmarks/assemble_benchmarks_md.py`.
Peer = subset2evaluate 1.0.27 in its own venv (`benchmarks/peer_env.sh`).
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


def main() -> None:
    parts = [HEADER]
    for name, title in SECTIONS:
        path = HERE / "results" / name
        body = path.read_text(encoding="utf-8").strip() if path.exists() else "_not measured yet_"
        parts.append(
            f"\n---\n\n## {title}\n\n_Source: `benchmarks/results/{name}`_\n\n"
            + "\n".join(_demote(body.splitlines()))
            + "\n"
        )
    (HERE.parent / "BENCHMARKS.md").write_text("".join(parts), encoding="utf-8")
    print(f"wrote {HERE.parent / 'BENCHMARKS.md'}")


if __name__ == "__main__":
    main()
