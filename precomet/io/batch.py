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
  rows end in ``\\r\\n``; text is UTF-8 without a byte-order mark. Spreadsheet-safe: a text starting with
  ``= + - @``, a tab, a carriage return or ``'`` gets a leading ``'`` (:func:`precomet.io.text.spreadsheet_cell`),
  so a spreadsheet shows it as text instead of running it as a formula; precomet reads the ``.csv`` back exactly,
  other CSV readers see the ``'``. The ``.jsonl`` batch is the exact copy for other tools;
* ``.json`` (or ``--batch-format appraise``) — the batches file Appraise's ``StartNewCampaign --batches-json``
  imports (:func:`appraise_batches`): a JSON list of batches of at most :data:`APPRAISE_BATCH_SIZE` items, each
  ``{"items": [...], "task": {"batchNo", "batchSize", "randomSeed", "requiredAnnotations", "sourceLanguage",
  "targetLanguage"}}``; one item per chosen source and system output (``itemType`` ``TGT``, ``sourceText``,
  ``targetText``, ``targetID`` = the system, ``documentID`` = ``DOC#SYSTEM``, ``_item`` = ``SYSTEM | ID | DOC``
  as in WMT23's published batches), so it needs an input with outputs.

Order (:data:`BATCH_ORDERS`): ``input`` keeps the items in the input's order; ``doc`` groups them by document
(documents in the order they first appear in the input, items of a document in input order).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from precomet.errors import PrecometError
from precomet.io import jsonsafe
from precomet.io.text import spreadsheet_cell

if TYPE_CHECKING:
    from precomet.campaign import Campaign

BATCH_FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".tsv": "tsv", ".json": "appraise"}
"""Suffix -> format of an annotation batch."""
APPRAISE_BATCH_SIZE = 100
"""Items per Appraise batch (Appraise's usual HIT size)."""
ISO_639_3 = {
    "ar": "ara", "bn": "ben", "cs": "ces", "da": "dan", "de": "deu", "en": "eng", "es": "spa", "et": "est",
    "fi": "fin", "fr": "fra", "gu": "guj", "ha": "hau", "he": "heb", "hi": "hin", "hr": "hrv", "id": "ind",
    "is": "isl", "it": "ita", "ja": "jpn", "kk": "kaz", "km": "khm", "ko": "kor", "lt": "lit", "lv": "lav",
    "mr": "mar", "nl": "nld", "no": "nor", "pl": "pol", "ps": "pus", "pt": "por", "ro": "ron", "ru": "rus",
    "sr": "srp", "sv": "swe", "ta": "tam", "th": "tha", "tr": "tur", "uk": "ukr", "vi": "vie", "zh": "zho",
}  # fmt: skip
"""Two-letter language codes -> the three-letter ones of Appraise's batches (others are kept as given)."""
BATCH_ORDERS = ("input", "doc")
"""Orders of an annotation batch: the input's, or grouped by document."""


def batch_format(path: str | Path, given: str | None = None) -> str:
    """The format of a batch written to ``path``: ``given`` (one of :data:`BATCH_FORMATS`' values), else from the
    suffix; another suffix raises naming the valid ones."""
    if given is not None:
        if given not in BATCH_FORMATS.values():
            raise PrecometError(f"unknown batch format {given!r}; choose one of {', '.join(BATCH_FORMATS.values())}")
        return given
    suffix = Path(path).suffix.lower()
    if suffix not in BATCH_FORMATS:
        raise PrecometError(
            f"annotation batch {path}: cannot tell its format from {suffix or 'no suffix'!r}; name it "
            f"{' or '.join('*' + s for s in BATCH_FORMATS)}, or give --batch-format"
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
    if format == "appraise":
        batches = appraise_batches(campaign, ordered)
        json.dump(batches, handle, ensure_ascii=False, indent=2)
        handle.write("\n")
        return len(ordered)
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
        writer.writerow(["" if cell is None else spreadsheet_cell(str(cell)) for cell in row])
    return len(ordered)


def campaign_languages(name: str) -> tuple[str, str]:
    """``(source, target)`` language codes of a campaign named ``…/xx-yy`` (three-letter codes where known), else
    ``("und", "und")`` (undetermined, ISO 639-3)."""
    match = re.fullmatch(r"([a-z]{2,3})-([a-z]{2,3})", name.split("/")[-1].split(":")[-1])
    if not match:
        return "und", "und"
    return ISO_639_3.get(match[1], match[1]), ISO_639_3.get(match[2], match[2])


def appraise_batches(
    campaign: Campaign, ordered: Sequence[int] | np.ndarray, *, pool_ids: bool = False
) -> list[dict[str, Any]]:
    """The Appraise batches of the items at ``ordered`` (see the module docstring): every system output of each
    item, in item order, cut into batches of :data:`APPRAISE_BATCH_SIZE`. ``itemID`` numbers the batch's items
    1, 2, …; with ``pool_ids`` it is the item's position in ``campaign`` + 1 instead (the same item keeps its number
    in every batch, as WMT's segment ids do, so Appraise's exported scores map back to the items)."""
    systems = _systems(campaign)
    if not systems:
        raise PrecometError(
            "an Appraise batch pairs each source with a system's output, and this input has no outputs; write the"
            " batch as .jsonl, .csv or .tsv, or select on the campaign with its outputs"
        )
    empty = [campaign.ids[i] for i in ordered if all(campaign.outputs[system][i] is None for system in systems)]
    if empty:
        raise PrecometError(
            f"{len(empty)} chosen item(s) have no system output, e.g. {empty[0]!r}: an Appraise batch pairs each source"
            " with an output and would leave them out; write the batch as .jsonl, .csv or .tsv, or drop them from"
            " the input"
        )
    source, target = campaign_languages(campaign.name)
    items = [
        {
            "itemID": int(i) + 1,
            "itemType": "TGT",
            "sourceID": campaign.name,
            "sourceText": campaign.src[i],
            "targetID": system,
            "targetText": campaign.outputs[system][i],
            "documentID": f"{campaign.doc[i]}#{system}",
            "isCompleteDocument": False,
            "_item": f"{system} | {campaign.ids[i]} | {campaign.doc[i]}",
        }
        for i in ordered
        for system in systems
        if campaign.outputs[system][i] is not None
    ]
    batches = []
    for number, start in enumerate(range(0, len(items), APPRAISE_BATCH_SIZE), start=1):
        chunk = items[start : start + APPRAISE_BATCH_SIZE]
        for offset, item in enumerate(chunk):
            if not pool_ids:
                item["itemID"] = start + offset + 1
        task = {
            "batchNo": number,
            "batchSize": len(chunk),
            "randomSeed": 0,
            "requiredAnnotations": 1,
            "sourceLanguage": source,
            "targetLanguage": target,
        }
        batches.append({"items": chunk, "task": task})
    return batches


WAVE_CELL_COLUMNS = ("id", "doc", "domain", "src", "system", "tgt")
"""The columns of a wave's batch of cells (one row per item × system to judge)."""


def write_wave_cells(handle: IO[str], pool: Campaign, drawn: np.ndarray, systems: tuple[str, ...], fmt: str) -> None:
    """The ``drawn`` cells (``N × S`` over ``systems``; no systems: one row per item) of a wave as ``fmt``: ``jsonl``,
    ``csv``, ``tsv`` (spreadsheet-safe) or ``appraise`` (Appraise batches of the drawn outputs, numbered by pool
    position)."""
    if fmt == "appraise":
        only_drawn = replace(  # pools with a missing output are refused on loading: every system has its column
            pool,
            outputs={
                name: np.where(drawn[:, k], np.asarray(pool.outputs[name], dtype=object), np.array(None))
                for k, name in enumerate(systems)
            },
        )
        jsonsafe.dump(appraise_batches(only_drawn, np.flatnonzero(drawn.any(axis=1)), pool_ids=True), handle,
                      ensure_ascii=False, indent=2)  # fmt: skip
        handle.write("\n")
        return
    rows = []
    for i in np.flatnonzero(drawn.any(axis=1)):
        for system in [systems[s] for s in np.flatnonzero(drawn[i])] if systems else [None]:
            tgt = pool.outputs[system][i] if system is not None and system in pool.outputs else None
            rows.append(
                dict(zip(WAVE_CELL_COLUMNS, (pool.ids[i], pool.doc[i], pool.domain[i], pool.src[i], system, tgt)))
            )
    if fmt == "jsonl":
        jsonsafe.dump_lines(iter(rows), handle)
        return
    writer = csv.writer(handle, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\r\n")
    writer.writerow(WAVE_CELL_COLUMNS)
    for row in rows:
        writer.writerow(["" if row[k] is None else spreadsheet_cell(str(row[k])) for k in WAVE_CELL_COLUMNS])
