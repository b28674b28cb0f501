"""``precomet export``: Lightning ``.ckpt`` (from precomet train) -> checkpoint directory."""

from __future__ import annotations

import argparse

from precomet.commands.common import Paths, add_output_argument

HELP = "convert a Lightning .ckpt written by precomet train into the offline checkpoint directory format"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ckpt", help="Lightning checkpoint file (e.g. OUT/lightning/best-epoch=3.ckpt)")
    add_output_argument(
        parser,
        "checkpoint directory to write",
    )


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=[args.ckpt], outputs=[args.output])


def run(args: argparse.Namespace) -> int:
    from precomet.estimator.checkpoint import export_checkpoint

    print(f"wrote {export_checkpoint(args.ckpt, args.output)}")
    return 0
