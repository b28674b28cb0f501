"""The ``precomet`` command line: one entry point, one module per subcommand in
:mod:`precomet.commands`. Each module defines ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``
and stays a thin wrapper over library functions. Bad input exits 2 with a one-line message."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import warnings

from precomet import __version__
from precomet.errors import PrecometError

COMMANDS = {
    "convert": "precomet.commands.convert",
    "info": "precomet.commands.info",
    "demo": "precomet.commands.demo",
    "select": "precomet.commands.select",
    "utilities": "precomet.commands.utilities",
    "build-targets": "precomet.commands.build_targets",
    "train": "precomet.commands.train",
    "predict": "precomet.commands.predict",
    "export": "precomet.commands.export",
    "benchmark": "precomet.commands.benchmark",
    "rank": "precomet.commands.rank",
    "diffuse": "precomet.commands.diffuse",
    "elo": "precomet.commands.elo",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="precomet", description="Select the test items worth human evaluation.")
    parser.add_argument("--version", action="version", version=f"precomet {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        # argparse %-formats action help strings (not descriptions): escape a literal "%" like "5-95%"
        command = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:  # third-party deprecation notices are for developers, not for users of the CLI
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        return int(args._run(args) or 0)
    except PrecometError as err:
        print(f"precomet {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"precomet {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
