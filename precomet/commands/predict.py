"""``precomet predict``: utilities of sources from a trained estimator checkpoint."""

from __future__ import annotations

import argparse
import hashlib
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precomet.commands.common import Paths, add_alongside_arguments, check_alongside, check_jsonl_output, positive_int
from precomet.errors import PrecometError

if TYPE_CHECKING:
    from precomet.estimator.screening import Screening
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
    add_alongside_arguments(parser)  # checked against the sources and recorded: a utility reads its source alone
    parser.add_argument("--batch-size", type=positive_int, default=64, help="sources per batch (default 64)")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, …")
    parser.add_argument(
        "--precision",
        default="fp32",
        choices=["fp32", "int8"],
        help="int8: dynamic int8 quantisation of the network's linear layers on CPU: faster for a Hugging Face encoder,"
        " predictions close to fp32; a sentence-encoder checkpoint (the shipped e5-small) quantises only its small"
        " head, so it is not faster",
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
    parser.add_argument(
        "--chunk-size",
        type=positive_int,
        help="with -o: sources read, tokenised and predicted at a time (default 2000 on the CPU, about 15 s on 2"
        " cores, 50000 on a GPU: seconds of work either way, so an interrupt keeps what was done), so memory stays"
        " bounded",
    )
    parser.add_argument(
        "--resume-dir",
        help="with -o: folder keeping each predicted chunk (checksummed), so that an interrupted run resumes there"
        " (same input, checkpoint and settings); one run at a time; kept afterwards (default: OUTPUT.chunks beside"
        " the output, removed once the output is written)",
    )


def chunk_size_for(args: argparse.Namespace) -> int:
    """The default ``--chunk-size``: :data:`~precomet.estimator.pool.CHUNK_SIZE` on the CPU; 25 times that on a GPU,
    which encodes a CPU chunk in a fraction of a second (smaller chunks leave it idle between them)."""
    import torch

    from precomet.estimator.pool import CHUNK_SIZE

    if args.devices is None:
        on_gpu = args.device.startswith("cuda")
    else:  # Lightning's accelerator; "auto" takes a GPU when there is one
        auto = args.accelerator in {None, "auto"}
        on_gpu = args.accelerator in {"gpu", "cuda"} or (auto and torch.cuda.is_available())
    return CHUNK_SIZE * 25 if on_gpu else CHUNK_SIZE


def read_sources(path: str, *, text: bool, campaign: str | None) -> tuple[list[str], list[str]]:
    """``(ids, sources)`` of any input :func:`precomet.io.load` reads; plain text (``.txt``, or ``text``) is read as
    by every other command (:mod:`precomet.io.plaintext`): ids are the 1-based line numbers and a blank line is
    refused naming it."""
    from precomet.io import load

    loaded = load(path, campaign=campaign, complete=False, text=text)
    return [str(i) for i in loaded.ids], list(loaded.src)


def paths(args: argparse.Namespace) -> Paths:
    return Paths(inputs=[args.checkpoint, args.data, args.docs, args.domains], outputs=[args.output, args.shard_dir])


def resume_dir(args: argparse.Namespace) -> Path | None:
    """``--resume-dir``, or by default ``OUTPUT.chunks`` beside a file output (none for standard output); a name
    too long for the file system is shortened, with a hash of the output's name to keep it its own."""

    from precomet.outputs.paths import name_max, written_through

    if args.resume_dir is not None:
        return Path(args.resume_dir)
    output = Path(args.output)
    if written_through(output):
        return None
    name = output.name + ".chunks"
    room = name_max(output.absolute().parent)
    if len(name.encode(errors="surrogateescape")) > room:
        tag = "-" + hashlib.sha256(output.name.encode(errors="surrogateescape")).hexdigest()[:12] + ".chunks"
        name = output.name.encode(errors="surrogateescape")[: room - len(tag)].decode(errors="ignore") + tag
    return output.with_name(name)


def _screen(args: argparse.Namespace, chunks: Any, meta: Any) -> Screening:
    """The checks of every prediction (:func:`precomet.estimator.screening.screen_sources`) over ``chunks``."""
    from precomet.estimator.screening import screen_sources

    what, where = f"checkpoint {args.checkpoint}", f"{args.checkpoint}/precomet.json"
    return screen_sources(chunks, meta=meta, strict=args.strict, what=what, where=where)


@contextmanager
def _resume_folder(args: argparse.Namespace, folder: Path) -> Iterator[None]:
    """The resume folder, made if needed and locked for this run (another run on the same output or folder is
    refused); afterwards removed when it is empty and was made for this run (an interrupt before the first chunk)
    or is the default folder of ``-o`` that an earlier run left chunks in."""
    from precomet.estimator.pool import kept_chunks
    from precomet.outputs.lock import folder_lock

    made = [folder, *(parent for parent in folder.parents if not parent.exists())]
    made = [path for path in made if not path.exists()]  # the folder and the parents made for it, innermost first
    # the default folder is precomet's when this run makes it or an earlier run left chunks in it; a folder of
    # that name the user made (empty, or holding other files) stays
    ours = args.resume_dir is None and (bool(made) or bool(kept_chunks(folder)))
    what = f"--resume-dir {folder}" if args.resume_dir is not None else f"-o {args.output} (its resume folder {folder})"
    remedy = (
        "another --resume-dir"
        if args.resume_dir is not None
        else "another -o, or keep chunks elsewhere with --resume-dir DIR"
    )
    try:
        with folder_lock(folder, what=what, remedy=remedy) as remade:
            made = made or ([folder] if remade else [])  # an identical run that just ended removed it: ours again
            yield
    finally:
        for path in made if made else [folder] if ours else []:
            with suppress(OSError):  # not empty: chunks kept for a resume
                path.rmdir()


def run(args: argparse.Namespace) -> int:
    from precomet.estimator.checkpoint import load_estimator, read_meta
    from precomet.estimator.estimator import check_device
    from precomet.estimator.pool import check_resume_dir, discard_kept, discard_stale, predict_pool
    from precomet.estimator.screening import with_coverage
    from precomet.io.chunks import iter_source_chunks
    from precomet.io.utility_files import write_signature_line, write_utility_lines
    from precomet.outputs.atomic import output_set
    from precomet.outputs.paths import check_output

    started = time.monotonic()
    check_output(args.shard_dir or args.output, directory=args.shard_dir is not None)
    check_jsonl_output(args.output)
    check_device(args.device)
    if args.shard_dir is None and args.num_nodes != 1:
        raise PrecometError("--num-nodes applies to a --shard-dir run; -o predicts on this machine")
    if args.shard_dir is not None:
        given = [
            flag for flag, value in (("--chunk-size", args.chunk_size), ("--resume-dir", args.resume_dir)) if value
        ]
        if given:
            raise PrecometError(
                f"{' and '.join(given)} apply to -o; a --shard-dir run predicts each process's shard in one go"
            )
        return _run_shards(args)
    folder = resume_dir(args)
    with ExitStack() as held:
        if folder is not None:
            if args.resume_dir is None and (folder.is_symlink() or folder.exists()) and not folder.is_dir():
                raise PrecometError(
                    f"-o {args.output}: its resume folder {folder} is a file; rename it, or keep chunks elsewhere"
                    " with --resume-dir DIR"
                )
            try:
                check_resume_dir(folder, inputs=[args.checkpoint, args.data], outputs=[args.output])
            except PrecometError as err:
                if args.resume_dir is not None:
                    raise
                own = {"resume_dir": f"-o {args.output}: its resume folder "}  # the default, not an option given
                raise PrecometError(f"{err.spelled(own)}, with --resume-dir DIR") from None
            held.enter_context(_resume_folder(args, folder))
        chunk_size = args.chunk_size or chunk_size_for(args)
        chunks = partial(iter_source_chunks, args.data, chunk_size=chunk_size, text=args.text, campaign=args.campaign)
        screening = _screen(args, chunks(), read_meta(args.checkpoint))  # before the model is loaded
        _check_alongside_lines(args, screening.scan.n_items)
        device = "cpu" if args.devices is not None else args.device
        estimator = load_estimator(args.checkpoint, device=device)
        screening = with_coverage(screening, estimator, what=f"checkpoint {args.checkpoint}")
        scan = screening.scan
        with output_set(args.output) as out, out.open(args.output) as handle:
            write_signature_line(handle, _signature(args, estimator, screening))
            pool = predict_pool(
                estimator,
                chunks(),
                write=partial(write_utility_lines, handle),
                resume_dir=folder,
                n_items=scan.n_items,
                pool_hash=scan.data_hash,
                batch_size=args.batch_size,
                device=device,
                precision=args.precision,
                devices=args.devices,
                strategy=args.strategy,
                accelerator=args.accelerator,
            )
        if folder is not None and args.resume_dir is None:
            discard_kept(pool, folder)
        elif folder is not None and discard_stale(pool, folder):
            print(f"removed the chunks of this pool that an earlier run with another chunk size kept in {folder}")
    seconds = time.monotonic() - started
    print(
        f"wrote {scan.n_items} utilities ({estimator.meta.target.method}) to {args.output} in {seconds:.1f} s"
        f" ({scan.n_items / max(seconds, 1e-9):,.0f} sources/s)"
    )
    if pool.reused:
        print(f"{pool.reused} of {pool.reused + pool.predicted} chunks were read back from {folder}")
    if scan.seen_in_training is None:
        print("the checkpoint has no training-source fingerprint: sources seen in training cannot be counted")
    return 0


def _check_alongside_lines(args: argparse.Namespace, n_items: int) -> None:
    """``--docs``/``--domains`` as ``select`` and ``waves`` read them on the same file: plain text, one line per
    source (they group items there; a predicted utility reads its source alone)."""
    from precomet.io.plaintext import read_alongside

    check_alongside(args)
    for path, what in ((args.docs, "document id"), (args.domains, "domain")):
        if path is not None:
            read_alongside(path, n_items, what=what, sources=args.data)


def _signature(args: argparse.Namespace, estimator: Any, screening: Screening) -> Signature:
    from precomet.signature import signature

    return signature(
        "precomet predict",
        method="estimator",
        campaign=args.campaign,
        data_hash=screening.scan.data_hash,
        sources_hash=screening.scan.data_hash,
        items_hash=screening.scan.items_hash,
        checkpoint=str(args.checkpoint),
        target=estimator.meta.target.model_dump(mode="json", exclude_unset=True),
        data=str(args.data),
        docs=None if args.docs is None else str(args.docs),
        domains=None if args.domains is None else str(args.domains),
        n_items=screening.scan.n_items,
        precision=args.precision,
        **screening.report(),
        training_sources=estimator.meta.training_sources,
    )


def _run_shards(args: argparse.Namespace) -> int:
    from precomet.estimator.checkpoint import load_estimator
    from precomet.estimator.screening import with_coverage
    from precomet.estimator.shards import predict_shards

    if args.precision != "fp32":
        raise PrecometError("--shard-dir predicts in fp32 (--precision int8 runs on the single-device path)")
    ids, sources = read_sources(args.data, text=args.text, campaign=args.campaign)
    _check_alongside_lines(args, len(ids))
    estimator = load_estimator(args.checkpoint, device="cpu" if args.devices is not None else args.device)
    screening = _screen(args, [(ids, sources)], estimator.meta)
    screening = with_coverage(screening, estimator, what=f"checkpoint {args.checkpoint}")
    rank = predict_shards(
        estimator,
        ids,
        sources,
        args.shard_dir,
        signature=_signature(args, estimator, screening),
        batch_size=args.batch_size,
        devices=args.devices or 1,
        num_nodes=args.num_nodes,
        strategy=args.strategy,
        accelerator=args.accelerator,
    )
    if rank == 0:
        print(f"wrote {len(ids)} utilities in shards to {args.shard_dir} (manifest: shards.json)")
    return 0
