"""``precomet waves``: annotate in waves until the ranking is settled (the next wave and the report), and
``precomet waves replay``: the protocol replayed on a fully judged campaign."""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path

import numpy as np

from precomet.campaign import HUMAN, require_documents, source_length
from precomet.commands.common import (
    Paths,
    add_cost_unit_arguments,
    add_data_arguments,
    apply_cost_unit,
    data_inputs,
    load_campaign,
    open_share,
    repeats,
    seed,
    share,
)
from precomet.costs import format_duration
from precomet.errors import PrecometError
from precomet.io import jsonsafe
from precomet.io.batch import BATCH_KINDS, batch_format
from precomet.outputs.atomic import output_set
from precomet.outputs.paths import is_stdout
from precomet.waves.judgements import JUDGEMENT_READERS
from precomet.waves.target import TARGET_KINDS

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


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


PEARMUT_OPTIONS = ("assignment", "protocol", "task_size", "tutorial", "attention", "attention_rate")
"""The options of ``--pearmut`` (``--pearmut-assignment``, …)."""
LIVE_ONLY = {
    **{_dest(reader.flag): reader.flag for reader in JUDGEMENT_READERS.values()},
    "manifest": "--manifest",
    "batch": "--batch",
    "batch_format": "--batch-format",
    "pearmut": "--pearmut",
    **{f"pearmut_{name}": f"--pearmut-{name.replace('_', '-')}" for name in PEARMUT_OPTIONS},
    "report": "--report",
    "plot": "--plot",
}
"""Options of a live call (the next wave and the report) that a replay does not read."""
REPLAY_ONLY = {"runs": "--runs", "output": "-o"}
"""Options of a replay that a live call does not read."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        nargs="?",
        choices=["next", "replay"],
        default="next",
        help="next (default): report and draw the next wave of a live campaign; replay: replay on a judged campaign",
    )
    add_data_arguments(parser)
    add_cost_unit_arguments(parser, outputs=False)
    for reader in JUDGEMENT_READERS.values():
        parser.add_argument(reader.flag, type=Path, nargs="+", default=[], metavar="FILE", help=reader.help)
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
    parser.add_argument(
        "--target", type=share, default=0.95, help="share of the counted pairs ordered right to reach (default 0.95)"
    )
    parser.add_argument(
        "--target-pairs",
        dest="target_kind",
        choices=TARGET_KINDS,
        help="which pairs count: those the full test set separates (separated, default: a pair within 1.96 full-set"
        " standard errors is a tie and cannot be wrong, as WMT's clusters), those outside an indifference zone of"
        " --zone score points (zone), or every pair (all-pairs, the target of precomet 0.16-0.19); a campaign keeps"
        " the pairs of its first wave",
    )
    parser.add_argument(
        "--zone", type=float, help="with --target-pairs zone: the indifference zone in the score's units (e.g. 0.5)"
    )
    parser.add_argument("--confidence", type=open_share, default=0.9, help="confidence of the guarantee (default 0.9)")
    parser.add_argument(
        "--rule",
        choices=["guaranteed", "expected"],
        default="guaranteed",
        help="stop when the agreement's lower bound at --confidence reaches --target (guaranteed, default; valid"
        " whenever the campaign stops) or when its expectation does (expected: no guarantee)",
    )
    from precomet.waves.choosers import CHOOSERS

    parser.add_argument(
        "--chooser",
        choices=list(CHOOSERS),
        default="learn",
        help="how waves are chosen (default learn): "
        + "; ".join(f"{name}: {cls.help}" for name, cls in CHOOSERS.items()).replace("%", "%%"),
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
        "--batch",
        type=Path,
        help="next wave: one row per cell (.jsonl, .csv, .tsv), or Appraise's batches with --batch-format appraise (a"
        " .json name alone is refused: Appraise and Pearmut both read JSON; Pearmut's file is --pearmut)",
    )
    parser.add_argument(
        "--batch-format",
        choices=BATCH_KINDS,
        help="format of --batch whatever its suffix (default: by the suffix); appraise = the batches JSON that"
        " Appraise's StartNewCampaign --batches-json imports",
    )
    parser.add_argument("--pearmut", type=Path, help="next wave as a Pearmut campaign file (JSON)")
    _add_pearmut_arguments(parser)
    parser.add_argument("--report", type=Path, help="the report as JSON ('-' = standard output)")
    parser.add_argument("--plot", type=Path, help="figure of the ranking and the agreement (PNG, PDF, SVG)")
    parser.add_argument("--runs", type=repeats, help=f"replay: runs (default {DEFAULT_RUNS})")
    parser.add_argument("-o", "--output", type=Path, help="replay: its summary as JSON")


def _judgement_files(args: argparse.Namespace) -> dict[str, list[Path]]:
    """Reader name → the files given with its option."""
    return {name: getattr(args, _dest(reader.flag)) for name, reader in JUDGEMENT_READERS.items()}


def paths(args: argparse.Namespace) -> Paths:
    return Paths(
        inputs=[
            *data_inputs(args),
            *(path for paths in _judgement_files(args).values() for path in paths),
            args.utility_file,
            args.pearmut_tutorial,
            args.pearmut_attention,
        ],
        outputs=[args.batch, args.pearmut, args.report, args.plot, args.output, args.manifest],
    )


def _chooser(args: argparse.Namespace, pool):
    """The chooser ``--chooser`` names, with what it declares it reads computed for it (only that)."""
    from precomet.waves.choosers import CHOOSERS, make_chooser, metric_features, vector_features

    reads = CHOOSERS[args.chooser].reads
    prior = _prior(args, pool) if "prior" in reads else None
    columns = []
    if args.metric and "metric" in reads:
        if args.metric not in pool.scores:
            raise PrecometError(f"--metric {args.metric}: the pool has no such score ({', '.join(pool.scores)})")
        columns.append(metric_features(pool.score(args.metric)))
    if args.encoder:  # refused by _check_options unless the chooser reads vectors
        from precomet.utilities.embed import embed_texts

        columns.append(vector_features(embed_texts(list(pool.src), encoder=args.encoder)))
    if CHOOSERS[args.chooser].needs_prior and prior is None:
        raise PrecometError(
            f"--chooser {args.chooser} needs --utility (with --metric for a metric's utility) or --utility-file"
        )
    features = np.hstack(columns) if columns else None
    return make_chooser(args.chooser, source_length(pool.src), prior=prior, features=features)


def _prior(args: argparse.Namespace, pool):
    if args.utility:
        from precomet.utilities import compute_utility

        return compute_utility(pool, args.utility, metric=args.metric)
    if args.utility_file:
        from precomet.io.utility_files import aligned_utilities

        prior, _ = aligned_utilities(
            args.utility_file, pool.ids, allow_extra=True, source_of=dict(zip(map(str, pool.ids), pool.src))
        )
        return prior
    return None


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
    _check_chooser_options(args)
    _check_pearmut_options(args)
    if args.plot is not None and args.plot.suffix.lower() not in PLOT_SUFFIXES:
        raise PrecometError(f"--plot {args.plot}: name the figure *.png, *.pdf or *.svg")
    if args.batch is not None:
        batch_format(args.batch, args.batch_format)
    elif args.batch_format is not None:
        raise PrecometError("--batch-format applies to --batch (the next wave's batch); give --batch PATH")


def _check_chooser_options(args: argparse.Namespace) -> None:
    """Refuse a prior or vectors the chooser does not declare it reads."""
    from precomet.waves.choosers import CHOOSERS

    def readers(what: str) -> str:
        return " or ".join(name for name, cls in CHOOSERS.items() if what in cls.reads)

    if args.encoder and "vectors" not in CHOOSERS[args.chooser].reads:
        raise PrecometError(f"--encoder {args.encoder}: only --chooser {readers('vectors')} reads the sources' vectors")
    for flag, given in (("--utility", args.utility), ("--utility-file", args.utility_file)):
        if given is not None and "prior" not in CHOOSERS[args.chooser].reads:
            raise PrecometError(f"{flag} {given}: a prior is read by --chooser {readers('prior')}, not {args.chooser}")


def run(args: argparse.Namespace) -> int:
    _check_options(args)
    if args.action == "replay":
        return _replay(args)
    from precomet.waves.live import campaign_lock

    if args.manifest is None or is_stdout(args.manifest):  # no campaign to contend for (the latter is refused)
        return _live(args)
    # one path for the lock, the read and the write: sub/../m.json with no sub/ is m.json to the lock (resolved as
    # text) but missing to the kernel, which would draw wave 1 again over m.json's waves
    args.manifest = Path(os.path.realpath(args.manifest))
    with campaign_lock(args.manifest):  # the manifest (by its real path) is the campaign, whatever --data is called
        return _live(args)


def _live(args: argparse.Namespace) -> int:
    from precomet.waves.live import advance

    request = _live_request(args)
    outcome = advance(request)
    for notice in outcome.notices:
        print(f"precomet waves: {notice}", file=sys.stderr)
    _print_report(outcome.report, stream=sys.stderr if str(args.report) == "-" else sys.stdout)
    _write_live(args, request.pool, outcome)
    _print_wave(args, outcome.report.get("next_wave"))
    _print_closing(args, outcome)
    return 0


def _print_wave(args: argparse.Namespace, drawn: dict | None) -> None:
    """``wave 1: 61 items, 915 judgements, ≈ 2 h 05 min of annotator time: … -> the files written``."""
    if drawn is None or not drawn["items"]:
        return
    if drawn["cells"] is None:
        size = f"{drawn['items']:,} items (the judgements come with the systems their first answers name)"
    else:
        each = drawn["seconds"] / max(drawn["cells"], 1)
        size = (
            f"{drawn['items']:,} items, {drawn['cells']:,} judgements, ≈ {format_duration(drawn['seconds'])} of"
            f" annotator time ({each:,.0f} s per judgement of one output)"
        )
    files = [str(path) for path in (args.batch, args.pearmut, args.manifest) if path is not None]
    stream = sys.stderr if str(args.report) == "-" else sys.stdout
    print(f"wave {drawn['number']}: {size}" + (f" -> {', '.join(files)}" if files else ""), file=stream)


def _live_request(args: argparse.Namespace):
    from precomet.waves.judgements import read_judgements
    from precomet.waves.live import LiveRequest, Manifest, pool_output_systems

    if args.manifest is not None and is_stdout(args.manifest):
        raise PrecometError(f"--manifest {args.manifest}: the manifest is read back by the next call; give a file")
    # the pool is every item to draw from: human scores in it are not judgements (give those with --judgements), so
    # items without them are kept
    pool = apply_cost_unit(args, load_campaign(argparse.Namespace(**{**vars(args), "keep_incomplete": True})))
    pool_systems = pool_output_systems(pool, args.data)
    has_manifest = args.manifest is not None and args.manifest.exists()
    manifest = Manifest.read(args.manifest, pool, pool_systems) if has_manifest else None
    if (manifest.level if manifest else args.level) == "doc":
        require_documents(pool)
    files = _judgement_files(args)
    settings = _timed_only_with_outputs(args, _settings(args, len(pool), manifest), pool_systems)
    return LiveRequest(
        pool=pool,
        pool_systems=pool_systems,
        manifest=manifest,
        judgements=read_judgements(
            files, pool, pool_systems, campaigns=manifest.pearmut_campaigns(pool.name) if manifest else None
        ),
        settings=settings,
        chooser=partial(_chooser, args, pool),
        seed=args.seed,
        metric=args.metric,
        answered=any(files.values()),
        asked_size=args.size,
    )


def _timed_only_with_outputs(args: argparse.Namespace, settings, pool_systems):
    """A wave size in time needs the outputs it judges: a pool of sources alone knows no annotator time."""
    if settings.size.kind == "seconds" and not pool_systems:
        raise PrecometError(
            f"--size {settings.size.text}: {args.data} holds sources without system outputs, so a wave's annotator"
            " time (its judged cells x seconds per judgement of one output) is unknown; give the size in items"
            " (5%, 200)"
        )
    return settings


def _settings(args: argparse.Namespace, n_items: int, manifest=None):
    """The call's settings; a manifest's size and target pairs stand where the call names none."""
    from precomet.waves.plan import parse_wave_size
    from precomet.waves.step import WaveSettings
    from precomet.waves.target import DEFAULT_KIND, Target

    kept = manifest.settings if manifest is not None else None
    kind = args.target_kind or (kept.target.kind if kept else DEFAULT_KIND)
    if args.zone is not None and kind != "zone":
        raise PrecometError(f"--zone {args.zone}: an indifference zone is read with --target-pairs zone only")
    zone = args.zone if args.zone is not None else (kept.target.zone if kept and kind == kept.target.kind else 0.0)
    return WaveSettings(
        size=parse_wave_size(kept.size.text if kept else args.size or DEFAULT_SIZE, n_items),
        target=Target(kind, share=args.target, zone=zone, **({"z": kept.target.z} if kept else {})),
        confidence=args.confidence,
        rule=args.rule,
        level=args.level,
        allocation=args.allocation,
        top_k=args.top_k,
    )


def _write_live(args: argparse.Namespace, pool, outcome) -> None:
    wave = outcome.wave
    targets = [args.report, args.plot] + ([args.batch, args.pearmut, args.manifest] if wave is not None else [])
    with output_set(*targets) as out:
        if args.report:
            with out.open(args.report) as handle:
                jsonsafe.dump(outcome.report, handle, indent=1, ensure_ascii=False)
                handle.write("\n")
        if args.plot:
            _plot(outcome.report, out.path(args.plot))
        if wave is None:
            return
        if args.batch:
            with out.open(args.batch) as handle:
                _write_cells(handle, pool, wave.drawn, outcome.systems, args.batch, args.batch_format)
        manifest = outcome.manifest
        if args.pearmut:
            campaign_id = _write_pearmut(out, args, pool, outcome)
            if campaign_id is not None:  # recorded: the next call reads this campaign's annotations only
                manifest = manifest.with_pearmut_campaign(campaign_id)
        if args.manifest:
            with out.open(args.manifest) as handle:
                jsonsafe.dump(manifest.to_dict(), handle, indent=1)
                handle.write("\n")


PEARMUT_PROTOCOL_CHOICES = ("ESA", "MQM", "DA")
"""Protocols ``--pearmut-protocol`` offers (Pearmut's ``cESA`` compares outputs side by side, not one score each)."""
PEARMUT_FLAGS = {
    "assignment": "--pearmut-assignment ",
    "protocol": "--pearmut-protocol ",
    "task_size": "--pearmut-task-size ",
    "welcome": "--pearmut-tutorial",
    "attention": "--pearmut-attention",
    "attention_probability": "--pearmut-attention-rate ",
}
"""How the options of ``--pearmut`` spell the parameters of :func:`precomet.io.pearmut.pearmut_campaign`."""


def _add_pearmut_arguments(parser: argparse.ArgumentParser) -> None:
    from precomet.io.pearmut import DEFAULT_ATTENTION_PROBABILITY, DEFAULT_TASK_SIZE, PEARMUT_ASSIGNMENTS

    parser.add_argument(
        "--pearmut-assignment",
        choices=PEARMUT_ASSIGNMENTS,
        help="with --pearmut: task-based (default: one annotator link per task), single-stream (links share one pool"
        " of documents), or dynamic (every model of every document shown, which keeps the wave's inclusion"
        " probabilities; refused unless every drawn item has the same systems)",
    )
    parser.add_argument(
        "--pearmut-protocol", choices=PEARMUT_PROTOCOL_CHOICES, help="with --pearmut: the protocol (default ESA)"
    )
    parser.add_argument(
        "--pearmut-task-size",
        type=_task_size,
        metavar="SIZE",
        help=f"with --pearmut: one annotator link's work, in judgements (300) or annotator time ({DEFAULT_TASK_SIZE},"
        " 45m: each judgement counts the pool's seconds to judge one output); task-based tasks pack whole documents"
        f" up to it, single-stream and dynamic get one link per SIZE of work (default {DEFAULT_TASK_SIZE})",
    )
    parser.add_argument(
        "--pearmut-tutorial",
        type=Path,
        metavar="FILE",
        help="with --pearmut: tutorial documents every annotator does first (Pearmut's data_welcome): a JSON list of"
        " documents, or a Pearmut campaign file such as its examples/tutorial/esa_deen.json",
    )
    parser.add_argument(
        "--pearmut-attention",
        type=Path,
        metavar="FILE",
        help="with --pearmut: attention-check documents shown at random (Pearmut's data_random), each with a"
        " 'validation' rule; a JSON list of documents or a Pearmut campaign file",
    )
    parser.add_argument(
        "--pearmut-attention-rate",
        type=_attention_rate,
        metavar="P",
        help="with --pearmut-attention: the chance that an attention check comes before a document (default"
        f" {DEFAULT_ATTENTION_PROBABILITY:g})",
    )


def _task_size(text: str):
    from precomet.io.pearmut import parse_task_size

    try:
        return parse_task_size(text)
    except PrecometError as err:
        raise argparse.ArgumentTypeError(err.template.replace("{task_size}", "")) from None


def _attention_rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: a chance in (0, 1], e.g. 0.1")
    return value


def _check_pearmut_options(args: argparse.Namespace) -> None:
    """Refuse an option of ``--pearmut`` without it (it would be ignored), a rate without attention checks, and a
    tutorial or attention-check file that Pearmut would refuse (read now, before the wave is drawn)."""
    given = [f"--pearmut-{name.replace('_', '-')}" for name in PEARMUT_OPTIONS if getattr(args, f"pearmut_{name}")]
    if given and args.pearmut is None and args.action != "replay":
        raise PrecometError(f"{given[0]}: an option of the Pearmut campaign file; add --pearmut FILE (or drop it)")
    if args.pearmut_attention_rate is not None and args.pearmut_attention is None:
        raise PrecometError(
            f"--pearmut-attention-rate {args.pearmut_attention_rate:g}: the chance of an attention check needs"
            " attention-check documents (--pearmut-attention FILE)"
        )
    _pearmut_documents(args)


def _pearmut_documents(args: argparse.Namespace):
    """The tutorial and attention-check documents the options name (``None`` where not given); a file that cannot
    be read names its option."""
    from precomet.io.pearmut import read_pearmut_documents

    documents = []
    for flag, path, attention in (
        ("--pearmut-tutorial", args.pearmut_tutorial, False),
        ("--pearmut-attention", args.pearmut_attention, True),
    ):
        try:
            documents.append(read_pearmut_documents(path, attention=attention) if path else None)
        except PrecometError as err:
            raise PrecometError(f"{flag} {err.spelled()}") from None
    return tuple(documents)


def _write_pearmut(out, args: argparse.Namespace, pool, outcome) -> str | None:
    """The wave's Pearmut campaign file; its id (returned; ``None``: no file, the wave drew no cell) is the pool's
    name, a key of the campaign (its pool and first wave, as the manifest records them) and the wave number, so two
    waves or two campaigns of one pool load side by side on one server."""
    wave, systems = outcome.wave, outcome.systems
    if not systems:
        raise PrecometError("--pearmut: a Pearmut campaign shows system outputs, and this pool has none")
    if not wave.drawn.any():  # no campaign of nothing: the closing notice says so
        return None
    from precomet.io.pearmut import DEFAULT_TASK_SIZE, pearmut_campaign_id, write_pearmut

    cells = np.zeros((len(pool), len(pool.systems)), dtype=bool)
    for k, system in enumerate(systems):
        cells[:, pool.systems.index(system)] = wave.drawn[:, k]
    campaign_id = pearmut_campaign_id(pool.name, outcome.manifest.pearmut_identity(), wave.number)
    welcome, attention = _pearmut_documents(args)
    try:
        with out.open(args.pearmut) as handle:
            write_pearmut(
                handle,
                pool,
                cells,
                campaign_id=campaign_id,
                assignment=args.pearmut_assignment or "task-based",
                protocol=args.pearmut_protocol or "ESA",
                task_size=args.pearmut_task_size or DEFAULT_TASK_SIZE,
                welcome=welcome,
                attention=attention,
                attention_probability=args.pearmut_attention_rate,
            )
    except PrecometError as err:
        raise PrecometError(f"--pearmut {args.pearmut}: {err.spelled(PEARMUT_FLAGS)}") from None
    return campaign_id


def _print_closing(args: argparse.Namespace, outcome) -> None:
    wave = outcome.wave
    if outcome.awaiting is not None:
        message = (
            f"wave {outcome.awaiting} has no judgement yet: no new wave drawn (give its judgements with --judgements,"
            " --pearmut-annotations or --appraise-annotations)"
        )
    elif wave is None:
        message = "stop — the ranking is settled at the target; no wave drawn"
    elif not wave.drawn.any():
        message = (
            f"wave {wave.number} drew no cell (its units are drawn independently, and a wave this small can come out"
            " empty): nothing to judge"
            + (", no --pearmut campaign written" if args.pearmut else "")
            + "; run again to draw the next wave"
        )
    elif args.manifest is None:
        message = "without --manifest the wave's probabilities are not kept and its judgements cannot be weighted later"
    else:
        return
    print(f"precomet waves: {message}", file=sys.stderr)


def _write_cells(handle, pool, drawn: np.ndarray, systems: tuple[str, ...], path: Path, given: str | None) -> None:
    from precomet.io.batch import write_wave_cells

    kind = batch_format(path, given)
    if kind == "appraise" and (not systems or not pool.outputs):
        raise PrecometError(f"--batch {path}: an Appraise batch shows system outputs, and this pool has none")
    write_wave_cells(handle, pool, drawn, systems, kind)


def _print_report(report: dict, stream) -> None:
    print(
        f"waves drawn: {report['waves']}, with judgements: {report['waves_judged']}; cells judged"
        f" {report['judged_cells']:,} of {report['pool_cells']:,}"
        f" ({report['judged_items']:,} of {report['pool_items']:,} items); estimates: {report['estimates']}",
        file=stream,
    )
    if report["ranking"]:
        print(f"{'rank':>4}  {'cluster':>7}  {'system':<28} {'mean':>10}  interval", file=stream)
        for row in report["ranking"]:
            print(
                f"{row['rank']:>4}  {row['cluster']:>7}  {row['system']:<28} {row['mean']:>10.4f}"
                f"  [{row['ci_low']:.4f}, {row['ci_high']:.4f}]",
                file=stream,
            )
    elif report["judged_cells"]:
        print(
            "no ranking yet: some systems have no judgement of the waves drawn (give every system's judgements)",
            file=stream,
        )
        return
    else:
        print("no judgements yet: the ranking and its agreement with the full test set come with them", file=stream)
        print("still needed: unknown until the first wave's judgements are in", file=stream)
        return
    _print_verdict(report, stream)


def _print_verdict(report: dict, stream) -> None:
    ties = report["ties"]
    pairs = len(report["decided_pairs"]) + len(report["undecided_pairs"])
    print(f"target: {report['target']['description']} ({report['rule']}, confidence {report['confidence']:.0%})",
          file=stream)  # fmt: skip
    print(
        f"pairs taken as ties now: {len(ties)} of {pairs}"
        + (f" ({'; '.join(f'{a} ~ {b}' for a, b in ties[:8])}{'; ...' if len(ties) > 8 else ''})" if ties else ""),
        file=stream,
    )
    print(
        f"agreement on the target's pairs: lower bound {report['agreement_lower_bound']:.3f}, expected"
        f" {report['expected_target_agreement']:.3f}; plain agreement over all pairs expected"
        f" {report['expected_agreement']:.3f} ({len(report['decided_pairs'])} of {pairs} pairs decided):"
        f" {'STOP' if report['stop'] else 'continue'}",
        file=stream,
    )
    if report["stop"]:
        return
    need, low, high = (report["still_needed"][k] for k in ("estimate", "low", "high"))
    share, (share_low, share_high) = report["predicted_stop_share"], report["predicted_stop_interval"]
    print(
        f"still needed (estimated): about {need['items']:,} items ({low['items']:,}-{high['items']:,}),"
        f" {need['judgements']:,} judgements ({low['judgements']:,}-{high['judgements']:,}), ≈ {need['hours']:.1f} h"
        f" of annotator time ({low['hours']:.1f}-{high['hours']:.1f}; judgements × seconds per judgement of one"
        f" output); stop predicted at {share:.0%} of the cells ({share_low:.0%}-{share_high:.0%})",
        file=stream,
    )
    for row in report["pairs_in_play"][:5]:
        a, b = row["pair"]
        print(
            f"  in play: {a} vs {b}: difference {row['difference']:+.4f} ± {row['se']:.4f} (tie width"
            f" {row['tie_width']:.4f})",
            file=stream,
        )


def _plot(report: dict, path: Path) -> None:
    from matplotlib.figure import Figure

    rows = report["ranking"]
    figure = Figure(figsize=(6, 0.35 * max(len(rows), 2) + 1.4))
    ax = figure.add_subplot()
    if rows:
        y = {row["system"]: len(rows) - 1 - k for k, row in enumerate(rows)}
        means = np.array([r["mean"] for r in rows])
        low = means - np.array([r["ci_low"] for r in rows])
        high = np.array([r["ci_high"] for r in rows]) - means
        ax.errorbar(means, list(y.values()), xerr=[low, high], fmt="o", color="C0")
        right = float(np.max(means + high))
        span = max(right - float(np.min(means - low)), 1e-9)
        for k, (a, b) in enumerate(report["ties"]):  # a bracket on the right joins every pair taken as a tie
            x = right + span * (0.04 + 0.025 * (k % 8))
            ax.plot([x, x], [y[a], y[b]], color="C3", lw=1, marker="_")
        ax.set_yticks(list(y.values()), [f"{r['rank']}. {r['system']} (cl. {r['cluster']})" for r in rows], fontsize=8)
    ax.set_xlabel("estimated mean human score (weighted); red: pairs taken as ties", fontsize=9)
    ax.set_title(
        f"wave {report['waves']}: target {report['target']['kind']}, bound {report['agreement_lower_bound']:.3f}"
        f" (target {report['target']['share']:.2f}), {len(report['ties'])} ties ->"
        f" {'stop' if report['stop'] else 'continue'}",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(path)


def _replay(args: argparse.Namespace) -> int:
    from precomet.metaeval.reference import full_reference
    from precomet.waves.replay import fewer_than, replay

    pool = _replay_pool(args)
    settings = _settings(args, len(pool))
    choosers = ["random"] if args.chooser == "random" else ["random", args.chooser]
    summaries, reference = [], full_reference(pool, seed=args.seed)
    with output_set(args.output) as out:
        for name in choosers:
            result = replay(
                pool.score(HUMAN),
                partial(_chooser, argparse.Namespace(**{**vars(args), "chooser": name}), pool),
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
            if name == "random":
                random_cells = result.cell_shares()
            else:
                summaries[-1]["p_fewer_cells_than_random"] = fewer_than(result.cell_shares(), random_cells)
            _print_replay(name, summaries[-1], settings)
        if args.output:
            with out.open(args.output) as handle:
                jsonsafe.dump({"settings": settings.to_dict(), "results": summaries}, handle, indent=1)
                handle.write("\n")
    return 0


def _replay_pool(args: argparse.Namespace):
    pool = apply_cost_unit(args, load_campaign(args))
    if args.level == "doc":
        require_documents(pool)
    if HUMAN not in pool.scores:
        raise PrecometError(f"waves replay: {args.data} has no human scores to replay")
    from precomet.waves.judgements import check_human_scores

    check_human_scores(pool.score(HUMAN), pool.ids, pool.systems, args.data)  # as a live call checks its judgements
    if args.metric and args.metric not in pool.scores:
        raise PrecometError(f"--metric {args.metric}: {args.data} has no such score ({', '.join(pool.scores)})")
    if len(pool.systems) < 2:
        raise PrecometError(
            f"waves replay: {args.data} has {len(pool.systems)} system with human scores; a ranking needs at least two"
        )
    return pool


def _print_replay(name: str, s: dict, settings) -> None:
    share = settings.target.share
    print(
        f"{name:<8} cells at stop: median {s['cells_share']['median']:.1%} (p10 {s['cells_share']['p10']:.1%},"
        f" p90 {s['cells_share']['p90']:.1%}); target {settings.target.kind} ({s['true_ties']} pairs tied on the full"
        f" campaign): realised agreement mean {s['agreement_mean']:.3f}, {s['reached_target']:.0%} of runs reach"
        f" {share}; over all pairs {s['plain_agreement_mean']:.3f}; SPA {s['spa_mean']:.3f}, clusters"
        f" {s['clusters_mean']:.1f} on the items judged for every system; annotator time median"
        f" {s['hours']['median']:.1f} h for a median {s['judgements']['median']:,.0f} judgements (each at its item's"
        " seconds per judgement of one output)"
        + (
            f"; fewer cells than random waves: p = {s['p_fewer_cells_than_random']:.2g} (paired by run)"
            if "p_fewer_cells_than_random" in s
            else ""
        )
    )
