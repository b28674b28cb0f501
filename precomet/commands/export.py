"""``precomet export``: Lightning ``.ckpt`` (from precomet train) -> checkpoint directory."""

from __future__ import annotations

import argparse

from precomet.commands.common import Paths

HELP = "convert a Lightning .ckpt written by precomet train into the offline checkpoint directory format"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ckpt", help="Lightning checkpoint file (e.g. OUT/lightning/best-epoch=3.ckpt)")
    parser.add_argument("-o", "--out", required=True, help="checkpoint directory to write")


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=[args.ckpt], outputs=[args.out])


def run(args: argparse.Namespace) -> int:
    from precomet.estimator.checkpoint import export_checkpoint

    print(f"wrote {export_checkpoint(args.ckpt, args.out)}")
    return 0
