"""``precomet elo``: Elo / Bradley-Terry ratings with bootstrap intervals from pairwise preferences."""

from __future__ import annotations

import argparse

from precomet.commands.common import (
    Paths,
    add_output_argument,
    comma_list,
    load_campaign,
    margin,
    positive_float,
    repeats,
    seed,
)
from precomet.errors import PrecometError

HELP = "Elo or Bradley-Terry ratings with bootstrap 5-95% intervals from preferences (file or campaign scores)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("preferences (one of --prefs or --data)")
    source.add_argument(
        "--prefs", help="CSV/JSONL (item,model_a,model_b,label|likert) or AlpacaEval annotations.json / directory"
    )
    source.add_argument("--likert-ties", action="store_true", help="Likert 4 and 5 count as ties")
    source.add_argument("--data", help="a campaign input: preferences from per-item scores of its systems")
    source.add_argument("--campaign", help="campaign inside a multi-campaign input, e.g. wmt23/en-de")
    source.add_argument("--human", help="human protocol of the campaign input")
    source.add_argument(
        "--keep-incomplete", action="store_true", help="keep items without a human score for every system"
    )
    source.add_argument("--score", help="campaign score deciding preferences with --data (default: human)")
    source.add_argument("--lower-is-better", action="store_true", help="the campaign score is an error count")
    source.add_argument(
        "--margin", type=margin, default=0.0, help="tie margin (scores; AlpacaEval: |preference − 1.5|)"
    )
    rating = parser.add_argument_group("ratings")
    rating.add_argument("--method", choices=["elo", "bt"], default="elo", help="online Elo or Bradley-Terry MLE")
    rating.add_argument("--rounds", type=repeats, default=1000, help="bootstrap rounds (default 1000)")
    rating.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap (default 0)")
    rating.add_argument("--ties", choices=["half", "drop"], default="half", help="ties as half wins or dropped")
    rating.add_argument("--k", type=positive_float, help="Elo K-factor with --method elo (default 4)")
    rating.add_argument(
        "--models",
        type=comma_list,
        help="comma-separated: rate exactly these models; records naming others are an error",
    )
    out = parser.add_argument_group("output")
    add_output_argument(out, "write the table, judge diagnostics and signature as JSON", required=False)
    add_output_argument(
        out,
        "write a figure of the intervals (PNG, PDF or SVG)",
        required=False,
        dest="plot",
        flags=("--plot",),
    )
    out.add_argument("--save-prefs", help="also write the preference records (.csv or .jsonl)")
    out.add_argument("--agree-with", help="second preference file (e.g. human labels): accuracy and Cohen's kappa")


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=[args.prefs, args.data, args.agree_with], outputs=[args.plot, args.output, args.save_prefs])


def _refuse_unused(args: argparse.Namespace) -> None:
    """Options that would be silently ignored by this combination are refused, naming what they apply to."""
    if args.prefs:
        for flag, given in (
            ("--campaign", args.campaign),
            ("--human", args.human),
            ("--keep-incomplete", args.keep_incomplete),
            ("--score", args.score),
            ("--lower-is-better", args.lower_is_better),
        ):
            if given:
                raise PrecometError(f"{flag} applies to --data (preferences from a campaign's scores), not to --prefs")
    elif args.likert_ties:
        raise PrecometError("--likert-ties applies to --prefs with Likert judgements, not to --data")
    if args.method == "bt" and args.k is not None:
        raise PrecometError("--k is the Elo K-factor; it does not apply to --method bt")


def run(args: argparse.Namespace) -> int:
    from precomet.io import jsonsafe
    from precomet.outputs.atomic import output_set
    from precomet.outputs.paths import FIGURE_SUFFIXES, check_output, check_outputs
    from precomet.pairwise import preference, ratings

    if bool(args.prefs) == bool(args.data):
        raise PrecometError("give exactly one of --prefs FILE or --data INPUT")
    _refuse_unused(args)
    if args.plot:
        check_output(args.plot, suffixes=FIGURE_SUFFIXES)
    if args.save_prefs:
        check_output(args.save_prefs, suffixes=preference.PREFERENCE_SUFFIXES)
    check_outputs(args.plot, args.save_prefs, args.output)
    if args.prefs:
        prefs = preference.load_preferences(args.prefs, likert_ties=args.likert_ties, margin=args.margin)
    else:
        prefs = preference.from_scores(
            load_campaign(args),
            score=args.score or "human",
            margin=args.margin,
            higher_is_better=not args.lower_is_better,
        )
    table = ratings.bootstrap_ratings(
        prefs,
        method=args.method,
        rounds=args.rounds,
        seed=args.seed,
        ties=args.ties,
        models=args.models,
        k=4.0 if args.k is None else args.k,
    )
    print(
        f"{len(prefs)} preference records from {prefs.source}; {args.method} with {args.rounds} bootstrap rounds, "
        f"ties {args.ties}"
    )
    print(table.to_text())
    bias = ratings.position_bias(prefs)
    if bias["records"]:
        print(
            f"position bias: first-shown output wins {100 * bias['first_win_rate']:.1f}% of "
            f"{bias['first_wins'] + bias['second_wins']}"
            f" decided records (binomial p = {bias['p_value']:.2g}); flip rate {bias['flip_rate']:.3f}"
            f" over {bias['pairs_both_orders']} pairs judged in both orders"
        )
    agree = None
    if args.agree_with:
        agree = ratings.agreement(prefs, preference.load_preferences(args.agree_with, likert_ties=args.likert_ties))
        print(
            f"agreement on {agree['pairs']} shared pairs: accuracy {agree['accuracy']:.3f}, Cohen's kappa "
            f"{agree['kappa']:.3f};"
            f" accuracy {agree['decided_accuracy']:.3f} on the {agree['decided_pairs']} pairs neither calls a tie"
        )
    with output_set(args.plot, args.save_prefs, args.output) as out:
        if args.plot:
            ratings.plot_ratings(table, out.path(args.plot))
        if args.save_prefs:
            preference.save_preferences(prefs, out.path(args.save_prefs))
        if args.output:
            from precomet.signature import signature

            run = signature(
                "precomet elo",
                method=args.method,
                seed=args.seed,
                rounds=args.rounds,
                ties=args.ties,
                k=(4.0 if args.k is None else args.k) if args.method == "elo" else None,
                source=prefs.source,
                records=len(prefs),
            )
            payload = dict(ratings=table.rows(), position_bias=bias, agreement=agree, signature=run)
            with out.open(args.output) as handle:
                jsonsafe.dump(payload, handle, indent=1, default=float)
    return 0
