"""``precomet select``: choose the items to annotate and write them with a manifest."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from precomet.campaign import Campaign, require_documents
from precomet.commands.common import (
    Paths,
    add_cost_arguments,
    add_data_arguments,
    add_force_argument,
    apply_cost_from_times,
    data_inputs,
    duration,
    load_campaign,
    positive_float,
    positive_int,
    require_method_data,
    seed,
    share,
    source_texts,
)
from precomet.costs import GIVEN, cost_source, describe_time, format_duration, item_seconds, judgements_per_item
from precomet.errors import PrecometError
from precomet.io.batch import BATCH_KINDS, BATCH_ORDERS, batch_format
from precomet.io.plaintext import is_sources_only
from precomet.outputs.paths import check_outputs
from precomet.provenance import sources_hash
from precomet.selection import SubsetPlan, select_subset, subset_manifest_path, write_subset
from precomet.selection.knapsack import check_solver
from precomet.selection.objective import DEFAULT_COST_OBJECTIVE
from precomet.selection.source_selectors import DEFAULT_SELECTOR, SELECTORS, get_selector
from precomet.selection.strata import DEFAULT_ENCODER
from precomet.selection.units import item_budget

HELP = "select the subset to annotate (top-k or cost-aware knapsack; domain balance; documents)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from precomet.utilities import UTILITY_METHODS

    add_data_arguments(parser)
    source = parser.add_argument_group("utilities (one of)").add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--method",
        help=f"utility method computed on the fly: {', '.join(UTILITY_METHODS)} (length = longer sources first; under a"
        " cost budget the knapsack with a constant utility, i.e. source length alone)",
    )
    source.add_argument(
        "--utility-file", help='JSONL of {"id", "utility"} (an optional first signature line is skipped)'
    )
    source.add_argument("--checkpoint", help="estimator checkpoint directory: utilities predicted from the sources")
    parser.add_argument("--metric", help="score name used by --method (e.g. MetricX-23-c)")
    parser.add_argument(
        "--selector",
        choices=sorted(SELECTORS),
        help="how predicted utilities select: 'strata' takes the best predicted item of each k-means stratum of the"
        " source embeddings (robust when the prediction is weak), 'top' the highest predicted (default: top; chosen"
        " on dev, BENCHMARKS.md)",
    )
    parser.add_argument(
        "--strata-encoder",
        help=f"encoder of the sources for --selector strata (default {DEFAULT_ENCODER}; see precomet.encoders)",
    )
    budget = parser.add_argument_group("budget (one of)").add_mutually_exclusive_group(required=True)
    budget.add_argument("--budget", type=positive_int, help="number of items (constant cost: top-k)")
    budget.add_argument(
        "--proportion",
        type=share,
        help="share in (0, 1] of the items, or of the total cost with --cost-aware / --cost-from-times",
    )
    budget.add_argument(
        "--budget-cost",
        type=positive_float,
        help="budget in seconds of annotator time: every output of a chosen item judged (cost-aware knapsack)",
    )
    budget.add_argument(
        "--budget-time",
        type=duration,
        metavar="DURATION",
        help="the same budget as a duration of annotator time: 10h, 90m, 3600s, 1h30m (cost-aware knapsack)",
    )
    parser.add_argument(
        "--cost-aware", action="store_true", help="--proportion is a share of the total cost (knapsack)"
    )
    add_cost_arguments(parser)
    parser.add_argument("--balance", choices=["domain"], help="the same number of units from every domain")
    parser.add_argument("--quotas", help="JSON {domain: count} (exact counts) or {domain: share} (budget shares)")
    parser.add_argument("--level", choices=["item", "doc"], default="item", help="select items or whole documents")
    parser.add_argument(
        "--solver", default="cbc", help="pulp solver: cbc (default), highs, glpk, scip, gurobi, cplex, coin"
    )
    parser.add_argument(
        "--time-limit", type=positive_float, default=60.0, help="solver time limit in seconds (default 60)"
    )
    parser.add_argument("--allow-gap", action="store_true", help="accept a non-optimal answer (warns with its gap)")
    parser.add_argument(
        "--seed",
        type=seed,
        default=0,
        help="seed of utilities that draw at random and of the knapsack solver (default 0; top-k ties go by position)",
    )
    parser.add_argument(
        "--exclude-missing",
        action="store_true",
        help="never select items without a utility: lacking --metric for some system (--method) or null in"
        " --utility-file (default: an error)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="--checkpoint / --utility-file from an estimator: refuse sources it was trained on (default: warn)",
    )
    add_force_argument(parser, what="a --utility-file file")
    parser.add_argument(
        "-o",
        "--output",
        help="subset JSONL; the manifest goes beside it (.manifest.json); optional with --batch (then the batch and"
        " its manifest, BATCH.manifest.json, are written)",
    )
    parser.add_argument(
        "--batch",
        metavar="PATH",
        help="also write the annotation batch: the chosen items with source, reference and every system's output, as"
        " .jsonl, .csv or .tsv (by the suffix; CSV/TSV quoted as RFC 4180), or Appraise's batches with"
        " --batch-format appraise (a .json name alone is refused: Appraise and Pearmut both read JSON); written"
        " together with the subset",
    )
    parser.add_argument(
        "--batch-format",
        choices=BATCH_KINDS,
        help="format of --batch whatever its suffix (default: by the suffix); appraise = the batches JSON that"
        " Appraise's StartNewCampaign --batches-json imports (one document per system, complete documents flagged,"
        " quality-control documents; its own order, not --batch-order)",
    )
    parser.add_argument(
        "--batch-order",
        choices=BATCH_ORDERS,
        default="input",
        help="order of the items in --batch: input = as in --data (default), doc = grouped by document (documents in"
        " the order they first appear)",
    )


def paths(args: argparse.Namespace) -> Paths:
    return Paths(
        inputs=[*data_inputs(args), args.utility_file, args.checkpoint, args.cost_from_times],
        outputs=[
            args.output,
            subset_manifest_path(args.output or args.batch) if args.output or args.batch else None,
            args.batch,
        ],
    )


def run(args: argparse.Namespace) -> int:
    if args.output is None and args.batch is None:
        raise PrecometError("give -o PATH (the subset), --batch PATH (the annotation batch), or both")
    check_outputs(
        args.output, subset_manifest_path(args.output or args.batch) if args.output or args.batch else None, args.batch
    )
    if args.budget_time is not None:  # costs are seconds: a duration is a cost budget
        args.budget_cost = args.budget_time
    if args.batch is not None:
        batch_format(args.batch, args.batch_format)
    elif args.batch_order != "input" or args.batch_format is not None:
        option = "--batch-order" if args.batch_order != "input" else "--batch-format"
        raise PrecometError(f"{option} applies to --batch (the annotation batch); give --batch PATH")
    check_solver(args.solver)
    if args.selector and args.method:
        raise PrecometError("--selector applies to --checkpoint or --utility-file, not --method")
    if args.metric is not None and not args.method:
        raise PrecometError("--metric names the score --method reads; --checkpoint and --utility-file read none")
    campaign = apply_cost_from_times(args, load_campaign(args))
    if args.level == "doc":
        if is_sources_only(campaign) and not args.docs:
            raise PrecometError(
                f"--level doc: the plain-text sources of --data {args.data} have no documents; give --docs FILE (the"
                " document id of each source line) or select items"
            )
        require_documents(campaign)
    utility, method, parameters = _utilities(args, campaign)
    if args.exclude_missing:
        rated, utility = _without_missing(campaign, utility)
        parameters["excluded_missing"] = len(campaign) - len(rated)
        campaign = rated
    selector = args.selector or (DEFAULT_SELECTOR if method == "checkpoint" else "top")  # --utility-file: any utility
    if args.strata_encoder is not None and selector != "strata":
        raise PrecometError(f"--strata-encoder applies to --selector strata (the selector here is {selector})")
    if selector != "top":  # top keeps the utility as it is, and the signature as before selectors
        settings = {"encoder": args.strata_encoder or DEFAULT_ENCODER} if selector == "strata" else {}
        utility = get_selector(selector)(utility, list(campaign.src), seed=args.seed, options=settings)(
            _item_budget(args, campaign)
        )
        parameters.update(selector=selector, **{f"strata_{key}": value for key, value in settings.items()})
    quotas = _quotas(args.quotas)
    if args.cost_aware and args.proportion is None:
        raise PrecometError("--cost-aware only applies to --proportion (--budget-cost is always cost-aware)")
    cost_aware = args.budget_cost is not None or (
        args.proportion is not None and (args.cost_aware or bool(args.cost_from_times))
    )
    if args.method:  # length under a cost budget: a constant utility, the cost objective alone decides
        from precomet.utilities import knapsack_utility

        utility = knapsack_utility(args.method, utility, by_cost=cost_aware)

    if args.cost_objective != DEFAULT_COST_OBJECTIVE and not cost_aware:
        raise PrecometError(
            "--cost-objective applies to cost budgets (--budget-cost, or --proportion with --cost-aware or"
            " --cost-from-times), not to a count of items"
        )
    if args.balance == "domain" and len(set(campaign.domain)) < 2:
        raise PrecometError(
            f"--balance domain: campaign {campaign.name!r} has one domain ({campaign.domain[0]!r}); there is nothing"
            " to balance (give domains in the input, or --domains FILE for plain text)"
        )
    options = dict(  # the plan of select_subset, recorded in the manifest as given
        budget=args.budget,
        proportion=args.proportion,
        budget_cost=args.budget_cost,
        balance=args.balance,
        quotas=quotas,
        level=args.level,
        solver=args.solver,
        time_limit=args.time_limit,
        allow_gap=args.allow_gap,
    )
    if args.budget is not None and args.budget >= len(campaign):  # not an error, but not a selection either
        print(
            f"precomet select: note: --budget {args.budget} covers all {len(campaign)} items: the subset is the whole"
            " campaign",
            file=sys.stderr,
        )
    seconds = _item_seconds(args, campaign, needed=cost_aware)
    if args.budget_cost is not None and args.budget_cost >= seconds.sum():
        given = "--budget-time" if args.budget_time is not None else "--budget-cost"
        print(
            f"precomet select: note: {given} ({args.budget_cost:,.6g} s) covers the whole campaign's annotation time"
            f" ({format_duration(float(seconds.sum()))}): the subset is the whole campaign",
            file=sys.stderr,
        )
    plan = SubsetPlan(**options, seed=args.seed, cost_objective=args.cost_objective)
    selection = select_subset(utility, plan, campaign=campaign, cost=seconds if cost_aware else None)
    parameters.update(
        options,
        budget_given_as="duration" if args.budget_time is not None else None,
        cost_aware=cost_aware,
        cost_from_times=args.cost_from_times,
        cost_per=args.cost_per,
        outputs_per_item=args.outputs_per_item,
        cost_objective=args.cost_objective if cost_aware else None,
        campaign=campaign.name,
        batch=args.batch,
        batch_order=args.batch_order if args.batch else None,
    )
    manifest = selection.manifest(
        method=method,
        parameters=parameters,
        data_hash=campaign.data_hash(),
        sources_hash=sources_hash(campaign.src),
    )
    manifest_path = write_subset(
        args.output,
        campaign,
        selection,
        utility,
        manifest,
        batch=args.batch,
        batch_order=args.batch_order,
        batch_kind=args.batch_format,
    )
    written = f" -> {args.output}" + (f" (+ {manifest_path.name})" if manifest_path else "") if args.output else ""
    if args.output is None and manifest_path is not None:
        written = f" (manifest: {manifest_path.name})"
    print(
        f"selected {len(selection)} of {len(campaign)} items ({_cost_summary(args, campaign, selection.indices)}); "
        f"{selection.solver} {selection.status}, gap {selection.gap:.2g}, {selection.seconds:.2f} s{written}"
    )
    if args.batch:
        kind = batch_format(args.batch, args.batch_format)
        layout = "Appraise batches JSON, " if kind == "appraise" else ""
        order = (
            "one document per system, shuffled, with quality-control documents"
            if kind == "appraise"
            else f"{args.batch_order} order"
        )
        print(f"annotation batch ({layout}{_batch_contents(campaign)}; {order}) -> {args.batch}")
        if kind == "appraise":
            print(_control_time(args.batch, campaign, selection.indices))
    return 0


def _control_time(batch: str, campaign: Campaign, chosen: np.ndarray) -> str:
    """The quality-control judgements an Appraise batch adds, outside the budget, at the chosen outputs' mean
    seconds per judgement."""
    tasks = json.loads(Path(batch).read_text(encoding="utf-8"))
    controls = sum(item.get("itemType") == "BAD" for task in tasks for item in task["items"])
    each = float(np.mean(campaign.cost[chosen]))
    return (
        f"  + {controls:,} quality-control judgements (BAD items), ≈ {format_duration(controls * each)} more annotator"
        f" time at {each:,.0f} s each, outside the budget"
    )


def _item_seconds(args: argparse.Namespace, campaign: Campaign, *, needed: bool) -> np.ndarray:
    """Seconds to judge every output of each item; a campaign of sources only without ``--outputs-per-item``
    gets its per-output cost when no cost budget ``needed`` it (the summary then says per output)."""
    if campaign.systems or args.outputs_per_item is not None or needed:
        return item_seconds(campaign, args.outputs_per_item)
    return np.asarray(campaign.cost, dtype=float)


def _cost_summary(args: argparse.Namespace, campaign: Campaign, chosen: np.ndarray) -> str:
    """``"≈ 2 h 05 min of annotator time: 1,104 judgements of 7 s; of 10 h 43 min, estimated from source length"``
    (raw units for a given cost; time per output for sources whose outputs are not counted)."""
    source = cost_source(campaign)
    if not campaign.systems and args.outputs_per_item is None:
        picked, total = float(campaign.cost[chosen].sum()), float(campaign.cost.sum())
        return (
            f"{format_duration(picked)} of {format_duration(total)} per output judged, {source}; give"
            " --outputs-per-item N for the annotator time"
        )
    judged = judgements_per_item(campaign, args.outputs_per_item)
    seconds = campaign.cost * judged
    picked, total = float(seconds[chosen].sum()), float(seconds.sum())
    if source == GIVEN:
        return f"cost {picked:,.6g} of {total:,.6g} ({int(judged[chosen].sum()):,} judgements), {source}"
    return f"{describe_time(picked, int(judged[chosen].sum()))}; of {format_duration(total)}, {source}"


def _utilities(args: argparse.Namespace, campaign: Campaign) -> tuple[np.ndarray, str, dict]:
    from precomet.estimator.leakage import check_seen

    if args.exclude_missing and args.checkpoint:
        raise PrecometError(
            "--exclude-missing applies to --method and --utility-file; a checkpoint predicts every item"
        )
    if args.utility_file:
        from precomet.io.utility_files import aligned_utilities

        source_of = source_texts(args, campaign)  # every item: a file may cover the unrated ones too
        utility, signature = aligned_utilities(
            args.utility_file,
            campaign.ids,
            allow_extra=source_of.keys(),
            source_of=source_of,
            force=args.force,
            allow_null=args.exclude_missing,
        )
        seen = check_seen(
            signature,
            campaign.src,
            strict=args.strict,
            what=f"the estimator behind {args.utility_file}",
            where=args.utility_file,
        )
        return utility, "scores", {"scores": args.utility_file, "seen_in_training": seen}
    if args.checkpoint:
        from precomet.estimator import load_estimator
        from precomet.estimator.screening import predict_utilities

        utility, screening = predict_utilities(
            load_estimator(args.checkpoint),
            campaign.ids,
            campaign.src,
            strict=args.strict,
            what=f"checkpoint {args.checkpoint}",
            where=f"{args.checkpoint}/precomet.json",
        )
        return utility, "checkpoint", {"checkpoint": args.checkpoint, **screening.report()}
    if args.strict:
        raise PrecometError(
            "--strict applies to utilities from an estimator (--checkpoint or --utility-file), not --method"
        )
    from precomet.utilities import compute_utility

    require_method_data(
        campaign,
        args,
        args.method,
        instead="for sources only use --checkpoint (predicted utilities), or --method {free}",
    )

    utility = compute_utility(
        campaign,
        args.method,
        metric=args.metric,
        budget=_item_budget(args, campaign),
        seed=args.seed,
        options={"missing": "exclude"} if args.exclude_missing else None,
    )
    return np.asarray(utility, dtype=float), args.method, {"metric": args.metric, "seed": args.seed}


def _without_missing(campaign: Campaign, utility: np.ndarray) -> tuple[Campaign, np.ndarray]:
    """``--exclude-missing``: the items with a utility (the others can never be selected), said in a note."""
    keep = np.flatnonzero(np.isfinite(utility))
    if len(keep) == len(campaign):
        return campaign, utility
    if len(keep) == 0:
        raise PrecometError(f"--exclude-missing: none of the {len(campaign)} items has a utility; nothing to select")
    print(
        f"precomet select: note: --exclude-missing: {len(campaign) - len(keep)} of {len(campaign)} items have no"
        " utility and are never selected; the budget applies to the other items",
        file=sys.stderr,
    )
    return campaign.take(keep), utility[keep]


def _batch_contents(campaign: Campaign) -> str:
    """What the annotation batch holds, e.g. ``source, reference, 12 system outputs``."""
    parts = ["source"] + (["reference"] if campaign.ref is not None else [])
    outputs = sum(system in campaign.outputs for system in campaign.systems)
    if outputs:
        parts.append(f"{outputs} system output{'s' if outputs != 1 else ''}")
    return ", ".join(parts)


def _item_budget(args: argparse.Namespace, campaign: Campaign) -> int:
    """The budget in items (k for kmeans, diffuse and the strata selector)."""
    seconds = _item_seconds(args, campaign, needed=args.budget_cost is not None)
    return item_budget(seconds, budget=args.budget, proportion=args.proportion, budget_cost=args.budget_cost)


def _quotas(text: str | None) -> dict | None:
    if text is None:
        return None
    try:
        quotas = json.loads(text)
    except json.JSONDecodeError as err:
        raise PrecometError(f"--quotas is not JSON ({err.msg}): {text!r}") from None
    except RecursionError:
        raise PrecometError("--quotas is nested too deeply") from None
    if not isinstance(quotas, dict):
        raise PrecometError(f"--quotas must be a JSON object {{domain: count or share}}, got {text!r}")
    return quotas
