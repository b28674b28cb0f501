"""``precomet convert``: any supported input -> canonical JSONL (or Parquet)."""

from __future__ import annotations

import argparse
from pathlib import Path

from precomet.commands.common import Paths, add_data_arguments, data_inputs, load_campaign
from precomet.errors import OutputError
from precomet.io import PARQUET_SUFFIX, write_jsonl, write_parquet
from precomet.outputs.paths import check_output, written_through

HELP = "convert any supported input to canonical JSONL (or Parquet) items and print a summary"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    parser.add_argument(
        "-o", "--output", required=True, help="output path: canonical JSONL, or Parquet when it ends in .parquet"
    )


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=data_inputs(args), outputs=[args.output])


def run(args: argparse.Namespace) -> int:
    check_output(args.output)
    if not written_through(Path(args.output)) and Path(args.output).suffix.lower() not in (".jsonl", PARQUET_SUFFIX):
        raise OutputError(f"cannot write {args.output}: convert writes canonical .jsonl or {PARQUET_SUFFIX}")
    campaign = load_campaign(args)
    write = write_parquet if str(args.output).lower().endswith(PARQUET_SUFFIX) else write_jsonl
    write(campaign, args.output)
    print(campaign.summary())
    print(f"wrote {len(campaign)} items to {args.output}")
    return 0
