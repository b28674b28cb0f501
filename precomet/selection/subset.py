"""Build the subset to annotate: top-k, or an exact 0-1 knapsack with cost, domain balance and documents.

:func:`select_subset` is the one entry point. Constant cost (no ``cost``, or a budget counted in items)
is a top-k in pure numpy; a cost budget is the knapsack of paper Eq. 2, solved to a certified optimum by
:mod:`precomet.selection.knapsack` (pulp, bundled CBC by default). See docs/select.md for the exact
meaning of every budget and constraint. The subset's files (JSONL, manifest, batch) are written by
:mod:`precomet.selection.subset_file`; both are public in :mod:`precomet.selection`.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from precomet.campaign import require_documents, source_length
from precomet.costs import item_seconds
from precomet.deprecated import plan_from_keywords
from precomet.errors import PrecometError, SolverGapWarning
from precomet.record import freeze_fields
from precomet.selection.knapsack import Problem, fitting_count, solve
from precomet.selection.objective import DEFAULT_COST_OBJECTIVE, check_cost_objective, unit_values
from precomet.selection.units import (
    budget_items,
    build_units,
    factorize,
    group_codes,
    normalise,
    quota_targets,
    smallest,
    top_per_group,
)
from precomet.signature import jsonable, signature

if TYPE_CHECKING:
    from precomet.campaign import Campaign

__all__ = ["Selection", "SubsetPlan", "select_subset"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SubsetPlan:
    """How :func:`select_subset` chooses: the budget (exactly one of ``budget``, ``proportion``, ``budget_cost``), the
    constraints, the solver's limits, the seed and the cost objective. Checked when made (one budget, its value, the
    cost objective, ``balance``); what needs the items (a proportion of less than one item, the quotas' domains, the
    level's documents) is checked by :func:`select_subset`. ``dataclasses.replace(plan, proportion=0.2)`` is the same
    plan with another budget (give ``None`` for the one it had)."""

    budget: int | None = None
    """The budget as a count of items (units are then counted in items, whatever their cost)."""
    proportion: float | None = None
    """The budget as a share in (0, 1] of the items, or of the total cost when costs are given."""
    budget_cost: float | None = None
    """The budget in cost units (seconds for a campaign's costs)."""
    balance: str | None = None
    """``"domain"``: every domain gets the same number of units."""
    quotas: Mapping[str, float] | None = None
    """``{domain: count}`` exact counts or ``{domain: share}`` budget shares (not with ``balance``)."""
    level: str = "item"
    """``"doc"``: units are documents (a document's items are chosen together)."""
    solver: str = "cbc"
    """The knapsack's solver (:mod:`precomet.selection.knapsack`)."""
    time_limit: float = 60.0
    """Seconds the solver may spend."""
    allow_gap: bool = False
    """Use a knapsack the solver did not certify within ``gap_tolerance`` (with a :class:`SolverGapWarning`) instead of
    refusing it."""
    gap_tolerance: float = 1e-4
    """The relative gap below which the knapsack counts as optimal."""
    seed: int = 0
    """The solver's seed."""
    cost_objective: str = DEFAULT_COST_OBJECTIVE
    """What the knapsack maximises under a cost budget (:mod:`precomet.selection.objective`)."""

    def __post_init__(self) -> None:
        check_cost_objective(self.cost_objective)
        _check_budget(self.budget, self.proportion, self.budget_cost)
        if self.balance not in (None, "domain"):
            raise PrecometError(f"unknown balance {self.balance!r}; choose 'domain' or leave it unset")
        if self.balance and self.quotas:
            raise PrecometError("give either {balance} or {quotas}, not both", param=("balance", "quotas"))
        if isinstance(self.quotas, Mapping):  # a copy: the plan does not change when the caller's does
            object.__setattr__(self, "quotas", dict(self.quotas))


@dataclass(frozen=True, eq=False)
class Selection:
    """A chosen subset and how good the optimiser proved it to be.

    ``indices`` are item positions, most useful unit first (ties: earlier position first; a document's
    items stay together in their original order). ``objective``/``bound`` are on the knapsack's values: the
    normalised utilities (:func:`precomet.selection.units.normalise`) for a count budget, the cost
    objective's values (:mod:`precomet.selection.objective`) for a cost budget;
    ``gap = (bound - objective) / objective``. ``total_cost`` is always an annotation cost: the sum of the chosen
    items' costs (seconds for a campaign's costs), ``None`` when no costs were known; :attr:`n_items` counts them.
    """

    indices: np.ndarray
    status: str
    objective: float
    bound: float
    gap: float
    total_cost: float | None
    solver: str
    seconds: float
    level: str = "item"
    budget: Mapping[str, Any] = field(default_factory=dict)
    domains: Mapping[str, int] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0

    def __post_init__(self) -> None:
        freeze_fields(self)

    def __len__(self) -> int:
        return len(self.indices)

    @property
    def n_items(self) -> int:
        """How many items were chosen."""
        return len(self.indices)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict: every field (``indices`` as a list of positions) and ``n_items``."""
        return {
            "indices": [int(i) for i in self.indices],
            "n_items": self.n_items,
            "total_cost": self.total_cost,
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "solver": self.solver,
            "seconds": self.seconds,
            "level": self.level,
            "budget": dict(self.budget),
            "domains": dict(self.domains),
            "details": dict(self.details),
            "seed": self.seed,
        }

    def manifest(
        self,
        *,
        method: str,
        parameters: Mapping[str, Any],
        data_hash: str | None,
        sources_hash: str | None,
    ) -> dict[str, Any]:
        """The signature written beside a subset: method, parameters, budget, solver outcome, data and sources
        hashes (:mod:`precomet.provenance`), version."""
        return {
            **signature(
                "precomet select", method=method, data_hash=data_hash, sources_hash=sources_hash, seed=self.seed
            ),
            "parameters": jsonable(parameters),
            "level": self.level,
            "budget": dict(self.budget),
            "n_selected": len(self.indices),
            "total_cost": self.total_cost,
            "domains": dict(self.domains),
            "solver": self.solver,
            "status": self.status,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "seconds": round(self.seconds, 4),
            "details": dict(self.details),
        }


def select_subset(
    utility: Sequence[float] | np.ndarray,
    plan: SubsetPlan | None = None,
    *,
    cost: Sequence[float] | np.ndarray | None = None,
    domain: Sequence[Any] | np.ndarray | None = None,
    doc: Sequence[Any] | np.ndarray | None = None,
    ids: Sequence[Any] | np.ndarray | None = None,
    length: Sequence[float] | np.ndarray | None = None,
    campaign: Campaign | None = None,
    **deprecated: Any,
) -> Selection:
    """Choose the items to annotate as ``plan`` says (:class:`SubsetPlan`). Higher ``utility`` = annotate first.

    The plan holds exactly one budget: ``budget`` (items), ``proportion`` in (0, 1] (of the items, or of the total
    cost when ``cost`` is given) or ``budget_cost`` (cost units); ``balance="domain"``: every domain gets the same
    number of units; ``quotas``: ``{domain: count}`` exact counts or ``{domain: share}`` budget shares;
    ``level="doc"``: units are documents. Under a cost budget the knapsack maximises ``plan.cost_objective`` (see
    :mod:`precomet.selection.objective`; the default ``"rank-length"`` needs ``length``, e.g. the characters of each
    source; ``"paper"`` is Eq. 2 with utilities shifted onto [0.1, 0.6]).

    The keywords are the data, one value per item, aligned with ``utility``: ``cost``, ``domain``, ``doc``,
    ``length``, and ``ids``, which only name items in error messages. ``campaign`` (aligned with ``utility``) fills
    what is not given: ``domain``, ``doc``, ``ids``, ``length`` (characters of each source) and, under
    ``budget_cost``, ``cost`` as the seconds to judge every output of each item (:func:`precomet.costs.item_seconds`);
    as on the command line, ``proportion`` is then a share of the items unless ``cost=item_seconds(campaign)`` is
    passed, and ``level="doc"`` needs its documents. Its seconds also give the chosen items' ``total_cost`` under a
    count budget (when the campaign has systems).

    The options as keyword arguments (``select_subset(utility, budget=10, balance="domain")``, the form before
    0.19.0) still work, with a :class:`DeprecationWarning`, until precomet 0.20.0.
    """
    start = time.perf_counter()
    plan = plan_from_keywords("select_subset", SubsetPlan, plan, deprecated)
    if plan is None:
        plan = SubsetPlan()  # refused: no budget
    level = plan.level
    try:
        u = np.array(utility, dtype=float)
    except (TypeError, ValueError) as err:
        raise PrecometError(f"utility must be numbers, one per item ({err})", param="utility") from None
    n = len(u) if u.ndim else 0
    if campaign is not None:
        if len(campaign) != n:
            raise PrecometError(f"campaign {campaign.name!r} has {len(campaign)} items, utility has {n} values")
        cost = item_seconds(campaign) if cost is None and plan.budget_cost is not None else cost
        domain = campaign.domain if domain is None else domain
        if doc is None and level == "doc":
            require_documents(campaign)
        doc = campaign.doc if doc is None else doc
        ids = campaign.ids if ids is None else ids
        length = source_length(campaign.src) if length is None else length
    names = _Names(ids, n)
    if u.ndim != 1 or n == 0:
        raise PrecometError(f"utility must be a non-empty 1-D array, got shape {u.shape}")
    _check_finite(u, names, "utility")
    weight, capacity, budget_info = _budget(n, cost, names, plan.budget, plan.proportion, plan.budget_cost)
    cost_aware = budget_info["unit"] == "cost"
    lengths = _item_numbers(length, names, "length", positive=False) if cost_aware and length is not None else None
    domain_arr = _column(domain, n, "domain")
    doc_arr = _column(doc, n, "doc")
    units = build_units(u, weight, level=level, doc=doc_arr, domain=domain_arr, length=lengths)
    cheapest = int(np.argmin(units.weight))
    if units.weight[cheapest] > capacity:
        item = int(units.items(np.array([cheapest]))[0])
        first = str(doc_arr[item]) if level == "doc" and doc_arr is not None else names[item]
        raise PrecometError(
            f"budget {capacity:g} is below the cheapest {'document' if level == 'doc' else 'item'} "
            f"({first!r}, cost {units.weight[cheapest]:g})"
        )
    value = normalise(units.utility)
    if cost_aware:
        value = unit_values(plan.cost_objective, units.utility, units.weight, units.length)
        budget_info["objective"] = plan.cost_objective
    knapsack = dict(solver=plan.solver, time_limit=plan.time_limit, gap_tolerance=plan.gap_tolerance, seed=plan.seed)
    chosen, outcome = _optimise(
        units, value, capacity, balance=plan.balance, quotas=plan.quotas, cost_aware=cost_aware, knapsack=knapsack
    )
    if not chosen.any():
        raise PrecometError("the constraints leave no unit to select; raise the budget or relax the domain constraints")
    if outcome["status"] != "optimal":
        message = (
            f"solver {plan.solver!r} stopped at relative gap {outcome['gap']:.3g} > tolerance {plan.gap_tolerance:g} "
            f"(objective {outcome['objective']:.6g}, bound {outcome['bound']:.6g}, time limit {plan.time_limit:g} s)"
        )
        if not plan.allow_gap:
            raise PrecometError(
                message + "; raise {time_limit}... or pass {allow_gap}", param=("time_limit", "allow_gap")
            )
        warnings.warn(message, SolverGapWarning, stacklevel=2)
        log.warning(message)
    picked = np.flatnonzero(chosen)
    picked = picked[np.argsort(-units.utility[picked], kind="stable")]
    indices = units.items(picked)
    domains = {}
    if domain_arr is not None:
        found, codes = factorize(domain_arr[indices])
        domains = {d: int(c) for d, c in zip(found, np.bincount(codes, minlength=len(found)))}
    if cost is None and campaign is not None and campaign.systems:  # the seconds of a count budget's subset too
        cost = item_seconds(campaign)
    costs = cost
    total_cost = None if costs is None else math.fsum(np.asarray(costs, dtype=float)[indices].tolist())
    return Selection(
        indices=indices,
        status=outcome["status"],
        objective=outcome["objective"],
        bound=outcome["bound"],
        gap=outcome["gap"],
        total_cost=total_cost,
        solver=outcome["solver"],
        seconds=time.perf_counter() - start,
        level=level,
        budget=budget_info,
        domains=domains,
        details=outcome["details"],
        seed=plan.seed,
    )


class _Names:
    """Item names for error messages (``ids``, else positions), made only when one is shown."""

    def __init__(self, ids: Sequence[Any] | np.ndarray | None, n: int) -> None:
        if ids is not None and len(ids) != n:
            raise PrecometError(f"ids has {len(ids)} entries for {n} utilities; give one id per item", param="ids")
        self.ids, self.n = ids, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        return str(i if self.ids is None else self.ids[i])


def _column(values: Sequence[Any] | np.ndarray | None, n: int, what: str) -> np.ndarray | None:
    if values is None:
        return None
    if isinstance(values, np.ndarray) and values.dtype == object and values.shape == (n,):
        return values
    column = np.empty(len(values), dtype=object)
    column[:] = list(values)
    if len(column) != n:
        raise PrecometError(f"{what}: expected {n} values (one per utility), got {len(column)}")
    return column


def _item_numbers(values: Sequence[float] | np.ndarray, names: _Names, what: str, *, positive: bool) -> np.ndarray:
    """One finite number per item (costs: positive; lengths: not negative), as a float array."""
    array = np.array(values, dtype=float)
    if array.shape != (len(names),):
        raise PrecometError(f"{what}: expected {len(names)} values (one per utility), got shape {array.shape}")
    _check_finite(array, names, what)
    bad = np.flatnonzero(array <= 0 if positive else array < 0)
    if len(bad):
        rule = "be positive" if positive else "not be negative"
        raise PrecometError(f"{what} of item {names[bad[0]]!r} is {array[bad[0]]:g}; {what}s must {rule}")
    return array


def _check_finite(values: np.ndarray, names: _Names, what: str) -> None:
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise PrecometError(
            f"{what} of item {names[bad[0]]!r} is {float(values[bad[0]])}; {len(bad)} item(s) have no finite {what}"
        )


def _check_budget(budget, proportion, budget_cost) -> str:
    """The name of the one budget given, refused unless exactly one is given, with a valid value."""
    given = [
        k for k, v in (("budget", budget), ("proportion", proportion), ("budget_cost", budget_cost)) if v is not None
    ]
    if len(given) != 1:
        raise PrecometError(f"give exactly one of budget, proportion, budget_cost (got {given or 'none'})")
    if budget is not None:
        if isinstance(budget, bool) or int(budget) != budget or budget < 1:
            raise PrecometError(f"budget must be a positive whole number of items, got {budget!r}")
    elif proportion is not None:
        if not 0 < proportion <= 1:
            raise PrecometError(f"proportion must lie in (0, 1], got {proportion!r}")
    elif not budget_cost > 0:
        raise PrecometError(f"budget_cost must be positive, got {budget_cost!r}")
    return given[0]


def _budget(n, cost, names, budget, proportion, budget_cost) -> tuple[np.ndarray, float, dict[str, Any]]:
    """Unit weights, capacity and a manifest record (a budget :func:`_check_budget` accepted); cost-aware only when the
    budget is in cost units."""
    kind = _check_budget(budget, proportion, budget_cost)
    cost_arr = None if cost is None else _item_numbers(cost, names, "cost", positive=True)
    cost_aware = cost_arr is not None and budget is None
    weight = cost_arr.copy() if cost_aware and cost_arr is not None else np.ones(n)  # cost_aware implies a cost
    if budget is not None:
        capacity = float(budget)
    elif proportion is not None:
        capacity = proportion * float(weight.sum()) if cost_aware else float(budget_items(proportion, n))
        if not cost_aware and capacity < 1:
            raise PrecometError(
                f"{{proportion}}{proportion:g} of {n} items is {proportion * n:.3g} items, less than one item; give at"
                f" least {1 / n:.3g} (one item)",
                param="proportion",
            )
    else:
        capacity = float(budget_cost)
    requested = {"budget": budget, "proportion": proportion, "budget_cost": budget_cost}[kind]
    unit = {"unit": "cost", "cost_unit": "seconds"} if cost_aware else {"unit": "items"}
    return weight, capacity, {kind: requested, **unit, "capacity": capacity}


def _optimise(units, value, capacity, *, balance, quotas, cost_aware, knapsack) -> tuple[np.ndarray, dict[str, Any]]:
    """The chosen units and the optimiser's report (status, objective, bound, gap, solver, details). Under a cost
    budget, share quotas are shares of the cost even when every unit costs the same."""
    weight = units.weight
    constant = bool(np.all(weight == weight[0]))
    slots = fitting_count(capacity, float(weight[0])) if constant else None
    codes = counts = shares = None
    if balance or quotas:
        names, codes = group_codes(units)
        sizes = np.bincount(codes, minlength=len(names))
        if quotas:
            kind, targets = quota_targets(quotas, names, sizes, count_budget=None if cost_aware else slots)
            counts, shares = (targets, None) if kind == "counts" else (None, targets)
        elif constant:
            assert slots is not None  # set whenever every unit costs the same
            per = slots // len(names)
            if per == 0:
                raise PrecometError(f"a budget of {slots} unit(s) cannot give each of {len(names)} domains one")
            tightest = int(np.argmin(sizes))
            if per > sizes[tightest]:
                raise PrecometError(
                    f"balance needs {per} units per domain but domain {names[tightest]!r} has only {sizes[tightest]}"
                )
            counts = np.full(len(names), per)
        if counts is not None:
            _check_counts(counts, names, codes, weight, capacity)
    if constant and shares is None:  # top-k: exact, no solver
        assert slots is not None  # set whenever every unit costs the same
        # ranked by the utility itself where the value is its affine map, which rounds apart utilities of 5 and 0
        # together when others reach ±1e308
        key = value if cost_aware else units.utility
        if counts is None:
            chosen = np.zeros(len(value), dtype=bool)
            chosen[smallest(-key, slots)] = True  # the first ``slots`` of a stable argsort
        else:
            assert codes is not None  # counts are only set together with the group codes
            chosen = top_per_group(key, codes, counts)
        objective = float(value[chosen].sum())
        return chosen, dict(status="optimal", objective=objective, bound=objective, gap=0.0, solver="top-k", details={})

    parts = (
        [(np.arange(len(value)), capacity, counts)]
        if shares is None
        else [(np.flatnonzero(codes == g), share * capacity, None) for g, share in enumerate(shares) if share > 0]
    )
    chosen = np.zeros(len(value), dtype=bool)
    objective = bound = lp_bound = 0.0
    calls = core = 0
    for members, cap, part_counts in parts:
        if weight[members].min() > cap:
            raise PrecometError(
                f"domain {units.domain[members[0]]!r}: its budget share {cap:g} is below its cheapest unit"
                f" ({weight[members].min():g}); it has {len(members)} unit(s)"
            )
        problem = Problem(
            value[members],
            weight[members],
            cap,
            group=None if shares is not None or codes is None else codes[members],
            counts=part_counts,
        )
        sol = solve(problem, **knapsack)
        chosen[members[sol.chosen]] = True
        objective, bound, lp_bound = objective + sol.objective, bound + sol.bound, lp_bound + float(sol.lp_bound)
        calls, core = calls + sol.solver_calls, core + sol.core_size
    gap = (bound - objective) / max(objective, 1e-12)
    status = "optimal" if gap <= knapsack["gap_tolerance"] else "feasible"
    details = {
        "solver_calls": calls,
        "core_size": core,
        "lp_bound": lp_bound,
        "gap_tolerance": knapsack["gap_tolerance"],
    }
    return chosen, dict(
        status=status, objective=objective, bound=bound, gap=gap, solver=knapsack["solver"], details=details
    )


def _check_counts(counts, names, codes, weight, capacity) -> None:
    """Exact counts must be payable: the cheapest ``counts[g]`` units of every domain must fit the budget."""
    cheapest = sum(float(np.sort(weight[codes == g])[:c].sum()) for g, c in enumerate(counts))
    if cheapest > capacity:
        wanted = ", ".join(f"{name} {c}" for name, c in zip(names, counts))
        raise PrecometError(f"the domain counts ({wanted}) cost at least {cheapest:g} but the budget is {capacity:g}")
