"""``precomet rank``: rank systems from (annotated) human scores: means, bootstrap CIs, clusters, win probabilities."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from precomet.campaign import HUMAN
from precomet.commands.common import (
    Paths,
    add_data_arguments,
    add_force_argument,
    add_output_argument,
    data_inputs,
    load_campaign,
    open_share,
    repeats,
    seed,
)
from precomet.errors import PrecometError

HELP = "rank systems from human scores: means, bootstrap CIs, significance clusters, win probabilities; JSON and figure"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    parser.add_argument("--score", default="human", help="score to rank by (default human), e.g. coherence or a metric")
    parser.add_argument(
        "--subset",
        type=Path,
        help="rank only the items of this subset JSONL (from precomet select); "
        "its .manifest.json beside it is recorded unless --manifest is given",
    )
    parser.add_argument(
        "--manifest", type=Path, help="manifest of the selection (.manifest.json) to record in the signature"
    )
    add_force_argument(parser, what="a --subset")
    parser.add_argument(
        "--confidence",
        type=open_share,
        default=0.95,
        help="confidence level of the bootstrap intervals, in (0, 1) (default 0.95)",
    )
    parser.add_argument(
        "--reweight",
        choices=["domain", "length"],
        help="with --subset: also show means post-stratified to the test set's shares (each stratum's subset mean"
        " weighted by its share of the whole --data): domain = per domain, length = per source-length quartile;"
        " with bootstrap CIs resampled within strata",
    )
    parser.add_argument("--rounds", type=repeats, default=1000, help="bootstrap rounds (default 1000)")
    parser.add_argument(
        "--alpha",
        type=open_share,
        default=0.05,
        help="significance level of the Wilcoxon tests that open a new cluster (default 0.05)",
    )
    parser.add_argument(
        "--cluster-rule",
        choices=["wmt", "paper"],
        default="wmt",
        help="wmt (default, as WMT findings papers): a system opens a new cluster when any member of the current"
        " cluster is significantly better (p <= alpha); paper: Algorithm 1, only the previous system (p < alpha)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the bootstrap (default 0)")
    add_output_argument(
        parser,
        "write the ranking as JSON with its signature here ('-' = standard output)",
        required=False,
    )
    parser.add_argument("--plot", type=Path, metavar="PATH", help="write the figure here (PNG, PDF or SVG)")
    parser.add_argument(
        "--table",
        type=Path,
        metavar="PATH",
        help="write the ranking as a table to paste: .tex (LaTeX, booktabs, a rule between clusters) or .csv",
    )


def paths(args: argparse.Namespace) -> Paths:
    from precomet.selection import subset_manifest_path

    beside = subset_manifest_path(args.subset) if args.subset is not None else None
    inputs = [*data_inputs(args), args.subset, args.manifest, beside]
    return Paths(inputs=inputs, outputs=[args.output, args.plot, args.table])


def run(args: argparse.Namespace) -> int:
    from precomet.io import jsonsafe, load
    from precomet.outputs.atomic import output_set
    from precomet.outputs.paths import FIGURE_SUFFIXES, STDOUT, check_output, check_outputs
    from precomet.provenance import check_manifest_belongs, check_subset_sources
    from precomet.rank import check_manifest, plot_ranking, rank_systems, ranking_table, read_manifest
    from precomet.rank.table_export import check_table_path, ranking_as_table
    from precomet.selection import subset_manifest_path
    from precomet.selection.subset_file import read_subset_rows, subset_ids_in

    check_outputs(args.output, args.plot, args.table)
    if args.plot:
        check_output(args.plot, suffixes=FIGURE_SUFFIXES)
    if args.table:
        check_table_path(args.table)
    if args.reweight is not None and args.subset is None:
        raise PrecometError(
            f"--reweight {args.reweight} needs --subset: without it the data is the test set and the reweighted means"
            " would be the raw means"
        )
    test_set = full = everything = None
    test_set_is = None
    manifest_path = args.manifest
    if args.subset is None:
        campaign = load_campaign(args)
    else:
        # the scored full data and the subset are what load_campaign gives (items rated for every system unless
        # --keep-incomplete), restricted for the subset; the test set the subset is compared with is the scored
        # full data when it reaches beyond the subset (what select drew from, what the full-data ranking covers),
        # else every item of --data, rated or not (the subset alone was annotated)
        everything = load(args.data, campaign=args.campaign, human=args.human, complete=False)
        full = everything
        if not args.keep_incomplete and HUMAN in everything.scores:
            full = everything.complete(HUMAN)[0]
        rows = read_subset_rows(args.subset)
        ids = subset_ids_in(args.subset, rows, everything, full, keep_incomplete=args.keep_incomplete)
        campaign = full.take_ids(ids.rated)
        check_subset_sources(
            args.subset,
            [(item_id, src) for item_id, (_, src, _) in zip(ids.matched, rows)],
            dict(zip(map(str, everything.ids), everything.src)),
            force=args.force,
        )
        scored = (
            full.take(np.flatnonzero(~np.isnan(full.score(args.score)).all(axis=1)))
            if (args.score in full.scores)
            else full
        )
        beyond = bool(set(map(str, scored.ids)) - set(map(str, campaign.ids)))
        test_set = scored if beyond else everything
        test_set_is = "the scored items of --data" if beyond else "every item of --data (only the subset is scored)"
        beside = subset_manifest_path(args.subset)
        if manifest_path is None and beside is not None and beside.exists():
            manifest_path = beside
    manifest = read_manifest(manifest_path) if manifest_path is not None else None
    if manifest is not None and everything is not None:
        views = [everything.src, *([everything.complete(HUMAN)[0].src] if HUMAN in everything.scores else [])]
        check_manifest_belongs(manifest, [item_id for item_id, _, _ in rows], views, force=args.force)
    ranking = rank_systems(
        campaign,
        score=args.score,
        confidence=args.confidence,
        rounds=args.rounds,
        alpha=args.alpha,
        cluster_rule=args.cluster_rule,
        seed=args.seed,
        manifest=manifest,
        test_set=test_set,
        full=full,
        reweight=args.reweight,
    )
    _warn_about_subset(ranking, args.reweight)
    if manifest is not None:
        problem = check_manifest(int(ranking.signature["items"]), manifest)
        if problem:
            log.warning("%s: %s", manifest_path, problem)
    result = ranking.to_dict()
    result["signature"].update(data=str(args.data), subset=None if args.subset is None else str(args.subset))
    if "composition" in result:
        result["composition"]["test_set"] = test_set_is
    stream = sys.stderr if str(args.output) == STDOUT else sys.stdout  # '-o -': the JSON alone on stdout
    print(ranking_table(ranking), file=stream)
    with output_set(args.output, args.plot, args.table) as out:
        if args.output:
            with out.open(args.output) as handle:
                jsonsafe.dump(result, handle, indent=1, ensure_ascii=False)
                handle.write("\n")
        if args.plot:
            plot_ranking(ranking, out.path(args.plot))
        if args.table:
            with out.open(args.table) as handle:
                handle.write(ranking_as_table(ranking, args.table))
    written = [str(p) for p in (args.output, args.plot, args.table) if p]
    if written:
        print("wrote " + " and ".join(written), file=stream)
    return 0


_DIFFERENCES = (("domain", "domains"), ("length", "long"))
"""The composition warning a reweighting corrects, by a word of the warning (precomet.rank.composition)."""


def _warn_about_subset(ranking, reweight: str | None) -> None:
    """The subset's composition on stderr (one line per material difference), with what to do about it: the
    reweighting that matches the difference, or, once reweighted, whether it brought the ranking nearer the full
    data's or took it away."""
    comp = ranking.composition
    if comp is None:
        return
    if comp.note:
        log.warning("rank --subset: %s", comp.note)
    kinds = [next((name for name, word in _DIFFERENCES if word in line), None) for line in comp.warnings]
    for i, (line, kind) in enumerate(zip(comp.warnings, kinds)):
        hint = ""
        if reweight is None and i == len(comp.warnings) - 1:
            by = list(dict.fromkeys(k for k in kinds if k))
            hint = "; subset means are not test-set means" + (
                f" (--reweight {' or '.join(by)} post-stratifies them)" if by else ""
            )
        elif reweight is not None and kind == reweight:
            hint = f"; see the reweighted ({reweight}) means"
        elif reweight is not None and kind is not None:
            hint = f" (--reweight {reweight} does not correct this; --reweight {kind} does)"
        log.warning("rank --subset: %s%s", line, hint)
    if ranking.reweighted is not None:
        for note in ranking.reweighted.notes:
            log.warning("rank --reweight: %s", note)
    agreement = ranking.full_data
    if agreement is not None and agreement.tau is not None and agreement.tau_reweighted is not None:
        if agreement.tau_reweighted < agreement.tau:
            log.warning(
                "rank --reweight: the reweighted (%s) order agrees less with the full data's than the raw one"
                " (Kendall tau %.3f -> %.3f): prefer the raw means here",
                reweight,
                agreement.tau,
                agreement.tau_reweighted,
            )
