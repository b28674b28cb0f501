"""Hugging Face ``datasets`` inputs and outputs: a campaign as rows in the canonical item format.

Inputs :func:`precomet.io.load` reads from here:

* a Parquet file (``*.parquet``) with one row per item;
* a directory written by ``Dataset.save_to_disk`` (``state.json`` + ``dataset_info.json``);
* a directory written by ``DatasetDict.save_to_disk`` (``dataset_dict.json``): each split is one campaign,
  chosen with ``campaign=`` (``--campaign``).

Rows follow the canonical item format of :mod:`precomet.io.jsonl` (``id``, ``src``, ``tgt``, ``scores`` …);
``None`` stands for a missing value (Arrow needs every key on every row). Loading never touches the network
and writes no cache.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from precomet.campaign import Campaign
from precomet.errors import DataError, PrecometError
from precomet.io.jsonl import campaign_from_items
from precomet.io.text import read_bytes, read_json, safe_name
from precomet.outputs.atomic import atomic_write

PARQUET_SUFFIX = ".parquet"


def is_saved_dataset(path: Path) -> bool:
    """``path`` was written by ``Dataset.save_to_disk``."""
    return (path / "state.json").is_file() and (path / "dataset_info.json").is_file()


def is_saved_dataset_dict(path: Path) -> bool:
    """``path`` was written by ``DatasetDict.save_to_disk`` (one subdirectory per split)."""
    return (path / "dataset_dict.json").is_file()


def to_dataset(campaign: Campaign):
    """The campaign as a ``datasets.Dataset`` with one row per item (canonical item fields)."""
    import datasets

    rows = list(campaign.iter_items())
    for row in rows:  # Arrow structs need every key on every row: missing scores become None
        given = row.pop("scores", {})
        if campaign.systems and campaign.score_names:  # Parquet has no struct without fields (sources only)
            row["scores"] = {s: {k: given.get(s, {}).get(k) for k in campaign.score_names} for s in campaign.systems}
    return datasets.Dataset.from_list(rows)


def from_dataset(dataset: Iterable[Mapping[str, Any]], *, source: str = "dataset", name: str | None = None) -> Campaign:
    """Inverse of :func:`to_dataset`: any dataset (or iterable of rows) in the canonical item format."""
    return campaign_from_items((drop_none(dict(row)) for row in dataset), source=source, name=name)


def load_parquet(path: str | Path, *, name: str | None = None) -> Campaign:
    """Load a Parquet file of canonical items."""
    path = Path(path)
    rows = next(iter_parquet(path, chunk_size=None))
    if not rows:
        raise DataError(path, "no items")
    return from_dataset(rows, source=str(path), name=name)  # the items' campaign, else the file's stem


def iter_parquet(path: Path, *, chunk_size: int | None) -> Iterator[list[dict[str, Any]]]:
    """The rows of a Parquet file in chunks of ``chunk_size`` rows (all in one with ``None``; at least one,
    maybe empty, chunk)."""
    import pyarrow.parquet as pq
    from pyarrow import ArrowException

    if not path.is_file():
        raise DataError(path, "no such file" if not path.exists() else "is not a regular file")
    try:
        if chunk_size is None:
            yield pq.read_table(path).to_pylist()
            return
        empty = True
        for batch in pq.ParquetFile(path).iter_batches(batch_size=chunk_size):
            empty = False
            yield batch.to_pylist()
        if empty:
            yield []
    except (ArrowException, OSError, ValueError, TypeError) as err:
        raise DataError(path, f"not a readable Parquet file ({err})") from None


_STATE_KEYS: dict[str, tuple[type, ...]] = {
    "_data_files": (list,),
    "_fingerprint": (str,),
    "_format_columns": (list, type(None)),
    "_format_kwargs": (dict,),
    "_format_type": (str, type(None)),
    "_output_all_columns": (bool,),
    "_split": (str, type(None)),
}
"""The keys ``datasets`` reads from a saved Dataset's ``state.json`` and the JSON types it needs."""


def _check_saved_dataset(path: Path) -> None:
    """Refuse a ``save_to_disk`` directory whose ``state.json`` or ``dataset_info.json`` is broken, naming the
    file and the key, before ``datasets`` reads it (it would raise a bare ``KeyError``/``TypeError``)."""
    state_path, info_path = path / "state.json", path / "dataset_info.json"
    for json_path in (state_path, info_path):
        if read_bytes(json_path).startswith(codecs.BOM_UTF8):
            raise DataError(
                json_path, "starts with a UTF-8 byte-order mark, which datasets cannot read; save it without"
            )
    state = read_json(state_path)
    if not isinstance(state, dict):
        raise DataError(state_path, f"expected a JSON object (a saved Dataset's state), got {type(state).__name__}")
    for key, types in _STATE_KEYS.items():
        if key not in state:
            raise DataError(state_path, f"missing key {key!r}; not a saved Dataset's state")
        if not isinstance(state[key], types):
            raise DataError(state_path, f"key {key!r} has a JSON value of the wrong type: {state[key]!r:.60}")
    if not state["_data_files"]:
        raise DataError(state_path, "'_data_files' lists no data file")
    for position, entry in enumerate(state["_data_files"]):
        name = entry.get("filename") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise DataError(state_path, f"'_data_files'[{position}] must be an object with a 'filename' text")
        safe_name(name, what=f"'_data_files'[{position}] filename", path=state_path)
        if not (path / name).is_file():
            raise DataError(state_path, f"'_data_files'[{position}] names {name!r}, which is not a file in {path}")
    info = read_json(info_path)
    if not isinstance(info, dict):
        raise DataError(info_path, f"expected a JSON object (a DatasetInfo), got {type(info).__name__}")
    import datasets

    try:
        datasets.DatasetInfo.from_dict(info)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as err:
        raise DataError(info_path, f"not a readable DatasetInfo ({type(err).__name__}: {err})") from None


def _read_saved_dataset(path: Path) -> list[dict[str, Any]]:
    """The rows of one ``Dataset.save_to_disk`` directory (checked by :func:`_check_saved_dataset` first)."""
    return next(iter_saved_dataset(path, chunk_size=None))


def iter_saved_dataset(path: Path, *, chunk_size: int | None) -> Iterator[list[dict[str, Any]]]:
    """The rows of one ``Dataset.save_to_disk`` directory (checked by :func:`_check_saved_dataset` first), in
    chunks of ``chunk_size`` rows read from the memory-mapped Arrow files (all in one with ``None``)."""
    import datasets
    from pyarrow import ArrowException

    if not is_saved_dataset(path):
        raise DataError(path, "not a saved Dataset (needs state.json and dataset_info.json)")
    _check_saved_dataset(path)
    try:
        dataset = datasets.Dataset.load_from_disk(str(path))
        step = chunk_size or max(len(dataset), 1)
        for start in range(0, max(len(dataset), 1), step):
            yield dataset.select(range(start, min(start + step, len(dataset)))).to_list()
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError, ArrowException) as err:
        raise DataError(path, f"not a readable saved dataset ({type(err).__name__}: {err})") from None


def saved_dataset_folder(path: str | Path, split: str | None) -> tuple[Path, str]:
    """``(folder, campaign name)`` of a ``save_to_disk`` directory: a ``Dataset``, or the ``split`` of a
    ``DatasetDict``."""
    path = Path(path)
    if is_saved_dataset_dict(path):
        splits = list_splits(path)
        if split is None:
            raise PrecometError(f"{path}: a saved DatasetDict needs a split as campaign; found {splits}")
        if split not in splits:
            raise PrecometError(f"{path}: no split {split!r}; found {splits}")
        folder, name = path / split, split
    elif split is not None:
        raise PrecometError(f"{path}: a saved Dataset holds a single campaign; campaign {split!r} does not apply")
    else:
        folder, name = path, path.name
    return folder, name


def load_saved_dataset(path: str | Path, *, split: str | None = None) -> Campaign:
    """Load a ``save_to_disk`` directory: a ``Dataset``, or one split of a ``DatasetDict``."""
    folder, name = saved_dataset_folder(path, split)
    rows = _read_saved_dataset(folder)
    if not rows:
        raise DataError(folder, "no items")
    return from_dataset(rows, source=str(folder), name=name)


def list_splits(path: str | Path) -> list[str]:
    """The splits (campaign names) of a saved ``DatasetDict``; each must be a subdirectory of ``path``."""
    index = Path(path) / "dataset_dict.json"
    content = read_json(index)
    splits = content.get("splits") if isinstance(content, dict) else None
    if not isinstance(splits, list) or not all(isinstance(name, str) for name in splits):
        raise DataError(index, 'not a DatasetDict index: expected {"splits": [names]}')
    for name in splits:
        safe_name(name, what="split", path=index)
    return list(splits)


def write_parquet(campaign: Campaign, path: str | Path) -> None:
    """Write the campaign as a Parquet file of canonical items (atomically)."""
    with atomic_write(path, "wb") as handle:
        to_dataset(campaign).to_parquet(handle)


def drop_none(row: dict[str, Any]) -> dict[str, Any]:
    """Arrow's ``None`` placeholders back to absent keys (top level and per-system scores)."""
    row = {key: value for key, value in row.items() if value is not None}
    if isinstance(row.get("scores"), Mapping):
        row["scores"] = {
            system: {k: v for k, v in values.items() if v is not None} if isinstance(values, Mapping) else values
            for system, values in row["scores"].items()
        }
    if isinstance(row.get("tgt"), Mapping):
        row["tgt"] = {system: text for system, text in row["tgt"].items() if text is not None}
    return row
