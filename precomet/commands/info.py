"""``precomet info``: summarise an input without writing anything."""

from __future__ import annotations

import argparse

from precomet.commands.common import Paths, add_data_arguments, data_inputs, load_campaign

HELP = "print a summary of an input: items, systems, score names, domains, documents, cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=data_inputs(args), outputs=[])


def run(args: argparse.Namespace) -> int:
    print(load_campaign(args).summary())
    return 0
