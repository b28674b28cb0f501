"""Real annotation cost from the WMT23 ESA campaign timestamps (``wmt23-esa-campaign/*.scores.csv``).

Appraise logs a start and an end time per item, but in its document view most items get ``start == end``
(about 30–60 % of rows): the time an annotator spent on an item is the time since their previous
submission. So, per (file, annotator): rows (all of them — tutorial, ``BAD`` and duplicate items took time
too) are deduplicated by item id (last submission kept), sorted by end time, and an item's duration is
``end − previous end`` (``end − start`` for an annotator's first item). Durations that are 0 (submitted
together with the previous item) or longer than ``max_gap`` seconds (a break) are treated as unknown.

Alignment to mt-metrics-eval ``wmt23/en-de`` lines: the campaign annotated a subset of each document's
lines — those with a score in the ``en-de.*.seg.score`` files beside the CSVs (207 lines). The ``TGT``
items of one annotator and one ``<doc>#<system>`` are sorted by item id and mapped one-to-one to those lines
of the document in order (to all its lines when no ``.seg.score`` file is present). Groups whose size
differs are skipped (counted). A line's cost is the **median** duration over all its annotations (every
annotator, system and campaign file): robust to the remaining breaks and to very quick re-submissions.
Lines without a time get the length model calibrated on the timed ones (:mod:`precomet.costs`), so that every
cost is on the scale of the measured seconds.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from precomet.campaign import HUMAN, Campaign, source_length
from precomet.costs import RECORD_KEY, CostRecord, calibrate_length_model
from precomet.errors import DataError, PrecometError
from precomet.io.esa import AppraiseRow, read_appraise_csv
from precomet.io.mtme import load_mtme, read_seg_scores
from precomet.io.text import read_lines

logger = logging.getLogger(__name__)
DEFAULT_MAX_GAP = 600.0
UNTIMED = ("calibrate", "refuse")
"""What :func:`annotation_cost` does with items without a time: calibrated length model, or an error."""


@dataclass(frozen=True)
class SegmentTimes:
    """Median annotation seconds per test-set line (NaN = unknown) and how they were obtained."""

    seconds: np.ndarray
    n_annotations: np.ndarray
    files: tuple[str, ...]
    aligned_groups: int
    skipped_groups: int


def durations(rows: Sequence[AppraiseRow], *, max_gap: float = DEFAULT_MAX_GAP) -> dict[tuple[str, int], float]:
    """Seconds per (annotator, item id) of one file (see the module docstring); unknown ones are left out."""
    last: dict[tuple[str, int], AppraiseRow] = {}
    for row in rows:
        key = (row.annotator, row.item)
        if key not in last or row.end >= last[key].end:
            last[key] = row
    by_annotator: dict[str, list[AppraiseRow]] = defaultdict(list)
    for row in last.values():
        by_annotator[row.annotator].append(row)
    result = {}
    for annotator, items in by_annotator.items():
        items.sort(key=lambda r: (r.end, r.item))
        previous = None
        for row in items:
            seconds = row.end - (row.start if previous is None else previous)
            previous = row.end
            if 0 < seconds <= max_gap:
                result[(annotator, row.item)] = seconds
    return result


def _csv_files(path: Path) -> list[Path]:
    if not path.exists():
        raise DataError(path, "no such file or directory")
    files = sorted(path.glob("*.scores.csv")) if path.is_dir() else [path]
    if not files:
        raise DataError(path, "no Appraise '*.scores.csv' files in this directory")
    return files


def campaign_lines(directory: Path, n_lines: int) -> set[int] | None:
    """Lines with any score in the ``*.seg.score`` files of ``directory`` (``None`` when there are none)."""
    files = sorted(directory.glob("*.seg.score"))
    if not files:
        return None
    lines: set[int] = set()
    for path in files:
        for values in read_seg_scores(path, n_lines).values():
            lines.update(np.flatnonzero(~np.isnan(values)).tolist())
    return lines


def segment_times(
    times_path_or_dir: str | Path, docs: Sequence[str], *, max_gap: float = DEFAULT_MAX_GAP
) -> SegmentTimes:
    """Median annotation seconds for each line of a test set whose document ids are ``docs``."""
    path = Path(times_path_or_dir)
    files = _csv_files(path)
    annotated = campaign_lines(path if path.is_dir() else path.parent, len(docs))
    doc_lines: dict[str, list[int]] = defaultdict(list)
    all_lines: dict[str, list[int]] = defaultdict(list)
    for line, doc in enumerate(docs):
        all_lines[doc].append(line)
        if annotated is None or line in annotated:
            doc_lines[doc].append(line)
    samples: dict[int, list[float]] = defaultdict(list)
    aligned = skipped = 0
    for file in files:
        rows = read_appraise_csv(file)
        seconds = durations(rows, max_gap=max_gap)
        groups: dict[tuple[str, str], dict[int, AppraiseRow]] = defaultdict(dict)
        for row in rows:
            if row.kind == "TGT" and row.doc.count("#") == 1 and "tutorial" not in row.doc:
                groups[(row.annotator, row.doc)][row.item] = row
        for (annotator, doc_system), items in groups.items():
            doc = doc_system.split("#")[0]
            order = sorted(items)
            lines = next((ls for ls in (doc_lines.get(doc, []), all_lines.get(doc, [])) if len(ls) == len(order)), None)
            if lines is None:
                skipped += 1
                continue
            aligned += 1
            for item, line in zip(order, lines):
                if (annotator, item) in seconds:
                    samples[line].append(seconds[(annotator, item)])
    median = np.full(len(docs), np.nan)
    counts = np.zeros(len(docs), dtype=int)
    for line, values in samples.items():
        median[line] = float(np.median(values))
        counts[line] = len(values)
    if skipped:
        logger.info("%d of %d (annotator, document) groups could not be aligned", skipped, aligned + skipped)
    return SegmentTimes(median, counts, tuple(f.name for f in files), aligned, skipped)


def _line_numbers(campaign: Campaign) -> np.ndarray:
    try:
        return np.array([int(str(i).rsplit("/", 1)[-1]) for i in campaign.ids], dtype=int)
    except ValueError:
        raise PrecometError(
            f"campaign {campaign.name!r}: item ids must end in the test-set line number (like 'wmt23/en-de/17')"
        ) from None


def annotation_cost(
    campaign: Campaign,
    times_path_or_dir: str | Path,
    *,
    docs: str | Path | Sequence[str] | None = None,
    max_gap: float = DEFAULT_MAX_GAP,
    untimed: str = "calibrate",
) -> Campaign:
    """The campaign with ``cost`` = median real annotation seconds per item. Items without times get, with
    ``untimed="calibrate"``, the length model calibrated on the timed items
    (:func:`precomet.costs.calibrate_length_model`), so that all costs are on one scale; ``untimed="refuse"``
    raises instead. ``campaign.info["cost"]`` says how many items were measured and calibrated, and
    ``campaign.info["cost record"]`` (a :class:`precomet.costs.CostRecord`) which ones.

    ``docs`` = the test set's ``documents/<lp>.docs`` file or doc ids per line; by default the documents file
    the mt-metrics-eval loader recorded in ``campaign.info``, else the campaign's own documents (which then must
    hold every annotated line, or some cannot be aligned)."""
    if untimed not in UNTIMED:
        raise PrecometError(f"untimed={untimed!r}: expected one of {', '.join(UNTIMED)}")
    lines = _line_numbers(campaign)
    docs = docs if docs is not None else campaign.info.get("documents file")
    if docs is None:
        doc_ids = [""] * (int(lines.max()) + 1 if len(lines) else 0)
        for line, doc in zip(lines, campaign.doc):
            doc_ids[line] = doc
    elif isinstance(docs, (str, Path)):
        doc_ids = [row.split("\t")[-1] for row in read_lines(docs)]
    else:
        doc_ids = [str(d) for d in docs]
    for item_id, line, doc in zip(campaign.ids, lines, campaign.doc):
        if line >= len(doc_ids) or doc_ids[line] != doc:
            raise PrecometError(
                f"item {item_id!r}: line {line} is in document {doc!r} in the campaign but"
                f" {doc_ids[line] if line < len(doc_ids) else 'absent'!r} in the document list"
            )
    times = segment_times(times_path_or_dir, doc_ids, max_gap=max_gap)
    seconds = times.seconds[lines]
    known = np.isfinite(seconds)
    if len(campaign) and not known.any():  # asked for real times, got none: never silently the length model
        raise PrecometError(
            f"{times_path_or_dir}: no annotation times for any of the {len(campaign)} items of campaign"
            f" {campaign.name!r} (read {len(times.files)} file(s))"
        )
    n_untimed = int((~known).sum())
    if n_untimed and untimed == "refuse":
        raise PrecometError(
            f"{n_untimed} of {len(campaign)} items of campaign {campaign.name!r} have no annotation time (first:"
            f" {campaign.ids[~known][0]!r}); restrict the campaign to its {int(known.sum())} timed items, or let the"
            " untimed ones get the length model calibrated on them"
        )
    note = f"median annotation seconds from {len(times.files)} Appraise file(s) for {int(known.sum())} items"
    cost, fit = seconds, None
    if n_untimed:
        length = source_length(campaign.src)
        fit = calibrate_length_model(length, seconds)
        cost = np.where(known, seconds, fit(length))
        note += f"; {n_untimed} untimed items get the length model calibrated on them: {fit.describe()}"
    else:
        note += " (every item)"
    logger.info(note)
    updated = campaign.with_cost(cost)
    record = CostRecord(dict(zip(campaign.ids[known], seconds[known].tolist())), fit)
    return replace(updated, info={**updated.info, "cost": note, RECORD_KEY: record})


def list_esa_protocols(esa_dir: str | Path) -> list[str]:
    """Protocols with an ``en-de.<PROTOCOL>.seg.score`` file in the WMT23 ESA campaign directory."""
    return sorted(p.name[len("en-de.") : -len(".seg.score")] for p in Path(esa_dir).glob("en-de.*.seg.score"))


def load_wmt23_esa(
    mtme_root: str | Path, esa_dir: str | Path, *, protocol: str = "ESA-1", include_refs: bool = False
) -> Campaign:
    """mt-metrics-eval ``wmt23/en-de`` (texts, docs, metrics) with ``human`` = a WMT23 ESA campaign protocol
    (``ESA-1``, ``ESA-2``, ``MQM-1``, ``ESAAI-1``, …); only 207 lines are rated (``complete`` keeps those)."""
    esa_dir = Path(esa_dir)
    protocols = list_esa_protocols(esa_dir)
    if protocol not in protocols:
        raise PrecometError(f"{esa_dir}: unknown protocol {protocol!r}; available: {protocols or 'none'}")
    base = load_mtme(mtme_root, "wmt23/en-de", include_refs=include_refs)
    scores = read_seg_scores(esa_dir / f"en-de.{protocol}.seg.score", len(base))
    missing = [s for s in base.systems if s not in scores]
    if missing:
        raise DataError(esa_dir / f"en-de.{protocol}.seg.score", f"no scores for system(s) {missing}")
    campaign = base.with_scores(HUMAN, {s: scores[s] for s in base.systems})
    return replace(campaign, protocol=protocol, info={**campaign.info, "human": f"WMT23 ESA campaign {protocol}"})
