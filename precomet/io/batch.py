"""The annotation batch: the chosen items with their texts, ready for annotators and annotation tools.

One record per chosen item: ``id``, ``doc``, ``domain``, ``src``, ``ref`` (when the input has references) and
the output of every system (when the input has outputs). The format follows the file's suffix
(:data:`BATCH_FORMATS`):

* ``.jsonl`` — canonical items without scores (``{"id", "doc", "domain", "src", "ref", "tgt": {system: text}}``),
  readable again by :func:`precomet.io.load`;
* ``.csv`` / ``.tsv`` — a header row ``id, doc, domain, src[, ref], tgt:SYSTEM…`` (the column names of the
  simple CSV input, so ``precomet info --data batch.csv`` reads it back), then one row per item; a missing
  reference or output is an empty cell. Quoting is RFC 4180 for both: a cell holding the delimiter, a double
  quote, a carriage return or a line break is enclosed in double quotes, a double quote inside it is doubled,
  rows end in ``\\r\\n``; text is UTF-8 without a byte-order mark. Any CSV reader (Python's ``csv``,
  ``pandas.read_csv(sep="\\t")`` for TSV, spreadsheets) gets every text back exactly.

Order (:data:`BATCH_ORDERS`): ``input`` keeps the items in the input's order; ``doc`` groups them by document
(documents in the order they first appear in the input, items of a document in input order).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from precomet.errors import PrecometError
from precomet.io import jsonsafe

if TYPE_CHECKING:
    from precomet.campaign import Campaign

BATCH_FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv"}
"""Suffix -> format of an annotation batch."""
BATCH_ORDERS = ("input", "doc")
"""Orders of an annotation batch: the input's, or grouped by document."""


def batch_format(path: str | Path) -> str:
    """The format of a batch written to ``path``, from its suffix; another suffix raises naming the valid ones."""
    suffix = Path(path).suffix.lower()
    if suffix not in BATCH_FORMATS:
        raise PrecometError(
            f"annotation batch {path}: cannot tell its format from {suffix or 'no suffix'!r}; name it "
            f"{' or '.join('*' + s for s in BATCH_FORMATS)}"
        )
    return BATCH_FORMATS[suffix]


def batch_order(campaign: Campaign, indices: Sequence[int] | np.ndarray, order: str = "input") -> np.ndarray:
    """The item positions ``indices`` in batch ``order`` (see the module docstring)."""
    if order not in BATCH_ORDERS:
        raise PrecometError(f"unknown batch order {order!r}; choose one of {', '.join(BATCH_ORDERS)}")
    ordered = np.sort(np.asarray(indices, dtype=int))
    if order == "doc":
        first: dict[Any, int] = {}
        key = np.array([first.setdefault(doc, len(first)) for doc in campaign.doc[ordered]], dtype=int)
        ordered = ordered[np.argsort(key, kind="stable")]
    return ordered


def _systems(campaign: Campaign) -> list[str]:
    return [system for system in campaign.systems if system in campaign.outputs]


def batch_records(campaign: Campaign, indices: Sequence[int] | np.ndarray) -> Iterator[dict[str, Any]]:
    """One record per position of ``indices`` (in that order): id, doc, domain, src, ref (with references), tgt
    (with outputs; ``None`` = no output)."""
    systems = _systems(campaign)
    for i in indices:
        record: dict[str, Any] = {
            "id": campaign.ids[i],
            "doc": campaign.doc[i],
            "domain": campaign.domain[i],
            "src": campaign.src[i],
        }
        if campaign.ref is not None:
            record["ref"] = campaign.ref[i]
        if systems:
            record["tgt"] = {system: campaign.outputs[system][i] for system in systems}
        yield record


def write_batch(
    handle: IO[str], campaign: Campaign, indices: Sequence[int] | np.ndarray, *, format: str, order: str = "input"
) -> int:
    """Write the batch of the items at ``indices`` to ``handle`` (for CSV/TSV opened with ``newline=""``) in
    ``format`` (``jsonl``, ``csv``, ``tsv``) and ``order``; returns the number of items written."""
    if format not in BATCH_FORMATS.values():
        raise PrecometError(f"unknown batch format {format!r}; choose one of {', '.join(BATCH_FORMATS.values())}")
    ordered = batch_order(campaign, indices, order)
    records = batch_records(campaign, ordered)
    if format == "jsonl":
        jsonsafe.dump_lines(records, handle)
        return len(ordered)
    systems = _systems(campaign)
    header = ["id", "doc", "domain", "src"] + (["ref"] if campaign.ref is not None else [])
    writer = csv.writer(
        handle,
        delimiter="\t" if format == "tsv" else ",",
        quotechar='"',
        doublequote=True,
        quoting=csv.QUOTE_MINIMAL,
        lineterminator="\r\n",
    )
    writer.writerow(header + [f"tgt:{system}" for system in systems])
    for record in records:
        outputs = record.get("tgt", {})
        row = [record[key] for key in header] + [outputs[system] for system in systems]
        writer.writerow(["" if cell is None else str(cell) for cell in row])
    return len(ordered)
