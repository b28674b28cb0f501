"""What a benchmark runs: the utility methods and external utilities (checked), the control rows, and the
circularity check."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.utilities import UTILITY_METHODS

LENGTH_CONTROL = "length"
"""The control row: the ``length`` utility method (:mod:`precomet.utilities.length`), run like any method."""


def circular_reason(methods: Sequence[str], metric: str | None, score: str) -> str | None:
    """Why benchmarking ``methods`` on ``metric`` against ``score`` is circular, or ``None``: a score-based utility
    computed from the very scores the subsets are evaluated on (which do not exist before annotation)."""
    if metric is None or metric != score or not methods:
        return None

    reading = [m for m in methods if m in UTILITY_METHODS and UTILITY_METHODS[m].needs_score]
    if not reading:
        return None
    return (
        f"method(s) {', '.join(reading)} would compute their utility from {metric!r}, the very score the subsets are"
        f" evaluated on: a circular evaluation that needs the annotations it is meant to save"
    )


def plan_controls(methods: Collection[str], controls: bool) -> tuple[list[str], dict[str, str]]:
    """The control rows to evaluate beside utility ``methods``, and those left out with the reason (one line each):
    the length control is not repeated when ``length`` is among the methods. (It needs source texts, which every
    campaign has: :meth:`Campaign.build` refuses an empty source.)"""
    if not controls:
        return [], {}
    if LENGTH_CONTROL in methods:
        return [], {LENGTH_CONTROL: f"{LENGTH_CONTROL!r} is benchmarked as a method"}
    return [LENGTH_CONTROL], {}


def method_specs(methods: Sequence[str], external: Mapping[str, Any]) -> dict[str, Any]:
    """The registry entries of utility ``methods`` (``{name: spec}``); refuses nothing to run, repeated or unknown
    names, and a method named like an ``external`` utility."""
    names = list(methods)
    if not names and not external:
        raise PrecometError(
            "nothing to benchmark: give utility methods ({methods}...) and/or external utilities ({external})",
            param=("methods", "external"),
        )
    clash = sorted(set(names) & set(external))
    if clash or len(set(names)) != len(names):
        raise PrecometError(
            f"method names must be unique; repeated: {clash or sorted({m for m in names if names.count(m) > 1})}"
        )
    if not names:
        return {}

    unknown = [m for m in names if m not in UTILITY_METHODS]
    if unknown:
        raise PrecometError(
            f"unknown method(s) {unknown}; valid: {', '.join(UTILITY_METHODS)} (or external utilities: {{external}})",
            param="external",
        )
    return {m: UTILITY_METHODS[m] for m in names}


def check_external(campaign: Campaign, name: str, values: Any) -> Any:
    """External utilities ``values`` as a float array of one finite value per item, or the callable itself
    (budget-dependent: checked at each budget)."""
    if callable(values):
        return values
    values = np.asarray(values, dtype=float)
    if values.shape != (len(campaign),):
        raise PrecometError(f"scores {name!r}: expected {len(campaign)} utilities, got shape {values.shape}")
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise PrecometError(
            f"scores {name!r}: utility of item {campaign.ids[bad[0]]!r} is not finite ({len(bad)} item(s))"
        )
    return values
