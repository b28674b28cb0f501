"""What a benchmark runs: its options (:class:`BenchmarkPlan`), the utility methods and external utilities
(checked), the control rows, and the circularity check."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from precomet.benchmark.budgets import DEFAULT_PROPS, validate_props
from precomet.benchmark.null import NULL_ORDERINGS
from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.selection.objective import DEFAULT_COST_OBJECTIVE
from precomet.utilities import UTILITY_METHODS

LENGTH_CONTROL = "length"
"""The control row: the ``length`` utility method (:mod:`precomet.utilities.length`), run like any method."""


@dataclass(frozen=True)
class BenchmarkPlan:
    """What :func:`precomet.benchmark.run_benchmark` runs and how the rows are judged: every option that decides the
    result, and so every option its signature records. Checked when made (the budgets, ``null_orderings``); what
    needs the campaign (the metric's name, budgets of fewer than 2 items, the circularity check) is checked by the
    run. ``dataclasses.replace(plan, seed=1)`` is the same plan with another seed."""

    methods: Sequence[str] = ()
    """Utility methods (names in :data:`~precomet.utilities.UTILITY_METHODS`), computed on ``metric``."""
    metric: str | None = None
    """The score the score-based methods compute their utilities from (needed by any such method)."""
    score: str = HUMAN
    """The score the systems are ranked by, on the subsets and on the full campaign (the human scores by default)."""
    props: Sequence[float] = DEFAULT_PROPS
    """The budgets: shares in (0, 1] of the items, or of the total annotation cost with ``budget_unit="cost"``."""
    seeds: int = 100
    """Random selection's seeds (the baseline every row is compared with)."""
    budget_unit: str = "items"
    """``"items"`` or ``"cost"``: what the budgets ``props`` are shares of."""
    cost_objective: str = DEFAULT_COST_OBJECTIVE
    """What the knapsack maximises under a cost budget (:mod:`precomet.selection.objective`)."""
    balance: str | None = None
    """``"domain"``: every domain gets the same number of units (:data:`~precomet.selection.selector.BALANCE`)."""
    level: str = "item"
    """``"doc"``: whole documents are selected (:data:`~precomet.selection.selector.LEVELS`)."""
    permutations: int = 1000
    """Permutations of the significance tests behind SPA and the cluster counts."""
    cluster_rule: str = "paper"
    """How clusters of systems are counted (:data:`precomet.metaeval.CLUSTER_RULES`)."""
    seed: int = 0
    """The seed of every random step (random selection, permutations, the null, the oracle, stochastic methods)."""
    parity_grid: int = 32
    """The parity search's coarse grid."""
    method_options: Mapping[str, Mapping[str, Any]] | None = None
    """Options per method (``{method: {option: value}}``), for methods among ``methods`` only."""
    time_limit: float = 10.0
    """Seconds the knapsack solver may spend on one selection; an uncertified knapsack is used as found."""
    oracle: bool = True
    """Add the headroom row: greedy on the ``score`` itself (:mod:`precomet.benchmark.oracle`), flagged unusable."""
    oracle_candidates: int = 100
    """Candidates the greedy oracle tries per step."""
    oracle_step: int = 10
    """Items the greedy oracle adds per step."""
    allow_circular: bool = False
    """Run a score-based method computed on ``metric == score`` (refused otherwise: :func:`circular_reason`)."""
    controls: bool = True
    """Add the length control row (left out, with the reason, when ``length`` is among the methods)."""
    null_orderings: int = NULL_ORDERINGS
    """Random orderings every row is judged against (:mod:`precomet.benchmark.null`); 0 switches the null off."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "props", tuple(validate_props(self.props)))
        null_orderings = self.null_orderings
        if isinstance(null_orderings, bool) or not isinstance(null_orderings, int) or null_orderings < 0:
            raise PrecometError(
                f"{{null_orderings}}{null_orderings!r}: expected a whole number ≥ 0 of random orderings (0: no null)",
                param="null_orderings",
            )
        object.__setattr__(self, "methods", tuple(self.methods))
        if isinstance(self.method_options, Mapping):  # a copy: the plan does not change when the caller's does
            object.__setattr__(self, "method_options", dict(self.method_options))


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
