"""Utility files: a JSONL whose first line is ``{"signature": {...}}`` followed by one
``{"id": ..., "utility": ...}`` line per item in campaign order (``null`` = not computable). Wherever one is read,
a shard directory of ``precomet predict --shard-dir`` (:mod:`precomet.utilities.shards`) reads as one file."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import DataError
from precomet.io import jsonsafe
from precomet.io.atomic import atomic_write
from precomet.io.jsonl import read_jsonl
from precomet.provenance import check_scores_belong
from precomet.signature import Signature, signature
from precomet.values import finite_number


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
    (:func:`precomet.utilities.shards.read_shards`)."""
    if Path(path).is_dir():
        from precomet.utilities.shards import read_shards

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
) -> tuple[np.ndarray, dict[str, Any]]:
    """Utilities of a ``{"id", "utility"}`` file aligned with ``ids`` (a campaign's order), and the file's
    signature. Missing or null entries raise, naming how many and a few of them; so do ids not in ``ids``
    unless ``allow_extra`` is true (e.g. scores of every source when the campaign kept only its fully rated items)
    or a collection holding them (the ids of the whole data, say).
    Duplicates raise in :func:`read_utilities`. With ``source_of`` (id -> source text of the data), a file
    computed on other sources is refused, or with ``force`` warned about
    (:func:`precomet.provenance.check_scores_belong`)."""
    found_ids, values, signature = read_utilities(path)
    if source_of is not None:
        check_scores_belong(path, found_ids, signature, source_of, force=force)
    found = dict(zip(found_ids, values))
    wanted = [str(i) for i in ids]
    missing = [i for i in wanted if i not in found]
    extra = sorted(set(found) - set(wanted))
    null = [i for i in wanted if i in found and math.isnan(found[i])]
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
