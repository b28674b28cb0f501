"""``precomet benchmark``: selection methods vs random selection over budgets (SPA, clusters, parity)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from precomet.campaign import Campaign, require_documents
from precomet.commands.common import (
    Paths,
    add_cost_arguments,
    add_data_arguments,
    add_force_argument,
    add_output_argument,
    apply_cost_from_times,
    data_inputs,
    load_campaign,
    non_negative_int,
    positive_float,
    positive_int,
    repeats,
    require_outputs,
    seed,
    source_texts,
)
from precomet.costs import format_duration, item_seconds, parse_duration
from precomet.errors import PrecometError
from precomet.io import jsonsafe
from precomet.outputs.atomic import atomic_write, output_set
from precomet.outputs.paths import FIGURE_SUFFIXES, check_output, check_outputs
from precomet.provenance import check_subset_sources
from precomet.selection.objective import DEFAULT_COST_OBJECTIVE
from precomet.selection.source_selectors import SELECTORS, get_selector
from precomet.selection.strata import DEFAULT_ENCODER
from precomet.selection.subset_file import read_subset_rows, subset_ids_in
from precomet.selection.units import BUDGET_UNITS
from precomet.signature import signature

NULL_ORDERINGS_HELP = 200
"""``precomet.benchmark.NULL_ORDERINGS`` as ``--help`` shows it, without importing the benchmark package at parser
build time (a test keeps the two equal)."""
HELP = (
    "benchmark selection methods against random selection: SPA, clusters, parity (the share of the budget a method"
    " needs to match random's accuracy), p-values against random orderings and a recommendation; optional JSON and"
    " figure"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from precomet.utilities import UTILITY_METHODS

    add_data_arguments(parser)
    parser.description = (
        HELP + ". Parity: for each budget, the smallest budget at which a method's SPA reaches random's mean SPA at"
        " that budget, divided by it, averaged over budgets. Every row is judged against --null-orderings random"
        " orderings scored the same way: p = the share of them whose SPA gain over random is at least the method's;"
        " only p < 0.05 is called a saving; the parity's 90 % interval takes a random ordering's luck out. The table"
        " states the annotation cost in hours (estimated from source length, measured"
        " times, or given in the input)."
    )
    parser.add_argument(
        "--methods",
        default="",
        help=f"comma-separated utility methods, e.g. metric_avg,metric_var; registered: {', '.join(UTILITY_METHODS)}",
    )
    parser.add_argument(
        "--no-controls",
        dest="controls",
        action="store_false",
        help="leave out the control row 'length' (longer sources first; with --budget-cost the same knapsack with a"
        " constant utility), which shows whether a utility adds anything beyond source length",
    )
    parser.add_argument("--metric", help="score the utilities use, e.g. MetricX-23-c (required by score-based methods)")
    parser.add_argument(
        "--utility-file",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help='benchmark an external ranking: a JSONL of {"id", "utility"} covering every campaign item (repeatable)',
    )
    parser.add_argument(
        "--subset",
        metavar="FILE",
        help="judge this fixed subset (a subset JSONL, e.g. from select) against random subsets of its size, or of"
        " its annotation cost with --budget-unit cost, instead of benchmarking methods",
    )
    parser.add_argument(
        "--selector",
        choices=sorted(SELECTORS),
        default="top",
        help="how each --utility-file ranking selects: 'top' (highest first, default) or 'strata' (the best of each"
        " k-means stratum of the source embeddings, k = budget; precomet.selection.strata)",
    )
    parser.add_argument(
        "--strata-encoder", default=DEFAULT_ENCODER, help=f"encoder for --selector strata (default {DEFAULT_ENCODER})"
    )
    parser.add_argument(
        "--score", default="human", help="score the subsets are meta-evaluated on (default human), e.g. coherence"
    )
    parser.add_argument(
        "--props",
        help="budget proportions: start:stop:step or a comma list (default 0.05:0.5:0.05)",
    )
    parser.add_argument(
        "--budget-time",
        metavar="DURATIONS",
        help="budgets as annotation time instead of --props, a comma list: 5h,10h,20h (implies --budget-unit cost)",
    )
    parser.add_argument("--seeds", type=repeats, default=100, help="random-selection runs (default 100)")
    parser.add_argument(
        "--null-orderings",
        type=non_negative_int,
        metavar="N",
        help=f"random orderings scored exactly like a method, the null behind every p-value and interval (default"
        f" {NULL_ORDERINGS_HELP}; 0: no null, so no p-values and no saving claimed; --crowd has no null yet)",
    )
    parser.add_argument(
        "--permutations", type=repeats, default=1000, help="sign-flip permutations for SPA (default 1000)"
    )
    parser.add_argument(
        "--cluster-rule",
        choices=["paper", "wmt"],
        default="paper",
        help="significance clusters: paper (default, Algorithm 1: each system vs the previous one) or wmt (as WMT"
        " findings papers: vs every member of the current cluster)",
    )
    parser.add_argument(
        "--time-limit",
        type=positive_float,
        default=10.0,
        help="seconds per knapsack with --budget-unit cost/--balance/--level doc; a solution not proven optimal by"
        " then is used (default 10)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the utilities, random runs and permutations")
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="processes for random's seeds and the rows (default: PRECOMET_WORKERS, else every CPU this process may"
        " use); the numbers do not depend on it",
    )
    parser.add_argument(
        "--budget-unit",
        choices=BUDGET_UNITS,
        help="what --props are shares of: the items (default) or the total annotation cost (ILP knapsack)",
    )
    add_cost_arguments(parser, outputs=False)  # a benchmark judges every system of a scored campaign
    parser.add_argument("--balance", choices=["domain"], help="equal share of the budget per domain")
    parser.add_argument(
        "--level", choices=["item", "doc"], default="item", help="select whole documents with --level doc"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="--utility-file from an estimator: refuse a campaign with sources it was trained on (default: warn)",
    )
    add_force_argument(parser, what="a --utility-file file")
    parser.add_argument(
        "--no-oracle",
        dest="oracle",
        action="store_false",
        help="leave out the oracle row (greedy on the target scores, Zouhar et al. 2025, Eq. 13: headroom, not a"
        " usable selector)",
    )
    parser.add_argument(
        "--oracle-candidates",
        type=positive_int,
        default=100,
        help="random extensions the oracle tries per step (default 100)",
    )
    parser.add_argument(
        "--oracle-step", type=positive_int, default=10, help="items the oracle adds per step (default 10)"
    )
    parser.add_argument(
        "--crowd",
        type=positive_int,
        metavar="K",
        help="artificial crowd (Zouhar et al. 2025, Table 4): utilities on K random systems, subsets evaluated on"
        " the others",
    )
    parser.add_argument(
        "--crowd-runs", type=repeats, default=100, metavar="R", help="artificial-crowd runs (default 100)"
    )
    parser.add_argument(
        "--allow-circular",
        action="store_true",
        help="run score-based methods on --metric equal to --score (utilities from the very human scores the"
        " subsets are evaluated on: an upper bound, not a usable selector; refused without this flag)",
    )
    add_output_argument(parser, "write the results here as JSON (default: print the table only)", required=False)
    parser.add_argument("--plot", type=Path, help="write the SPA/clusters/parity figure here (PNG, PDF or SVG)")


def read_external_scores(
    spec: str,
    campaign: Campaign,
    *,
    strict: bool = False,
    source_of: Mapping[str, str] | None = None,
    force: bool = False,
) -> tuple[str, np.ndarray, int | None]:
    """``NAME=FILE`` -> (name, utilities aligned with the campaign, campaign sources seen in training or
    ``None`` when the file's signature has no training-source fingerprint). Every campaign id must be
    present; extra ids (e.g. items dropped for lacking human scores) are ignored. With ``source_of`` (id -> source
    of every item of the data), a file computed on other sources is refused, or with ``force`` warned about."""
    from precomet.estimator.leakage import check_seen
    from precomet.io.utility_files import aligned_utilities

    name, sep, file = spec.partition("=")
    if not sep or not name or not file:
        raise PrecometError(f"--utility-file: expected NAME=FILE, got {spec!r}")
    values, signature = aligned_utilities(file, campaign.ids, allow_extra=True, source_of=source_of, force=force)
    return (
        name,
        values,
        check_seen(signature, campaign.src, strict=strict, what=f"the estimator behind {file}", where=file),
    )


def paths(args: argparse.Namespace) -> Paths:
    files = [spec.partition("=")[2] or None for spec in args.utility_file]
    inputs = [*data_inputs(args), args.cost_from_times, args.subset, *files]
    return Paths(inputs=inputs, outputs=[args.output, args.plot])


def run(args: argparse.Namespace) -> int:
    from precomet.benchmark import (
        DEFAULT_PROPS,
        NULL_ORDERINGS,
        BenchmarkPlan,
        parse_props,
        plot_benchmark,
        run_benchmark,
        summary_table,
    )

    output = Path(args.output) if args.output else None
    check_outputs(output, args.plot)
    if args.plot:
        check_output(args.plot, suffixes=FIGURE_SUFFIXES)
    if args.budget_time is not None:
        if args.props is not None or args.budget_unit == "items":
            given = "--props" if args.props is not None else "--budget-unit items"
            raise PrecometError(f"--budget-time sets the budgets in annotation time; drop {given}")
        args.budget_unit = "cost"
    args.budget_unit = args.budget_unit or "items"
    props = list(DEFAULT_PROPS) if args.props is None else parse_props(args.props)
    if (args.cost_from_times or args.cost_objective != DEFAULT_COST_OBJECTIVE) and args.budget_unit != "cost":
        raise PrecometError("--cost-from-times and --cost-objective apply to cost budgets: add --budget-unit cost")
    if args.crowd is not None:
        _check_crowd_options(args)
    if args.selector != "top" and (not args.utility_file or args.crowd is not None):
        raise PrecometError(f"--selector {args.selector} applies to --utility-file rankings (and not to --crowd)")
    campaign = load_campaign(args)
    require_outputs(
        campaign, args, what="benchmark", needs="systems with human scores", instead="benchmark a scored campaign"
    )
    campaign = apply_cost_from_times(args, campaign)
    if args.keep_incomplete and args.score in campaign.scores and np.isnan(campaign.score(args.score)).any():
        unrated = int(np.isnan(campaign.score(args.score)).any(axis=1).sum())
        raise PrecometError(
            f"--keep-incomplete: a benchmark compares subsets on items rated by every system, and {unrated} of the"
            f" {len(campaign)} items of --data are not; drop --keep-incomplete"
        )
    if args.subset is not None:
        return _run_fixed_subset(args, campaign)
    if args.budget_time is not None:
        props = _time_budgets(args.budget_time, float(item_seconds(campaign).sum()), len(campaign))
    if args.level == "doc":
        require_documents(campaign)
    if args.balance == "domain" and len(set(campaign.domain)) < 2:
        raise PrecometError(
            f"--balance domain: campaign {campaign.name!r} has one domain ({campaign.domain[0]!r}); there is nothing"
            " to balance"
        )
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    _check_circular(args, methods)
    if args.crowd is not None:
        return _run_crowd(args, campaign, props, methods)
    _check_score_names(args.utility_file, methods)
    source_of = source_texts(args, campaign) if args.utility_file else None
    read = [
        read_external_scores(spec, campaign, strict=args.strict, source_of=source_of, force=args.force)
        for spec in args.utility_file
    ]
    external: dict = {name: values for name, values, _ in read}
    if args.selector != "top":
        sources, select = list(campaign.src), get_selector(args.selector)
        options = {"encoder": args.strata_encoder} if args.selector == "strata" else {}
        external = {name: select(values, sources, seed=args.seed, options=options) for name, values in external.items()}
    plan = BenchmarkPlan(
        methods=methods,
        metric=args.metric,
        score=args.score,
        props=props,
        seeds=args.seeds,
        budget_unit=args.budget_unit,
        cost_objective=args.cost_objective,
        balance=args.balance,
        level=args.level,
        permutations=args.permutations,
        cluster_rule=args.cluster_rule,
        seed=args.seed,
        time_limit=args.time_limit,
        oracle=args.oracle,
        oracle_candidates=args.oracle_candidates,
        oracle_step=args.oracle_step,
        allow_circular=args.allow_circular,
        controls=args.controls,
        null_orderings=NULL_ORDERINGS if args.null_orderings is None else args.null_orderings,
    )
    result = run_benchmark(campaign, plan, external=external, workers=args.workers)
    result = result.with_signature(
        data=str(args.data),
        cost_from_times=args.cost_from_times,
        scores_files=list(args.utility_file),
        selector={"name": args.selector, "encoder": args.strata_encoder if args.selector == "strata" else None},
        seen_in_training={name: seen for name, _, seen in read},
        budget_time=args.budget_time,
    )
    written = [path for path in (output, args.plot) if path]
    if written:
        with output_set(*written) as out:
            if output:
                with out.open(output) as handle:
                    jsonsafe.dump(result, handle, indent=1)
            if args.plot:
                plot_benchmark(result, out.path(args.plot))
    print(summary_table(result))
    if written:
        print("wrote " + " and ".join(str(path) for path in written))
    return 0


def _check_circular(args: argparse.Namespace, methods: list[str]) -> None:
    """Refuse utilities computed on the evaluation's own scores (``--metric`` = ``--score``) without
    ``--allow-circular``; with ``--crowd`` too (the crowd's human scores are annotations of the same items)."""
    from precomet.benchmark import circular_reason

    reason = circular_reason(methods, args.metric, args.score)
    if reason and not args.allow_circular:
        raise PrecometError(
            f"{reason}; choose a metric (--metric) other than --score {args.score}, or add --allow-circular to"
            " run it anyway as an upper bound"
        )


def _check_score_names(specs: list[str], methods: list[str]) -> None:
    """Each ``--utility-file NAME=FILE`` names one row of its own: a repeated name would keep only the last file, and
    the names of random, the oracle, the length control or a ``--methods`` row would be mixed with those rows."""
    from precomet.benchmark.plan import LENGTH_CONTROL

    taken = {"random": "the random baseline", "oracle": "the oracle row", LENGTH_CONTROL: "the length control"}
    taken.update({method: "a --methods row" for method in methods})
    seen: set[str] = set()
    for spec in specs:
        name = spec.partition("=")[0]
        if name in seen:
            raise PrecometError(f"--utility-file: the name {name!r} is given twice; give each ranking its own NAME")
        if name in taken:
            raise PrecometError(f"--utility-file {spec}: the name {name!r} is {taken[name]}'s; choose another NAME")
        seen.add(name)


def _run_fixed_subset(args: argparse.Namespace, campaign: Campaign) -> int:
    """``benchmark --subset FILE``: the fixed subset against random subsets of its size or cost
    (:mod:`precomet.benchmark.fixed`)."""
    from precomet.benchmark import NULL_ORDERINGS
    from precomet.benchmark.fixed import fixed_table, judge_subset, judgement_result, plot_fixed

    given = [flag for flag, used in (("--utility-file", args.utility_file), ("--crowd", args.crowd is not None),
             ("--props", args.props is not None), ("--budget-time", args.budget_time is not None),
             ("--methods", args.methods), ("--balance", args.balance), ("--level doc", args.level != "item"),
             ("--cost-objective", args.cost_objective != DEFAULT_COST_OBJECTIVE)) if used]  # fmt: skip
    if given:
        raise PrecometError(f"--subset judges one fixed subset against random subsets; drop {', '.join(given)}")
    n_random = NULL_ORDERINGS if args.null_orderings is None else args.null_orderings
    if n_random < 1:
        raise PrecometError("--subset needs random subsets to compare with: give --null-orderings N >= 1")
    everything = load_campaign(argparse.Namespace(**{**vars(args), "keep_incomplete": True}))
    rows = read_subset_rows(args.subset)
    ids = subset_ids_in(args.subset, rows, everything, campaign, keep_incomplete=None)
    if not 2 <= len(ids.rated) < len(campaign):
        raise PrecometError(
            f"--subset {args.subset}: {len(ids.rated)} of the {len(campaign)} rated items; judging a subset against"
            " random ones needs at least 2 and fewer than all"
        )
    source_of = dict(zip(map(str, everything.ids), everything.src))
    check_subset_sources(
        args.subset, [(i, src) for i, (_, src, _) in zip(ids.matched, rows)], source_of, force=args.force
    )
    judgement = judge_subset(
        campaign,
        campaign.index_of(ids.rated),
        score=args.score,
        match=args.budget_unit,
        n_random=n_random,
        permutations=args.permutations,
        seed=args.seed,
        cluster_rule=args.cluster_rule,
    )
    name = Path(args.subset).name
    print(fixed_table(judgement, name=name))
    sign = signature(
        "precomet benchmark --subset",
        campaign=campaign,
        seed=args.seed,
        data=str(args.data),
        subset=str(args.subset),
        target=args.score,
        permutations=args.permutations,
        cluster_rule=args.cluster_rule,
    )
    with output_set(args.output, args.plot) as out:
        if args.output:
            with out.open(args.output) as handle:
                jsonsafe.dump(judgement_result(judgement, name=name, signature=sign), handle, indent=1)
                handle.write("\n")
        if args.plot:
            plot_fixed(judgement, out.path(args.plot), name=name)
    written = [str(path) for path in (args.output, args.plot) if path]
    if written:
        print("wrote " + " and ".join(written))
    return 0


def _time_budgets(text: str, total: float, n_items: int) -> list[float]:
    """``--budget-time 5h,10h``: each duration as a share of the campaign's total annotator time ``total`` (s, every
    output of every item judged)."""
    shares = []
    for part in text.split(","):
        try:
            seconds = parse_duration(part)
        except ValueError as err:
            raise PrecometError(f"--budget-time: {err}") from None
        if not 0 < seconds <= total:
            raise PrecometError(
                f"--budget-time: {part.strip()} is not within the campaign's total annotation time"
                f" ({format_duration(total)}, {total:,.6g} s); give a shorter budget"
            )
        if seconds / total * n_items < 2:
            raise PrecometError(
                f"--budget-time: {part.strip()} is {seconds / total:.3g} of the campaign's annotation time, the share"
                f" of fewer than 2 of its {n_items} items; give at least {math.ceil(2 / n_items * total)}s"
            )
        shares.append(seconds / total)
    twice = list(dict.fromkeys(part.strip() for part, share in zip(text.split(","), shares) if shares.count(share) > 1))
    if twice:
        raise PrecometError(f"--budget-time: {', '.join(twice)} give the same budget twice")
    return shares


def _check_crowd_options(args: argparse.Namespace) -> None:
    unsupported = [
        flag
        for flag, used in (
            ("--utility-file", args.utility_file),
            ("--plot", args.plot),
            ("--budget-time", args.budget_time is not None),
            ("--budget-unit cost", args.budget_unit == "cost" and args.budget_time is None),
            ("--workers", args.workers is not None),
            ("--balance", args.balance),
            ("--level doc", args.level != "item"),
            ("--null-orderings", args.null_orderings is not None),
        )
        if used
    ]
    if unsupported:
        raise PrecometError(
            f"--crowd evaluates item-count top-k subsets of computed utilities against random subsets (it has no null"
            f" of random orderings yet); drop {', '.join(unsupported)}"
        )


def _run_crowd(args: argparse.Namespace, campaign: Campaign, props: list[float], methods: list[str]) -> int:
    from precomet.benchmark.crowd import crowd_table, run_crowd_benchmark

    result = run_crowd_benchmark(
        campaign,
        methods=methods,
        crowd=args.crowd,
        runs=args.crowd_runs,
        metric=args.metric,
        score=args.score,
        props=props,
        seeds=args.seeds,
        permutations=args.permutations,
        seed=args.seed,
        controls=args.controls,
        cluster_rule=args.cluster_rule,
    )
    result = result.with_signature(data=str(args.data), allow_circular=args.allow_circular)
    if args.output:
        with atomic_write(args.output) as handle:
            jsonsafe.dump(result, handle, indent=1)
    print(crowd_table(result))
    if args.output:
        print(f"wrote {args.output}")
    return 0
