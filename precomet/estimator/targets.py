"""Training targets: one output-based utility per item of each historical campaign, normalised per
campaign, as rows ``{"src", "target", "campaign", "doc", "domain", "lp", "id", "method"}``.

Normalisation is **per campaign** because utility scales differ between campaigns (number of systems,
human protocol, score range): ``zscore`` subtracts the campaign mean and divides by its standard
deviation; ``rank`` maps to the average rank scaled to [0, 1] (ties averaged); ``none`` keeps raw values.
Higher target = annotate first, always (the utilities' convention).

A source that occurs in several campaigns (within a WMT year every ``en-*`` pair translates the same
English lines) becomes one row with :func:`merge_by_source`: the mean of its per-campaign normalised
targets, with ``count`` and ``campaigns`` kept. Sources are compared after
:func:`~precomet.estimator.leakage.normalise_source`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.estimator.leakage import NEAR, NearDuplicates, drop_sources, normalise_source
from precomet.io import jsonsafe
from precomet.io.jsonl import read_jsonl
from precomet.outputs.atomic import atomic_write
from precomet.progress import progress as progress_bar
from precomet.stats import mean_std, rankdata, standardise
from precomet.utilities import UTILITY_METHODS, compute_utility
from precomet.values import finite_number, is_blank

logger = logging.getLogger(__name__)

REQUIRED = ("src", "target", "campaign", "doc", "id")


def _zscore(values: np.ndarray) -> np.ndarray:
    mean, std = mean_std(values)
    return standardise(values, mean, std) if std > 0 else np.zeros_like(values)


def _rank(values: np.ndarray) -> np.ndarray:
    return (rankdata(values) - 1) / max(len(values) - 1, 1)


NORMALISERS = {"zscore": _zscore, "rank": _rank, "none": lambda values: values.astype(float)}


def normalise_targets(values: Sequence[float] | np.ndarray, how: str) -> np.ndarray:
    """Apply one of :data:`NORMALISERS` to one campaign's utilities (returns a new array). Not
    :func:`precomet.selection.units.normalise`, which scales utilities for the knapsack objective."""
    if how not in NORMALISERS:
        raise PrecometError(f"unknown normalisation {how!r}; valid: {', '.join(NORMALISERS)}")
    return NORMALISERS[how](np.asarray(values, dtype=float))


def raw_targets(campaign: Campaign, method: str, *, metric: str, seed: int, options: dict | None = None) -> np.ndarray:
    """One campaign's targets before normalisation: the output-based utility of every item as floats
    (:func:`precomet.utilities.compute_utility`)."""
    return np.asarray(compute_utility(campaign, method, metric=metric, seed=seed, options=options), dtype=float)


def build_targets(
    campaigns: Iterable[Campaign],
    *,
    method: str,
    metric: str = HUMAN,
    normalisation: str = "zscore",
    seed: int = 0,
    options: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """Target rows for every item of every campaign (campaign names must be distinct); ``options`` are the
    utility method's own settings (e.g. ``{"similarity": "chrf"}`` for diversity). One row per item and
    campaign: merge repeated sources with :func:`merge_by_source`. Items without a utility (``{"missing":
    "exclude"}``, or a sparse utility's unscored items) get no row."""
    if normalisation not in NORMALISERS:
        raise PrecometError(f"unknown normalisation {normalisation!r}; valid: {', '.join(NORMALISERS)}")
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    campaigns = list(campaigns)
    for campaign in progress_bar(campaigns, desc=f"targets ({method})", unit="campaign", enabled=progress):
        if campaign.name in seen:
            raise PrecometError(f"campaign name {campaign.name!r} given twice; targets are grouped by campaign name")
        seen.add(campaign.name)
        raw = raw_targets(campaign, method, metric=metric, seed=seed, options=options)
        if raw.shape != (len(campaign),):
            raise PrecometError(
                f"utility {method!r} on {campaign.name!r}: expected {len(campaign)} values, got {raw.shape}"
            )
        sparse = method in UTILITY_METHODS and UTILITY_METHODS[method].sparse
        excluding = sparse or (options or {}).get("missing") == "exclude"
        unscored = np.isnan(raw) if excluding else np.zeros(len(raw), dtype=bool)
        if unscored.any():  # items without a scored cell (sparse) or left out for a missing score: no target
            logger.info("%s: %d item(s) without a utility get no target", campaign.name, int(unscored.sum()))
            campaign, raw = campaign.take(np.flatnonzero(~unscored)), raw[~unscored]
        bad = np.flatnonzero(~np.isfinite(raw))
        if len(bad):
            raise PrecometError(
                f"utility {method!r} on campaign {campaign.name!r}: non-finite value for item {campaign.ids[bad[0]]!r}"
                f" ({len(bad)} item(s))"
            )
        if normalisation != "none" and len(raw) > 1 and np.ptp(raw) == 0:
            logger.warning(
                "%s: every item has the same %s utility (%g): its targets are all %s and teach nothing",
                campaign.name,
                method,
                raw[0],
                "0" if normalisation == "zscore" else "tied",
            )
        values = normalise_targets(raw, normalisation)
        for i in range(len(campaign)):
            rows.append(
                {
                    "src": campaign.src[i],
                    "target": float(values[i]),
                    "campaign": campaign.name,
                    "doc": campaign.doc[i],
                    "domain": campaign.domain[i],
                    "lp": campaign.lp,
                    "id": campaign.ids[i],
                    "method": method,
                    "normalisation": normalisation,
                }
            )
        logger.info("%s: %d targets (%s, %s)", campaign.name, len(campaign), method, normalisation)
    if not rows:
        raise PrecometError("no campaigns given")
    return rows


def exclude_campaigns(campaigns: Sequence[Campaign], patterns: Sequence[str]) -> tuple[list[Campaign], list[Campaign]]:
    """``(kept, left_out)``: the campaigns whose name matches one of the glob ``patterns`` are left out (their
    sources are then dropped from the kept ones' targets). A pattern that matches nothing, or leaving out every
    campaign, is refused."""
    excluded = {p: [c for c in campaigns if fnmatch.fnmatchcase(c.name, p)] for p in patterns}
    unmatched = [p for p, hits in excluded.items() if not hits]
    if unmatched:
        raise PrecometError(
            f"{{exclude}}{unmatched[0]!r} matches no input campaign; inputs: {[c.name for c in campaigns]}",
            param="exclude",
        )
    left_out = {c.name: c for hits in excluded.values() for c in hits}
    kept = [c for c in campaigns if c.name not in left_out]
    if not kept:
        raise PrecometError("every input campaign was excluded")
    return kept, list(left_out.values())


def merge_by_source(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per normalised source text: the mean target of its rows, ``count`` (how many campaign rows
    were merged) and ``campaigns``; other fields come from its first row. Input order of first occurrences
    is kept."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(normalise_source(row["src"]), []).append(row)
    merged = []
    for group in groups.values():
        first = group[0]
        merged.append(
            {
                **first,
                "target": float(np.mean([r["target"] for r in group])),
                "count": len(group),
                "campaigns": sorted({r["campaign"] for r in group}),
                "lp": first.get("lp") if len({r.get("lp") for r in group}) == 1 else None,
            }
        )
    return merged


def validate_rows(rows: Sequence[dict[str, Any]], *, where: str = "targets") -> list[dict[str, Any]]:
    """Check required fields, text ids and sources, finite targets and one row per (campaign, id); the error names
    the row and field."""
    if not rows:
        raise PrecometError(f"{where}: no target rows")
    first: dict[tuple[str, str], str] = {}
    for position, row in enumerate(rows):
        at = f"{where}:{row['_line']}" if "_line" in row else f"{where}[{position}]"
        missing = [k for k in REQUIRED if k not in row]
        if missing:
            raise PrecometError(f"{at}: row {row.get('id')!r} lacks field(s) {missing}")
        for field in ("id", "campaign"):
            if isinstance(row[field], bool) or not isinstance(row[field], (str, int)):
                raise PrecometError(f"{at}: field {field!r} must be text, got {type(row[field]).__name__}")
        if not isinstance(row["src"], str) or is_blank(row["src"]):
            raise PrecometError(f"{at}: row {row['id']!r} has an empty 'src'")
        target = row["target"]
        if not isinstance(target, (int, float)) or isinstance(target, bool):
            raise PrecometError(f"{at}: row {row['id']!r} has target {target!r}; expected a finite number")
        finite_number(target, what=f"{at}: row {row['id']!r}, field 'target'")
        key = (str(row["campaign"]), str(row["id"]))
        if key in first:
            raise PrecometError(f"{at}: row {row['id']!r} of campaign {key[0]!r} repeats {first[key]}")
        first[key] = at
    return list(rows)


def read_targets(path: str | Path) -> list[dict[str, Any]]:
    """Target rows from a JSONL file (validated; ``NaN`` is rejected with the line number)."""
    rows = read_jsonl(path)
    return validate_rows(rows, where=str(path))


def write_targets(rows: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write rows as JSONL (atomically); returns the count."""
    public = [{k: v for k, v in row.items() if not k.startswith("_")} for row in rows]
    with atomic_write(path) as handle:
        jsonsafe.dump_lines(public, handle)
    return len(public)


def rows_hash(rows: Iterable[dict[str, Any]]) -> str:
    """A short content hash of (campaign, id, src, target) for the checkpoint's training-data signature."""
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps([row["campaign"], str(row["id"]), row["src"], float(row["target"])]).encode("utf-8"))
    return digest.hexdigest()[:16]


def leave_one_campaign_out(
    rows: Sequence[dict[str, Any]], campaign: str, *, near: NearDuplicates | None = NEAR
) -> tuple[list[dict], list[dict]]:
    """``(train, held_out)``: the rows of ``campaign``, and the rows of every other campaign whose source
    text neither occurs in it nor shares a sentence or a long run with one of its sources (``near``, see
    :func:`~precomet.estimator.leakage.drop_sources`; ``None``: identical texts only). A source shared with
    the held-out campaign, or a paragraph containing one of its sentences, never stays in training."""
    names = sorted({r["campaign"] for r in rows})
    if campaign not in names:
        raise PrecometError(f"campaign {campaign!r} not in targets; campaigns: {names}")
    held_out = [r for r in rows if r["campaign"] == campaign]
    train, dropped = drop_sources(
        [r for r in rows if r["campaign"] != campaign], [r["src"] for r in held_out], near=near
    )
    if dropped:
        logger.info(
            "left out %s: also dropped %d rows of other campaigns with the same source text or a shared sentence"
            " or passage",
            campaign,
            dropped,
        )
    return train, held_out
