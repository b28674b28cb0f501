"""``precomet convert``: any supported input -> canonical JSONL."""

from __future__ import annotations

import argparse

from precomet.commands.common import add_data_arguments, load_campaign

HELP = "convert any supported input to canonical JSONL items and print a summary"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    parser.add_argument("-o", "--output", required=True, help="output JSONL path")


def run(args: argparse.Namespace) -> int:
    from precomet.io import write_jsonl
    from precomet.io.atomic import check_output

    check_output(args.output)
    campaign = load_campaign(args)
    write_jsonl(campaign, args.output)
    print(campaign.summary())
    print(f"wrote {len(campaign)} items to {args.output}")
    return 0
