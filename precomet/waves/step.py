"""One step of a campaign in waves, the same for a live campaign and for replay: from the judgements so far and the
waves drawn so far, the estimates, the stop rule's verdict, and — unless it says stop — the next wave.

A live call (:func:`precomet.waves.live.advance`) takes one step per call; replay (:mod:`precomet.waves.replay`) takes
steps until the stop, revealing each wave's cells from the fully judged campaign. Both seed wave ``t`` with
``(*seed, t)``, so a replay run and live calls with the same seeds draw the same waves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from precomet.errors import PrecometError
from precomet.waves.choosers import Chooser
from precomet.waves.design import DEFAULT_FLOOR
from precomet.waves.estimate import (
    Estimates,
    Predictor,
    Wave,
    combine,
    fit_predictor,
    pair_contrasts,
    pair_spread,
    wave_result,
)
from precomet.waves.plan import LEVELS, MIN_SYSTEM_SHARE, WaveSize, draw_wave, parse_wave_size, system_probabilities
from precomet.waves.stop import RULES, Verdict, projected_fraction, verdict
from precomet.waves.target import Target


@dataclass(frozen=True)
class WaveSettings:
    """What a campaign's waves are drawn and stopped by (stored whole in a live campaign's manifest)."""

    size: WaveSize
    target: Target = field(default_factory=Target)
    confidence: float = 0.9
    rule: str = "guaranteed"
    level: str = "item"
    allocation: bool = False
    floor: float = DEFAULT_FLOOR
    system_floor: float = MIN_SYSTEM_SHARE
    top_k: bool = False
    anytime: bool = True  # False: the fixed-look level at every look (an ablation; not valid when stopping early)
    excuse_ties: bool = False  # True: pairs estimated as ties never err (an ablation; not a valid bound)

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise PrecometError(f"unknown stop rule {self.rule!r}; choose one of {', '.join(RULES)}", param="rule")
        if not 0 < self.confidence < 1:
            raise PrecometError(f"confidence={self.confidence!r}: expected a level in (0, 1)", param="confidence")
        if self.level not in LEVELS:
            raise PrecometError(f"unknown level {self.level!r}; choose one of {', '.join(LEVELS)}", param="level")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "size": self.size.text, "target": self.target.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any], n_items: int) -> WaveSettings:
        """The record :meth:`to_dict` wrote (``n_items``: the pool's, for a size given as a share)."""
        return cls(**{**data, "size": parse_wave_size(data["size"], n_items), "target": Target(**data["target"])})


@dataclass(frozen=True)
class PoolArrays:
    """What a step reads of the pool: every item's sampling unit and cost, the metric's ``N × S`` scores (or
    ``None``) and the looks planned to exhaust it."""

    units: np.ndarray
    cost: np.ndarray
    metric: np.ndarray | None
    planned: int


@dataclass(frozen=True)
class Forecast:
    """The share of the pool's cells at which the campaign is predicted to stop, with an interval (the differences
    one standard error larger and smaller than estimated)."""

    share: float
    low: float
    high: float


@dataclass(frozen=True)
class Step:
    """A step's reading and, unless it stops, its next wave with the predictor fitted for it."""

    estimates: Estimates
    verdict: Verdict
    wave: Wave | None = None
    predictor: Predictor | None = None
    forecast: Forecast | None = None


def estimate(scores: np.ndarray, waves: Sequence[Wave], *, units: np.ndarray | None = None) -> Estimates:
    """The weighted estimates of the judged ``scores`` (``N × S``, NaN = not judged) given the waves drawn, with
    every pair's full-set standard error (:func:`precomet.waves.estimate.pair_spread`)."""
    n_systems = scores.shape[1]
    pairs, contrasts = pair_contrasts(n_systems)
    results = [wave_result(w, scores, contrasts) for w in waves] if n_systems else []
    estimates = combine(results, scores, pairs, weighted=all(w.weighted for w in waves), units=units)
    if n_systems < 2 or np.isnan(estimates.differences).any():
        return estimates
    return replace(estimates, full_se=pair_spread(scores, list(waves), pairs))


def take_step(
    scores: np.ndarray,
    waves: Sequence[Wave],
    settings: WaveSettings,
    chooser: Chooser,
    pool: PoolArrays,
    *,
    seed: Sequence[int],
    report: bool = False,
    level: float | None = None,
    draw: bool = True,
) -> Step:
    """One step (module docstring) on the judged ``scores`` (``N × S``; ``S = 0`` while no system is known: cells
    then stand for every system). ``report``: draw the agreement's bound even where it cannot reach the target and
    forecast the stop (a live call's report; the verdict is the same either way). ``level``: the error level recorded
    for this look (default: computed, as it was when the wave was drawn). ``draw=False``: the reading only."""
    n_items, n_systems = scores.shape
    units = pool.units
    estimates = estimate(scores, waves, units=units if waves else None)
    reading = verdict(
        estimates,
        target=settings.target,
        confidence=settings.confidence,
        rule=settings.rule,
        planned=pool.planned,
        always_bound=report,
        anytime=settings.anytime,
        level=level,
        excuse_ties=settings.excuse_ties,
    )
    judged = scores if n_systems else np.full((n_items, 1), np.nan)
    known = ~np.isnan(judged)
    forecast = _forecast(estimates, reading, known, settings, pool) if report and n_systems else None
    if reading.stop or known.all() or not draw:
        return Step(estimates, reading, forecast=forecast)
    q = (
        system_probabilities(estimates, reading, floor=settings.system_floor)
        if settings.allocation and waves and n_systems and not np.isnan(estimates.differences).any()
        else np.ones(judged.shape[1])
    )
    size = settings.size.in_cells(n_systems) if settings.allocation and n_systems else settings.size
    metric = pool.metric if n_systems else None
    predictor = fit_predictor(judged, known, metric)
    number = len(waves) + 1
    wave = draw_wave(
        number=number,
        item_scores=chooser.scores(judged, known),
        judged=judged,
        known=known,
        units=units,
        cost=pool.cost,
        size=size,
        q=q,
        rng=np.random.default_rng([*seed, number]),
        floor=settings.floor,
        chooser=chooser.label,
        top_k=settings.top_k,
        predictor=predictor.values(metric, n_items),
    )
    return Step(estimates, reading, wave, predictor, forecast)


def _forecast(
    estimates: Estimates, reading: Verdict, known: np.ndarray, settings: WaveSettings, pool: PoolArrays
) -> Forecast:
    share = float(known.sum() / max(known.size, 1))
    if reading.stop:
        return Forecast(share, share, share)
    seconds = float(pool.cost.sum()) * known.shape[1]  # every cell judged, each at its item's cost per output
    whole = {"items": known.shape[0], "cells": known.size, "seconds": seconds}[settings.size.kind]
    step = settings.size.amount / max(whole, 1e-12)

    def at(shift: float) -> float:
        return projected_fraction(
            estimates,
            judged_fraction=share,
            step=step,
            target=settings.target,
            confidence=settings.confidence,
            rule=settings.rule,
            planned=pool.planned,
            shift=shift,
            excuse_ties=settings.excuse_ties,
        )

    return Forecast(at(0.0), at(1.0), at(-1.0))


def planned_looks(settings: WaveSettings, n_items: int, n_systems: int, cost: np.ndarray) -> int:
    """Looks that exhaust the pool at the settings' wave size, fixed before the first draw (live calls and replay
    alike: the stop rule spends its error level over them)."""
    cells = max(n_systems, 1)
    return settings.size.planned_looks(n_items, n_items * cells, float(np.sum(cost)) * cells)


def items_needed(forecast: float, judged_share: float, n_items: int) -> int:
    """Items still to judge for a predicted stop at ``forecast`` of the cells."""
    return int(math.ceil(max(forecast - judged_share, 0.0) * n_items))
