"""``precomet build-targets``: per-item utilities of historical campaigns -> training targets (JSONL)."""

from __future__ import annotations

import argparse
from collections import Counter

from precomet.commands.common import Paths, check_jsonl_output, parse_options, seed
from precomet.errors import PrecometError
from precomet.io.specs import load_specs, split_spec
from precomet.outputs.paths import check_output

HELP = "compute a utility per item of each input campaign (normalised per campaign) as estimator training targets"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        nargs="+",
        action="extend",
        required=True,
        metavar="PATH[:CAMPAIGN]",
        help="inputs, repeatable; a multi-campaign root needs ':NAME' or a glob over its campaign names, e.g."
        " '$RAW/wmt-news-systems:wmt2[12]/en-*' or '$RAW/mt-metrics-eval-v2:wmt23/en-de'",
    )
    parser.add_argument(
        "--campaign",
        metavar="NAME",
        help="campaign (or glob over campaign names) of every --data root given without ':NAME', as in the other"
        " commands",
    )
    parser.add_argument("--human", help="human protocol for mt-metrics-eval inputs (default: the first available)")
    parser.add_argument(
        "--method",
        required=True,
        help="utility method, e.g. diversity, metric_var, metric_cons, metric_avg, irt_diffdisc",
    )
    parser.add_argument(
        "--metric", default="human", help="score the utility is computed from (default: human, as in the paper)"
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="utility option, e.g. similarity=chrf for diversity (see precomet utilities --help)",
    )
    parser.add_argument(
        "--exclude-missing",
        action="store_true",
        help="items lacking the score for some system get no target row instead of an error",
    )
    parser.add_argument(
        "--reference-metric",
        choices=["chrf", "bleu"],
        help="add sentence chrF/BLEU of every output against the reference (score 'chrF'/'BLEU') to inputs that lack "
        "it,"
        " so metric utilities run on output-only history: --reference-metric chrf --metric chrF --method metric_cons",
    )
    parser.add_argument(
        "--normalise",
        default="zscore",
        choices=["zscore", "rank", "none"],
        help="per-campaign normalisation (default: zscore)",
    )
    parser.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="PATTERN",
        help="leave out the input campaigns whose name matches (glob), and every row whose source text occurs in"
        " them or shares a sentence or an 8-word run with one of theirs; a pattern that matches no input is an"
        " error; repeatable",
    )
    parser.add_argument(
        "--holdout",
        action="append",
        default=[],
        metavar="PATH[:CAMPAIGN]",
        help="a test set (any input, globs as in --data): every row whose source text occurs in it, or shares a "
        "sentence or an 8-word run with one of its sources, is dropped; repeatable",
    )
    parser.add_argument(
        "--per-campaign",
        action="store_true",
        help="keep one row per (campaign, item) instead of one row per distinct source (mean of its campaigns)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the utilities that draw at random (default 0)")
    parser.add_argument("-o", "--output", required=True, help="output JSONL")


def paths(args: argparse.Namespace) -> Paths:
    specs = [*args.data, *args.holdout]
    return Paths(inputs=[split_spec(spec)[0] for spec in specs], outputs=[args.output])


def run(args: argparse.Namespace) -> int:
    from precomet.estimator.leakage import drop_sources
    from precomet.estimator.targets import build_targets, exclude_campaigns, merge_by_source, write_targets
    from precomet.utilities import get_spec, resolve_options

    check_output(args.output)
    check_jsonl_output(args.output)
    options = parse_options(args.option)
    if args.exclude_missing:
        options["missing"] = "exclude"
    if get_spec(args.method).needs_budget:
        raise PrecometError(
            f"--method {args.method} picks a subset of a given size, which is no per-item target; use a utility"
            " such as metric_var, metric_avg, diversity or irt_diffdisc"
        )
    resolve_options(args.method, options)
    # a sparse utility (item_effect) models the unscored cells itself: every item with a score is kept
    specs = [spec if args.campaign is None or split_spec(spec)[1] else f"{spec}:{args.campaign}" for spec in args.data]
    campaigns = load_specs(specs, args.human, complete=not get_spec(args.method).sparse)
    empty = [c.name for c in campaigns if len(c) == 0]
    if empty:
        raise PrecometError(
            f"--method {args.method} needs items scored for every system, and campaign(s) {', '.join(empty)} have"
            " none (crowd DA scores some systems per item); --method item_effect models the unscored cells"
        )
    if args.reference_metric:
        from precomet.utilities.reference import with_reference_score

        campaigns = [with_reference_score(c, args.reference_metric) for c in campaigns]
    kept, left_out = exclude_campaigns(campaigns, args.exclude)
    held = left_out + (load_specs(args.holdout, None, complete=False) if args.holdout else [])
    rows = build_targets(
        kept, method=args.method, metric=args.metric, normalisation=args.normalise, seed=args.seed, options=options
    )
    per_campaign = Counter(row["campaign"] for row in rows)
    for campaign in kept:
        missing = len(campaign) - per_campaign[campaign.name]
        print(
            f"{campaign.name}: {per_campaign[campaign.name]} target(s)"
            + (f"; {missing} item(s) without a utility left out" if missing else "")
        )
    for campaign in held:
        rows, dropped = drop_sources(rows, campaign.src)
        print(
            f"left out {campaign.name}: dropped {dropped} row(s) of the kept campaigns with one of its {len(campaign)} "
            "source texts or a sentence or passage of one"
        )
    if not rows:
        raise PrecometError("no target rows left after dropping the left-out sources")
    n_rows = len(rows)
    if not args.per_campaign:
        rows = merge_by_source(rows)
    write_targets(rows, args.output)
    shape = "per campaign" if args.per_campaign else f"one per distinct source, merged from {n_rows} campaign rows"
    print(f"wrote {len(rows)} row(s) ({args.method}, {args.normalise} per campaign; {shape}) to {args.output}")
    return 0
