"""Utility files, the format every utility, prediction and score file of precomet has: a JSONL whose first line is
``{"signature": {...}}`` followed by one ``{"id": ..., "utility": ...}`` line per item in campaign order (``null`` =
not computable). Wherever one is read (:func:`read_utilities`), a shard directory reads as one file.

Shard directories: the utilities of one pool written by ``W`` processes (``precomet predict --shard-dir``,
:mod:`precomet.estimator.shards`) and read back as one pool.

* Item ``i`` of the pool (input order) belongs to shard ``i % W`` (strided, so every shard gets the same mix of
  short and long sources); shard ``r`` is ``shard-{r:05d}-of-{W:05d}.jsonl``, a utilities file holding its items
  in pool order, its signature line being the run's with ``shard`` and ``world_size`` added.
* ``shards.json`` (written last, by rank 0, once every shard is in place) names the run: world size, item count,
  checkpoint, data hash, each shard's file and row count, and the run's signature. A directory without it is an
  unfinished run.
* :func:`read_shards` checks the whole directory against the manifest and interleaves the shards back into pool
  order: pool item ``i`` is row ``i // W`` of shard ``i % W``.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import DataError, PrecometError
from precomet.io import jsonsafe
from precomet.io.jsonl import read_jsonl
from precomet.io.text import read_json
from precomet.outputs.atomic import atomic_write
from precomet.provenance import check_scores_belong
from precomet.signature import Signature, signature
from precomet.values import finite_number

MANIFEST = "shards.json"
FORMAT = "precomet shards 1"
_SHARD = re.compile(r"^shard-(\d{5,})-of-(\d{5,})\.jsonl$")
_RUN_KEYS = ("shard", "world_size")  # what a shard's signature adds to the run's


def shard_name(rank: int, world_size: int) -> str:
    """``shard-00001-of-00004.jsonl``."""
    return f"shard-{rank:05d}-of-{world_size:05d}.jsonl"


def shard_positions(n_items: int, rank: int, world_size: int) -> range:
    """Pool positions of shard ``rank``: ``rank, rank + W, rank + 2W, ...``."""
    return range(rank, n_items, world_size)


def write_shard(
    out_dir: str | Path,
    rank: int,
    world_size: int,
    ids: Sequence[str],
    values: np.ndarray,
    signature: Mapping[str, Any],
) -> Path:
    """Write shard ``rank`` all-or-nothing. Not through :func:`precomet.outputs.atomic.atomic_write`: that removes
    temporaries of processes it cannot see running, and on a folder shared by several nodes those are the other
    nodes' live writers; here the temporary is named by host and process and only this process removes it."""
    path = Path(out_dir) / shard_name(rank, world_size)
    temporary = path.with_name(f".{path.name}.{socket.gethostname()}-{os.getpid()}.part")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            dump_utilities(handle, ids, values, {**signature, "shard": rank, "world_size": world_size})
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def write_manifest(out_dir: str | Path, world_size: int, n_items: int, signature: Mapping[str, Any]) -> Path:
    """``shards.json`` once every shard is written; raises naming a shard that this process cannot see (a
    folder not shared by every node) or whose row count is not its share of the pool."""
    out_dir = Path(out_dir)
    shards = []
    for rank in range(world_size):
        path = out_dir / shard_name(rank, world_size)
        if not path.is_file():
            raise PrecometError(f"{path}: not found by rank 0; --shard-dir must be a folder every node shares")
        with open(path, encoding="utf-8") as handle:
            rows = sum(1 for line in handle if line.strip()) - 1
        if rows != len(shard_positions(n_items, rank, world_size)):
            raise PrecometError(f"{path}: {rows} rows, expected {len(shard_positions(n_items, rank, world_size))}")
        shards.append({"file": path.name, "rows": rows})
    manifest = {
        "format": FORMAT,
        "assignment": "pool item i is row i // world_size of shard i % world_size",
        "world_size": world_size,
        "n_items": n_items,
        "checkpoint": signature.get("checkpoint"),
        "data_hash": signature.get("data_hash"),
        "shards": shards,
        "signature": dict(signature),
    }
    with atomic_write(out_dir / MANIFEST) as handle:
        json.dump(manifest, handle, indent=2)
        handle.write("\n")
    return out_dir / MANIFEST


def read_shards(path: str | Path) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    """Ids, utilities and signature of the pool in a shard directory, in pool order, as
    :func:`precomet.io.utility_files.read_utilities` returns them for one file. Refused with a
    :class:`PrecometError`: no manifest, a shard missing or not listed, a row count that differs, a shard
    from another run (its signature differs from the manifest's: checkpoint, data hash, ...), an id in two
    shards."""
    folder = Path(path)
    manifest = _manifest(folder)
    world_size, n_items, run = manifest["world_size"], manifest["n_items"], manifest["signature"]
    listed = [folder / shard_name(rank, world_size) for rank in range(world_size)]
    stray = sorted(p.name for p in folder.iterdir() if _SHARD.match(p.name) and p not in listed)
    if stray:
        raise PrecometError(f"{folder}: shard file(s) {stray[:3]} are not in {MANIFEST} (another run's); remove them")
    missing = [p.name for p in listed if not p.is_file()]
    if missing:
        raise PrecometError(f"{folder}: {len(missing)} of {world_size} shard(s) missing, e.g. {missing[0]}")
    columns: list[tuple[list[str], np.ndarray]] = []
    for rank, shard in enumerate(listed):
        ids, values, signature = read_utilities(shard)
        expected = len(shard_positions(n_items, rank, world_size))
        if len(ids) != expected or manifest["shards"][rank].get("rows") != expected:
            raise PrecometError(f"{shard}: {len(ids)} rows, the manifest expects {expected} (pool of {n_items})")
        _same_run(shard, signature, run, rank, world_size)
        columns.append((ids, values))
    ids = [columns[i % world_size][0][i // world_size] for i in range(n_items)]
    values = np.array([columns[i % world_size][1][i // world_size] for i in range(n_items)], dtype=float)
    counts = Counter(ids)
    duplicate = next((i for i in ids if counts[i] > 1), None)
    if duplicate is not None:
        raise PrecometError(f"{folder}: id {duplicate!r} is in two shards; the shards are not one pool")
    return ids, values, dict(run)


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    if not path.is_file():
        raise PrecometError(f"{folder}: no {MANIFEST}; not a shard directory, or its run has not finished")
    manifest = read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PrecometError(f"{path}: not a {FORMAT!r} manifest")
    world_size, n_items = manifest.get("world_size"), manifest.get("n_items")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (world_size, n_items)):
        raise PrecometError(f"{path}: world_size and n_items must be integers >= 1")
    shards, run = manifest.get("shards"), manifest.get("signature")
    if not isinstance(shards, list) or len(shards) != world_size or not all(isinstance(s, dict) for s in shards):
        raise PrecometError(f"{path}: 'shards' must list {world_size} shard(s)")
    if not isinstance(run, dict):
        raise PrecometError(f"{path}: 'signature' must be an object")
    return manifest


def _same_run(shard: Path, signature: dict[str, Any], run: dict[str, Any], rank: int, world_size: int) -> None:
    """Refuse a shard whose signature is not the run's plus its own rank and world size."""
    if (signature.get("shard"), signature.get("world_size")) != (rank, world_size):
        raise PrecometError(f"{shard}: its signature names shard {signature.get('shard')!r}, not {rank}")
    own = {k: v for k, v in signature.items() if k not in _RUN_KEYS}
    differ = sorted(k for k in set(own) | set(run) if own.get(k) != run.get(k))
    if differ:
        name = "checkpoint" if "checkpoint" in differ else differ[0]
        raise PrecometError(
            f"{shard}: from another run ({name} {own.get(name)!r}, the manifest's {run.get(name)!r});"
            " every shard must come from one run"
        )


def utility_signature(
    campaign: Campaign,
    *,
    method: str,
    metric: str | None,
    systems: Sequence[str] | None,
    budget: int | None,
    seed: int,
    options: Mapping[str, Any],
) -> Signature:
    """Method, parameters, data hash, seed and precomet version of a utility computation."""
    return signature(
        "precomet utilities",
        method=method,
        campaign=campaign,
        seed=seed,
        metric=metric,
        systems=None if systems is None else list(systems),
        budget=budget,
        options=dict(options),
    )


def write_utilities(
    path: str | Path, ids: Sequence[str] | np.ndarray, values: np.ndarray, signature: Mapping[str, Any]
) -> None:
    """Write the signature line and one line per item, atomically."""
    with atomic_write(path) as handle:
        dump_utilities(handle, ids, values, signature)


def dump_utilities(
    handle: IO[str], ids: Sequence[str] | np.ndarray, values: np.ndarray, signature: Mapping[str, Any]
) -> None:
    """The lines of :func:`write_utilities` written to an open text file."""
    write_signature_line(handle, signature)
    write_utility_lines(handle, ids, values)


def write_signature_line(handle: IO[str], signature: Mapping[str, Any]) -> None:
    """The first line of a utility file (for writing one in pieces: then :func:`write_utility_lines`)."""
    jsonsafe.dump_lines([{"signature": dict(signature)}], handle)


def write_utility_lines(handle: IO[str], ids: Sequence[str] | np.ndarray, values: np.ndarray) -> None:
    """One ``{"id", "utility"}`` line per item, after :func:`write_signature_line`."""
    jsonsafe.dump_lines(({"id": item_id, "utility": float(value)} for item_id, value in zip(ids, values)), handle)


def read_utilities(path: str | Path) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    """Ids, utilities (NaN for ``null``) and signature of a ``{"id", "utility"}`` JSONL file (an optional first
    ``{"signature": ...}`` line, as :func:`write_utilities` writes), or of a shard directory as one pool
    (:func:`precomet.io.utility_files.read_shards`)."""
    if Path(path).is_dir():
        return read_shards(path)
    ids, values, signature = [], [], {}
    seen: dict[str, int] = {}
    for position, row in enumerate(read_jsonl(path)):
        number = row["_line"]
        if position == 0 and "signature" in row:
            signature = row["signature"]
            if not isinstance(signature, dict):
                raise DataError(path, f"'signature' must be an object, got {type(signature).__name__}", line=number)
            continue
        if "id" not in row or "utility" not in row:
            raise DataError(path, "expected keys 'id' and 'utility'", line=number)
        if isinstance(row["id"], bool) or not isinstance(row["id"], (str, int)):
            raise DataError(path, f"'id' must be text, got {type(row['id']).__name__}", line=number)
        what = f"item {row['id']!r}, field 'utility'"
        value = (
            np.nan
            if row["utility"] is None
            else finite_number(row["utility"], what=what, path=path, line=number, text=False)
        )
        if str(row["id"]) in seen:
            raise DataError(path, f"duplicate id {row['id']!r} (first on line {seen[str(row['id'])]})", line=number)
        seen[str(row["id"])] = number
        ids.append(str(row["id"]))
        values.append(value)
    return ids, np.array(values, dtype=float), signature


def utilities_for(path: str | Path, ids: Sequence[str] | np.ndarray, *, allow_extra: bool = False) -> np.ndarray:
    """Utilities of a ``{"id", "utility"}`` file aligned with ``ids`` (see :func:`aligned_utilities`)."""
    return aligned_utilities(path, ids, allow_extra=allow_extra)[0]


def aligned_utilities(
    path: str | Path,
    ids: Sequence[str] | np.ndarray,
    *,
    allow_extra: bool | Collection[str] = False,
    source_of: Mapping[str, str] | None = None,
    force: bool = False,
    allow_null: bool = False,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Utilities of a ``{"id", "utility"}`` file aligned with ``ids`` (a campaign's order), and the file's
    signature. Missing or null entries raise, naming how many and a few of them; so do ids not in ``ids``
    unless ``allow_extra`` is true (e.g. scores of every source when the campaign kept only its fully rated items)
    or a collection holding them (the ids of the whole data, say); with ``allow_null`` null entries are kept as
    NaN. Duplicates raise in :func:`read_utilities`. With ``source_of`` (id -> source text of the data), a file
    computed on other sources is refused, or with ``force`` warned about
    (:func:`precomet.provenance.check_scores_belong`)."""
    found_ids, values, signature = read_utilities(path)
    if source_of is not None:
        check_scores_belong(path, found_ids, signature, source_of, force=force)
    found = dict(zip(found_ids, values))
    wanted = [str(i) for i in ids]
    missing = [i for i in wanted if i not in found]
    extra = sorted(set(found) - set(wanted))
    null = [] if allow_null else [i for i in wanted if i in found and math.isnan(found[i])]
    problems = []
    if missing:
        problems.append(f"{len(missing)} of {len(wanted)} campaign id(s) have no utility, e.g. {missing[:5]}")
    stray = extra if allow_extra is False else [] if allow_extra is True else [i for i in extra if i not in allow_extra]
    if stray:
        problems.append(f"{len(stray)} id(s) are not in the campaign, e.g. {stray[:5]}")
    if null:
        problems.append(f"{len(null)} utility value(s) are null, e.g. {null[:5]}")
    if problems:
        raise DataError(path, "utilities do not match the campaign: " + "; ".join(problems))
    return np.array([found[i] for i in wanted], dtype=float), signature
