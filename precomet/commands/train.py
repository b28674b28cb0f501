"""``precomet train``: fit a source-based utility estimator from a YAML config and target rows."""

from __future__ import annotations

import argparse

from precomet.estimator.config import override_keys

HELP = "train a source-based utility estimator (config YAML + targets JSONL) into a checkpoint directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="LightningCLI-style YAML (configs/precomet-minilm.yaml, …); default: built-in defaults")
    parser.add_argument("--train", required=True, help="targets JSONL from precomet build-targets")
    parser.add_argument("--dev", help="dev targets JSONL (default: a split by document or campaign of --train)")
    parser.add_argument("--out", required=True, help="checkpoint directory to write")
    group = parser.add_argument_group(
        "config overrides", "--KEY VALUE for any config key, e.g. --trainer.max_epochs 3 --trainer.devices 2; keys: "
        + " ".join(override_keys()),
    )
    for key in override_keys():
        group.add_argument(f"--{key}", dest=f"override:{key}", metavar="VALUE", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def run(args: argparse.Namespace) -> int:
    from precomet.estimator.training import train

    overrides = {k.split(":", 1)[1]: v for k, v in vars(args).items() if k.startswith("override:")}
    result = train(args.train, out_dir=args.out, dev_rows=args.dev, config=args.config, overrides=overrides)
    metrics = ", ".join(f"{k} {v:.4f}" for k, v in result.dev_metrics.items() if k.startswith("val_"))
    print(f"wrote {result.checkpoint_dir} in {result.seconds:.1f} s" + (f"; best dev: {metrics}" if metrics else ""))
    return 0
