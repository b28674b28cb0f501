"""``precomet predict``: utilities of sources from a trained estimator checkpoint."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from precomet.commands.common import Paths, positive_int
from precomet.errors import PrecometError

if TYPE_CHECKING:
    from precomet.signature import Signature

HELP = "predict source-based utilities (higher = annotate first) with a trained estimator checkpoint"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True, help="checkpoint directory (precomet train / export)")
    parser.add_argument(
        "--data",
        required=True,
        help="any supported input, or plain-text sources (.txt: one source per line, ids = line numbers 1, 2, ...)",
    )
    parser.add_argument("--campaign", help="campaign inside a multi-campaign input, e.g. wmt23/en-de")
    parser.add_argument(
        "--text",
        action="store_true",
        help="read --data as plain-text sources, one per line, whatever its name (default for .txt files)",
    )
    parser.add_argument("--batch-size", type=positive_int, default=64, help="sources per batch (default 64)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, …")
    parser.add_argument(
        "--precision",
        default="fp32",
        choices=["fp32", "int8"],
        help="int8: dynamic int8 quantisation on CPU (~2x faster, predictions close to fp32)",
    )
    parser.add_argument(
        "--devices",
        type=positive_int,
        help="predict through Lightning's Trainer.predict on N devices (multi-GPU); --device is then ignored",
    )
    parser.add_argument("--strategy", help="Lightning strategy with --devices, e.g. ddp, ddp_spawn (default: auto)")
    parser.add_argument("--accelerator", help="Lightning accelerator with --devices: gpu, cpu, … (default: auto)")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse sources the estimator was trained on (default: warn and count them)",
    )
    output = parser.add_mutually_exclusive_group(required=True)
    output.add_argument("-o", "--output", help='output JSONL of {"id", "utility"}')
    output.add_argument(
        "--shard-dir",
        help="instead of -o: every process of a torchrun / srun / --devices N run writes its shard of the pool here"
        " (a folder all nodes share; read as one pool by select and benchmark; docs/estimator.md)",
    )
    parser.add_argument("--num-nodes", type=positive_int, default=1, help="nodes of a --shard-dir run (default 1)")


def read_sources(path: str, *, text: bool, campaign: str | None) -> tuple[list[str], list[str]]:
    """``(ids, sources)`` of any input :func:`precomet.io.load` reads; plain text (``.txt``, or ``text``) is read as
    by every other command (:mod:`precomet.io.plaintext`): ids are the 1-based line numbers and a blank line is
    refused naming it."""
    from precomet.io import load

    loaded = load(path, campaign=campaign, complete=False, text=text)
    return [str(i) for i in loaded.ids], list(loaded.src)


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=[args.checkpoint, args.data], outputs=[args.output, args.shard_dir])


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from precomet.estimator.checkpoint import check_device, load_estimator
    from precomet.estimator.leakage import check_seen
    from precomet.estimator.predict import predict_sources
    from precomet.io.atomic import check_output
    from precomet.utilities.output import write_utilities

    check_output(args.shard_dir or args.output, directory=args.shard_dir is not None)
    check_device(args.device)
    ids, sources = read_sources(args.data, text=args.text, campaign=args.campaign)
    device = "cpu" if args.devices is not None else args.device
    estimator = load_estimator(args.checkpoint, device=device)
    seen = check_seen(
        estimator.meta,
        sources,
        strict=args.strict,
        what=f"checkpoint {args.checkpoint}",
        where=f"{args.checkpoint}/precomet.json",
    )
    if args.shard_dir is not None:
        return _run_shards(args, estimator, ids, sources, _signature(args, estimator, sources, seen))
    utilities = predict_sources(
        estimator,
        sources,
        batch_size=args.batch_size,
        device=device,
        precision=args.precision,
        devices=args.devices,
        strategy=args.strategy,
        accelerator=args.accelerator,
    )
    run = _signature(args, estimator, sources, seen)
    write_utilities(args.output, ids, np.asarray(utilities, dtype=float), run)
    print(f"wrote {len(ids)} utilities ({estimator.meta['target']['method']}) to {args.output}")
    if seen is None:
        print("the checkpoint has no training-source fingerprint: sources seen in training cannot be counted")
    return 0


def _signature(args: argparse.Namespace, estimator: Any, sources: list[str], seen: int | None) -> Signature:
    import hashlib

    from precomet.signature import signature

    sources_hash = hashlib.sha256("\x1f".join(sources).encode("utf-8")).hexdigest()[:16]
    return signature(
        "precomet predict",
        method="estimator",
        campaign=args.campaign,
        data_hash=sources_hash,
        checkpoint=str(args.checkpoint),
        target=estimator.meta["target"],
        data=str(args.data),
        n_items=len(sources),
        precision=args.precision,
        seen_in_training=seen,
        training_sources=estimator.meta.get("training_sources"),
    )


def _run_shards(args: argparse.Namespace, estimator: Any, ids: list[str], sources: list[str], run: Signature) -> int:
    from precomet.estimator.shards import predict_shards

    if args.precision != "fp32":
        raise PrecometError("--shard-dir predicts in fp32 (--precision int8 runs on the single-device path)")
    rank = predict_shards(
        estimator,
        ids,
        sources,
        args.shard_dir,
        signature=run,
        batch_size=args.batch_size,
        devices=args.devices or 1,
        num_nodes=args.num_nodes,
        strategy=args.strategy,
        accelerator=args.accelerator,
    )
    if rank == 0:
        print(f"wrote {len(ids)} utilities in shards to {args.shard_dir} (manifest: shards.json)")
    return 0
