"""Annotation cost in the user's units: durations as hours and minutes, and where a campaign's cost came from.

A campaign's ``cost`` column is annotation seconds per item: the length model of :func:`precomet.campaign.estimate_cost`
(``0.15 · characters + 33.7`` s) unless the input carried its own ``cost`` field or ``--cost-from-times`` replaced
it with measured WMT23 ESA times (:func:`precomet.io.annotation_times.annotation_cost`, which records a note in
``campaign.info["cost"]``).
"""

from __future__ import annotations

import math

import numpy as np

from precomet.campaign import Campaign, estimate_cost

ESTIMATED = "estimated from source length"
MEASURED = "measured annotation times"
GIVEN = "given in the input"
COST_SOURCES = (ESTIMATED, MEASURED, GIVEN)

_MEASURED_NOTE = "median annotation seconds"  # how annotation_cost's campaign.info["cost"] note begins


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


def cost_source(campaign: Campaign) -> str:
    """Where ``campaign.cost`` came from: :data:`MEASURED` when ``annotation_cost`` set it from annotation times,
    :data:`ESTIMATED` when every cost equals the length model's, otherwise :data:`GIVEN` (the input's ``cost``
    field: a campaign cannot tell more)."""
    if str(campaign.info.get("cost", "")).startswith(_MEASURED_NOTE):
        return MEASURED
    if len(campaign) == 0 or np.allclose(campaign.cost, estimate_cost(campaign.src), rtol=1e-9, atol=1e-9):
        return ESTIMATED
    return GIVEN


def cost_unit(source: str) -> str:
    """What a share of the cost budget is a share of, for a sentence: time for seconds, cost otherwise."""
    return "annotation cost" if source == GIVEN else "annotation time"
