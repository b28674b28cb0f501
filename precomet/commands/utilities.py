"""``precomet utilities``: compute one item utility for every item of an input and write it as JSONL."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from precomet.commands.common import (
    Paths,
    add_data_arguments,
    check_jsonl_output,
    comma_list,
    data_inputs,
    load_campaign,
    parse_options,
    positive_int,
    require_method_data,
    seed,
)
from precomet.errors import PrecometError

HELP = "compute an output-based item utility (higher = annotate first) and write {id, utility} JSONL"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from precomet.utilities import UTILITY_METHODS

    add_data_arguments(parser)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "methods:\n" + "\n".join(
        f"  {name:<15} {spec.description}" for name, spec in UTILITY_METHODS.items()
    )
    parser.add_argument(
        "--method",
        required=True,
        help=f"the utility method, one of the registered ones: {', '.join(UTILITY_METHODS)} (see below)",
    )
    parser.add_argument("--metric", help="score name the utility reads, e.g. MetricX-23-c or human")
    parser.add_argument(
        "--systems", type=comma_list, help="comma-separated systems to use (artificial crowd); default: all"
    )
    needing = ", ".join(name for name, spec in UTILITY_METHODS.items() if spec.needs_budget)
    parser.add_argument("--budget", type=positive_int, help=f"number of items (methods that need it: {needing})")
    parser.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="method option; VALUE parsed as JSON when possible (e.g. similarity=chrf, lr=0.01, "
        "weights='{\"metric_var\": 1}')",
    )
    parser.add_argument(
        "--exclude-missing",
        action="store_true",
        help="items lacking the score for some system get null instead of an error",
    )
    parser.add_argument("--save-irt", metavar="PATH", help="irt_* methods: also write the fitted parameters as JSON")
    parser.add_argument("-o", "--output", required=True, help="output JSONL path")


OPTION_FILES = ("params",)
"""Options whose value names a file the method reads: inputs, never to be written over."""


def paths(args: argparse.Namespace) -> Paths:
    options = parse_options(args.option)
    read = [str(options[key]) for key in OPTION_FILES if isinstance(options.get(key), str)]
    return Paths(inputs=[*data_inputs(args), *read], outputs=[args.output, args.save_irt])


def run(args: argparse.Namespace) -> int:
    from precomet.io.utility_files import utility_signature, write_utilities
    from precomet.outputs.atomic import output_set
    from precomet.outputs.paths import check_outputs
    from precomet.utilities import UTILITY_METHODS, compute_utility, get_spec, require_scores, resolve_options

    check_outputs(args.output, args.save_irt)
    check_jsonl_output(args.output)
    spec = get_spec(args.method)
    options = parse_options(args.option)
    weights = options.get("weights") if args.method == "mixture" else None
    combined = [name for name in weights if name in UTILITY_METHODS] if isinstance(weights, dict) else []
    if args.budget is not None and not (spec.needs_budget or any(get_spec(m).needs_budget for m in combined)):
        needing = ", ".join(name for name, other in UTILITY_METHODS.items() if other.needs_budget)
        raise PrecometError(
            f"--budget applies to the methods that need one ({needing}, or a mixture of one), not to --method"
            f" {args.method}"
        )
    if args.exclude_missing:
        options["missing"] = "exclude"
    resolve_options(args.method, options)
    campaign = load_campaign(args)
    require_method_data(
        campaign,
        args,
        args.method,
        instead="for sources only use --method {free}, or precomet predict with a checkpoint",
    )
    systems = args.systems
    if systems is not None:
        campaign.system_index(systems)
    require_scores(campaign, args.method)
    if spec.needs_score and args.metric is None:
        raise PrecometError(f"--method {args.method} needs --metric; available: {', '.join(sorted(campaign.scores))}")
    if args.save_irt:
        if not args.method.startswith("irt_"):
            raise PrecometError("--save-irt only applies to irt_* methods")
        if args.exclude_missing:
            raise PrecometError("--save-irt fits every item and needs every score: drop --exclude-missing")
        if options.get("params") is not None:
            raise PrecometError(
                "--save-irt writes newly fitted parameters, but --option params= gives them already: drop one"
            )
        from precomet.utilities.irt import FIT_OPTIONS, fit_irt

        crowd = campaign if systems is None else campaign.restrict_systems(systems)
        fit_options = {
            k: v for k, v in resolve_options(args.method, options).items() if k in FIT_OPTIONS and k != "params"
        }
        params = fit_irt(crowd, metric=args.metric, seed=args.seed, **fit_options)
        options["params"] = params
    metric = args.metric if spec.needs_score or spec.forwards_metric else None
    values = compute_utility(
        campaign,
        args.method,
        metric=metric,
        systems=systems,
        budget=args.budget,
        seed=args.seed,
        options=options,
    )
    recorded = resolve_options(args.method, options)
    if "encoder" in recorded and recorded["encoder"] is None and recorded.get("similarity", "embedding") == "embedding":
        from precomet.utilities.embed import encoder_name

        recorded["encoder"] = encoder_name(None)  # the default encoder by name, not null
    if args.save_irt:
        recorded["params"] = args.save_irt
    signature = utility_signature(
        campaign,
        method=args.method,
        metric=metric,
        systems=systems,
        budget=args.budget,
        seed=args.seed,
        options=recorded,
    )
    with output_set(args.output, args.save_irt) as out:  # the utilities and the IRT parameters: both or neither
        if args.save_irt:
            params.to_json(out.path(args.save_irt))
        write_utilities(out.path(args.output), campaign.ids, values, signature)
    n_null = int(np.isnan(values).sum())
    print(
        f"wrote {len(values)} utilities ({args.method}) to {args.output}"
        + (f" and the fitted IRT parameters to {args.save_irt}" if args.save_irt else "")
        + (f"; {n_null} item(s) excluded (null) for missing scores" if n_null else ""),
        file=sys.stderr,
    )
    return 0
