"""A live campaign in waves: the manifest of the waves drawn so far, the judgements so far, and the next wave.

The manifest (a JSON file the command keeps beside the batches) records, for every wave and before its draw:
the chooser, the inclusion probability of every open unit, every system's share of cells ``q``, the cells that
were already judged, the predictor's per-system values, and the cells drawn. That is all the weighting of
:mod:`precomet.waves.estimate` needs, so the estimates of a later call are the ones a replay computes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precomet import __version__
from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.metaeval.cluster_rules import split_clusters_wmt
from precomet.waves.choosers import Chooser
from precomet.waves.design import DEFAULT_FLOOR
from precomet.waves.estimate import Estimates, Predictor, Wave, combine, fit_predictor, pair_contrasts, wave_result
from precomet.waves.plan import MIN_SYSTEM_SHARE, WaveSize, draw_wave, sampling_units, system_probabilities
from precomet.waves.stop import Verdict, projected_fraction, verdict

MANIFEST_VERSION = 1


@dataclass(frozen=True)
class Judgements:
    """Human scores of the pool's cells (``N × S``, NaN = not judged) and the systems they name."""

    systems: tuple[str, ...]
    scores: np.ndarray


def read_judgements(
    paths: list[Path],
    pool: Campaign,
    systems: tuple[str, ...] | None,
    *,
    pearmut: list[Path] | None = None,
    appraise: list[Path] | None = None,
) -> Judgements:
    """The human scores of ``paths`` (any input ``rank`` reads), of Pearmut annotation exports ``pearmut`` and of
    Appraise score exports ``appraise`` (of batches numbered by pool position; BAD and tutorial rows dropped) on the
    pool's items; a cell several annotators judged gets their mean. Items the pool does not
    hold, systems outside ``systems`` (when fixed), a source text that differs from the pool's, and a cell judged in
    two files are errors naming the file."""
    from precomet.io import load

    index = {str(i): k for k, i in enumerate(pool.ids)}
    cells: dict[tuple[int, str], tuple[float, Path]] = {}
    order: list[str] = list(systems or ())
    exports = [(path, _pearmut_rows(path, index)) for path in pearmut or []]
    exports += [(path, _appraise_rows(path, pool)) for path in appraise or []]
    for export, scored in exports:
        collected: dict[tuple[int, str], list[float]] = {}
        for judgement in scored:
            if systems is not None and judgement.system not in systems:
                raise PrecometError(f"{export}: model {judgement.system!r} is not one of the pool's systems")
            collected.setdefault((judgement.item, judgement.system), []).append(judgement.score)
        for key, values in collected.items():
            if key in cells:
                raise PrecometError(f"{export}: item {pool.ids[key[0]]!r}, system {key[1]!r} is judged again")
            cells[key] = (float(np.mean(values)), export)
            if key[1] not in order:
                order.append(key[1])
    for path in paths:
        judged = load(path, complete=False)
        if HUMAN not in judged.scores:
            raise PrecometError(f"{path}: no human scores (expected judgements with a 'human' score per system)")
        unknown = [str(i) for i in judged.ids if str(i) not in index]
        if unknown:
            raise PrecometError(
                f"{path}: {len(unknown)} judged item(s) are not in the pool, e.g. {unknown[0]!r}: judgements of"
                " another campaign? (items are matched by id)"
            )
        rows = np.array([index[str(i)] for i in judged.ids], dtype=int)
        differs = [str(judged.ids[k]) for k, r in enumerate(rows) if judged.src[k] and judged.src[k] != pool.src[r]]
        if differs:
            raise PrecometError(
                f"{path}: item {differs[0]!r} has another source text than the pool's: judgements of another campaign?"
            )
        matrix = judged.score(HUMAN)
        for column, system in enumerate(judged.systems):
            if systems is not None and system not in systems:
                raise PrecometError(
                    f"{path}: system {system!r} is not one of the pool's ({', '.join(systems)})", param="judgements"
                )
            if system not in order:
                order.append(system)
            for k in np.flatnonzero(~np.isnan(matrix[:, column])):
                key = (int(rows[k]), system)
                if key in cells:
                    raise PrecometError(
                        f"{path}: item {judged.ids[k]!r}, system {system!r} is judged again (also in"
                        f" {cells[key][1]}); give every cell once (average repeated judgements first)"
                    )
                cells[key] = (float(matrix[k, column]), path)
    scores = np.full((len(pool), len(order)), np.nan)
    for (row, system), (value, _) in cells.items():
        scores[row, order.index(system)] = value
    return Judgements(tuple(order), scores)


@dataclass(frozen=True)
class _Score:
    item: int  # pool position
    system: str
    score: float


def _pearmut_rows(path: Path, index: dict[str, int]) -> list[_Score]:
    from precomet.io.pearmut import read_pearmut_annotations

    rows = []
    for judgement in read_pearmut_annotations(path):
        if judgement.item not in index:
            raise PrecometError(f"{path}: item {judgement.item!r} is not in the pool: annotations of another campaign?")
        rows.append(_Score(index[judgement.item], judgement.system, float(judgement.score)))
    return rows


def _appraise_rows(path: Path, pool: Campaign) -> list[_Score]:
    from precomet.io.esa import drop_reason, read_appraise_csv

    rows = []
    for row in read_appraise_csv(path):
        if drop_reason(row) is not None or row.kind != "TGT":
            continue
        position = row.item - 1
        if not 0 <= position < len(pool) or row.doc != f"{pool.doc[position]}#{row.system}":
            raise PrecometError(
                f"{path}:{row.line}: item {row.item} ({row.doc}) is not an item of the pool's batches (itemID = pool"
                " position + 1, documentID = DOC#SYSTEM): scores of another campaign or of another batch?"
            )
        try:
            score = float(row.score)
        except ValueError:
            raise PrecometError(f"{path}:{row.line}: score {row.score!r} is not a number") from None
        if not math.isfinite(score):
            raise PrecometError(f"{path}:{row.line}: score {row.score!r} is not a finite number")
        rows.append(_Score(position, row.system, score))
    return rows


def pool_output_systems(pool: Campaign) -> tuple[str, ...] | None:
    """The systems whose outputs the pool holds (``None``: a pool of sources); a system missing an output on some
    item is refused, since a campaign in waves judges every system on every item it draws."""
    systems = tuple(s for s in pool.systems if s in pool.outputs)
    for system in systems:
        missing = [i for i, output in zip(pool.ids, pool.outputs[system]) if output is None]
        if missing:
            raise PrecometError(
                f"{pool.name}: item {missing[0]!r} has no output of system {system!r} ({len(missing)} such item(s)):"
                " a campaign in waves judges every system on every item it draws; drop those items or that system"
            )
    return systems or None


def _cells_to_json(mask: np.ndarray, ids: np.ndarray, systems: tuple[str, ...]) -> dict[str, list[str]]:
    return {str(ids[i]): [systems[s] for s in np.flatnonzero(mask[i])] for i in np.flatnonzero(mask.any(axis=1))}


def _cells_from_json(record: dict[str, list[str]], index: dict[str, int], systems: tuple[str, ...]) -> np.ndarray:
    mask = np.zeros((len(index), len(systems)), dtype=bool)
    for item, names in record.items():
        if item not in index:
            raise PrecometError(f"the waves manifest names item {item!r}, which the pool does not hold")
        for name in names:
            if name == "*":
                mask[index[item], :] = True
            elif name in systems:
                mask[index[item], systems.index(name)] = True
    return mask


@dataclass
class Manifest:
    """The waves drawn so far (module docstring), as stored in the manifest file."""

    pool_hash: str
    level: str
    size: str
    planned: int
    metric: str | None
    target: float
    confidence: float
    waves: list[dict[str, Any]]

    @classmethod
    def read(cls, path: Path, pool: Campaign) -> Manifest:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise PrecometError(f"{path}: not a waves manifest (invalid JSON: {err})") from None
        if not isinstance(data, dict) or data.get("manifest") != "precomet waves":
            raise PrecometError(f"{path}: not a precomet waves manifest")
        if data.get("pool_hash") != pool.data_hash():
            raise PrecometError(
                f"{path}: this manifest belongs to another pool (its data hash differs from --data's): give the pool"
                " the waves were drawn from"
            )
        try:
            return cls(
                data["pool_hash"],
                data["level"],
                data["size"],
                int(data["planned"]),
                data["metric"],
                float(data["target"]),
                float(data["confidence"]),
                list(data["waves"]),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise PrecometError(f"{path}: a damaged waves manifest ({type(err).__name__}: {err})") from None

    def check_settings(self, *, target: float, confidence: float, metric: str | None) -> None:
        """Refuse settings other than the campaign's: its stop rule spends its error level by the target and the
        confidence from the first wave on, and its waves were weighted with the metric's predictor."""
        for name, given, kept in (("target", target, self.target), ("confidence", confidence, self.confidence)):
            if given != kept:
                raise PrecometError(
                    f"{{{name}}}{given}: the manifest's campaign runs with {{{name}}}{kept} (its stop rule spends its"
                    " error level by it from the first wave on); give the same value",
                    param=name,
                )
        if metric != self.metric:
            raise PrecometError(
                f"{{metric}}{metric}: the manifest's waves were weighted with the metric {self.metric!r}; give the same"
                " metric on every call of one campaign",
                param="metric",
            )

    def systems(self) -> set[str]:
        """The systems the recorded waves name (in their judged cells and system shares)."""
        named = set()
        for record in self.waves:
            named.update(record["system_probability"])
            for names in record["known"].values():
                named.update(names)
        return named - {"*"}

    def to_dict(self) -> dict[str, Any]:
        return {
            "manifest": "precomet waves",
            "version": MANIFEST_VERSION,
            "precomet": __version__,
            "pool_hash": self.pool_hash,
            "level": self.level,
            "size": self.size,
            "planned": self.planned,
            "metric": self.metric,
            "target": self.target,
            "confidence": self.confidence,
            "waves": self.waves,
        }

    def rebuild(self, pool: Campaign, systems: tuple[str, ...]) -> list[Wave]:
        """The recorded waves as :class:`Wave` objects over ``systems`` (cells drawn before the systems were known
        — a pool without outputs — stand for every system); the predictor reads the manifest's metric."""
        metric = metric_matrix(pool, self.metric, systems)
        index = {str(i): k for k, i in enumerate(pool.ids)}
        units = sampling_units(pool.doc, self.level)
        keys = _unit_keys(pool, self.level)
        position = {key: u for u, key in enumerate(keys)}
        try:
            return [self._wave(record, pool, systems, metric, index, units, position) for record in self.waves]
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise PrecometError(
                f"a damaged waves manifest: a wave record is unreadable ({type(err).__name__}: {err})"
            ) from None

    def _wave(
        self,
        record: dict[str, Any],
        pool: Campaign,
        systems: tuple[str, ...],
        metric: np.ndarray | None,
        index: dict[str, int],
        units: np.ndarray,
        position: dict[str, int],
    ) -> Wave:
        """One recorded wave as a :class:`Wave` (see :meth:`rebuild`)."""
        return Wave(
            number=int(record["number"]),
            units=units,
            open_units=np.array([position[str(key)] for key in record["open_units"]], dtype=int),
            unit_probability=np.asarray(record["unit_probability"], dtype=float),
            system_probability=np.array([float(record["system_probability"].get(s, 1.0)) for s in systems]),
            known=_cells_from_json(record["known"], index, systems),
            drawn=_cells_from_json(record["drawn"], index, systems),
            predictor=Predictor(
                np.array([float(record["predictor"]["offsets"].get(s, 0.0)) for s in systems]),
                float(record["predictor"]["slope"]),
            ).values(metric, len(pool)),
            chooser=str(record["chooser"]),
            weighted=bool(record["weighted"]),
        )


def metric_matrix(pool: Campaign, metric: str | None, systems: tuple[str, ...]) -> np.ndarray | None:
    """The pool's scores of ``metric`` for ``systems`` (``N × S``), or ``None`` without a metric."""
    if metric is None or not systems:
        return None
    if metric not in pool.scores:
        raise PrecometError(f"the pool has no {metric!r} scores ({', '.join(pool.scores) or 'none'})", param="metric")
    return np.asarray(pool.score(metric), dtype=float)[:, pool.system_index(systems)]


def _unit_keys(pool: Campaign, level: str) -> list[str]:
    if level == "item":
        return [str(i) for i in pool.ids]
    return [str(d) for d in np.unique(np.asarray(pool.doc, dtype=str))]


@dataclass(frozen=True)
class Standing:
    """Where a live campaign stands: its estimates, the stop rule's verdict, and what is predicted still needed."""

    systems: tuple[str, ...]
    estimates: Estimates
    verdict: Verdict
    judged_cells: int
    judged_items: int
    pool_items: int
    pool_cells: int
    predicted_share: float
    items_needed: int
    seconds_needed: float
    weighted: bool

    def clusters(self) -> list[int]:
        """Cluster number of every system (1 = best), by the WMT rule (:func:`split_clusters_wmt`): a system opens a
        new cluster when a member of the current one is decided better than it (its pair decided at this look)."""
        order = np.argsort(-self.estimates.means, kind="stable")
        decided = np.zeros((len(order), len(order)), dtype=bool)
        decided[tuple(self.estimates.pairs[self.verdict.decided].T)] = True
        decided |= decided.T
        pvalues = np.where(decided[np.ix_(order, order)], 0.0, 1.0)  # decided: "significant" at any level
        number = np.empty(len(order), dtype=int)
        for cluster, members in enumerate(split_clusters_wmt(order, pvalues, alpha=0.5), start=1):
            number[members] = cluster
        return number.tolist()

    def to_dict(self, z: float) -> dict[str, Any]:
        est, ver = self.estimates, self.verdict
        clusters = self.clusters() if len(self.systems) and not np.isnan(est.means).any() else []
        order: list[int] = list(np.argsort(-est.means, kind="stable")) if clusters else []
        return {
            "stop": ver.stop,
            "rule": ver.rule,
            "target": ver.target,
            "confidence": ver.confidence,
            "expected_agreement": ver.expected,
            "agreement_lower_bound": ver.lower_bound,
            "level_this_look": ver.level,
            "waves": est.waves,
            "estimates": "inverse-probability weighted (AIPW over waves)"
            if self.weighted
            else "BIASED: plain means of a deterministic top-k choice",
            "judged_cells": self.judged_cells,
            "judged_items": self.judged_items,
            "pool_items": self.pool_items,
            "pool_cells": self.pool_cells,
            "predicted_stop_share": self.predicted_share,
            "items_still_needed": self.items_needed,
            "hours_still_needed": self.seconds_needed / 3600,
            "ranking": [
                {
                    "system": self.systems[s],
                    "mean": float(est.means[s]),
                    "ci_low": float(est.means[s] - z * est.mean_se[s]),
                    "ci_high": float(est.means[s] + z * est.mean_se[s]),
                    "cluster": clusters[s],
                }
                for s in order
            ],
            "decided_pairs": [
                [self.systems[a], self.systems[b]] for (a, b), d in zip(est.pairs.tolist(), ver.decided) if d
            ],
            "undecided_pairs": [
                [self.systems[a], self.systems[b]] for (a, b), d in zip(est.pairs.tolist(), ver.decided) if not d
            ],
        }


def standing(
    pool: Campaign,
    judgements: Judgements,
    waves: list[Wave],
    *,
    target: float,
    confidence: float,
    rule: str,
    size: WaveSize,
    planned: int,
    level: float | None = None,
) -> Standing:
    """Estimates, verdict and the predicted remaining work of a live campaign (``level``: the error level the
    manifest decided for this look before its wave was drawn). A judgement the manifest saw when it drew a wave
    and that is missing now is an error: every wave's weights count on it."""
    scores = judgements.scores
    for wave in waves:
        lost = wave.known & np.isnan(scores)
        if lost.any():
            item, system = np.argwhere(lost)[0]
            raise PrecometError(
                f"item {pool.ids[item]!r}, system {judgements.systems[system]!r} was judged when wave {wave.number} was"
                f" drawn, and no judgement file given now holds it ({int(lost.sum())} such cell(s)): give every"
                " judgement file of the campaign",
                param="judgements",
            )
    n_items, n_systems = scores.shape
    pairs, contrasts = pair_contrasts(n_systems)
    weighted = all(w.weighted for w in waves)
    results = [wave_result(w, scores, contrasts) for w in waves] if n_systems else []
    estimates = combine(results, scores, pairs, weighted=weighted, units=waves[0].units if waves else None)
    reading = verdict(estimates, target=target, confidence=confidence, rule=rule, planned=planned, level=level)
    judged = ~np.isnan(scores)
    cells = max(judged.size, 1)
    share = judged.sum() / cells
    step = size.amount / {"items": n_items, "cells": cells, "seconds": float(pool.cost.sum())}[size.kind]
    predicted = (
        projected_fraction(
            estimates,
            judged_fraction=share,
            step=step,
            target=target,
            confidence=confidence,
            rule=rule,
            planned=planned,
        )
        if not reading.stop
        else share
    )
    needed_share = max(predicted - share, 0.0)
    open_items = ~judged.all(axis=1) if n_systems else np.ones(n_items, dtype=bool)
    per_item_cost = float(pool.cost[open_items].mean()) if open_items.any() else 0.0
    items_needed = int(math.ceil(needed_share * n_items))
    return Standing(
        systems=judgements.systems,
        estimates=estimates,
        verdict=reading,
        judged_cells=int(judged.sum()),
        judged_items=int(judged.any(axis=1).sum()) if n_systems else 0,
        pool_items=n_items,
        pool_cells=int(judged.size),
        predicted_share=float(predicted),
        items_needed=items_needed,
        seconds_needed=items_needed * per_item_cost,
        weighted=weighted,
    )


def next_wave(
    pool: Campaign,
    judgements: Judgements,
    waves: list[Wave],
    current: Standing,
    *,
    chooser: Chooser,
    size: WaveSize,
    level: str,
    allocation: bool,
    top_k: bool,
    seed: int,
    metric: str | None = None,
    floor: float = DEFAULT_FLOOR,
) -> tuple[Wave, Predictor]:
    """Draw the next wave (seeded with ``(seed, wave number)``) and the predictor fitted for it."""
    scores = judgements.scores
    n_systems = scores.shape[1]
    width = max(n_systems, 1)
    judged = scores if n_systems else np.full((len(pool), 1), np.nan)
    known = ~np.isnan(judged)
    q = (
        system_probabilities(current.estimates, current.verdict, floor=MIN_SYSTEM_SHARE)
        if allocation and n_systems and not np.isnan(current.estimates.differences).any()
        else np.ones(width)
    )
    if allocation and n_systems:
        size = size.in_cells(n_systems)
    number = len(waves) + 1
    scores_of_metric = metric_matrix(pool, metric, judgements.systems)
    predictor = fit_predictor(judged, known, scores_of_metric if n_systems else None)
    wave = draw_wave(
        number=number,
        item_scores=chooser.scores(judged, known),
        judged=judged,
        known=known,
        units=sampling_units(pool.doc, level),
        cost=np.asarray(pool.cost, dtype=float),
        size=size,
        q=q,
        rng=np.random.default_rng([seed, number]),
        floor=floor,
        chooser=chooser.label,
        top_k=top_k,
        predictor=predictor.values(scores_of_metric if n_systems else None, len(pool))[:, :width],
    )
    return wave, predictor


def wave_record(
    wave: Wave,
    predictor: Predictor,
    pool: Campaign,
    systems: tuple[str, ...],
    level: str,
    *,
    look_level: float,
) -> dict[str, Any]:
    """The manifest entry of a freshly drawn wave (``systems`` empty: cells stand for every system, ``*``), with the
    error level its look will spend (decided before the draw)."""
    keys = _unit_keys(pool, level)
    names = systems if systems else ("*",)
    return {
        "number": wave.number,
        "chooser": wave.chooser,
        "weighted": wave.weighted,
        "open_units": [keys[u] for u in wave.open_units],
        "unit_probability": [float(p) for p in wave.unit_probability],
        "system_probability": {s: float(q) for s, q in zip(systems, wave.system_probability)},
        "known": _cells_to_json(wave.known, pool.ids, names) if systems else {},
        "drawn": _cells_to_json(wave.drawn, pool.ids, names),
        "look_level": look_level,
        "predictor": {"offsets": {s: float(f) for s, f in zip(systems, predictor.offsets)}, "slope": predictor.slope},
    }
