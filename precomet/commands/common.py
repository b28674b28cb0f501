"""Arguments and helpers shared by several subcommands."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any, NamedTuple

from precomet.campaign import HUMAN, Campaign
from precomet.costs import parse_duration
from precomet.errors import DataError, PrecometError


class Paths(NamedTuple):
    """What a command reads and writes, as the user gave them (``None`` entries are skipped): every command
    module's ``paths(args)`` returns one, and :func:`precomet.cli.main` refuses an output that would overwrite an
    input before any work (:func:`precomet.outputs.atomic.check_not_inputs`)."""

    inputs: list[Any]
    outputs: list[Any]


def add_output_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    help: str,
    *,
    required: bool = True,
    dest: str = "output",
    flags: tuple[str, ...] = ("-o", "--output"),
    default: Any = None,
) -> None:
    """``-o/--output PATH``, the main output of every command (``flags`` for another, e.g. ``--plot``)."""
    parser.add_argument(*flags, dest=dest, metavar="PATH", default=default, required=required, help=help)


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """``--data PATH [--campaign NAME] [--human PROTOCOL] [--keep-incomplete] [--text] [--docs FILE]
    [--domains FILE]``."""
    group = parser.add_argument_group("input data")
    group.add_argument(
        "--data",
        required=True,
        help="any supported input: mt-metrics-eval root, WMT release root (wmtYY/txt/...), MQM TSV, ESA dir, pickle, "
        "JSONL, CSV, Parquet, saved datasets dir, or plain-text sources (.txt: one source per line, ids = line "
        "numbers 1, 2, ...)",
    )
    group.add_argument("--campaign", help="campaign inside a multi-campaign input, e.g. wmt23/en-de")
    group.add_argument("--human", help="human protocol, e.g. mqm, da-sqm (default: the first available)")
    group.add_argument(
        "--keep-incomplete", action="store_true", help="keep items without a human score for every system"
    )
    group.add_argument(
        "--text",
        action="store_true",
        help="read --data as plain-text sources, one per line, whatever its name (default for .txt files)",
    )
    add_alongside_arguments(group)


OTHER_FORMATS = (".parquet", ".csv", ".tsv", ".xlsx", ".npy", ".npz", ".pkl", ".pickle")
"""Suffixes that promise a format other than the JSON Lines a utilities/targets/predictions file is written in."""


def check_jsonl_output(path: str | None, option: str = "-o") -> None:
    """Refuse a JSON Lines output named like another format (``-o u.parquet`` would hold JSONL)."""
    suffix = "" if path is None else "".join(Path(path).suffixes[-1:]).lower()
    if suffix in OTHER_FORMATS:
        raise PrecometError(f"{option} {path}: this file is written as JSON Lines, not {suffix}; name it .jsonl")


def data_inputs(args: argparse.Namespace) -> list[Any]:
    """The paths :func:`add_data_arguments` reads (``--data``, ``--docs``, ``--domains``), for ``paths(args)``."""
    return [args.data, getattr(args, "docs", None), getattr(args, "domains", None)]


def add_force_argument(parser: argparse.ArgumentParser, *, what: str) -> None:
    """``--force``: use ``what`` even when it was made from other data than ``--data`` (:mod:`precomet.provenance`)."""
    parser.add_argument(
        "--force",
        action="store_true",
        help=f"use {what} even when its source texts show it was made from other data than --data (default: refuse)",
    )


def source_texts(args: argparse.Namespace, campaign: Campaign) -> dict[str, str]:
    """Id -> source text of every item of ``--data``, the items without human scores included (a score file may
    cover them although ``campaign`` left them out), for :mod:`precomet.provenance`'s checks. The input is read again
    only when ``campaign`` may have left items out (it has human scores); a pool of sources is read once."""
    if not args.keep_incomplete and HUMAN in campaign.scores:
        campaign = load_campaign(argparse.Namespace(**{**vars(args), "keep_incomplete": True}))
    return dict(zip(map(str, campaign.ids), campaign.src))


def load_campaign(args: argparse.Namespace) -> Campaign:
    """The campaign of :func:`add_data_arguments`' options; ``--docs``/``--domains`` on an input that is not plain
    text are refused (they would be ignored)."""
    from precomet.io import load

    text = bool(getattr(args, "text", False))
    check_alongside(args)
    return load(
        args.data,
        campaign=args.campaign,
        human=args.human,
        complete=not args.keep_incomplete,
        text=text,
        docs=getattr(args, "docs", None),
        domains=getattr(args, "domains", None),
    )


def add_alongside_arguments(group: argparse._ActionsContainer) -> None:
    """``--docs FILE`` and ``--domains FILE``: one document id / domain per line of plain-text sources."""
    group.add_argument(
        "--docs",
        metavar="FILE",
        help="plain-text sources only: a file with the document id of each source line (same number of lines)",
    )
    group.add_argument(
        "--domains",
        metavar="FILE",
        help="plain-text sources only: a file with the domain of each source line (same number of lines)",
    )


def check_alongside(args: argparse.Namespace) -> None:
    """``--docs``/``--domains`` on an input that is not plain text are refused (they would be ignored)."""
    from precomet.io.plaintext import is_text_path

    alongside = [
        flag
        for flag, value in (("--docs", getattr(args, "docs", None)), ("--domains", getattr(args, "domains", None)))
        if value
    ]
    if alongside and not (getattr(args, "text", False) or is_text_path(args.data)):
        verb = "apply" if len(alongside) > 1 else "applies"
        raise PrecometError(
            f"{' and '.join(alongside)} {verb} to plain-text sources (a .txt file, or --text), not to {args.data}; "
            "give documents and domains in the input itself (its doc/domain fields or columns)"
        )


def require_outputs(
    campaign: Campaign,
    args: argparse.Namespace,
    *,
    what: str,
    instead: str,
    needs: str = "system outputs and scores",
) -> None:
    """Refuse a sources-only campaign (plain text: no systems) for ``what`` (``--method metric_var``), naming what
    is missing, the ``--data`` that lacks it and the option to use ``instead``: the check every command that needs
    outputs or scores makes after :func:`load_campaign`."""
    from precomet.io.plaintext import require_systems

    require_systems(campaign, what=what, needs=needs, instead=instead, where=f"--data {args.data}")


def require_method_data(campaign: Campaign, args: argparse.Namespace, method: str, *, instead: str) -> None:
    """:func:`require_outputs` for ``--method``: a utility that reads outputs or scores is refused on a sources-only
    campaign; ``instead`` (with ``{free}``, the methods that need neither) says what to use."""
    from precomet.utilities import UTILITY_METHODS, get_spec

    spec = get_spec(method)
    if spec.needs_score or spec.min_systems > 0:
        free = "/".join(
            name for name, other in UTILITY_METHODS.items() if not other.needs_score and not other.min_systems
        )
        require_outputs(
            campaign,
            args,
            what=f"--method {method}",
            needs="system outputs and scores" if spec.needs_score else "system outputs",
            instead=instead.format(free=free),
        )


def add_cost_arguments(parser: argparse.ArgumentParser, *, outputs: bool = True) -> None:
    """``--cost-per``, with ``outputs`` ``--outputs-per-item`` (:func:`add_cost_unit_arguments`), ``--cost-from-times
    PATH`` (with ``--untimed``) and ``--cost-objective NAME`` (what a cost-aware knapsack maximises)."""
    from precomet.io.annotation_times import UNTIMED
    from precomet.selection.objective import COST_OBJECTIVES, DEFAULT_COST_OBJECTIVE

    group = add_cost_unit_arguments(parser, outputs=outputs)
    group.add_argument(
        "--cost-from-times",
        metavar="PATH",
        help="use real annotation times (WMT23 ESA CSV file or dir) as cost; untimed items get the length model "
        "calibrated on the timed ones",
    )
    group.add_argument(
        "--untimed",
        choices=list(UNTIMED),
        help="what --cost-from-times does with items without a time: calibrate (default) = the length model fitted "
        "on the timed items, refuse = stop with an error",
    )
    group.add_argument(
        "--cost-objective",
        choices=list(COST_OBJECTIVES),
        default=DEFAULT_COST_OBJECTIVE,
        help="what a cost budget's knapsack maximises: rank-length = utility rank x source length (default; wins at "
        "equal real cost on WMT), rank-cost = utility rank x cost, paper = utilities shifted onto [0.1, 0.6] (Eq. 2)",
    )


def add_cost_unit_arguments(parser: argparse.ArgumentParser, *, outputs: bool = True) -> argparse._ArgumentGroup:
    """``--cost-per {output,item}`` (what the input's ``cost`` field counts) and, with ``outputs``,
    ``--outputs-per-item N``; returns their group ("annotation cost")."""
    from precomet.costs import COST_PER

    group = parser.add_argument_group("annotation cost")
    group.add_argument(
        "--cost-per",
        choices=list(COST_PER),
        default="output",
        help="what the input's cost field counts: seconds to judge one output (default; precomet's unit: an item"
        " costs that x the outputs judged on it) or one item with all its outputs (divided among them on reading)",
    )
    if not outputs:  # the command counts the outputs it judges itself (waves: the drawn cells)
        return group
    group.add_argument(
        "--outputs-per-item",
        type=positive_int,
        metavar="N",
        help="outputs judged per item, for sources whose outputs do not exist yet (default: the systems with an"
        " output for the item)",
    )
    return group


def apply_cost_unit(args: argparse.Namespace, campaign: Campaign) -> Campaign:
    """The campaign's cost in seconds per output: a per-item ``cost`` field (``--cost-per item``) divided among
    the outputs judged on the item."""
    if getattr(args, "cost_per", "output") == "output":
        return campaign
    from precomet.costs import GIVEN, cost_source, per_output_cost

    if cost_source(campaign) != GIVEN:
        raise PrecometError(
            f"--cost-per item: {args.data} gives no cost field of its own ({cost_source(campaign)}); --cost-per"
            " describes an input's cost field"
        )
    if not campaign.systems and not hasattr(args, "outputs_per_item"):  # a command that counts its judged cells
        raise PrecometError(
            f"--cost-per item: {args.data} has no system outputs to share each item's cost among; give the cost of"
            " one output (the default, --cost-per output)"
        )
    return per_output_cost(campaign, getattr(args, "outputs_per_item", None))


def apply_cost_from_times(args: argparse.Namespace, campaign: Campaign) -> Campaign:
    """The campaign with precomet's cost unit (:func:`apply_cost_unit`), then with real annotation seconds per
    output as cost when ``--cost-from-times`` is given (``--untimed``: what the items without a time get)."""
    campaign = apply_cost_unit(args, campaign)
    if not args.cost_from_times:
        if args.untimed:
            raise PrecometError("--untimed applies to --cost-from-times")
        return campaign
    from precomet.io.annotation_times import annotation_cost

    untimed = args.untimed or "calibrate"
    try:
        return annotation_cost(campaign, args.cost_from_times, untimed=untimed)
    except DataError:
        raise  # names its file already
    except PrecometError as err:
        options = f"--cost-from-times {args.cost_from_times}" + (" --untimed refuse" if untimed == "refuse" else "")
        raise PrecometError(f"{options}: {err}") from None


def comma_list(text: str) -> list[str]:
    """argparse type for ``a,b,c`` lists (``--systems``, ``--models``): names, stripped; an empty or repeated name
    is refused (``a,,b`` is a typo, not two names)."""
    names = [name.strip() for name in text.split(",")]
    if not any(names) or "" in names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names without empty ones, got {text!r}")
    if len(set(names)) < len(names):
        raise argparse.ArgumentTypeError(f"a name is given twice in {text!r}")
    return names


def _number_type(convert, accept, expected: str, name: str):
    """An argparse type: ``convert`` the text, refuse it (naming the option) unless ``accept(value)``."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__name__ = name  # argparse names the type in its messages
    return parse


positive_float = _number_type(float, lambda v: math.isfinite(v) and v > 0, "a positive finite number", "positive_float")
"""A finite number > 0 (``--time-limit``, ``--k``): ``-1``, ``0``, ``nan`` and ``inf`` are refused where parsed."""
duration = _number_type(parse_duration, lambda v: v > 0, "a duration such as 10h, 90m, 3600s or 1h30m", "duration")
"""Seconds of a positive duration with its unit (``--budget-time``): :func:`precomet.costs.parse_duration`."""
positive_int = _number_type(int, lambda v: v >= 1, "a whole number >= 1", "positive_int")
"""A whole number >= 1 (``--budget``, ``--batch-size``, ``--n-min``)."""
repeats = _number_type(int, lambda v: 1 <= v <= 10**6, "a whole number in 1..1000000", "repeats")
"""Repetitions (``--rounds``, ``--seeds``, ``--permutations``, ``--crowd-runs``): each costs memory and time, and
beyond a million the answer no longer changes while the machine runs out of memory."""
non_negative_int = _number_type(int, lambda v: 0 <= v <= 10**6, "a whole number in 0..1000000", "non_negative_int")
"""Repetitions that may be switched off with 0 (``--null-orderings``)."""
share = _number_type(float, lambda v: 0 < v <= 1, "a share in (0, 1]", "share")
"""A proportion in (0, 1] (``--proportion``)."""
seed = _number_type(int, lambda v: 0 <= v < 2**32, "a whole number in [0, 2**32)", "seed")
"""A random seed (``--seed``): numpy's generators take 0 .. 2**32 - 1."""
margin = _number_type(float, lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0", "margin")
"""A tie margin (``--margin``): ``nan`` would make every comparison a tie, ``inf`` too."""
open_share = _number_type(float, lambda v: 0 < v < 1, "a number in (0, 1)", "open_share")
"""A probability in (0, 1) (``--level``, ``--alpha``)."""


def parse_options(pairs: list[str]) -> dict:
    """``KEY=VALUE`` strings -> dict; values are JSON when they parse, strings otherwise."""
    options = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise PrecometError(f"--option expects KEY=VALUE, got {pair!r}")
        if key in options:
            raise PrecometError(f"--option {key} is given more than once")
        try:
            options[key] = json.loads(raw)
        except json.JSONDecodeError:
            options[key] = raw
        except RecursionError:
            raise PrecometError(f"--option {key}: the value is nested too deeply") from None
    return options
