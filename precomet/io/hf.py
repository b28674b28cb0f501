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

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from precomet.campaign import Campaign
from precomet.errors import DataError, PrecometError
from precomet.io.atomic import atomic_write
from precomet.io.jsonl import campaign_from_items

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
        row["scores"] = {
            s: {k: row.get("scores", {}).get(s, {}).get(k) for k in campaign.score_names} for s in campaign.systems
        }
    return datasets.Dataset.from_list(rows)


def from_dataset(dataset: Iterable[Mapping[str, Any]], *, source: str = "dataset", name: str | None = None) -> Campaign:
    """Inverse of :func:`to_dataset`: any dataset (or iterable of rows) in the canonical item format."""
    return campaign_from_items((_drop_none(dict(row)) for row in dataset), source=source, name=name)


def load_parquet(path: str | Path, *, name: str | None = None) -> Campaign:
    """Load a Parquet file of canonical items."""
    import pyarrow.parquet as pq
    from pyarrow import ArrowException

    path = Path(path)
    try:
        rows = pq.read_table(path).to_pylist()
    except (ArrowException, OSError) as err:
        raise DataError(path, f"not a readable Parquet file ({err})") from None
    if not rows:
        raise DataError(path, "no items")
    return from_dataset(rows, source=str(path), name=name or path.stem)


def load_saved_dataset(path: str | Path, *, split: str | None = None) -> Campaign:
    """Load a ``save_to_disk`` directory: a ``Dataset``, or one split of a ``DatasetDict``."""
    import datasets

    path = Path(path)
    try:
        loaded = datasets.load_from_disk(str(path))
    except (OSError, ValueError, FileNotFoundError) as err:
        raise DataError(path, f"not a readable saved dataset ({err})") from None
    if isinstance(loaded, datasets.DatasetDict):
        if split is None:
            raise PrecometError(f"{path}: a saved DatasetDict needs a split as campaign; found {list(loaded)}")
        if split not in loaded:
            raise PrecometError(f"{path}: no split {split!r}; found {list(loaded)}")
        loaded, name = loaded[split], split
    elif split is not None:
        raise PrecometError(f"{path}: a saved Dataset holds a single campaign; campaign {split!r} does not apply")
    else:
        name = path.name
    if len(loaded) == 0:
        raise DataError(path, "no items")
    return from_dataset(loaded, source=str(path), name=name)


def list_splits(path: str | Path) -> list[str]:
    """The splits (campaign names) of a saved ``DatasetDict``."""
    import json

    path = Path(path)
    try:
        return list(json.loads((path / "dataset_dict.json").read_text(encoding="utf-8"))["splits"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(path / "dataset_dict.json", f"not a DatasetDict index ({err})") from None


def write_parquet(campaign: Campaign, path: str | Path) -> None:
    """Write the campaign as a Parquet file of canonical items (atomically)."""
    with atomic_write(path, "wb") as handle:
        to_dataset(campaign).to_parquet(handle)


def _drop_none(row: dict[str, Any]) -> dict[str, Any]:
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
