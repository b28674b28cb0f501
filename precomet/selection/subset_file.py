"""The files of a chosen subset: the subset JSONL, ``<name>.manifest.json`` beside it and the optional
annotation batch, written as one set (:func:`write_subset`), and where the manifest goes
(:func:`subset_manifest_path`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from precomet.errors import DataError, PrecometError
from precomet.io import jsonsafe
from precomet.io.batch import BATCH_ORDERS, batch_format, write_batch
from precomet.io.jsonl import read_jsonl
from precomet.outputs.atomic import output_set
from precomet.outputs.paths import name_max, written_through
from precomet.provenance import match_by_source, sources_hash

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from precomet.campaign import Campaign
    from precomet.selection.subset import Selection


def write_subset(
    path: str | Path | None,
    campaign: Campaign,
    selection: Selection,
    utility: np.ndarray,
    manifest: Mapping[str, Any],
    *,
    batch: str | Path | None = None,
    batch_order: str = "input",
    batch_kind: str | None = None,
) -> Path | None:
    """Write the subset JSONL (id, src, doc, domain, cost, utility; most useful first: ``src`` lets ``rank`` check
    that a subset belongs to the data it ranks) and ``<name>.manifest.json`` beside it (``manifest`` plus
    ``ids_hash``, the hash of the subset's sorted ids, which ``rank`` checks the subset against), and with
    ``batch`` the annotation batch (the chosen items with their texts, in ``batch_order``; :mod:`precomet.io.batch`,
    format ``batch_kind`` or by suffix), as one set (all or none); with ``path`` ``None`` the batch and its manifest
    (``batch.csv.manifest.json``). Returns
    the manifest path; a subset written to standard output (``-``) or a device has no folder to put a manifest
    beside, and none is written (``None``)."""
    path = None if path is None else Path(path)
    beside = path if path is not None else batch  # without a subset file, the manifest records how the batch was chosen
    manifest_path = None if beside is None else subset_manifest_path(beside)
    batch_kind = batch_format(batch, batch_kind) if batch is not None else None
    if batch_order not in BATCH_ORDERS:
        raise PrecometError(f"unknown batch order {batch_order!r}; choose one of {', '.join(BATCH_ORDERS)}")
    manifest = {**manifest, "ids_hash": sources_hash(sorted(str(campaign.ids[i]) for i in selection.indices))}
    with output_set(path, manifest_path, batch) as out:
        if path is not None:  # without it, only the annotation batch
            with out.open(path) as handle:
                jsonsafe.dump_lines((_subset_row(campaign, i, utility) for i in selection.indices), handle)
        if manifest_path is not None:
            with out.open(manifest_path) as handle:
                jsonsafe.dump(dict(manifest), handle, indent=2, default=str)
                handle.write("\n")
        if batch is not None and batch_kind is not None:
            with open(out.path(batch), "w", encoding="utf-8", newline="") as handle:
                write_batch(handle, campaign, selection.indices, format=batch_kind, order=batch_order)
    return manifest_path


def _subset_row(campaign: Campaign, i: int, utility: np.ndarray) -> dict[str, Any]:
    return {
        "id": campaign.ids[i],
        "src": campaign.src[i],
        "doc": campaign.doc[i],
        "domain": campaign.domain[i],
        "cost": float(campaign.cost[i]),
        "utility": float(utility[i]),
    }


def subset_manifest_path(path: str | Path) -> Path | None:
    """``subset.jsonl`` -> ``subset.manifest.json`` (the manifest written beside a subset; the stem is shortened
    when the name would exceed the file system's limit); ``None`` for a subset written through to standard
    output or a device."""
    if written_through(Path(path)):
        return None
    path, ending = Path(path), ".manifest.json"
    room = name_max(path.absolute().parent) - len(ending)
    return path.with_name(os.fsdecode(os.fsencode(path.name.removesuffix(".jsonl"))[:room]) + ending)


def read_subset_rows(path: str | Path) -> list[tuple[str, str | None, str | None]]:
    """``(id, src, doc)`` of each row of a subset JSONL (one ``{"id": ...}`` object per line, as ``precomet
    select`` writes; ``src`` is ``None`` where a row has none, as in subsets written before 0.8.0; ``doc`` where a
    row has none or not as text)."""
    first_line: dict[str, int] = {}
    rows: list[tuple[str, str | None, str | None]] = []
    for row in read_jsonl(path):
        if "id" not in row:
            raise DataError(path, "expected an object with an 'id'", line=row["_line"])
        if isinstance(row["id"], bool) or not isinstance(row["id"], (str, int)):
            raise DataError(path, f"'id' must be text, got {type(row['id']).__name__}", line=row["_line"])
        item_id = str(row["id"])
        if item_id in first_line:  # counted twice it would weigh twice in the ranking
            raise DataError(path, f"duplicate id {item_id!r} (first on line {first_line[item_id]})", line=row["_line"])
        first_line[item_id] = row["_line"]
        src = row.get("src")
        if "src" in row and not isinstance(src, str):
            got = "null" if src is None else type(src).__name__
            raise DataError(path, f"'src' must be text, got {got}", line=row["_line"])
        if rows and (src is None) != (rows[0][1] is None):  # all rows carry their source (0.8.0+), or none
            this, first = ("lacks", "has") if src is None else ("has", "lacks")
            raise DataError(
                path,
                f"this row {this} a 'src' while the row on line {first_line[rows[0][0]]} {first} one; a subset"
                " precomet writes gives every row its source text (an edited file?)",
                line=row["_line"],
            )
        doc = row.get("doc")
        rows.append((item_id, src, doc if isinstance(doc, str) else None))
    return rows


@dataclass(frozen=True)
class SubsetIds:
    """A subset's rows located in ``--data``: ``matched`` (one ``--data`` id per row, in row order) and ``rated``
    (those rated by every system, or by some with ``--keep-incomplete``: what can be ranked or judged)."""

    matched: list[str]
    rated: list[str]


def subset_ids_in(
    path: str | Path,
    rows: list[tuple[str, str | None, str | None]],
    everything: Campaign,
    rated: Campaign,
    *,
    keep_incomplete: bool | None,
) -> SubsetIds:
    """Locate a subset's rows (:func:`read_subset_rows`) in ``everything`` (every item of ``--data``) by id, or by
    source text for a subset selected from another format (:func:`precomet.provenance.match_by_source`, with a
    warning saying how many); the rows that ``rated`` (the scored view of ``--data``) lacks are left out with a
    warning (naming ``--keep-incomplete`` when it is ``False``: ``None`` where the command has no use for it), and a
    subset none of whose items is rated is refused."""
    match = match_by_source(
        path, rows, list(map(str, everything.ids)), list(everything.src), list(map(str, everything.doc))
    )
    if match.by_text:
        log.warning("%s", match.note(path))
    scored = set(map(str, rated.ids))
    unrated = [item_id for item_id in match.ids if item_id not in scored]
    if len(unrated) == len(rows):
        raise PrecometError(
            f"--subset {path}: none of its {len(rows)} items is rated by every system in --data (e.g."
            f" {unrated[0]!r}); annotate them first, or add --keep-incomplete to use the systems scored on them"
        )
    if unrated:  # a subset selected before annotation: some of its items were never (fully) scored
        log.warning(
            "--subset %s: %d of its %d items are not rated by every system in --data (e.g. %r): using the %d that"
            " are%s",
            path,
            len(unrated),
            len(rows),
            unrated[0],
            len(rows) - len(unrated),
            " (--keep-incomplete also uses partly rated ones)" if keep_incomplete is False else "",
        )
    return SubsetIds(matched=match.ids, rated=[item_id for item_id in match.ids if item_id in scored])
