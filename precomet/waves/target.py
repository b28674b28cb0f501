"""What "the ranking is settled" means: the share of system pairs ordered as the full test set orders them, over
the pairs the full test set separates.

* ``separated`` (default) — WMT's question: *is every difference the full test set would show already shown?* A pair
  whose full-set difference ``D`` lies within ``z`` full-set standard errors (``|D| ≤ z · s_d / √N``, ``s_d`` the
  standard deviation of the pair's per-item differences over the pool's ``N`` items: the paired test the full test
  set itself would run) is a tie: it cannot be wrong, and the share is over the other pairs;
* ``zone`` — an indifference zone in the score's own units: ``|D| ≤ zone`` is a tie;
* ``all-pairs`` — every pair counts, a tie only when ``D`` is exactly 0 (the target of precomet 0.16–0.19).

During a campaign ``s_d`` is estimated from the judged cells under the waves' weights
(:func:`precomet.waves.estimate.pair_spread`); replay judges the stop against the widths computed from every cell
(:meth:`Target.true_widths`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from precomet.agreement import pair_differences
from precomet.errors import PrecometError

TARGET_KINDS = ("separated", "zone", "all-pairs")
"""The targets (module docstring)."""
DEFAULT_KIND = "separated"
"""The target of a campaign that names none."""
DEFAULT_Z = 1.96
"""Full-set standard errors within which a pair is a tie (the two-sided 5 % paired test)."""


@dataclass(frozen=True)
class Target:
    """A stop target: ``share`` of the counted pairs ordered right (module docstring for ``kind``)."""

    kind: str = DEFAULT_KIND
    share: float = 0.95
    z: float = DEFAULT_Z
    zone: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in TARGET_KINDS:
            raise PrecometError(
                f"{{target_kind}}{self.kind}: unknown target pairs; choose one of {', '.join(TARGET_KINDS)}",
                param="target_kind",
            )
        if not 0 < self.share <= 1:
            raise PrecometError(f"{{target}}{self.share!r}: expected a share of pairs in (0, 1]", param="target")
        if not (np.isfinite(self.z) and self.z >= 0):
            raise PrecometError(f"z={self.z!r}: expected a number of standard errors >= 0 for the tie width")
        if not (np.isfinite(self.zone) and self.zone >= 0):
            raise PrecometError(f"{{zone}}{self.zone!r}: expected a width >= 0 in the score's units", param="zone")
        if self.kind == "zone" and self.zone <= 0:
            raise PrecometError(
                "the zone target needs an indifference zone > 0 in the score's units: give {zone}0.5, for example",
                param="zone",
            )

    @property
    def over(self) -> str:
        """Which pairs the share is over (:data:`precomet.agreement.OVER`)."""
        return "all" if self.kind == "all-pairs" else "separated"

    def widths(self, full_se: np.ndarray | None, n_pairs: int) -> np.ndarray:
        """Per pair, the tie width: ``z ·`` the pair's full-set standard error (``full_se``), the zone, or 0."""
        if self.kind == "zone":
            return np.full(n_pairs, self.zone)
        if self.kind == "all-pairs" or full_se is None:
            return np.zeros(n_pairs)
        return self.z * np.nan_to_num(np.asarray(full_se, dtype=float))

    def true_widths(self, matrix: np.ndarray) -> np.ndarray:
        """The tie widths computed from every cell of a fully judged ``N × S`` matrix."""
        differences = pair_differences(matrix)
        return self.widths(full_set_se(differences), differences.shape[1])

    def true_ties(self, matrix: np.ndarray) -> np.ndarray:
        """Mask of the pairs the fully judged ``matrix`` does not separate under this target."""
        matrix = np.asarray(matrix, dtype=float)
        return np.abs(pair_differences(matrix.mean(axis=0))) <= self.true_widths(matrix)

    def describe(self) -> str:
        """One line for reports: which target ran."""
        if self.kind == "separated":
            return f"{self.share:g} of the pairs the full test set separates (a tie: |D| <= {self.z:g} full-set SE)"
        if self.kind == "zone":
            return f"{self.share:g} of the pairs outside an indifference zone of {self.zone:g} score points"
        return f"{self.share:g} of all pairs"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def full_set_se(differences: np.ndarray) -> np.ndarray:
    """The full-set standard error ``s_d / √N`` of every pair from its ``N × P`` per-item differences."""
    n = differences.shape[0]
    if n < 2:
        return np.zeros(differences.shape[1])
    return np.std(differences, axis=0, ddof=1) / np.sqrt(n)
