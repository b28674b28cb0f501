"""Canonical JSONL items (subset2evaluate-compatible) and ``datasets.Dataset`` round trips.

One JSON object per line::

    {"id": "wmt23/en-de/17", "src": "...", "ref": "...",
     "tgt": {"sysA": "...", "sysB": "..."},
     "scores": {"sysA": {"human": -1.0, "MetricX-23-c": -2.5}, "sysB": {...}},
     "cost": 41.2, "domain": "news", "doc": "aj-english.33941", "campaign": "wmt23/en-de"}

``i`` is accepted instead of ``id``; ``ref``, ``tgt``, ``scores``, ``cost``, ``domain``, ``doc`` are
optional (cost defaults to the length estimate, domain to ``all``, doc to the id).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from precomet.campaign import Campaign
from precomet.errors import CampaignError, DataError
from precomet.io.atomic import atomic_write
from precomet.io.text import read_lines


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Parse a JSONL file into dicts; malformed lines raise naming file and line."""
    rows = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(path, f"invalid JSON ({err.msg})", line=number) from None
        if not isinstance(row, dict):
            raise DataError(path, "expected a JSON object", line=number)
        row["_line"] = number
        rows.append(row)
    if not rows:
        raise DataError(path, "no items")
    return rows


def campaign_from_items(items: Iterable[Mapping[str, Any]], *, source: str = "items", name: str | None = None) -> Campaign:
    """Build a campaign from item dicts in the canonical format (``source`` names them in errors)."""
    items = list(items)
    systems: dict[str, None] = {}
    score_names: dict[str, None] = {}
    for item in items:
        for system in (item.get("tgt") or {}):
            systems[str(system)] = None
        for system, values in (item.get("scores") or {}).items():
            systems[str(system)] = None
            for score in (values or {}):
                score_names[str(score)] = None
    n = len(items)
    system_list = list(systems)
    outputs = {s: [None] * n for s in system_list} if any(item.get("tgt") for item in items) else {}
    scores = {k: [[math.nan] * len(system_list) for _ in range(n)] for k in score_names}
    column = {s: j for j, s in enumerate(system_list)}
    ids, src, refs, docs, domains, costs = [], [], [], [], [], []
    for position, item in enumerate(items):
        where = f"{source}:{item['_line']}" if "_line" in item else f"{source}[{position}]"
        item_id = item.get("id", item.get("i", position))
        if "src" not in item:
            raise CampaignError(f"{where}: item {item_id!r} has no 'src'")
        ids.append(item_id)
        src.append(item["src"])
        refs.append(item.get("ref"))
        docs.append(item.get("doc", item_id))
        domains.append(item.get("domain", "all"))
        costs.append(item.get("cost"))
        for system, text in (item.get("tgt") or {}).items():
            outputs[str(system)][position] = text
        for system, values in (item.get("scores") or {}).items():
            for score, value in (values or {}).items():
                if value is None:
                    continue
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise CampaignError(
                        f"{where}: item {item_id!r}, system {system!r}, score {score!r}: expected a number, got {value!r}"
                    )
                scores[str(score)][position][column[str(system)]] = float(value)
    for position, cost in enumerate(costs):
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
            raise CampaignError(f"{source}: item {ids[position]!r}: cost must be a number, got {cost!r}")
    campaign_names = {item.get("campaign") for item in items if item.get("campaign")}
    return Campaign.build(
        ids=ids,
        src=src,
        systems=system_list,
        outputs=outputs,
        scores=scores,
        ref=refs if any(r is not None for r in refs) else None,
        doc=docs,
        domain=domains,
        cost=costs,
        name=name or (campaign_names.pop() if len(campaign_names) == 1 else Path(str(source)).stem),
    )


def load_jsonl(path: str | Path, *, name: str | None = None) -> Campaign:
    """Load a canonical JSONL file."""
    return campaign_from_items(read_jsonl(path), source=str(path), name=name)


def write_jsonl(campaign: Campaign, path: str | Path) -> None:
    """Write the campaign as canonical JSONL (atomically)."""
    with atomic_write(path) as handle:
        for item in campaign.iter_items():
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")


def to_dataset(campaign: Campaign):
    """The campaign as a ``datasets.Dataset`` with one row per item (canonical item fields)."""
    import datasets

    rows = list(campaign.iter_items())
    for row in rows:  # Arrow structs need every key on every row: missing scores become None
        row["scores"] = {
            s: {k: row.get("scores", {}).get(s, {}).get(k) for k in campaign.score_names} for s in campaign.systems
        }
    return datasets.Dataset.from_list(rows)


def from_dataset(dataset, *, name: str | None = None) -> Campaign:
    """Inverse of :func:`to_dataset` (any dataset whose rows follow the canonical item format)."""
    return campaign_from_items((dict(row) for row in dataset), source="dataset", name=name)
