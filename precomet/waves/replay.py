"""Replay: the whole waves protocol, many times, on a campaign where every cell is judged.

Each run starts with nothing judged, draws waves with its chooser, reveals the drawn cells' human scores, and stops
when the rule says so (one :func:`precomet.waves.step.take_step` per wave, as a live campaign). At the stop it
records the cells, items and hours spent, and the realised pairwise agreement of the estimated system order with the
full campaign's under the target — over the pairs the full campaign truly separates, computed from every cell, never
from the rule's own estimate — and over all pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from precomet.agreement import mean_agreement
from precomet.errors import PrecometError
from precomet.metaeval.evaluation import evaluate_indices
from precomet.metaeval.reference import Reference
from precomet.progress import progress
from precomet.waves.choosers import Chooser
from precomet.waves.estimate import Wave
from precomet.waves.judgements import check_human_scores
from precomet.waves.plan import sampling_units
from precomet.waves.step import PoolArrays, Step, WaveSettings, planned_looks, take_step


@dataclass(frozen=True)
class RunOutcome:
    """One run at its stop."""

    cells: int
    items: int
    seconds: float  # annotator time: every judged cell at its item's seconds per judgement of one output
    waves: int
    agreement: float  # realised under the target, against the full campaign (its true ties)
    plain_agreement: float  # realised over all pairs (a pair tied on the full campaign agrees)
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
    settings: WaveSettings
    total_cells: int
    total_items: int
    total_seconds: float
    runs: tuple[RunOutcome, ...] = field(default_factory=tuple)
    true_ties: int = 0  # pairs the full campaign does not separate under the target

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
            "judgements": _spread(np.array([r.cells for r in self.runs], dtype=float)),
            "items_share": _spread(items),
            "hours": _spread(hours),
            "agreement_mean": float(agreement.mean()),
            "plain_agreement_mean": float(np.mean([r.plain_agreement for r in self.runs])),
            "reached_target": float((agreement >= self.settings.target.share - 1e-12).mean()),
            "true_ties": self.true_ties,
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


def realised_agreement(
    means: np.ndarray, full: np.ndarray, *, widths: np.ndarray | float = 0.0, over: str = "all"
) -> float:
    """Share of system pairs ordered as on the full campaign (:func:`precomet.agreement.mean_agreement`, rule
    ``strict``: pairs tied there — within ``widths`` — agree with any order, or are left out with
    ``over="separated"``)."""
    return float(mean_agreement(means, full, ties="strict", over=over, width=widths))


def run_once(
    truth: np.ndarray,
    chooser: Chooser,
    settings: WaveSettings,
    *,
    doc: np.ndarray,
    cost: np.ndarray,
    seed: Sequence[int],
    metric: np.ndarray | None = None,
    reference: Reference | None = None,
    true_widths: np.ndarray | None = None,
) -> RunOutcome:
    """One replay run on the fully judged ``truth`` (``N × S``), wave ``t`` seeded ``(*seed, t)`` as a live call
    would be; ``metric`` (``N × S``) feeds the predictor; ``true_widths``: the target's tie widths on the full campaign
    (default: computed); with the campaign's meta-evaluation ``reference``, the SPA and cluster count of the items
    judged for every system at the stop are recorded too."""
    n_items, n_systems = truth.shape
    units = sampling_units(doc, settings.level)
    pool = PoolArrays(units, cost, metric, planned_looks(settings, n_items, n_systems, cost))
    widths = settings.target.true_widths(truth) if true_widths is None else true_widths
    waves: list[Wave] = []
    judged = np.full(truth.shape, np.nan)
    while True:
        step = take_step(judged, waves, settings, chooser, pool, seed=seed)
        if step.wave is None:
            known = ~np.isnan(judged)
            outcome = _outcome(step, known, cost, truth, widths, settings.target.over)
            complete = np.flatnonzero(known.all(axis=1))
            if reference is None or len(complete) < 2:
                return outcome
            measured = evaluate_indices(reference, complete, measures=("spa", "clusters"))
            return replace(outcome, spa=measured["spa"], clusters=measured["clusters"])
        waves.append(step.wave)
        judged = np.where(~np.isnan(judged) | step.wave.drawn, truth, np.nan)


def _outcome(
    step: Step, known: np.ndarray, cost: np.ndarray, truth: np.ndarray, widths: np.ndarray, over: str
) -> RunOutcome:
    estimates, reading = step.estimates, step.verdict
    full = truth.mean(axis=0)
    means = estimates.means if not np.isnan(estimates.means).any() else np.zeros(len(full))
    return RunOutcome(
        cells=int(known.sum()),
        items=int(known.any(axis=1).sum()),
        seconds=float(cost @ known.sum(axis=1)),  # every judged cell at its item's seconds per output
        waves=estimates.waves,
        agreement=realised_agreement(means, full, widths=widths, over=over),
        plain_agreement=realised_agreement(means, full),
        expected=reading.expected,
        lower_bound=reading.lower_bound,
        stopped=reading.stop and not known.all(),
    )


def replay(
    truth: np.ndarray,
    make_chooser: Callable[[], Chooser],
    settings: WaveSettings,
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
    check_human_scores(truth, [f"#{i}" for i in range(len(truth))], [f"#{s}" for s in range(truth.shape[1])], campaign)
    if runs < 1:
        raise PrecometError(f"runs={runs!r}: expected at least one run", param="runs")
    doc = np.asarray(doc, dtype=object)
    cost = np.asarray(cost, dtype=float)
    chooser = make_chooser()
    widths = settings.target.true_widths(truth)
    outcomes = []
    with progress(total=runs, desc=f"replay {campaign} {chooser.label}", unit="run") as bar:
        for r in range(runs):
            outcomes.append(
                run_once(
                    truth, chooser, settings, doc=doc, cost=cost, seed=(seed, r), metric=metric, reference=reference,
                    true_widths=widths,
                )
            )  # fmt: skip
            bar.update(1)
    return ReplayResult(
        campaign=campaign,
        chooser=chooser.label,
        settings=settings,
        total_cells=int(truth.size),
        total_items=int(truth.shape[0]),
        total_seconds=float(cost.sum()) * truth.shape[1],
        runs=tuple(outcomes),
        true_ties=int(settings.target.true_ties(truth).sum()),
    )


def fewer_than(cells: np.ndarray, random_cells: np.ndarray) -> float:
    """One-sided p-value that a chooser's runs stop on fewer cells than random waves' runs with the same seeds
    (Wilcoxon signed-rank on the paired differences); 1.0 when every pair is equal."""
    from scipy.stats import wilcoxon

    differences = np.asarray(cells, dtype=float) - np.asarray(random_cells, dtype=float)
    if not np.any(differences != 0):
        return 1.0
    return float(wilcoxon(differences, alternative="less").pvalue)
