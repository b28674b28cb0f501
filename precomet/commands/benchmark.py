"""``precomet benchmark``: selection methods vs random selection over budgets (SPA, clusters, parity)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import numpy as np

from precomet.campaign import Campaign
from precomet.commands.common import add_data_arguments, load_campaign
from precomet.errors import DataError, PrecometError

HELP = "benchmark selection methods against random selection: SPA, clusters, parity; JSON and figure"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--methods", default="", help="comma-separated utility methods, e.g. metric_avg,metric_var,diversity")
    parser.add_argument("--metric", help="score the utilities use, e.g. MetricX-23-c (required by score-based methods)")
    parser.add_argument(
        "--scores", action="append", default=[], metavar="NAME=FILE",
        help='benchmark an external ranking: a JSONL of {"id", "utility"} covering every campaign item (repeatable)',
    )
    parser.add_argument("--target", default="human", help="score the subsets are meta-evaluated on (default human), e.g. coherence")
    parser.add_argument("--props", default="0.05:0.5:0.05", help="budget proportions: start:stop:step or a comma list (default 0.05:0.5:0.05)")
    parser.add_argument("--seeds", type=int, default=100, help="random-selection runs (default 100)")
    parser.add_argument("--permutations", type=int, default=1000, help="sign-flip permutations for SPA (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the utilities, random runs and permutations")
    parser.add_argument("--budget-cost", action="store_true", help="budgets are shares of the total annotation cost (ILP knapsack)")
    parser.add_argument("--balance", choices=["domain"], help="equal share of the budget per domain")
    parser.add_argument("--level", choices=["item", "doc"], default="item", help="select whole documents with --level doc")
    parser.add_argument("--json", required=True, type=Path, help="write the results here")
    parser.add_argument("--plot", type=Path, help="write the SPA/clusters figure here (PNG, PDF or SVG)")


def read_external_scores(spec: str, campaign: Campaign) -> tuple[str, np.ndarray]:
    """``NAME=FILE`` -> (name, utilities aligned with the campaign). Every campaign id must be present;
    extra ids (e.g. items dropped for lacking human scores) are ignored."""
    from precomet.io.text import read_lines

    name, sep, file = spec.partition("=")
    if not sep or not name or not file:
        raise PrecometError(f"--scores: expected NAME=FILE, got {spec!r}")
    path = Path(file)
    utilities: dict[str, float] = {}
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            item_id, value = str(row["id"]), float(row["utility"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            raise DataError(path, f'expected a JSON object with "id" and numeric "utility" ({err})', line=number) from None
        if item_id in utilities:
            raise DataError(path, f"duplicate id {item_id!r}", line=number)
        if not np.isfinite(value):
            raise DataError(path, f"utility of id {item_id!r} is not finite", line=number)
        utilities[item_id] = value
    missing = [i for i in campaign.ids if i not in utilities]
    if missing:
        raise DataError(
            path, f"{len(missing)} of {len(campaign)} campaign ids are missing (e.g. {missing[:3]}); the scores must cover every item"
        )
    extra = len(utilities) - len(campaign)
    if extra:
        log.info("%s: %d id(s) not in the campaign ignored", path, extra)
    return name, np.array([utilities[i] for i in campaign.ids])


def run(args: argparse.Namespace) -> int:
    from precomet.benchmark import (
        parse_props,
        plot_benchmark,
        run_benchmark,
        summary_table,
    )
    from precomet.io.atomic import atomic_write

    props = parse_props(args.props)
    campaign = load_campaign(args)
    external = dict(read_external_scores(spec, campaign) for spec in args.scores)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    result = run_benchmark(
        campaign, methods=methods, external=external, metric=args.metric, score=args.target, props=props, seeds=args.seeds,
        budget_cost=args.budget_cost, balance=args.balance, level=args.level, permutations=args.permutations,
        seed=args.seed,
    )
    result["signature"]["data"] = str(args.data)
    result["signature"]["scores_files"] = list(args.scores)
    with atomic_write(args.json) as handle:
        json.dump(result, handle, indent=1)
    if args.plot:
        plot_benchmark(result, args.plot)
    print(summary_table(result))
    print(f"wrote {args.json}" + (f" and {args.plot}" if args.plot else ""))
    return 0
