"""Annotation cost in the user's units: durations as hours and minutes, where a campaign's cost came from, and
the length model calibrated on measured times.

**One cost unit: seconds per judgement of one output.** A campaign's ``cost`` column is the time an annotator
takes to judge *one* system output of the item; annotating an item costs that times the outputs judged on it
(:func:`item_seconds`: every system's output for ``select`` and ``benchmark``, the drawn cells for ``waves``).
Every duration precomet prints says so with its count (:func:`describe_time`: "≈ 10 h 05 min of annotator time:
1,231 judgements of 29 s"). An input whose ``cost`` field is per item says so with ``--cost-per item``
(:func:`per_output_cost`), never by guess.

The per-output cost is the length model of :func:`precomet.campaign.estimate_cost`
(``0.15 · characters + 33.7`` s) unless the input carried its own ``cost`` field or ``--cost-from-times`` replaced
it with measured WMT23 ESA times (:func:`precomet.io.annotation_times.annotation_cost`, which records a note in
``campaign.info["cost"]`` and a :class:`CostRecord` in ``campaign.info["cost record"]``). Items without a measured
time then get the length model calibrated on the measured ones (:func:`calibrate_length_model`), so that every
cost is on the measured scale.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from precomet.campaign import (
    COST_INTERCEPT,
    COST_PER_CHAR,
    Campaign,
    ReadOnlyMapping,
    estimate_cost,
    length_cost,
    source_length,
)
from precomet.errors import PrecometError

ESTIMATED = "estimated from source length"
MEASURED = "measured annotation times"
GIVEN = "given in the input"
CALIBRATED = "length model calibrated on measured times"
COST_SOURCES = (ESTIMATED, MEASURED, GIVEN)
ITEM_CODES = {MEASURED: "m", CALIBRATED: "c", ESTIMATED: "e", GIVEN: "g"}
"""One character per item source in :func:`cost_codes` (and the signature's ``per_item_sha``)."""
RECORD_KEY = "cost record"
"""``campaign.info`` key of the :class:`CostRecord` that ``annotation_cost`` leaves."""

_MEASURED_NOTE = "median annotation seconds"  # how annotation_cost's campaign.info["cost"] note begins


@dataclass(frozen=True)
class LengthFit:
    """``seconds = a · characters + b`` fitted on measured items: ``method`` is ``"least squares"`` or, when no
    usable line can be fitted (``reason`` says why), ``"scaled length model"`` (the default model times the ratio of
    the mean measured time to its mean prediction). ``r2`` (NaN when undefined) and ``median_ratio`` (median of
    measured / fitted seconds) are on the measured items."""

    a: float
    b: float
    method: str
    r2: float
    median_ratio: float
    reason: str = ""

    def __call__(self, length: np.ndarray) -> np.ndarray:
        return self.a * np.asarray(length, dtype=float) + self.b

    def describe(self) -> str:
        """``"0.06271·chars + 19.2 s (least squares, R² 0.75, median measured/fitted 0.96)"`` (WMT23 en-de)."""
        how = f"least squares, R² {self.r2:.2f}" if self.method == "least squares" else f"{self.method}: {self.reason}"
        return f"{self.a:.4g}·chars + {self.b:.4g} s ({how}, median measured/fitted {self.median_ratio:.2f})"


def calibrate_length_model(length: np.ndarray, seconds: np.ndarray) -> LengthFit:
    """Fit ``seconds ≈ a · length + b`` on the items with a finite ``seconds`` (at least one), by least squares.

    Both fits keep the mean of the measured times (least squares with an intercept does). The least-squares
    line is used when it exists and makes sense for every item: at least two measured items of different lengths,
    a slope ``a >= 0`` (longer never cheaper) and a positive cost at the shortest length of ``length``. Otherwise
    the default length model is scaled to the measured items' mean time, which is always positive.
    """
    length, seconds = np.asarray(length, dtype=float), np.asarray(seconds, dtype=float)
    known = np.isfinite(seconds)
    x, y = length[known], seconds[known]
    if not len(y):
        raise ValueError("calibrate_length_model needs at least one measured item")
    unit = float(np.max(y))  # fitted in units of the longest time, so times near 1e308 s do not overflow
    y = y / unit
    reason = ""
    if len(y) < 2:
        reason = "fewer than 2 measured items"
    elif np.ptp(x) == 0:
        reason = f"every measured item has {x[0]:.0f} characters"
    else:
        a = float(np.sum((x - x.mean()) * (y - y.mean())) / np.sum((x - x.mean()) ** 2))
        b = float(y.mean() - a * x.mean())
        if a < 0:
            reason = f"the least-squares slope is negative ({a * unit:.3g} s per character)"
        elif a * length.min() + b <= 0:
            reason = (
                f"the least-squares line gives {(a * length.min() + b) * unit:.3g} s at {length.min():.0f} characters"
            )
        else:
            residual, total = np.sum((y - (a * x + b)) ** 2), np.sum((y - y.mean()) ** 2)
            r2 = float(1 - residual / total) if total > 0 else math.nan
            return LengthFit(a * unit, b * unit, "least squares", r2, float(np.median(y / (a * x + b))))
    scale = float(y.mean() / length_cost(x).mean())
    a, b = COST_PER_CHAR * scale, COST_INTERCEPT * scale
    ratio = float(np.median(y / (a * x + b)))
    return LengthFit(a * unit, b * unit, "scaled length model", math.nan, ratio, reason)


@dataclass(frozen=True)
class CostRecord:
    """Which items ``annotation_cost`` priced how: ``measured`` = {item id: measured seconds} and ``fit`` = the
    calibrated length model the other items got (``None`` when every item was measured). Keyed by item id, so it
    holds for any subset or order of the campaign (``take`` keeps ``info``)."""

    measured: Mapping[str, float]
    fit: LengthFit | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "measured", ReadOnlyMapping(self.measured))

    def __str__(self) -> str:
        untimed = "none calibrated" if self.fit is None else f"the others {self.fit.a:.4g}·chars + {self.fit.b:.4g} s"
        return f"{len(self.measured)} measured item ids; {untimed}"


def format_duration(seconds: float) -> str:
    """``7500`` -> ``"2 h 05 min"``, ``2700`` -> ``"45 min"``, ``38`` -> ``"38 s"`` (rounded to the minute from
    one minute on, to the second below it; halves round up)."""
    seconds = float(seconds)
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"seconds={seconds!r}: expected a finite duration >= 0")
    if math.floor(seconds + 0.5) < 60:
        return f"{math.floor(seconds + 0.5)} s"
    minutes = math.floor(seconds / 60 + 0.5)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


_DURATION_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_DURATION_PART = re.compile(
    r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*(d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)(?![a-z])",
    re.IGNORECASE,
)


def parse_duration(text: str) -> float:
    """Seconds of a duration written as ``10h``, ``90m``, ``3600s``, ``1h30m``, ``1.5 hours`` or ``2h 15min``
    (units d, h, m/min, s/sec, in full or not, each once and largest first); a bare number has no unit and raises
    :class:`ValueError`, as does any other text or a total that is not finite."""
    position, total, units = 0, 0.0, list[float]()
    while position < len(text):
        if not text[position:].strip():
            break
        match = _DURATION_PART.match(text, position)
        if match is None:
            raise ValueError(f"not a duration: {text!r} (give a unit: 10h, 90m, 3600s, 1h30m)")
        unit = _DURATION_UNITS[match.group(2)[0].lower()]
        if units and unit >= units[-1]:  # 1h1h, 30m1h: a typo, not a sum
            raise ValueError(f"not a duration: {text!r} (each unit once, largest first: 1h30m)")
        total += float(match.group(1)) * unit
        position = match.end()
        units.append(unit)
    if not units or not math.isfinite(total):
        raise ValueError(f"not a duration: {text!r} (give a unit: 10h, 90m, 3600s, 1h30m)")
    return total


COST_PER = ("output", "item")
"""What an input's ``cost`` field counts (``--cost-per``): one judgement of one output (precomet's unit, the
default), or one item with all its outputs."""


def describe_time(seconds: float, judgements: int) -> str:
    """``"≈ 10 h 05 min of annotator time: 1,231 judgements of 29 s"``: a duration with the judgements it pays for
    and their mean time (the unit every duration precomet prints is in)."""
    each = f"{seconds / judgements:,.0f} s" if judgements else "-"
    return (
        f"≈ {format_duration(seconds)} of annotator time: {judgements:,} judgement{'s' * (judgements != 1)} of {each}"
    )


def item_seconds(campaign: Campaign, outputs_per_item: int | None = None) -> np.ndarray:
    """Seconds to annotate each item: its per-output cost times the outputs judged on it
    (:meth:`Campaign.judgements`, or ``outputs_per_item`` for every item when given, e.g. for sources whose
    outputs do not exist yet)."""
    return campaign.cost * judgements_per_item(campaign, outputs_per_item)


def judgements_per_item(campaign: Campaign, outputs_per_item: int | None = None) -> np.ndarray:
    """Outputs judged on each item (int array): ``outputs_per_item`` for every item when given, otherwise
    :meth:`Campaign.judgements`; a campaign without systems needs ``outputs_per_item``."""
    if outputs_per_item is not None:
        whole = isinstance(outputs_per_item, (int, np.integer)) and not isinstance(outputs_per_item, bool)
        if not whole or outputs_per_item < 1:
            raise ValueError(f"outputs_per_item={outputs_per_item!r}: expected a whole number >= 1")
        return np.full(len(campaign), int(outputs_per_item), dtype=int)
    if not campaign.systems:
        raise PrecometError(
            f"campaign {campaign.name!r} holds sources only: the outputs each item will have judged are unknown; give"
            " their number ({outputs_per_item}N; annotation time = seconds per output x outputs judged)",
            param="outputs_per_item",
        )
    return campaign.judgements()


def per_output_cost(campaign: Campaign, outputs_per_item: int | None = None) -> Campaign:
    """``campaign`` with a per-item ``cost`` field (``--cost-per item``) turned into precomet's unit, seconds per
    judgement of one output: each item's cost divided by the outputs judged on it."""
    judged = judgements_per_item(campaign, outputs_per_item)
    if not judged.all():
        i = int(np.argmin(judged))
        raise PrecometError(
            f"{{cost_per}}item: item {campaign.ids[i]!r} has no output to judge, so its cost cannot be shared among"
            " its outputs",
            param="cost_per",
        )
    return campaign.with_cost(campaign.cost / judged)


def cost_source(campaign: Campaign) -> str:
    """Where ``campaign.cost`` came from: :data:`MEASURED` when ``annotation_cost`` set it from annotation times,
    :data:`ESTIMATED` when every cost equals the length model's, otherwise :data:`GIVEN` (the input's ``cost``
    field: a campaign cannot tell more)."""
    if str(campaign.info.get("cost", "")).startswith(_MEASURED_NOTE):
        return MEASURED
    if len(campaign) == 0 or np.allclose(campaign.cost, estimate_cost(campaign.src), rtol=1e-9, atol=1e-9):
        return ESTIMATED
    return GIVEN


def cost_sources_per_item(campaign: Campaign) -> np.ndarray:
    """Where each item's cost came from (object array of :data:`MEASURED`, :data:`CALIBRATED`, :data:`ESTIMATED`,
    :data:`GIVEN`): an item is measured or calibrated when its cost still equals what the campaign's
    :class:`CostRecord` says (so costs replaced later, e.g. by ``with_cost``, count as given), estimated when it
    equals the default length model, given otherwise."""
    cost, length = campaign.cost, source_length(campaign.src)
    labels = np.where(_same(cost, length_cost(length)), ESTIMATED, GIVEN).astype(object)
    record = campaign.info.get(RECORD_KEY)
    if isinstance(record, CostRecord):
        if record.fit is not None:
            labels[_same(cost, record.fit(length))] = CALIBRATED
        measured = np.array([record.measured.get(i, math.nan) for i in campaign.ids], dtype=float)
        labels[_same(cost, measured)] = MEASURED
    return labels


def cost_codes(campaign: Campaign) -> str:
    """:func:`cost_sources_per_item` as one character per item in campaign order (:data:`ITEM_CODES`)."""
    return _codes(cost_sources_per_item(campaign))


def cost_signature(campaign: Campaign) -> dict[str, Any]:
    """The ``cost`` entry of a result's signature: the campaign's ``source``, ``per_item`` counts of each item
    source, ``per_item_sha`` (16 hex digits of the SHA-256 of :func:`cost_codes`) and the calibrated ``model``
    (``a``, ``b``, ``method``; ``None`` when no item got one)."""
    labels = cost_sources_per_item(campaign)
    record = campaign.info.get(RECORD_KEY)
    fit = record.fit if isinstance(record, CostRecord) and CALIBRATED in labels else None
    return {
        "source": cost_source(campaign),
        "per_item": dict(Counter(str(label) for label in labels)),
        "per_item_sha": hashlib.sha256(_codes(labels).encode("ascii")).hexdigest()[:16],
        "model": None if fit is None else {"a": fit.a, "b": fit.b, "method": fit.method},
    }


def cost_unit(source: str) -> str:
    """What a share of the cost budget is a share of, for a sentence: time for seconds, cost otherwise."""
    return "annotation cost" if source == GIVEN else "annotation time"


def _codes(labels: np.ndarray) -> str:
    return "".join(ITEM_CODES[label] for label in labels)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.isclose(a, b, rtol=1e-9, atol=1e-9)
