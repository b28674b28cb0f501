"""Utility files: a JSONL whose first line is ``{"signature": {...}}`` followed by one
``{"id": ..., "utility": ...}`` line per item in campaign order (``null`` = not computable)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import DataError
from precomet.io.atomic import atomic_write


def utility_signature(
    campaign: Campaign,
    *,
    method: str,
    score: str | None,
    systems: Sequence[str] | None,
    budget: int | None,
    seed: int,
    options: Mapping[str, Any],
) -> dict[str, Any]:
    """Method, parameters, data hash, seed and precomet version of a utility computation."""
    from precomet import __version__

    return {
        "method": method, "score": score, "systems": None if systems is None else list(systems), "budget": budget,
        "seed": seed, "options": {k: _jsonable(v) for k, v in options.items()}, "campaign": campaign.name,
        "n_items": len(campaign), "data_hash": campaign.data_hash(), "precomet_version": __version__,
    }


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def write_utilities(path: str | Path, ids: Sequence[str], values: np.ndarray, signature: Mapping[str, Any]) -> None:
    """Write the signature line and one line per item, atomically."""
    with atomic_write(path) as handle:
        handle.write(json.dumps({"signature": dict(signature)}, ensure_ascii=False) + "\n")
        for item_id, value in zip(ids, values):
            value = None if math.isnan(value) else float(value)
            handle.write(json.dumps({"id": item_id, "utility": value}, ensure_ascii=False) + "\n")


def read_utilities(path: str | Path) -> tuple[list[str], np.ndarray, dict[str, Any]]:
    """Ids, utilities (NaN for ``null``) and signature of a file written by :func:`write_utilities`."""
    path = Path(path)
    ids, values, signature = [], [], {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise DataError(path, f"cannot read ({err.strerror})") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(path, f"invalid JSON ({err.msg})", line=number) from None
        if number == 1 and "signature" in row:
            signature = row["signature"]
            continue
        if "id" not in row or "utility" not in row:
            raise DataError(path, "expected keys 'id' and 'utility'", line=number)
        ids.append(str(row["id"]))
        values.append(np.nan if row["utility"] is None else float(row["utility"]))
    return ids, np.array(values, dtype=float), signature
