"""Replay: the whole waves protocol, many times, on a campaign where every cell is judged.

Each run starts with nothing judged, draws waves with its chooser, reveals the drawn cells' human scores, and stops
when the rule says so. At the stop it records the cells, items and hours spent, and the realised pairwise agreement
of the estimated system order with the full campaign's (a pair tied on the full campaign counts as agreeing).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from precomet.errors import PrecometError
from precomet.metaeval.evaluation import evaluate_indices
from precomet.metaeval.reference import Reference
from precomet.progress import progress
from precomet.waves.choosers import Chooser
from precomet.waves.design import DEFAULT_FLOOR
from precomet.waves.estimate import Estimates, WaveResult, combine, fit_predictor, pair_contrasts, wave_result
from precomet.waves.plan import MIN_SYSTEM_SHARE, WaveSize, draw_wave, sampling_units, system_probabilities
from precomet.waves.stop import Verdict, verdict


@dataclass(frozen=True)
class ReplaySettings:
    """What every run of a replay shares."""

    size: WaveSize
    target: float = 0.95
    confidence: float = 0.9
    rule: str = "guaranteed"
    level: str = "item"
    allocation: bool = False
    floor: float = DEFAULT_FLOOR
    system_floor: float = MIN_SYSTEM_SHARE
    top_k: bool = False
    anytime: bool = True  # False: the fixed-look level at every look (an ablation; not valid when stopping early)


@dataclass(frozen=True)
class RunOutcome:
    """One run at its stop."""

    cells: int
    items: int
    seconds: float
    waves: int
    agreement: float  # realised, against the full campaign
    expected: float  # predicted at the stop
    lower_bound: float
    stopped: bool  # False: the pool ran out first
    spa: float | None = None  # soft pairwise accuracy of the fully judged items, with a reference
    clusters: float | None = None  # significance clusters of the fully judged items, with a reference


@dataclass(frozen=True)
class ReplayResult:
    """Every run of one chooser on one campaign."""

    campaign: str
    chooser: str
    settings: ReplaySettings
    total_cells: int
    total_items: int
    total_seconds: float
    runs: tuple[RunOutcome, ...] = field(default_factory=tuple)

    def cell_shares(self) -> np.ndarray:
        return np.array([r.cells for r in self.runs]) / self.total_cells

    def summary(self) -> dict[str, Any]:
        """Medians and 10th/90th percentiles of what the runs spent, and the realised agreement at their stops."""
        shares = self.cell_shares()
        items = np.array([r.items for r in self.runs]) / self.total_items
        hours = np.array([r.seconds for r in self.runs]) / 3600
        agreement = np.array([r.agreement for r in self.runs])
        return {
            "campaign": self.campaign,
            "chooser": self.chooser,
            "runs": len(self.runs),
            "cells_share": _spread(shares),
            "items_share": _spread(items),
            "hours": _spread(hours),
            "agreement_mean": float(agreement.mean()),
            "reached_target": float((agreement >= self.settings.target - 1e-12).mean()),
            "expected_at_stop_mean": float(np.mean([r.expected for r in self.runs])),
            "waves_median": float(np.median([r.waves for r in self.runs])),
            "spa_mean": _mean_of([r.spa for r in self.runs]),
            "clusters_mean": _mean_of([r.clusters for r in self.runs]),
        }


def _mean_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def _spread(values: np.ndarray) -> dict[str, float]:
    return {
        "median": float(np.median(values)),
        "p10": float(np.percentile(values, 10)),
        "p90": float(np.percentile(values, 90)),
    }


def realised_agreement(means: np.ndarray, full: np.ndarray, pairs: np.ndarray) -> float:
    """Share of system pairs ordered as on the full campaign (pairs tied there agree with any order)."""
    estimated = np.sign(means[pairs[:, 0]] - means[pairs[:, 1]])
    truth = np.sign(full[pairs[:, 0]] - full[pairs[:, 1]])
    return float(np.mean((estimated == truth) | (truth == 0))) if len(pairs) else 1.0


def run_once(
    truth: np.ndarray,
    chooser: Chooser,
    settings: ReplaySettings,
    *,
    doc: np.ndarray,
    cost: np.ndarray,
    rng: np.random.Generator,
    metric: np.ndarray | None = None,
    reference: Reference | None = None,
) -> RunOutcome:
    """One replay run on the fully judged ``truth`` (``N × S``); ``metric`` (``N × S``) feeds the predictor;
    with the campaign's meta-evaluation ``reference``, the SPA and cluster count of the items judged for every
    system at the stop are recorded too."""
    n_items, n_systems = truth.shape
    pairs, contrasts = pair_contrasts(n_systems)
    units = sampling_units(doc, settings.level)
    full = truth.mean(axis=0)
    size = settings.size.in_cells(n_systems) if settings.allocation else settings.size
    planned = size.planned_looks(n_items, truth.size, float(cost.sum()))
    known = np.zeros(truth.shape, dtype=bool)
    judged = np.full(truth.shape, np.nan)
    results: list[WaveResult] = []
    estimates: Estimates | None = None
    reading: Verdict | None = None
    while True:
        q = (
            system_probabilities(estimates, reading, floor=settings.system_floor)
            if settings.allocation and estimates is not None
            else np.ones(n_systems)
        )
        wave = draw_wave(
            number=len(results) + 1,
            item_scores=chooser.scores(judged, known),
            judged=judged,
            known=known,
            units=units,
            cost=cost,
            size=size,
            q=q,
            rng=rng,
            floor=settings.floor,
            chooser=chooser.label,
            top_k=settings.top_k,
            predictor=fit_predictor(judged, known, metric).values(metric, n_items),
        )
        known = known | wave.drawn
        judged = np.where(known, truth, np.nan)
        results.append(wave_result(wave, judged, contrasts))
        estimates = combine(results, judged, pairs, weighted=not settings.top_k, units=units)
        reading = verdict(
            estimates,
            target=settings.target,
            confidence=settings.confidence,
            rule=settings.rule,
            planned=planned,
            always_bound=False,
            anytime=settings.anytime,
        )
        if reading.stop or known.all():
            outcome = _outcome(estimates, reading, known, cost, full, stopped=reading.stop)
            complete = np.flatnonzero(known.all(axis=1))
            if reference is None or len(complete) < 2:
                return outcome
            measured = evaluate_indices(reference, complete, measures=("spa", "clusters"))
            return replace(outcome, spa=measured["spa"], clusters=measured["clusters"])


def _outcome(
    estimates: Estimates, reading: Any, known: np.ndarray, cost: np.ndarray, full: np.ndarray, *, stopped: bool
) -> RunOutcome:
    means = estimates.means if not np.isnan(estimates.means).any() else np.zeros(len(full))
    return RunOutcome(
        cells=int(known.sum()),
        items=int(known.any(axis=1).sum()),
        seconds=float((cost * known.sum(axis=1) / known.shape[1]).sum()),
        waves=estimates.waves,
        agreement=realised_agreement(means, full, estimates.pairs),
        expected=reading.expected,
        lower_bound=reading.lower_bound,
        stopped=stopped,
    )


def replay(
    truth: np.ndarray,
    make_chooser: Callable[[], Chooser],
    settings: ReplaySettings,
    *,
    doc: Sequence[Any] | np.ndarray,
    cost: np.ndarray,
    runs: int = 100,
    seed: int = 0,
    campaign: str = "campaign",
    metric: np.ndarray | None = None,
    reference: Reference | None = None,
) -> ReplayResult:
    """``runs`` replay runs (run ``r`` seeded with ``(seed, r)``, so every chooser sees the same random streams);
    ``metric`` (an ``N × S`` metric's scores) lets the weighted estimates' predictor read it; with ``reference``
    (:func:`precomet.metaeval.full_reference` of the campaign) every run also records SPA and clusters at its stop."""
    truth = np.asarray(truth, dtype=float)
    if truth.ndim != 2 or np.isnan(truth).any():
        raise PrecometError(f"{campaign}: a replay needs every cell judged (items × systems without a NaN)")
    if truth.shape[1] < 2:
        raise PrecometError(f"{campaign}: a ranking needs at least two systems")
    if runs < 1:
        raise PrecometError(f"runs={runs!r}: expected at least one run", param="runs")
    doc = np.asarray(doc, dtype=object)
    cost = np.asarray(cost, dtype=float)
    chooser = make_chooser()
    outcomes = []
    with progress(total=runs, desc=f"replay {campaign} {chooser.label}", unit="run") as bar:
        for r in range(runs):
            rng = np.random.default_rng([seed, r])
            outcomes.append(
                run_once(truth, chooser, settings, doc=doc, cost=cost, rng=rng, metric=metric, reference=reference)
            )
            bar.update(1)
    return ReplayResult(
        campaign=campaign,
        chooser=chooser.label,
        settings=settings,
        total_cells=int(truth.size),
        total_items=int(truth.shape[0]),
        total_seconds=float(cost.sum()),
        runs=tuple(outcomes),
    )


def fewer_than(cells: np.ndarray, random_cells: np.ndarray) -> float:
    """One-sided p-value that a chooser's runs stop on fewer cells than random waves' runs with the same seeds
    (Wilcoxon signed-rank on the paired differences); 1.0 when every pair is equal."""
    from scipy.stats import wilcoxon

    differences = np.asarray(cells, dtype=float) - np.asarray(random_cells, dtype=float)
    if not np.any(differences != 0):
        return 1.0
    return float(wilcoxon(differences, alternative="less").pvalue)
