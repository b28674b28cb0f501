"""The files of a chosen subset: the subset JSONL, ``<name>.manifest.json`` beside it and the optional
annotation batch, written as one set (:func:`write_subset`), and where the manifest goes
(:func:`subset_manifest_path`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from precomet.errors import PrecometError
from precomet.io import jsonsafe
from precomet.io.atomic import name_max, output_set, written_through
from precomet.provenance import sources_hash

if TYPE_CHECKING:
    from precomet.campaign import Campaign
    from precomet.select import Selection


def write_subset(
    path: str | Path,
    campaign: Campaign,
    selection: Selection,
    utility: np.ndarray,
    manifest: Mapping[str, Any],
    *,
    batch: str | Path | None = None,
    batch_order: str = "input",
) -> Path | None:
    """Write the subset JSONL (id, src, doc, domain, cost, utility; most useful first: ``src`` lets ``rank`` check
    that a subset belongs to the data it ranks) and ``<name>.manifest.json`` beside it (``manifest`` plus
    ``ids_hash``, the hash of the subset's sorted ids, which ``rank`` checks the subset against), and with
    ``batch`` the annotation batch (the chosen items with their texts, in ``batch_order``; :mod:`precomet.io.batch`,
    format by suffix), as one set (all or none). Returns the manifest path; a subset written to standard output
    (``-``) or a device has no folder to put a manifest beside, and none is written (``None``)."""
    from precomet.io.batch import BATCH_ORDERS, batch_format, write_batch

    path = Path(path)
    manifest_path = subset_manifest_path(path)
    batch_kind = batch_format(batch) if batch is not None else None
    if batch_order not in BATCH_ORDERS:
        raise PrecometError(f"unknown batch order {batch_order!r}; choose one of {', '.join(BATCH_ORDERS)}")
    manifest = {**manifest, "ids_hash": sources_hash(sorted(str(campaign.ids[i]) for i in selection.indices))}
    with output_set(path, manifest_path, batch) as out:
        with out.open(path) as handle:
            jsonsafe.dump_lines(
                (
                    {
                        "id": campaign.ids[i],
                        "src": campaign.src[i],
                        "doc": campaign.doc[i],
                        "domain": campaign.domain[i],
                        "cost": float(campaign.cost[i]),
                        "utility": float(utility[i]),
                    }
                    for i in selection.indices
                ),
                handle,
            )
        if manifest_path is not None:
            with out.open(manifest_path) as handle:
                jsonsafe.dump(dict(manifest), handle, indent=2, default=str)
                handle.write("\n")
        if batch is not None and batch_kind is not None:
            with open(out.path(batch), "w", encoding="utf-8", newline="") as handle:
                write_batch(handle, campaign, selection.indices, format=batch_kind, order=batch_order)
    return manifest_path


def subset_manifest_path(path: str | Path) -> Path | None:
    """``subset.jsonl`` -> ``subset.manifest.json`` (the manifest written beside a subset; the stem is shortened
    when the name would exceed the file system's limit); ``None`` for a subset written through to standard
    output or a device."""
    if written_through(Path(path)):
        return None
    path, ending = Path(path), ".manifest.json"
    room = name_max(path.absolute().parent) - len(ending)
    return path.with_name(os.fsdecode(os.fsencode(path.name.removesuffix(".jsonl"))[:room]) + ending)
