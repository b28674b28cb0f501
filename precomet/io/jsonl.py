"""Canonical JSONL items (subset2evaluate-compatible); the same items as Parquet or a saved ``datasets``
dataset are read by :mod:`precomet.io.hf`.

One JSON object per line::

    {"id": "wmt23/en-de/17", "src": "...", "ref": "...",
     "tgt": {"sysA": "...", "sysB": "..."},
     "scores": {"sysA": {"human": -1.0, "MetricX-23-c": -2.5}, "sysB": {...}},
     "cost": 41.2, "domain": "news", "doc": "aj-english.33941", "campaign": "wmt23/en-de"}

``i`` is accepted instead of ``id``; ``ref``, ``tgt``, ``scores``, ``cost``, ``domain``, ``doc`` are
optional (cost defaults to the length estimate, domain to ``all``, doc to the id).
"""

from __future__ import annotations

import difflib
import json
import logging
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precomet.campaign import Campaign
from precomet.errors import CampaignError, DataError
from precomet.io import jsonsafe
from precomet.io.text import parse_json, read_lines
from precomet.outputs.atomic import atomic_write
from precomet.values import finite_number, is_blank

logger = logging.getLogger(__name__)


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """The objects of a JSONL file one at a time (blank lines skipped, ``_line`` added); malformed lines raise
    naming file and line; a file that is one JSON document (an array of items, an object over several lines) is
    told so."""
    first = True
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = parse_json(line, path, line=number)
        except DataError:
            if first:
                _refuse_one_document(path)
            raise
        first = False
        if not isinstance(row, dict):
            got = "an array" if isinstance(row, list) else f"a {type(row).__name__}"
            raise DataError(path, f"expected a JSON object (one item per line), got {got}", line=number)
        row["_line"] = number
        yield row


def _refuse_one_document(path: str | Path) -> None:
    """Raise when the whole of ``path`` parses as one JSON array or object: JSON, not JSON Lines."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
        document = json.loads(text)
    except (OSError, ValueError, RecursionError):
        return  # not one document either: the line's own error stands
    if isinstance(document, dict) and sum(1 for line in text.splitlines() if line.strip()) <= 1:
        return  # an object on one line is a JSON Lines item: its line's own error (e.g. a repeated key) stands
    if isinstance(document, (list, dict)):
        kind, jq = ("an array", "'.[]'") if isinstance(document, list) else ("an object over several lines", ".")
        raise DataError(
            path,
            f"is one JSON document ({kind}), not JSON Lines: give one item object per line (e.g. jq -c {jq} {path})",
        )


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Parse a JSONL file into dicts (:func:`iter_jsonl`); a file without items raises."""
    rows = list(iter_jsonl(path))
    if not rows:
        raise DataError(path, "no items")
    return rows


@dataclass
class ItemIds:
    """What :func:`campaign_from_items` remembers of the ids of earlier chunks of one input, so that reading it in
    chunks refuses a repeated id, or items with and without ids, with the message of a single call."""

    first_at: dict[str, str] = field(default_factory=dict)  # id -> where it first appeared
    with_id: str | None = None  # where the first item with an id is
    without_id: str | None = None  # where the first item without an id is


def campaign_from_items(
    items: Iterable[Mapping[str, Any]],
    *,
    source: str = "items",
    name: str | None = None,
    start: int = 0,
    seen: ItemIds | None = None,
) -> Campaign:
    """Build a campaign from item dicts in the canonical format (``source`` names them in errors). For one chunk
    of a longer input, ``start`` is the position of its first item (default ids and ``source[position]`` count
    from it) and ``seen`` the :class:`ItemIds` shared by the chunks. A whole input (no ``seen``) whose items name
    more than one ``campaign`` is refused unless ``name`` is given: one input holds one campaign."""
    whole = seen is None
    items = list(items)
    where = [
        f"{source}:{item['_line']}" if "_line" in item else f"{source}[{start + position}]"
        for position, item in enumerate(items)
    ]
    seen = ItemIds() if seen is None else seen
    for place, item in zip(where, items):
        if "id" in item or "i" in item:
            seen.with_id = seen.with_id or place
        else:
            seen.without_id = seen.without_id or place
        if seen.with_id and seen.without_id:
            raise CampaignError(f"{seen.without_id}: item has no 'id' although {seen.with_id} and others have one")
    systems: dict[str, None] = {}
    score_names: dict[str, None] = {}
    for place, item in zip(where, items):
        for key in ("tgt", "scores"):
            if item.get(key) is not None and not isinstance(item[key], Mapping):
                raise CampaignError(
                    f"{place}: {key!r} must be an object {{system: …}}, got {type(item[key]).__name__} "
                    f"{_short(item[key])}"
                )
        for key in ("tgt", "scores"):
            for system, values in (item.get(key) or {}).items():
                if not str(system).strip():
                    raise CampaignError(f"{place}: {key!r} has an empty system name")
                if key == "scores" and isinstance(values, Mapping) and any(not str(k).strip() for k in values):
                    raise CampaignError(f"{place}: scores of system {system!r} have an empty score name")
        for system in item.get("tgt") or {}:
            systems[str(system)] = None
        for system, values in (item.get("scores") or {}).items():
            if values is not None and not isinstance(values, Mapping):
                raise CampaignError(
                    f"{place}: scores of system {system!r} must be an object {{score name: number}}, got "
                    f"{_short(values)}"
                )
            systems[str(system)] = None
            for score in values or {}:
                score_names[str(score)] = None
    n = len(items)
    system_list = list(systems)
    outputs: dict[str, list[str | None]] = (
        {s: [None] * n for s in system_list} if any(item.get("tgt") for item in items) else {}
    )
    scores = {k: [[math.nan] * len(system_list) for _ in range(n)] for k in score_names}
    column = {s: j for j, s in enumerate(system_list)}
    ids, src, refs, docs, domains, costs = [], [], [], [], [], []
    first_line = seen.first_at
    for position, (place, item) in enumerate(zip(where, items)):
        item_id = item.get("id", item.get("i", start + position))
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)):
            raise CampaignError(f"{place}: 'id' must be a string or an integer, got {_short(item_id)}")
        if str(item_id) in first_line:
            raise CampaignError(f"{place}: duplicate item id {str(item_id)!r} (first at {first_line[str(item_id)]})")
        first_line[str(item_id)] = place
        if "src" not in item:
            raise CampaignError(f"{place}: item {item_id!r} has no 'src'")
        if isinstance(item_id, str) and not item_id.strip():
            raise CampaignError(f"{place}: 'id' is empty")
        for key in ("src", "ref", "doc", "domain", "campaign"):
            value = item.get(key)
            if value is not None and not isinstance(value, str):
                raise CampaignError(f"{place}: item {item_id!r}: {key!r} must be a string, got {_short(value)}")
        if item["src"] is None or is_blank(item["src"]):
            raise CampaignError(f"{place}: item {item_id!r}: empty source 'src'")
        ids.append(item_id)
        src.append(item["src"])
        refs.append(item.get("ref"))
        docs.append(item.get("doc", item_id))
        domains.append(item.get("domain", "all"))
        cost = item.get("cost")
        costs.append(
            None
            if cost is None
            else finite_number(cost, what=f"{place}: item {item_id!r}, field 'cost'", positive=True, text=False)
        )
        for system, text in (item.get("tgt") or {}).items():
            if text is not None and not isinstance(text, str):
                raise CampaignError(
                    f"{place}: item {item_id!r}, system {system!r}: output 'tgt' must be a string, got {_short(text)}"
                )
            outputs[str(system)][position] = text
        for system, values in (item.get("scores") or {}).items():
            j = column[str(system)]
            for score, value in (values or {}).items():
                if value is None:
                    continue
                if type(value) is not float or not math.isfinite(value):  # JSON floats skip building the message
                    value = finite_number(
                        value, what=f"{place}: item {item_id!r}, system {system!r}, score {score!r}", text=False
                    )
                scores[str(score)][position][j] = value
    campaign_names: set[Any] = {item.get("campaign") for item in items if item.get("campaign")}
    if whole and name is None and len(campaign_names) > 1:
        listed = sorted(map(str, campaign_names))
        shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
        raise DataError(
            source,
            f"its items name {len(listed)} campaigns ({shown}); an input holds one campaign: split it by the"
            " 'campaign' field",
        )
    if whole:
        _warn_unknown_keys(items, source)
    unlabelled = sum("domain" not in item for item in items)
    if whole and 0 < unlabelled < len(items):
        logger.warning(
            "%s: %d of %d items have no 'domain' and form the domain 'all' (--balance domain gives it its own share)",
            source,
            unlabelled,
            len(items),
        )
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
        lp=_one_value(items, "lp"),
        protocol=_one_value(items, "protocol"),
    )


ITEM_KEYS = ("id", "i", "src", "ref", "tgt", "scores", "cost", "domain", "doc", "campaign", "lp", "protocol")
"""The keys of a canonical item (docs/formats.md); others are ignored, with a warning."""


def _warn_unknown_keys(items: Sequence[Mapping[str, Any]], source: str) -> None:
    """One warning naming the keys no canonical item has (e.g. ``score`` for ``scores``), with the nearest known."""
    unknown = Counter(key for item in items for key in item if key not in ITEM_KEYS and key != "_line")
    if unknown:
        named = ", ".join(
            f"{key!r} ({count} item(s)"
            + "".join(f"; did you mean {near!r}?" for near in difflib.get_close_matches(key, ITEM_KEYS, n=1))
            + ")"
            for key, count in sorted(unknown.items())
        )
        logger.warning(
            "%s: key(s) %s are not item fields and are ignored (fields: %s)", source, named, ", ".join(ITEM_KEYS)
        )


def _one_value(items: Sequence[Mapping[str, Any]], key: str) -> str | None:
    """The one ``key`` value the items share (language pair, protocol), else ``None``."""
    values = {str(item[key]) for item in items if item.get(key)}
    return values.pop() if len(values) == 1 else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_jsonl(path: str | Path, *, name: str | None = None) -> Campaign:
    """Load a canonical JSONL file."""
    return campaign_from_items(read_jsonl(path), source=str(path), name=name)


def write_jsonl(campaign: Campaign, path: str | Path) -> None:
    """Write the campaign as canonical JSONL (atomically)."""
    with atomic_write(path) as handle:
        jsonsafe.dump_lines(campaign.iter_items(), handle)
