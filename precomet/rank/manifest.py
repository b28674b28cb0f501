"""The subset manifest ``precomet select`` writes, read into a ranking's signature and checked against it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from precomet.errors import PrecometError
from precomet.io.text import decode, parse_json, read_bytes


def read_manifest(path: str | Path) -> dict[str, Any]:
    """How a subset was selected: the manifest ``precomet select`` writes beside a subset, summarised for a
    ranking's signature (method, parameters, budget, size, solver outcome, data hash, version, file hash)."""
    path = Path(path)

    raw = read_bytes(path)
    manifest = parse_json(decode(raw, path), path)
    if not isinstance(manifest, dict) or "method" not in manifest:
        raise PrecometError(f"{path}: not a precomet subset manifest (expected a JSON object with 'method')")
    keys = (
        "method",
        "parameters",
        "level",
        "budget",
        "n_selected",
        "total_cost",
        "solver",
        "status",
        "gap",
        "data_hash",
        "sources_hash",
        "ids_hash",
        "seed",
        "precomet_version",
    )
    return {"file": str(path), "sha256": hashlib.sha256(raw).hexdigest()[:16], **{k: manifest.get(k) for k in keys}}


def check_manifest(ranking_items: int, manifest: Mapping[str, Any]) -> str | None:
    """A warning when the ranked items are not the selected subset's size (``None`` when they match)."""
    selected = manifest.get("n_selected")
    if isinstance(selected, int) and selected != ranking_items:
        return f"the manifest selected {selected} items but {ranking_items} rated items were ranked"
    return None
