"""Prediction over a pool too large to tokenise at once: chunk by chunk, each chunk's utilities handed on as soon
as they are known, and (with a resume folder) kept so that an interrupted run resumes where it stopped.

A chunk's utilities are kept in ``RESUME_DIR/KEY.npz``, written atomically (a run killed mid-write leaves at most a
temporary, never a half file under the final name); they are a cache, not an output of the command. ``KEY`` is the
sha256 of everything the numbers depend on: the checkpoint's files (:func:`checkpoint_fingerprint`), precision,
batch size, device type, precomet version and the chunk's ids and sources. A changed input, checkpoint or setting
therefore never reuses a chunk; the same chunks of the same run are read back instead of predicted. Chunk
boundaries change the length-sorted batches, so utilities predicted with another ``chunk_size`` differ in the last
digits (~1e-7); a resumed run repeats the interrupted one's numbers exactly.

Each kept chunk also holds a checksum of its key and its numbers: a chunk whose content was damaged or replaced
(zeros, another chunk's numbers copied under its name) is predicted again, with a warning, never used. It also
holds the pool it belongs to (the pool's sources hash and the settings), so that a finished run removes the
chunks of the same pool kept under another chunk size (:func:`discard_stale`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.npyio import NpzFile

from precomet import __version__
from precomet.encoders.disk import NPZ_UNREADABLE
from precomet.errors import Interrupted, PrecometError
from precomet.estimator.data import truncation_tally
from precomet.estimator.estimator import Estimator
from precomet.estimator.leakage import fingerprint_in, report_seen
from precomet.estimator.metadata import CheckpointMeta
from precomet.estimator.predict import predict_sources
from precomet.outputs.atomic import clean_leftovers, kept_file
from precomet.progress import progress as progress_bar
from precomet.progress import progress_mode
from precomet.provenance import item_digest, items_hash_of

logger = logging.getLogger(__name__)

CHUNK_SIZE = 2000
"""Sources tokenised and predicted at a time by default on the CPU: on 2 cores the shipped estimator keeps its
first chunk within a minute (``precomet predict`` takes 25 times as many on a GPU)."""

Chunk = tuple[Sequence[str], Sequence[str]]
"""``(ids, sources)`` of consecutive items (:func:`precomet.io.chunks.iter_source_chunks`)."""


@dataclass(frozen=True)
class PoolScan:
    """What a first pass over a pool's chunks learns before any prediction."""

    n_items: int
    data_hash: str
    """sha256 of the sources joined by ``\\x1f`` (first 16 hex digits), as ``precomet predict`` signs it."""
    items_hash: str
    """The ``(id, source)`` pairs in any order (:func:`precomet.provenance.items_hash`)."""
    seen_in_training: int | None
    """Sources the estimator was trained on (``None``: the checkpoint has no training-source fingerprint)."""


def scan_pool(
    chunks: Iterable[Chunk], *, meta: CheckpointMeta | dict[str, Any], strict: bool, what: str, where: str
) -> PoolScan:
    """Count, hash and check every source of ``chunks`` against the training-source fingerprint in ``meta`` (read
    at ``where``): a seen source is a warning, or with ``strict`` a :class:`PrecometError`, before any work."""
    fingerprint = fingerprint_in(meta, where=where)
    digest, n_items, seen, items = hashlib.sha256(), 0, 0, 0
    for ids, sources in chunks:
        for item_id, source in zip(ids, sources):
            digest.update(("\x1f" if n_items else "").encode() + source.encode("utf-8"))
            items += item_digest(str(item_id), source)
            n_items += 1
        if fingerprint is not None:
            seen += int(fingerprint.contains(sources).sum())
    if not n_items:
        raise PrecometError("no sources to score (empty input)")
    counted = None if fingerprint is None else report_seen(seen, n_items, strict=strict, what=what)
    return PoolScan(
        n_items=n_items, data_hash=digest.hexdigest()[:16], items_hash=items_hash_of(items), seen_in_training=counted
    )


def checkpoint_fingerprint(path: str | Path) -> str:
    """sha256 over the name, size and content of every file of a checkpoint directory (sorted by name)."""
    root = Path(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{file.relative_to(root).as_posix()}\0{file.stat().st_size}\0".encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class PoolRun:
    """How a pool was predicted: chunks predicted now and chunks read back from the resume folder."""

    n_items: int
    predicted: int
    reused: int
    kept: tuple[Path, ...] = ()
    """The resume folder's files of this run's chunks (see :func:`discard_kept`)."""
    pool: str | None = None
    """What the kept chunks say they belong to: the pool's sources hash and the settings (see :func:`discard_stale`)."""


CHUNK_SUFFIX = ".npz"
_KEY = re.compile(r"[0-9a-f]{64}")
_CHUNK_ARRAYS = {"values", "check", "pool"}


def _load_chunk(path: Path) -> tuple[str, dict[str, np.ndarray]]:
    """``("", arrays)`` for a file in the kept-chunk format, else ``(what is wrong, {})``: never raises on a
    truncated, garbage or foreign file."""
    try:
        stored = np.load(path, allow_pickle=False)
        if not isinstance(stored, NpzFile):
            return f"a single {type(stored).__name__}, not an .npz archive", {}
        with stored:
            if set(stored.files) != _CHUNK_ARRAYS:
                return f"arrays {sorted(stored.files)}, expected {sorted(_CHUNK_ARRAYS)}", {}
            return "", {name: stored[name] for name in _CHUNK_ARRAYS}
    except NPZ_UNREADABLE as err:
        return str(err) or type(err).__name__, {}


def kept_chunks(folder: Path) -> list[Path]:
    """The kept chunks in ``folder``: files named by a 64-digit key that hold precomet's chunk arrays. Anything
    else there, whatever its name, is never touched."""
    if not folder.is_dir():
        return []
    named = [p for p in folder.glob("*" + CHUNK_SUFFIX) if _KEY.fullmatch(p.stem) and p.is_file()]
    return [p for p in named if not _load_chunk(p)[0]]


def discard_kept(run: PoolRun, folder: Path) -> None:
    """Remove every kept chunk from ``folder``, the resume folder of one output: the chunks of ``run`` and those
    an earlier run left (another chunk size); files that are not kept chunks stay."""
    for file in {*run.kept, *kept_chunks(folder)}:
        file.unlink(missing_ok=True)


def discard_stale(run: PoolRun, folder: Path) -> int:
    """Remove from a resume folder the chunks of the same pool and settings that ``run`` did not use (kept by a run
    with another chunk size); other pools' chunks, and files that are not kept chunks, stay. Returns how many were
    removed."""
    used = set(run.kept)
    removed = 0
    for file in kept_chunks(folder):
        if file not in used and run.pool is not None and _chunk_pool(file) == run.pool:
            file.unlink(missing_ok=True)
            removed += 1
    return removed


@truncation_tally()  # one truncation warning for the whole pool, not one per chunk
def predict_pool(
    estimator: Estimator,
    chunks: Iterable[Chunk],
    *,
    write: Callable[[Sequence[str], np.ndarray], None],
    resume_dir: str | Path | None = None,
    n_items: int | None = None,
    pool_hash: str | None = None,
    batch_size: int = 64,
    device: str = "cpu",
    precision: str = "fp32",
    devices: int | str | list[int] | None = None,
    strategy: str | None = None,
    accelerator: str | None = None,
    progress: bool | None = None,
) -> PoolRun:
    """Predict ``chunks`` one at a time with :func:`~precomet.estimator.predict.predict_sources` (same settings),
    calling ``write(ids, utilities)`` after each. With ``resume_dir``, each chunk's utilities are kept there
    (see the module docstring) and chunks already kept are read back instead of predicted; ``estimator`` must
    then come from a checkpoint directory, and an interrupt after a chunk was kept raises
    :class:`~precomet.errors.Interrupted` saying what was kept. One progress bar covers the pool (``n_items``,
    its size, gives it an end and an ETA); ``pool_hash`` (the pool's sources hash) marks the kept chunks as this
    pool's, for :func:`discard_stale`."""
    settings = {
        "checkpoint": _fingerprint(estimator) if resume_dir is not None else None,
        "precision": precision,
        "batch_size": batch_size,
        "device": device.split(":")[0],
        "devices": None if devices is None else str(devices),
        "strategy": strategy,
        "accelerator": accelerator,
        "precomet": __version__,
    }
    pool = _pool_id(settings, pool_hash)
    folder = None if resume_dir is None else Path(resume_dir)
    created = folder is not None and not folder.exists()
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        clean_leftovers(folder)
    done = predicted = reused = 0
    kept: list[Path] = []
    written: list[Path] = []
    sizes: dict[Path | None, int] = {}  # sources per chunk
    bar = progress_bar(total=n_items, desc="predict", unit="source", enabled=progress)
    inner = False if progress_mode(progress) != "off" else progress  # one bar: the pool's, not one per chunk
    try:
        for ids, sources in chunks:
            key = _chunk_key(settings, ids, sources)
            cached = None if folder is None else folder / f"{key}{CHUNK_SUFFIX}"
            sizes[cached] = len(ids)
            values = _read_chunk(cached, len(sources), key=key)
            if values is None:
                values = predict_sources(
                    estimator,
                    sources,
                    batch_size=batch_size,
                    device=device,
                    progress=inner,
                    precision=precision,
                    devices=devices,
                    strategy=strategy,
                    accelerator=accelerator,
                )
                if cached is not None:
                    cached.unlink(missing_ok=True)  # a damaged chunk: gone, so that only a new one counts below
                    kept.append(cached)  # before it exists: an interrupt just after the rename still counts it
                    _keep(cached, values, key=key, pool=pool)
                    written.append(cached)
                predicted += 1
            else:
                reused += 1
                if cached is not None:
                    kept.append(cached)
            write(ids, values)
            done += len(ids)
            bar.update(len(ids))
    except PrecometError:  # the same input and checkpoint fail the same way again: keep nothing of this run
        for file in written:
            file.unlink(missing_ok=True)
        if created and folder is not None and folder.exists() and not any(folder.iterdir()):
            folder.rmdir()
        raise
    except KeyboardInterrupt:
        kept = [file for file in kept if file.exists()]
        if folder is None or not kept:
            raise
        of = "" if n_items is None else f" of {n_items:,}"
        sources_kept = sum(sizes[file] for file in kept)
        raise Interrupted(
            f"{len(kept)} predicted chunk(s) ({sources_kept:,}{of} sources) are kept in {folder}"
        ) from None
    finally:
        bar.close()
    return PoolRun(n_items=done, predicted=predicted, reused=reused, kept=tuple(kept), pool=pool)


def predict_in_chunks(estimator: Estimator, sources: Sequence[str], *, chunk_size: int = CHUNK_SIZE) -> np.ndarray:
    """Utilities of ``sources`` in input order, tokenised and predicted ``chunk_size`` at a time (the numbers of
    :func:`~precomet.estimator.predict.predict_sources` when ``len(sources) <= chunk_size``)."""
    parts: list[np.ndarray] = []
    ids = [str(position) for position in range(len(sources))]
    starts = range(0, len(sources), chunk_size)
    predict_pool(
        estimator,
        ((ids[i : i + chunk_size], sources[i : i + chunk_size]) for i in starts),
        write=lambda _, values: parts.append(values),
    )
    return np.concatenate(parts) if parts else predict_sources(estimator, sources)


def check_resume_dir(
    resume_dir: str | Path, *, inputs: Iterable[str | Path], outputs: Iterable[str | Path | None] = ()
) -> Path:
    """``resume_dir`` when it can keep chunks: not a file, neither inside nor holding an input (a checkpoint is hashed
    whole, so chunks kept inside it would change its fingerprint), and neither the output nor holding it (the
    output would be written over the kept chunks, or cleared with them); else :class:`PrecometError`."""
    folder = Path(resume_dir)
    if folder.exists() and not folder.is_dir():
        raise PrecometError(f"{{resume_dir}}{folder} is not a folder", param="resume_dir")
    where = folder.resolve()
    for given in inputs:
        source = Path(given).resolve()
        if where == source or source in where.parents or where in source.parents:
            raise PrecometError(
                f"{{resume_dir}}{folder} is, holds or lies inside the input {given}; keep chunks elsewhere",
                param="resume_dir",
            )
    for output in outputs:
        if output is None:
            continue
        target = Path(output).resolve()
        if where == target or where in target.parents:
            raise PrecometError(
                f"{{resume_dir}}{folder} is or holds the output {output}; keep chunks in a folder of their own",
                param="resume_dir",
            )
    return folder


def _fingerprint(estimator: Estimator) -> str:
    if estimator.path is None:
        raise PrecometError("resuming needs an estimator loaded from a checkpoint directory (its files are hashed)")
    return checkpoint_fingerprint(estimator.path)


def _chunk_key(settings: dict[str, Any], ids: Sequence[str], sources: Sequence[str]) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    digest.update(b"\0" + json.dumps([list(ids), list(sources)], ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _pool_id(settings: dict[str, Any], pool_hash: str | None) -> str | None:
    if pool_hash is None:
        return None
    return hashlib.sha256(json.dumps([settings, pool_hash], sort_keys=True).encode()).hexdigest()[:32]


def _checksum(key: str, values: np.ndarray) -> np.ndarray:
    digest = hashlib.sha256(key.encode() + b"\0" + np.ascontiguousarray(values, dtype="<f8").tobytes()).digest()
    return np.frombuffer(digest, dtype=np.uint8)


def _keep(path: Path, values: np.ndarray, *, key: str, pool: str | None) -> None:
    """Write a chunk file (utilities, checksum, pool) through :func:`~precomet.outputs.atomic.kept_file`: a run stopped
    mid-write leaves no half file under the final name. A failure names the resume folder and the chunk."""
    try:
        with kept_file(path) as handle:
            np.savez(handle, values=values, check=_checksum(key, values), pool=np.array(pool or ""))
    except OSError as err:
        raise PrecometError(
            f"{{resume_dir}}{path.parent}: cannot keep the chunk {path.name} there ({err.strerror or err}); free"
            " space there, or keep chunks elsewhere with {resume_dir}DIR",
            param="resume_dir",
        ) from None


def _read_chunk(path: Path | None, n: int, *, key: str) -> np.ndarray | None:
    """A kept chunk's utilities, or ``None`` when there is none (or it is unreadable or damaged: then predicted
    again, with a warning)."""
    if path is None or not (path.exists() or path.is_symlink()):
        return None
    if not path.is_file():
        raise PrecometError(
            f"{{resume_dir}}{path.parent}: {path.name} is not a file (a kept chunk goes there); remove it, or keep"
            " chunks elsewhere with {resume_dir}DIR",
            param="resume_dir",
        )
    wrong, kept = _load_chunk(path)
    if wrong:
        logger.warning("%s: unreadable kept chunk (%s); predicting it again", path, wrong)
        return None
    values, check = kept["values"], kept["check"]
    if values.shape != (n,) or values.dtype != np.float64 or not np.isfinite(values).all():
        logger.warning("%s: kept chunk does not hold %d finite utilities; predicting it again", path, n)
        return None
    if not np.array_equal(check, _checksum(key, values)):
        logger.warning("%s: kept chunk is damaged (its checksum does not match its content); predicting it again", path)
        return None
    return values


def _chunk_pool(path: Path) -> str | None:
    wrong, kept = _load_chunk(path)
    return None if wrong else str(kept["pool"])
