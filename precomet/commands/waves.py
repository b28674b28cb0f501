"""``precomet waves``: annotate in waves until the ranking is settled (the next wave and the report), and
``precomet waves replay``: the protocol replayed on a fully judged campaign."""

from __future__ import annotations

import argparse
import csv
import re
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path
from statistics import NormalDist

import numpy as np

from precomet.campaign import HUMAN, require_documents, source_length
from precomet.commands.common import (
    Paths,
    add_data_arguments,
    data_inputs,
    load_campaign,
    open_share,
    repeats,
    seed,
    share,
)
from precomet.errors import PrecometError
from precomet.io import jsonsafe
from precomet.io.text import spreadsheet_cell
from precomet.outputs.atomic import output_set
from precomet.outputs.paths import is_stdout

HELP = (
    "annotate in waves until the ranking is settled: the next wave (cells to judge, with their inclusion"
    " probabilities) and a report (ranking, predicted agreement with the full test set, stop or continue);"
    " 'waves replay' replays the protocol on a fully judged campaign"
)
DEFAULT_SIZE = "5%"
"""A wave's size when none is given: 5 % of the pool's items."""
DEFAULT_RUNS = 100
"""Replay runs when none are given."""
PLOT_SUFFIXES = (".png", ".pdf", ".svg")
"""Figure formats of --plot."""
LIVE_ONLY = {
    "judgements": "--judgements",
    "pearmut_annotations": "--pearmut-annotations",
    "appraise_annotations": "--appraise-annotations",
    "manifest": "--manifest",
    "batch": "--batch",
    "pearmut": "--pearmut",
    "report": "--report",
    "plot": "--plot",
}
"""Options of a live call (the next wave and the report) that a replay does not read."""
REPLAY_ONLY = {"runs": "--runs", "output": "-o"}
"""Options of a replay that a live call does not read."""
CELL_FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv", ".json": "appraise"}
"""Suffixes of a wave's batch of cells: one row per item × system to judge, or Appraise's batches of them."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        choices=["next", "replay"],
        default="next",
        help="next (default): report and draw the next wave of a live campaign; replay: replay on a judged campaign",
    )
    add_data_arguments(parser)
    for flag, metavar, help in (
        ("--judgements", "FILE", "judgements so far (any input rank reads, e.g. canonical JSONL with the judged cells'"
         " human scores)"),
        ("--pearmut-annotations", "FILE", "judgements exported by Pearmut (its annotation download or log); several"
         " annotators of a cell averaged"),
        ("--appraise-annotations", "CSV", "judgements exported by Appraise (its scores CSV) for batches written by"
         " --batch *.json (itemID = the item's position in the pool); several annotators of a cell averaged, BAD and"
         " tutorial rows dropped"),
    ):  # fmt: skip
        parser.add_argument(flag, type=Path, nargs="+", default=[], metavar=metavar, help=help)
    parser.add_argument(
        "--manifest",
        type=Path,
        help="the campaign's waves manifest (JSON): read when it exists, and the new wave is added to it",
    )
    parser.add_argument(
        "--size",
        help="wave size: items (200), a share of the pool (5%%), cells (300cells), or a duration (10h) (default 5%%;"
        " a campaign keeps the size of its first wave)",
    )
    parser.add_argument("--target", type=share, default=0.95, help="pairwise agreement to reach (default 0.95)")
    parser.add_argument("--confidence", type=open_share, default=0.9, help="confidence of the guarantee (default 0.9)")
    parser.add_argument(
        "--rule",
        choices=["guaranteed", "expected"],
        default="guaranteed",
        help="stop when the agreement's lower bound at --confidence reaches --target (guaranteed, default; valid"
        " whenever the campaign stops) or when its expectation does (expected: no guarantee)",
    )
    parser.add_argument(
        "--chooser",
        choices=["random", "length", "prior", "learn"],
        default="learn",
        help="how waves are chosen (default learn: within-campaign learning from the prior)",
    )
    prior = parser.add_mutually_exclusive_group()
    prior.add_argument("--utility", help="the prior: an output-based utility, e.g. metric_var (needs --metric)")
    prior.add_argument(
        "--utility-file",
        type=Path,
        help="the prior: a utilities file (JSONL id, utility), e.g. the source-based estimator's from precomet"
        " predict --checkpoint, which runs its language, coverage and leak checks",
    )
    parser.add_argument(
        "--metric",
        help="metric the utility, the learning's features and the weighted estimates' predictor read (the same on"
        " every call of a campaign), e.g. MetricX-23-c",
    )
    parser.add_argument(
        "--encoder",
        help="learn also reads the sources' vectors from this registered encoder (e.g. e5-small, minilm), reduced to"
        " their leading principal components",
    )
    parser.add_argument("--allocation", action="store_true", help="fewer cells for systems already decided")
    parser.add_argument("--level", choices=["item", "doc"], default="item", help="sampling unit (default item)")
    parser.add_argument(
        "--top-k", action="store_true", help="deterministic top-k waves (no weights: the estimates are biased)"
    )
    parser.add_argument("--seed", type=seed, default=0, help="seed of the draws (default 0)")
    parser.add_argument(
        "--batch", type=Path, help="next wave: one row per cell (.jsonl, .csv, .tsv), or Appraise batches (.json)"
    )
    parser.add_argument("--pearmut", type=Path, help="next wave as a Pearmut campaign file (JSON)")
    parser.add_argument("--report", type=Path, help="the report as JSON ('-' = standard output)")
    parser.add_argument("--plot", type=Path, help="figure of the ranking and the agreement (PNG, PDF, SVG)")
    parser.add_argument("--runs", type=repeats, help=f"replay: runs (default {DEFAULT_RUNS})")
    parser.add_argument("-o", "--output", type=Path, help="replay: its summary as JSON")


def paths(args: argparse.Namespace) -> Paths:
    return Paths(
        inputs=[
            *data_inputs(args),
            *args.judgements,
            *args.pearmut_annotations,
            *args.appraise_annotations,
            args.utility_file,
        ],
        outputs=[args.batch, args.pearmut, args.report, args.plot, args.output, args.manifest],
    )


def _chooser(args: argparse.Namespace, pool):
    from precomet.waves.choosers import Chooser, metric_features, vector_features

    prior = features = None
    if args.utility:
        from precomet.utilities import compute_utility

        prior = compute_utility(pool, args.utility, metric=args.metric)
    if args.utility_file:
        from precomet.io.utility_files import aligned_utilities

        prior, _ = aligned_utilities(
            args.utility_file, pool.ids, allow_extra=True, source_of=dict(zip(map(str, pool.ids), pool.src))
        )
    if args.metric:
        if args.metric not in pool.scores:
            raise PrecometError(f"--metric {args.metric}: the pool has no such score ({', '.join(pool.scores)})")
        features = metric_features(pool.score(args.metric))
    if args.encoder:
        from precomet.utilities.embed import embed_texts

        vectors = vector_features(embed_texts(list(pool.src), encoder=args.encoder))
        features = vectors if features is None else np.hstack([features, vectors])
    if args.chooser == "prior" and prior is None:
        raise PrecometError("--chooser prior needs --utility (with --metric for a metric's utility) or --utility-file")
    return Chooser(args.chooser, source_length(pool.src), prior=prior, features=features)


def _check_options(args: argparse.Namespace) -> None:
    """Refuse an option this call would not read: a live call's on a replay and the reverse, and a prior or
    vectors that the chooser does not use (they would be computed, or fail, and then be ignored)."""
    replay = args.action == "replay"
    for name, flag in (LIVE_ONLY if replay else REPLAY_ONLY).items():
        if getattr(args, name) not in (None, []):
            if replay:
                raise PrecometError(
                    f"{flag}: a live campaign's option; 'waves replay' replays a fully judged campaign and writes only"
                    " -o (drop it, or run 'precomet waves' without 'replay')"
                )
            raise PrecometError(
                f"{flag} is replay's option; a live campaign writes --batch, --pearmut, --report, --plot (add"
                " 'replay' to replay the protocol)"
            )
    if args.encoder and args.chooser != "learn":
        raise PrecometError(f"--encoder {args.encoder}: only --chooser learn reads the sources' vectors")
    for flag, given in (("--utility", args.utility), ("--utility-file", args.utility_file)):
        if given is not None and args.chooser not in ("prior", "learn"):
            raise PrecometError(f"{flag} {given}: a prior is read by --chooser prior or learn, not {args.chooser}")
    if args.plot is not None and args.plot.suffix.lower() not in PLOT_SUFFIXES:
        raise PrecometError(f"--plot {args.plot}: name the figure *.png, *.pdf or *.svg")


def run(args: argparse.Namespace) -> int:
    _check_options(args)
    if args.action == "replay":
        return _replay(args)
    from precomet.waves.live import campaign_lock

    if args.manifest is None:
        return _live(args)
    with campaign_lock(args.data):
        return _live(args)


def _live(args: argparse.Namespace) -> int:
    from precomet.waves.live import Manifest, next_wave, pool_output_systems, read_judgements, standing, wave_record
    from precomet.waves.plan import parse_wave_size
    from precomet.waves.stop import wave_level

    if args.manifest is not None and is_stdout(args.manifest):
        raise PrecometError(f"--manifest {args.manifest}: the manifest is read back by the next call; give a file")
    # the pool is every item to draw from: human scores in it are not judgements (give those with --judgements), so
    # items without them are kept
    pool = load_campaign(argparse.Namespace(**{**vars(args), "keep_incomplete": True}))
    pool_systems = pool_output_systems(pool, args.data)
    manifest = (
        Manifest.read(args.manifest, pool, pool_systems)
        if args.manifest is not None and args.manifest.exists()
        else None
    )
    size = parse_wave_size(manifest.size if manifest else args.size or DEFAULT_SIZE, len(pool))
    if manifest is not None and (manifest.level != args.level or args.size not in (None, manifest.size)):
        print(
            f"precomet waves: the manifest fixes --size {manifest.size} --level {manifest.level} (kept)",
            file=sys.stderr,
        )
    level = manifest.level if manifest else args.level
    if level == "doc":
        require_documents(pool)
    metric = args.metric
    if manifest is not None:
        manifest.check_settings(target=args.target, confidence=args.confidence, metric=metric)
    judgements = read_judgements(
        args.judgements, pool, pool_systems, pearmut=args.pearmut_annotations, appraise=args.appraise_annotations
    )
    systems = judgements.systems
    missing = sorted(manifest.systems() - set(systems)) if manifest is not None else []
    if missing:
        raise PrecometError(
            f"the manifest's waves count on judgements of {', '.join(map(repr, missing))}, and no judgement file given"
            " now holds one: give every judgement file of the campaign"
        )
    if pool_systems is not None and not systems:
        systems = pool_systems
        judgements = type(judgements)(systems, np.full((len(pool), len(systems)), np.nan))
    planned = (
        manifest.planned
        if manifest
        else size.planned_looks(len(pool), len(pool) * max(len(systems), 1), float(pool.cost.sum()))
    )
    waves = manifest.rebuild(pool, systems) if manifest else []
    if waves and not (args.judgements or args.pearmut_annotations or args.appraise_annotations):
        print(
            "precomet waves: no judgements given (--judgements, --pearmut-annotations, --appraise-annotations): the"
            " waves drawn so far count as unanswered",
            file=sys.stderr,
        )
    current = standing(
        pool,
        judgements,
        waves,
        target=args.target,
        confidence=args.confidence,
        rule=args.rule,
        size=size,
        planned=planned,
        level=float(manifest.waves[-1]["look_level"]) if manifest and manifest.waves else None,
    )
    report = current.to_dict(NormalDist().inv_cdf(1 - (1 - args.confidence) / 2))
    report["systems_known"] = bool(systems)
    new = None
    # the last wave awaits its judgements while none of its cells has one; a wave that drew no cell (a small wave's
    # independent draws can come out empty) awaits nothing, and the next one is drawn on top of it
    awaiting = bool(waves) and waves[-1].drawn.any() and not (waves[-1].drawn & ~np.isnan(judgements.scores)).any()
    if awaiting:
        report["awaiting_wave"] = waves[-1].number
    if not current.verdict.stop and not awaiting:
        new, predictor = next_wave(
            pool,
            judgements,
            waves,
            current,
            chooser=_chooser(args, pool),
            size=size,
            level=level,
            allocation=args.allocation,
            top_k=args.top_k,
            seed=args.seed,
            metric=metric,
        )
        report["next_wave"] = {
            "number": new.number,
            "items": int(new.drawn.any(axis=1).sum()),
            "cells": int(new.drawn.sum()) if systems else None,
            "chooser": args.chooser,
            "weighted": new.weighted,
        }
    _print_report(report, stream=sys.stderr if str(args.report) == "-" else sys.stdout)
    targets = [args.report, args.plot] + ([args.batch, args.pearmut, args.manifest] if new is not None else [])
    with output_set(*targets) as out:
        if args.report:
            with out.open(args.report) as handle:
                jsonsafe.dump(report, handle, indent=1, ensure_ascii=False)
                handle.write("\n")
        if args.plot:
            _plot(report, out.path(args.plot))
        if new is not None:
            drawn = new.drawn
            if args.batch:
                with out.open(args.batch) as handle:
                    _write_cells(handle, pool, drawn, systems, args.batch)
            if args.pearmut and not systems:
                raise PrecometError("--pearmut: a Pearmut campaign shows system outputs, and this pool has none")
            if args.pearmut and drawn.any():  # no campaign of nothing: the notice below says so
                from precomet.io.pearmut import write_pearmut

                cells = np.zeros((len(pool), len(pool.systems)), dtype=bool)
                for k, system in enumerate(systems):
                    cells[:, pool.systems.index(system)] = drawn[:, k]
                campaign_id = re.sub(r"[^A-Za-z0-9_.-]+", "_", pool.name) + f"_wave{new.number}"
                with out.open(args.pearmut) as handle:
                    write_pearmut(handle, pool, cells, campaign_id=campaign_id)
            if args.manifest:
                record = manifest or Manifest(
                    pool.data_hash(), level, size.text, planned, metric, args.target, args.confidence, []
                )
                look_level = wave_level(record.confidence, new.number, record.planned)
                record.waves.append(wave_record(new, predictor, pool, systems, level, look_level=look_level))
                with out.open(args.manifest) as handle:
                    jsonsafe.dump(record.to_dict(), handle, indent=1)
                    handle.write("\n")
    if awaiting:
        print(
            f"precomet waves: wave {waves[-1].number} has no judgement yet: no new wave drawn (give its judgements"
            " with --judgements, --pearmut-annotations or --appraise-annotations)",
            file=sys.stderr,
        )
    elif new is None:
        print("precomet waves: stop — the ranking is settled at the target; no wave drawn", file=sys.stderr)
    elif not new.drawn.any():
        print(
            f"precomet waves: wave {new.number} drew no cell (its units are drawn independently, and a wave this small"
            " can come out empty): nothing to judge"
            + (", no --pearmut campaign written" if args.pearmut else "")
            + "; run again to draw the next wave",
            file=sys.stderr,
        )
    elif args.manifest is None:
        print(
            "precomet waves: without --manifest the wave's probabilities are not kept and its judgements cannot be"
            " weighted later",
            file=sys.stderr,
        )
    return 0


def _write_cells(handle, pool, drawn: np.ndarray, systems: tuple[str, ...], path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix not in CELL_FORMATS:
        raise PrecometError(
            f"--batch {path}: name it *.jsonl, *.csv or *.tsv (one row per cell to judge) or *.json (Appraise)"
        )
    if CELL_FORMATS[suffix] == "appraise":
        from precomet.io.batch import appraise_batches

        if not systems or not pool.outputs:
            raise PrecometError(f"--batch {path}: an Appraise batch shows system outputs, and this pool has none")
        only_drawn = replace(  # pools with a missing output are refused on loading: every system has its column
            pool, outputs={name: np.where(drawn[:, k], pool.outputs[name], None) for k, name in enumerate(systems)}
        )
        batches = appraise_batches(only_drawn, np.flatnonzero(drawn.any(axis=1)), pool_ids=True)
        jsonsafe.dump(batches, handle, ensure_ascii=False, indent=2)
        handle.write("\n")
        return
    rows = []
    for i in np.flatnonzero(drawn.any(axis=1)):
        names = [systems[s] for s in np.flatnonzero(drawn[i])] if systems else [None]
        for system in names:
            tgt = pool.outputs[system][i] if system is not None and system in pool.outputs else None
            rows.append(
                {
                    "id": pool.ids[i],
                    "doc": pool.doc[i],
                    "domain": pool.domain[i],
                    "src": pool.src[i],
                    "system": system,
                    "tgt": tgt,
                }
            )
    if CELL_FORMATS[suffix] == "jsonl":
        jsonsafe.dump_lines(iter(rows), handle)
        return
    writer = csv.writer(handle, delimiter="\t" if suffix == ".tsv" else ",", lineterminator="\r\n")
    header = ["id", "doc", "domain", "src", "system", "tgt"]
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if row[k] is None else spreadsheet_cell(str(row[k])) for k in header])


def _print_report(report: dict, stream) -> None:
    print(
        f"waves judged: {report['waves']}; cells judged {report['judged_cells']:,} of {report['pool_cells']:,}"
        f" ({report['judged_items']:,} of {report['pool_items']:,} items); estimates: {report['estimates']}",
        file=stream,
    )
    if report["ranking"]:
        print(f"{'#':>3}  {'system':<28} {'mean':>10}  interval", file=stream)
        for row in report["ranking"]:
            print(
                f"{row['cluster']:>3}  {row['system']:<28} {row['mean']:>10.4f}"
                f"  [{row['ci_low']:.4f}, {row['ci_high']:.4f}]",
                file=stream,
            )
    if not report["ranking"] and report["judged_cells"]:
        print(
            "no ranking yet: some systems have no judgement of the waves drawn (give every system's judgements)",
            file=stream,
        )
        return
    if not report["ranking"]:
        print("no judgements yet: the ranking and its agreement with the full test set come with them", file=stream)
        print("still needed: unknown until the first wave's judgements are in", file=stream)
        return
    print(
        f"agreement with the full test set: expected {report['expected_agreement']:.3f}, lower bound"
        f" {report['agreement_lower_bound']:.3f} at {report['confidence']:.0%} ({len(report['decided_pairs'])} of"
        f" {len(report['decided_pairs']) + len(report['undecided_pairs'])} pairs decided); target"
        f" {report['target']:.2f} ({report['rule']}): {'STOP' if report['stop'] else 'continue'}",
        file=stream,
    )
    if not report["stop"]:
        print(
            f"still needed (estimated): about {report['items_still_needed']:,} items,"
            f" {report['hours_still_needed']:.1f} h (stop predicted at {report['predicted_stop_share']:.0%}"
            " of the cells)",
            file=stream,
        )


def _plot(report: dict, path: Path) -> None:
    from matplotlib.figure import Figure

    rows = report["ranking"]
    figure = Figure(figsize=(6, 0.35 * max(len(rows), 2) + 1.2))
    ax = figure.add_subplot()
    if rows:
        y = np.arange(len(rows))[::-1]
        means = np.array([r["mean"] for r in rows])
        low = means - np.array([r["ci_low"] for r in rows])
        high = np.array([r["ci_high"] for r in rows]) - means
        ax.errorbar(means, y, xerr=[low, high], fmt="o", color="C0")
        ax.set_yticks(y, [f"{r['cluster']}  {r['system']}" for r in rows], fontsize=8)
    ax.set_xlabel("estimated mean human score (weighted)")
    ax.set_title(
        f"wave {report['waves']}: agreement expected {report['expected_agreement']:.3f}, bound"
        f" {report['agreement_lower_bound']:.3f} -> {'stop' if report['stop'] else 'continue'}",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(path)


def _replay(args: argparse.Namespace) -> int:
    from precomet.metaeval.reference import full_reference
    from precomet.waves.plan import parse_wave_size
    from precomet.waves.replay import ReplaySettings, fewer_than, replay

    pool = load_campaign(args)
    if args.level == "doc":
        require_documents(pool)
    if HUMAN not in pool.scores:
        raise PrecometError(f"waves replay: {args.data} has no human scores to replay")
    if args.metric and args.metric not in pool.scores:
        raise PrecometError(f"--metric {args.metric}: {args.data} has no such score ({', '.join(pool.scores)})")
    if len(pool.systems) < 2:
        raise PrecometError(
            f"waves replay: {args.data} has {len(pool.systems)} system with human scores; a ranking needs at least two"
        )
    settings = ReplaySettings(
        size=parse_wave_size(args.size or DEFAULT_SIZE, len(pool)),
        target=args.target,
        confidence=args.confidence,
        rule=args.rule,
        level=args.level,
        allocation=args.allocation,
        top_k=args.top_k,
    )
    choosers = ["random"] if args.chooser == "random" else ["random", args.chooser]
    reference = full_reference(pool, seed=args.seed)
    summaries = []
    with output_set(args.output) as out:
        for name in choosers:
            chooser_args = argparse.Namespace(**{**vars(args), "chooser": name})
            result = replay(
                pool.score(HUMAN),
                partial(_chooser, chooser_args, pool),
                settings,
                doc=pool.doc,
                cost=pool.cost,
                runs=DEFAULT_RUNS if args.runs is None else args.runs,
                seed=args.seed,
                campaign=pool.name,
                metric=np.asarray(pool.score(args.metric), dtype=float) if args.metric else None,
                reference=reference,
            )
            summaries.append(result.summary())
            s = summaries[-1]
            if name == "random":
                random_cells = result.cell_shares()
            else:
                s["p_fewer_cells_than_random"] = fewer_than(result.cell_shares(), random_cells)
            print(
                f"{name:<8} cells at stop: median {s['cells_share']['median']:.1%} (p10 {s['cells_share']['p10']:.1%},"
                f" p90 {s['cells_share']['p90']:.1%}); realised agreement mean {s['agreement_mean']:.3f},"
                f" {s['reached_target']:.0%} of runs reach {args.target}; SPA {s['spa_mean']:.3f}, clusters"
                f" {s['clusters_mean']:.1f} on the items judged for every system;"
                f" hours median {s['hours']['median']:.1f}"
                + (
                    f"; fewer cells than random waves: p = {s['p_fewer_cells_than_random']:.2g} (paired by run)"
                    if "p_fewer_cells_than_random" in s
                    else ""
                )
            )
        if args.output:
            with out.open(args.output) as handle:
                jsonsafe.dump(
                    {"settings": vars(settings) | {"size": settings.size.text}, "results": summaries}, handle, indent=1
                )
                handle.write("\n")
    return 0
