"""Drawing the next wave: its size, its sampling units, the systems' share of cells, and the draw itself."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from precomet.costs import parse_duration
from precomet.errors import PrecometError
from precomet.waves.design import DEFAULT_FLOOR, Design, poisson_draw
from precomet.waves.estimate import Estimates, Wave, fit_predictor
from precomet.waves.stop import Verdict

LEVELS = ("item", "doc")
"""Sampling units: single items, or whole documents."""
MIN_SYSTEM_SHARE = 0.3
"""With system-level allocation, the share of a drawn item's cells a settled system keeps (its probabilities'
floor)."""


@dataclass(frozen=True)
class WaveSize:
    """A wave's expected size: ``amount`` items, cells or seconds (``kind``; seconds of annotator time, every
    judged cell at its item's seconds per judgement of one output)."""

    kind: str  # "items" | "cells" | "seconds"
    amount: float
    text: str

    def in_cells(self, n_systems: int) -> WaveSize:
        """The same wave counted in cells (items × systems): with system-level allocation a wave spends its cells
        where the ranking is undecided instead of judging fewer cells."""
        if self.kind != "items":
            return self
        return WaveSize("cells", self.amount * n_systems, self.text)

    def planned_looks(self, n_items: int, n_cells: int, seconds: float) -> int:
        """Waves that exhaust a pool of this size (fixed before the first draw: the stop rule spends its error
        level over them)."""
        whole = {"items": n_items, "cells": n_cells, "seconds": seconds}[self.kind]
        return max(1, math.ceil(whole / self.amount))


def parse_wave_size(text: str, n_items: int | None = None) -> WaveSize:
    """``200`` (items), ``5%`` (of the pool's items), ``300cells`` or a duration (``10h``, ``90m``)."""
    spelled = text.strip().lower()
    if re.fullmatch(r"[0-9]+", spelled):
        amount, kind = float(spelled), "items"
    elif re.fullmatch(r"[0-9]+(\.[0-9]*)?\s*%", spelled):
        if n_items is None:
            raise PrecometError(f"wave size {text!r}: a share needs the pool's size", param="size")
        amount, kind = float(spelled[:-1]) / 100 * n_items, "items"
    elif re.fullmatch(r"[0-9]+\s*cells?", spelled):
        amount, kind = float(re.sub(r"\D", "", spelled)), "cells"
    else:
        try:
            amount, kind = parse_duration(spelled), "seconds"
        except ValueError:
            raise PrecometError(
                f"wave size {text!r}: give items (200), a share of the pool (5%), cells (300cells) or a duration"
                " (10h, 90m)",
                param="size",
            ) from None
    if amount <= 0:
        raise PrecometError(f"wave size {text!r}: expected a size > 0", param="size")
    return WaveSize(kind, amount, text)


def sampling_units(doc: np.ndarray, level: str) -> np.ndarray:
    """Unit number of every item: its own position (``item``) or its document's (``doc``)."""
    if level not in LEVELS:
        raise PrecometError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}", param="level")
    if level == "item":
        return np.arange(len(doc))
    _, units = np.unique(np.asarray(doc, dtype=str), return_inverse=True)
    return units


def system_probabilities(estimates: Estimates | None, verdict: Verdict | None, *, floor: float) -> np.ndarray:
    """``q``: every system's share of a drawn item's cells — all of them for a system with a pair still in play (not
    settled: ordered the other way beyond its tie width with probability ≥ :data:`precomet.waves.stop.SETTLED`),
    ``floor`` for a system whose every pair is decided or tied (all cells while nothing is estimated). Systems in
    play are judged together on every drawn item, so the differences still undecided stay paired on the same items."""
    if estimates is None or verdict is None or np.isnan(estimates.differences).any() or not len(estimates.means):
        return np.ones(len(estimates.means) if estimates is not None else 0)
    in_play = np.zeros(len(estimates.means), dtype=bool)
    open_pairs = ~verdict.settled if len(verdict.settled) else np.ones(len(estimates.pairs), dtype=bool)
    for column in (0, 1):
        in_play[estimates.pairs[open_pairs, column]] = True
    return np.where(in_play, 1.0, floor)


def unit_sizes(
    units: np.ndarray, open_cells: np.ndarray, q: np.ndarray, cost: np.ndarray, kind: str
) -> tuple[np.ndarray, np.ndarray]:
    """``(open units, size of each)`` in the wave size's ``kind``: open items, expected cells, or expected seconds
    (expected cells × the item's seconds per judgement of one output)."""
    per_item = {
        "items": open_cells.any(axis=1).astype(float),
        "cells": open_cells @ q,
        "seconds": cost * (open_cells @ q),
    }[kind]
    open_units = np.unique(units[open_cells.any(axis=1)])
    sizes = np.bincount(units, weights=per_item, minlength=int(units.max()) + 1)[open_units]
    return open_units, np.maximum(sizes, 1e-12)


def draw_wave(
    *,
    number: int,
    item_scores: np.ndarray,
    judged: np.ndarray,
    known: np.ndarray,
    units: np.ndarray,
    cost: np.ndarray,
    size: WaveSize,
    q: np.ndarray,
    rng: np.random.Generator,
    floor: float = DEFAULT_FLOOR,
    chooser: str = "random",
    top_k: bool = False,
    predictor: np.ndarray | None = None,
) -> Wave:
    """Draw wave ``number`` over the open cells of the pool (``known`` = judged cells): units get inclusion
    probabilities from the chooser's ``item_scores`` summed per unit, each drawn unit draws each system with
    probability ``q`` (for all its open cells of that system). ``top_k`` takes the highest-scoring units instead
    (deterministic; no valid weights). ``predictor``: the wave's ``f`` (``N × S``, fitted on ``known`` only);
    default the judged cells' system means."""
    open_cells = ~known
    open_units, sizes = unit_sizes(units, open_cells, q, cost, size.kind)
    if not len(open_units):
        raise PrecometError("every cell of the pool is judged: there is no wave left to draw")
    open_items = open_cells.any(axis=1)
    unit_scores = np.bincount(units[open_items], weights=item_scores[open_items], minlength=int(units.max()) + 1)
    scores = unit_scores[open_units]
    design = Design(scores, sizes, float(size.amount), float(floor), top_k)
    probability = design.probabilities()
    picked = open_units[probability == 1.0] if top_k else open_units[poisson_draw(probability, rng)]
    chosen_items = np.isin(units, picked)
    # systems are drawn once per unit (every item of a drawn document shows the same systems), as the variance
    # estimate of precomet.waves.estimate assumes
    systems_drawn = (rng.random((int(units.max()) + 1, known.shape[1])) < q[None, :])[units]
    drawn = open_cells & chosen_items[:, None] & systems_drawn
    return Wave(
        number=number,
        units=units,
        open_units=open_units,
        unit_probability=probability,
        system_probability=q.astype(float),
        known=known.copy(),
        drawn=drawn,
        predictor=predictor if predictor is not None else fit_predictor(judged, known).values(None, len(units)),
        chooser=chooser,
        weighted=not top_k,
        design=design,
    )
