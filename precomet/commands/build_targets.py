"""``precomet build-targets``: per-item utilities of historical campaigns -> training targets (JSONL)."""

from __future__ import annotations

import argparse
import fnmatch

from precomet.commands.common import Paths, parse_options, seed

HELP = "compute a utility per item of each input campaign (normalised per campaign) as estimator training targets"
GLOB = set("*?[")


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
        "--reference-metric",
        choices=["chrf", "bleu"],
        help="add sentence chrF/BLEU of every output against the reference (score 'chrF'/'BLEU') to inputs that lack "
        "it,"
        " so metric utilities run on output-only history: --reference-metric chrf --metric chrF --method metric_cons",
    )
    parser.add_argument(
        "--normalise", default="zscore", choices=["zscore", "rank", "none"], help="per-campaign normalisation"
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


def split_spec(spec: str) -> tuple[str, str | None]:
    """``PATH[:CAMPAIGN]`` -> (path, campaign); a path that exists as given wins over the split."""
    from pathlib import Path

    if Path(spec).exists() or ":" not in spec:
        return spec, None
    path, campaign = spec.rsplit(":", 1)
    return path, campaign


def expand_spec(spec: str) -> list[tuple[str, str | None]]:
    """``PATH[:CAMPAIGN]`` with a glob in CAMPAIGN -> one ``(path, campaign)`` per matching campaign name."""
    from precomet.io import match_campaigns

    path, name = split_spec(spec)
    if name is None or not GLOB & set(name):
        return [(path, name)]
    return [(path, n) for n in match_campaigns(path, name)]


def load_specs(specs: list[str], human: str | None, *, complete: bool = True) -> list:
    """Every campaign named by the specs (globs expanded); campaign names must be distinct. ``complete``:
    drop items without a human score for every system (as :func:`precomet.io.load`)."""
    from dataclasses import replace

    from precomet.errors import PrecometError
    from precomet.io import load

    campaigns: list = []
    origin: dict[str, str] = {}
    for spec in specs:
        for path, name in expand_spec(spec):
            campaign = load(path, campaign=name, human=human, complete=complete)
            if name is not None and campaign.name != name:
                campaign = replace(campaign, name=name)
            if campaign.name in origin:
                raise PrecometError(
                    f"campaign name {campaign.name!r} comes from both {origin[campaign.name]} and {path};"
                    " targets are grouped by campaign name"
                )
            origin[campaign.name] = path
            campaigns.append(campaign)
    return campaigns


def paths(args: argparse.Namespace) -> Paths:
    specs = [*args.data, *args.holdout]
    return Paths(inputs=[split_spec(spec)[0] for spec in specs], outputs=[args.output])


def run(args: argparse.Namespace) -> int:
    from precomet.errors import PrecometError
    from precomet.estimator.leakage import drop_sources
    from precomet.estimator.targets import build_targets, merge_by_source, write_targets
    from precomet.io.atomic import check_output
    from precomet.utilities import resolve_options

    check_output(args.output)
    options = parse_options(args.option)
    resolve_options(args.method, options)
    campaigns = load_specs(args.data, args.human)
    if args.reference_metric:
        from precomet.utilities.reference import with_reference_score

        campaigns = [with_reference_score(c, args.reference_metric) for c in campaigns]
    excluded = {p: [c for c in campaigns if fnmatch.fnmatchcase(c.name, p)] for p in args.exclude}
    unmatched = [p for p, hits in excluded.items() if not hits]
    if unmatched:
        raise PrecometError(
            f"--exclude {unmatched[0]!r} matches no input campaign; inputs: {[c.name for c in campaigns]}"
        )
    left_out = {c.name: c for hits in excluded.values() for c in hits}
    kept = [c for c in campaigns if c.name not in left_out]
    if not kept:
        raise PrecometError("every input campaign was excluded")
    held = list(left_out.values()) + (load_specs(args.holdout, None, complete=False) if args.holdout else [])
    rows = build_targets(
        kept, method=args.method, score=args.metric, normalisation=args.normalise, seed=args.seed, options=options
    )
    for campaign in kept:
        print(f"{campaign.name}: {len(campaign)} targets")
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
    print(f"wrote {len(rows)} rows ({args.method}, {args.normalise} per campaign; {shape}) to {args.output}")
    return 0
