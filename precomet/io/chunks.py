"""Sources of a large pool, chunk by chunk: ``(ids, sources)`` of at most ``chunk_size`` items at a time.

* Plain text (``.txt``, or ``text=True``): the file's lines are read and checked as by
  :mod:`precomet.io.plaintext` (ids = 1-based line numbers, a blank line refused naming it), then handed out
  in chunks.
* JSONL: the file's lines are read, then parsed and checked chunk by chunk.
* Parquet: row batches (``pyarrow`` ``iter_batches``); a saved ``datasets`` Dataset or DatasetDict split:
  slices of its memory-mapped Arrow files.

JSONL, Parquet and saved-dataset chunks go through :func:`~precomet.io.jsonl.campaign_from_items` with the
position of their first item and the ids seen so far, so every item is checked as by :func:`precomet.io.load`
and errors read the same (a repeated id names where it first appeared, however many chunks earlier). The
ids seen are kept (a few dozen bytes each); parsed items and their systems' outputs and scores are not.
Every other format (mt-metrics-eval, WMT releases, ESA, TSV, CSV, pickles, registered formats) is loaded
whole with :func:`precomet.io.load` and then handed out in chunks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from precomet.errors import DataError, PrecometError
from precomet.io import check_campaign_name, detect_format, load
from precomet.io.hf import drop_none, iter_parquet, iter_saved_dataset, saved_dataset_folder
from precomet.io.jsonl import ItemIds, campaign_from_items, iter_jsonl
from precomet.io.plaintext import read_text_sources

Chunk = tuple[list[str], list[str]]
"""``(ids, sources)`` of consecutive items."""


def iter_source_chunks(
    path: str | Path, *, chunk_size: int, text: bool = False, campaign: str | None = None
) -> Iterator[Chunk]:
    """``(ids, sources)`` of the items of ``path`` in input order, ``chunk_size`` at a time (see the module
    docstring); ids are text. ``text`` and ``campaign`` mean what they mean to :func:`precomet.io.load`."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise PrecometError(f"chunk_size must be a positive integer, got {chunk_size!r}", param="chunk_size")
    path = Path(path)
    kind = detect_format(path, text=text)
    check_campaign_name(path, kind, campaign)
    if kind == "text":
        sources = read_text_sources(path)
        ids = [str(number) for number in range(1, len(sources) + 1)]
        yield from _slices(ids, sources, chunk_size)
    elif kind == "jsonl":
        yield from _checked(_jsonl_rows(path, chunk_size), source=path)
    elif kind == "parquet":
        yield from _checked(_arrow(iter_parquet(path, chunk_size=chunk_size)), source=path)
    elif kind in ("hf-dataset", "hf-dataset-dict"):
        folder, _ = saved_dataset_folder(path, campaign)
        yield from _checked(_arrow(iter_saved_dataset(folder, chunk_size=chunk_size)), source=folder)
    else:
        loaded = load(path, campaign=campaign, complete=False, text=text)
        yield from _slices([str(i) for i in loaded.ids], list(loaded.src), chunk_size)


def _slices(ids: list[str], sources: list[str], chunk_size: int) -> Iterator[Chunk]:
    for start in range(0, len(ids), chunk_size):
        yield ids[start : start + chunk_size], sources[start : start + chunk_size]


def _jsonl_rows(path: Path, chunk_size: int) -> Iterator[list[dict[str, Any]]]:
    """The objects of a JSONL file (:func:`~precomet.io.jsonl.iter_jsonl`), ``chunk_size`` at a time."""
    rows: list[dict[str, Any]] = []
    for row in iter_jsonl(path):
        rows.append(row)
        if len(rows) == chunk_size:
            yield rows
            rows = []
    yield rows


def _arrow(chunks: Iterable[list[dict[str, Any]]]) -> Iterator[list[dict[str, Any]]]:
    """Arrow rows with their ``None`` placeholders removed, as :func:`~precomet.io.hf.from_dataset` reads them."""
    for rows in chunks:
        yield [drop_none(row) for row in rows]


def _checked(chunks: Iterable[list[dict[str, Any]]], *, source: Path) -> Iterator[Chunk]:
    """Each chunk of canonical items checked as one call of :func:`campaign_from_items` over all of them would."""
    seen, start = ItemIds(), 0
    for items in chunks:
        if not items:
            continue
        checked = campaign_from_items(items, source=str(source), start=start, seen=seen)
        yield [str(i) for i in checked.ids], list(checked.src)
        start += len(items)
    if not start:
        raise DataError(source, "no items")
