"""``precomet train``: fit a source-based utility estimator from a YAML config and target rows."""

from __future__ import annotations

import argparse

from precomet.commands.common import Paths, add_output_argument
from precomet.estimator.config import DEFAULTS, RETIRED_KEYS, override_keys, shipped_overrides
from precomet.quiet import secondary_process

HELP = "train a source-based utility estimator (config YAML + targets JSONL) into a checkpoint directory"
DOCS = 'docs/estimator.md, "Configuration"'


def overrides_help() -> str:
    """The override group's text: the syntax, the precedence and every key, by section."""
    sections = [
        f"{name}.{{{', '.join(value)}}}" if isinstance(value, dict) else name for name, value in DEFAULTS.items()
    ]
    return (
        "--SECTION.KEY VALUE sets one key of the configuration (VALUE is read as YAML: 3, 1e-4, '[512, 128]',"
        " null), e.g. --trainer.max_epochs 3 --model.head_lr 1e-4. Precedence: built-in defaults < --config"
        f" < these. Keys: {'; '.join(sections)}. Defaults and meanings: {DOCS}."
    )


def explain_unrecognized(arguments: list[str]) -> str | None:
    """For an unknown ``--SECTION.KEY`` option: the valid keys of that section (argparse alone only says
    "unrecognized arguments")."""
    for argument in arguments:
        if argument.startswith("--") and "." in argument:
            key = argument[2:].split("=", 1)[0]
            valid = [k for k in override_keys() if k.startswith(key.split(".", 1)[0] + ".")] or override_keys()
            return f"{key} is not a configuration key; valid: {', '.join(valid)} ({DOCS})"
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        help=f"YAML configuration (configs/precomet-e5.yaml, configs/precomet-minilm.yaml, …; see {DOCS}); default:"
        " the shipped estimator's (frozen multilingual e5-small, about 100 languages, offline on CPU)",
    )
    parser.add_argument("--train", required=True, help="targets JSONL from precomet build-targets")
    parser.add_argument("--dev", help="dev targets JSONL (default: a split by document or campaign of --train)")
    add_output_argument(parser, "checkpoint directory to write")
    usage = " ".join(parser.format_usage().split()[1:]).replace(parser.prog, "%(prog)s", 1)
    parser.usage = f"{usage}\n{' ' * (len('usage: ') + len(parser.prog))} [--SECTION.KEY VALUE ...]"
    group = parser.add_argument_group("configuration overrides", overrides_help())
    # one option per key, described together by the group text above; the retired keys too, so that they are refused
    # by name (argparse would read --model.encoder as an abbreviation of --model.encoder_lr)
    for key in [*override_keys(), *RETIRED_KEYS]:
        group.add_argument(
            f"--{key}", dest=f"override:{key}", metavar="VALUE", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=[args.train, args.dev, args.config], outputs=[args.output])


def run(args: argparse.Namespace) -> int:
    from precomet.estimator.training import train

    overrides = {k.split(":", 1)[1]: v for k, v in vars(args).items() if k.startswith("override:")}
    if args.config is None:
        overrides = shipped_overrides(overrides)
        backbone = overrides["model.backbone"]
        if not secondary_process():  # the other processes of a multi-device run re-run this command
            print(f"no --config: the shipped estimator's configuration (configs/precomet-e5.yaml), on {backbone}")
    result = train(args.train, out_dir=args.output, dev_rows=args.dev, config=args.config, overrides=overrides)
    if not result.main_process:  # another process of a multi-device run: the main one reports
        return 0
    metrics = ", ".join(f"{k} {v:.4f}" for k, v in result.dev_metrics.items() if k.startswith("val_"))
    print(f"wrote {result.checkpoint_dir} in {result.seconds:.1f} s" + (f"; best dev: {metrics}" if metrics else ""))
    return 0
