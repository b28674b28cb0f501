"""``precomet build-targets``: per-item utilities of historical campaigns -> training targets (JSONL)."""

from __future__ import annotations

import argparse

HELP = "compute a utility per item of each input campaign (normalised per campaign) as estimator training targets"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", nargs="+", required=True, metavar="PATH[:CAMPAIGN]",
                        help="inputs; an mt-metrics-eval root needs ':wmt23/en-de' after the path")
    parser.add_argument("--human", help="human protocol for mt-metrics-eval inputs (default: the first available)")
    parser.add_argument("--method", required=True, help="utility method, e.g. metric_var, metric_cons, metric_avg, diversity, irt_diffdisc")
    parser.add_argument("--metric", default="human", help="score the utility is computed from (default: human, as in the paper)")
    parser.add_argument("--normalise", default="zscore", choices=["zscore", "rank", "none"], help="per-campaign normalisation")
    parser.add_argument("--exclude", action="append", default=[], metavar="CAMPAIGN",
                        help="leave this campaign out (e.g. the test campaign); repeatable")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-o", "--output", required=True, help="output JSONL")


def split_spec(spec: str) -> tuple[str, str | None]:
    """``PATH[:CAMPAIGN]`` -> (path, campaign); a path that exists as given wins over the split."""
    from pathlib import Path

    if Path(spec).exists() or ":" not in spec:
        return spec, None
    path, campaign = spec.rsplit(":", 1)
    return path, campaign


def run(args: argparse.Namespace) -> int:
    from precomet.errors import PrecometError
    from precomet.estimator.targets import build_targets, write_targets
    from precomet.io import load

    campaigns = []
    for spec in args.data:
        path, name = split_spec(spec)
        campaign = load(path, campaign=name, human=args.human)
        if campaign.name in args.exclude or name in args.exclude:
            print(f"excluded {campaign.name}")
            continue
        campaigns.append(campaign)
    if not campaigns:
        raise PrecometError("every input campaign was excluded")
    rows = build_targets(campaigns, method=args.method, score=args.metric, normalisation=args.normalise, seed=args.seed)
    write_targets(rows, args.output)
    for campaign in campaigns:
        print(f"{campaign.name}: {len(campaign)} targets")
    print(f"wrote {len(rows)} rows ({args.method}, {args.normalise} per campaign) to {args.output}")
    return 0
