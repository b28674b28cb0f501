"""Exact 0-1 knapsack with optional per-group cardinality constraints, solved to a certified optimum.

The problem (paper Eq. 2, plus domain constraints)::

    maximise  sum_i v_i x_i   s.t.  sum_i w_i x_i <= C,   x_i in {0, 1}
              and either  sum_{i in g} x_i = n_g  (fixed counts per group)
              or          sum_{i in g} x_i = k    (the same count k for every group, k integer)

Plain CBC needs ~30 s on 50k items with five group rows. We solve it as a *core problem*
(Martello & Toth; Balas & Zemel):

1. The LP relaxation (its Lagrangian dual over the budget price, pure numpy) gives a valid upper bound ``U`` and dual
   prices ``lambda`` (budget) and ``mu_g`` (groups); the reduced cost of item ``i`` is
   ``d_i = v_i - lambda w_i - mu_g(i)``. By Lagrangian duality, any integer solution that sets item ``i``
   opposite to its LP side is worth at most ``U - |d_i|``.
2. A feasible solution of value ``L`` — the greedy-by-ratio fill when there are no groups, else the ILP on
   the few items with the smallest ``|d_i|`` — proves that every item with ``U - |d_i| < L`` sits at its LP
   side in every better solution, so it is fixed.
3. The remaining core (usually tens to hundreds of items) is solved exactly: by dynamic programming when
   there are no groups and the weights are whole after decimal scaling, else by a pulp MILP solver
   warm-started with the incumbent and stopped at the *global* gap tolerance. Its optimum plus the fixed
   items is the global optimum. When the incumbent is already within the gap tolerance of ``U`` and more than
   :data:`_LARGEST_OPEN_CORE` items remain free (a pool of many identical items: equal ``d_i`` by the thousand,
   a symmetric MILP that CBC does not stop on time), the incumbent is returned with ``U`` as its bound.

The reported bound is ``min(U, fixed + solver bound)``; the gap is computed from it, never assumed.
"""

from __future__ import annotations

import logging
import math
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from precomet.errors import PrecometError
from precomet.selection.units import smallest

log = logging.getLogger(__name__)

SOLVERS = {
    "cbc": "PULP_CBC_CMD",
    "coin": "COIN_CMD",
    "highs": "HiGHS",
    "highs-cmd": "HiGHS_CMD",
    "glpk": "GLPK_CMD",
    "scip": "SCIP_CMD",
    "gurobi": "GUROBI",
    "cplex": "CPLEX_CMD",
}
"""Solver names accepted by :func:`solve` -> pulp solver class names."""

_FIRST_CORE = 64  # size of the first core, solved to find an incumbent
_LARGEST_OPEN_CORE = 20_000  # free items beyond which an incumbent within the gap tolerance of U is returned
_DP_CELLS = 50_000_000  # largest core DP table (units x capacity cells)
_LARGEST_CAPACITY = 1e15  # beyond it weights are rescaled to units of the capacity (whole-number floats end at 2**53)
_SMALLEST_CAPACITY = 1e-3  # below it too: solvers' absolute tolerances (~1e-7) would exceed such a budget


@dataclass(frozen=True)
class Problem:
    """Knapsack data: positive ``value`` and ``weight`` per unit, ``capacity``, optional group rows."""

    value: np.ndarray
    weight: np.ndarray
    capacity: float
    group: np.ndarray | None = None  # (M,) group code 0..G-1
    counts: np.ndarray | None = None  # (G,) exact count per group; None with group = equal counts


@dataclass(frozen=True)
class Solution:
    chosen: np.ndarray  # bool (M,)
    status: str  # "optimal" (gap <= tolerance) or "feasible"
    objective: float
    bound: float
    solver_calls: int
    core_size: int
    lp_bound: float


def check_solver(name: str) -> str:
    """The pulp class name of solver ``name``; unknown or unavailable names raise listing the valid ones."""
    if name not in SOLVERS:
        raise PrecometError(f"unknown solver {name!r}; choose one of {sorted(SOLVERS)}")
    import pulp

    if SOLVERS[name] not in pulp.listSolvers(onlyAvailable=True):
        available = sorted(k for k, v in SOLVERS.items() if v in pulp.listSolvers(onlyAvailable=True))
        raise PrecometError(f"solver {name!r} ({SOLVERS[name]}) is not installed here; available: {available}")
    return SOLVERS[name]


def solve(
    problem: Problem, *, solver: str = "cbc", time_limit: float = 60.0, gap_tolerance: float = 1e-4, seed: int = 0
) -> Solution:
    """Solve ``problem``; raises :class:`PrecometError` when it is infeasible or no solution is found in time.

    Units heavier than the whole capacity can never be chosen: the capacity is clipped to the total weight of the
    units that fit, and the others weigh just more than that, so one absurd cost (1e308 s) among ordinary ones
    neither overflows the arithmetic nor makes the problem look infeasible (groups keep every unit). A capacity or
    values far from 1 (below 1e-3 or above 1e15) are solved in units of the capacity and of the largest value,
    where solvers' absolute tolerances (~1e-7) cannot exceed the budget or stop at a poor selection. The selection
    never weighs more than the capacity, summed exactly (:func:`within_budget`): one that does (a budget within
    ~1e-7 of a sum of weights, crossed by a tolerance) is solved again just inside the budget."""
    check_solver(solver)
    solution = _solve(problem, solver=solver, time_limit=time_limit, gap_tolerance=gap_tolerance, seed=seed)
    if within_budget(problem.weight[solution.chosen], problem.capacity):
        return solution
    # a solver's tolerance (~1e-7 of the capacity) or the DP's rounding of weights to whole units crossed a budget
    # that lies that close to a sum of weights: solve again just inside it
    for margin in (1e-9, 1e-6):
        tighter = Problem(problem.value, problem.weight, problem.capacity * (1 - margin), problem.group, problem.counts)
        solution = _solve(tighter, solver=solver, time_limit=time_limit, gap_tolerance=gap_tolerance, seed=seed)
        if within_budget(problem.weight[solution.chosen], problem.capacity):
            return solution
    raise PrecometError(
        f"solver {solver!r} returned a selection over the budget {problem.capacity:g} (its numerical tolerance);"
        " raise the budget slightly or choose another solver"
    )


def _solve(problem: Problem, *, solver: str, time_limit: float, gap_tolerance: float, seed: int) -> Solution:
    """:func:`solve` without the final check that the selection keeps to the budget."""
    fits = problem.weight <= problem.capacity
    capacity = min(problem.capacity, float(problem.weight[fits].sum()))
    weight = problem.weight
    if capacity > 0 and not _SMALLEST_CAPACITY <= capacity <= _LARGEST_CAPACITY:  # in units of the capacity
        weight, capacity = np.where(fits, weight, 0.0) / capacity, 1.0
    weight = np.where(fits, weight, 2 * capacity + 1)  # never chosen, and no overflow
    problem = Problem(problem.value, weight, capacity, group=problem.group, counts=problem.counts)
    unit = float(np.max(np.abs(problem.value), initial=0.0)) or 1.0
    if not _SMALLEST_CAPACITY <= unit <= _LARGEST_CAPACITY:  # values too: solvers' gaps and tolerances are absolute
        problem = Problem(
            problem.value / unit, problem.weight, problem.capacity, group=problem.group, counts=problem.counts
        )
    else:
        unit = 1.0
    value, weight = problem.value, problem.weight
    deadline = time.perf_counter() + time_limit
    d, upper = _lp_relaxation(problem)
    side = d > 0
    slack = 1e-9 * max(1.0, abs(upper))
    # the solver's absolute gap: half the tolerance, so that the gap we report (relative to the incumbent,
    # with CBC's bound rounded to its printed digits) still meets ``gap_tolerance``
    solver_gap = 0.5 * gap_tolerance * upper
    # incumbent: the ILP on the units closest to their LP boundary (grown until feasible), or greedy if better
    distance = np.abs(d)
    groups = 0 if problem.group is None else int(problem.group.max()) + 1
    size, calls = min(len(value), _FIRST_CORE + 8 * groups), 0
    while True:
        core = smallest(distance, size)
        found: tuple[np.ndarray, bool, float | None] | None = (
            _dp_core(problem, side, core) if problem.group is None else None
        )
        if found is None:
            found = _solve_core(problem, side, core, None, solver, deadline, solver_gap, seed)
            calls += 1
        if found is not None:
            best, core_optimal, core_bound = found
            break
        if size == len(value):
            raise PrecometError("no selection satisfies the budget and the domain constraints together")
        size = min(len(value), size * 4)
    if problem.group is None:
        greedy = _greedy(value, weight, problem.capacity)
        if value[greedy].sum() > value[best].sum():
            best, core_optimal = greedy, False
    lower = float(value[best].sum())
    free = np.flatnonzero(upper - np.abs(d) >= lower - slack)  # items not provably at their LP side
    if len(free) == 0:
        bound = lower
    elif len(free) > _LARGEST_OPEN_CORE and upper - lower <= gap_tolerance * max(abs(lower), 1e-12):
        bound = upper  # certified within the tolerance already; proving more would need a MILP over ``free``
    elif core_optimal and np.isin(free, core).all():
        assert core_bound is not None  # a proven-optimal core always comes with its bound
        bound = _global_bound(problem, side, core, core_bound, lower)
    else:
        core = free
        found = _dp_core(problem, side, core) if problem.group is None else None
        if found is None:
            found = _solve_core(problem, side, core, best, solver, deadline, solver_gap, seed)
            calls += 1
        if found is None:  # the incumbent is feasible on this core, so only a solver failure gets here
            raise PrecometError(f"solver {solver!r} found no solution on a {len(core)}-unit core problem")
        candidate, core_optimal, core_bound = found
        if value[candidate].sum() >= lower:
            best, lower = candidate, float(value[candidate].sum())
        bound = _global_bound(problem, side, core, core_bound, lower) if core_bound is not None else upper
    bound = max(lower, min(bound, upper))
    gap = (bound - lower) / max(abs(lower), 1e-12)
    log.info(
        "knapsack: %d units, core %d, %d solver call(s), objective %.6f, bound %.6f",
        len(value),
        len(core),
        calls,
        lower,
        bound,
    )
    return Solution(
        chosen=best,
        status="optimal" if gap <= gap_tolerance else "feasible",
        objective=lower * unit,
        bound=bound * unit,
        solver_calls=calls,
        core_size=len(core),
        lp_bound=upper * unit,
    )


def within_budget(weights: np.ndarray, capacity: float) -> bool:
    """Whether ``weights`` add up to at most ``capacity``, their sum computed exactly (``math.fsum``): a budget
    of 1.9999999999995 holds one cost of 1, not two, and three costs of 0.1 (the float nearest 0.1, a little more)
    do not fit a budget of 0.3 (a little less)."""
    return math.fsum(np.asarray(weights, dtype=float).tolist()) <= capacity


def fitting_count(capacity: float, weight: float) -> int:
    """How many units of equal ``weight`` fit ``capacity`` (:func:`within_budget`; ``k * weight`` is the exact sum
    of ``k`` of them, rounded once)."""
    count = int(np.floor(capacity / weight))
    while (count + 1) * weight <= capacity:
        count += 1
    while count > 0 and count * weight > capacity:
        count -= 1
    return count


def _lp_relaxation(problem: Problem) -> tuple[np.ndarray, float]:
    """Reduced costs ``d`` and the LP upper bound, by minimising the Lagrangian dual over the budget price.

    For a price ``lambda`` the budget row is relaxed and the rest decomposes per group into "take the
    best ``n_g`` (or the best common ``k``) by ``v - lambda w``", whose polytope is integral, so the best
    ``lambda`` gives exactly the LP bound. ``D(lambda)`` is convex; bisection on its subgradient
    ``C - W(lambda)`` finds the minimum. Every ``lambda >= 0`` gives a valid bound.
    """
    value, weight, capacity = problem.value, problem.weight, problem.capacity
    layout = None if problem.group is None else _Layout.of(problem)
    seen: dict[float, tuple[float, float, np.ndarray | None]] = {}

    def dual(lam: float) -> tuple[float, float, np.ndarray | None]:
        if lam not in seen:
            seen[lam] = _dual(problem, layout, lam)
        return seen[lam]

    if dual(0.0)[1] <= capacity:
        lam = 0.0
    else:
        lo, hi = 0.0, float((value / weight).max())
        for _ in range(200):
            if dual(hi)[1] <= capacity:
                break
            lo, hi = hi, hi * 2
        else:
            raise PrecometError("no selection satisfies the budget and the domain constraints together")
        for _ in range(100):
            mid = (lo + hi) / 2
            if not lo < mid < hi:
                break
            lo, hi = (lo, mid) if dual(mid)[1] <= capacity else (mid, hi)
        lam = min((lo, hi), key=lambda x: dual(x)[0])
    upper, _, mu = dual(lam)
    reduced = value - lam * weight
    return (reduced if mu is None else reduced - mu[problem.group]), upper


@dataclass(frozen=True)
class _Layout:
    """The units of every group side by side (group 0's in position order, then group 1's, ...), with their
    values and weights in that order, so that every group is one contiguous slice."""

    value: np.ndarray
    weight: np.ndarray
    spans: list[slice]

    @classmethod
    def of(cls, problem: Problem) -> _Layout:
        assert problem.group is not None  # only grouped problems are laid out
        order = np.argsort(problem.group, kind="stable")
        ends = np.cumsum(np.bincount(problem.group))
        spans = [slice(int(end - size), int(end)) for end, size in zip(ends, np.bincount(problem.group))]
        return cls(problem.value[order], problem.weight[order], spans)


def _dual(problem: Problem, layout: _Layout | None, lam: float) -> tuple[float, float, np.ndarray | None]:
    """``D(lambda)``, the weight of the maximising set, and the group prices ``mu`` (None without groups); the
    reduced costs are ``v - lambda w - mu_g``. Per group only the sorted reduced values are needed, never an
    argsort: the maximising set is "at or above the group's threshold", ties taken in position order."""
    if layout is None:
        r = problem.value - lam * problem.weight
        take = r > 0
        return lam * problem.capacity + float(r[take].sum()), float(problem.weight[take].sum()), None
    r = layout.value - lam * layout.weight
    ordered = r.copy()
    for span in layout.spans:
        ordered[span].sort()  # ascending within every group
    sizes = np.array([span.stop - span.start for span in layout.spans])
    if problem.counts is not None:
        n = problem.counts.astype(int)
    else:  # the best common count k: prefix sums of every group truncated to the smallest group
        k_max = int(sizes.min())
        prefix = np.zeros(k_max + 1)
        for span in layout.spans:
            prefix[1:] += np.cumsum(ordered[span.stop - k_max : span.stop][::-1])
        n = np.full(len(sizes), int(np.argmax(prefix)))
    # per group: the n-th best value (the threshold) and the (n+1)-th
    upper_end = np.array([ordered[sp.stop - c] if c > 0 else np.inf for sp, c in zip(layout.spans, n)])
    lower_end = np.array(
        [ordered[sp.stop - c - 1] if c < sp.stop - sp.start else -np.inf for sp, c in zip(layout.spans, n)]
    )
    gain = weight = 0.0
    for span, c, threshold in zip(layout.spans, n, upper_end):
        if c == 0:
            continue
        take = r[span] >= threshold
        surplus = int(take.sum()) - c  # tied with the n-th but beyond it: the later positions are left out
        if surplus > 0:
            tied = np.flatnonzero(r[span] == threshold)
            take[tied[len(tied) - surplus :]] = False
        gain += float(ordered[span.stop - c : span.stop].sum())
        weight += float(layout.weight[span][take].sum())
    if problem.counts is None:
        gain = float(prefix[n[0]])
    # group prices mu_g between the n-th and (n+1)-th reduced value (they sum to 0 for equal counts)
    largest = max(max(abs(float(ordered[sp.start])), abs(float(ordered[sp.stop - 1]))) for sp in layout.spans)
    big = 4.0 * len(sizes) * (largest + 1.0)
    upper_end = np.where(np.isinf(upper_end), lower_end + big, upper_end)
    lower_end = np.where(np.isinf(lower_end), upper_end - big, lower_end)
    if problem.counts is not None:
        mu = (upper_end + lower_end) / 2
    else:
        t = -lower_end.sum() / max((upper_end - lower_end).sum(), 1e-300)
        mu = lower_end + min(max(t, 0.0), 1.0) * (upper_end - lower_end)
    return lam * problem.capacity + gain, weight, mu


def _greedy(value: np.ndarray, weight: np.ndarray, capacity: float) -> np.ndarray:
    """Greedy by value/weight ratio (stable), skipping units that no longer fit.

    Vectorised but exact: the running budget is the same chain of subtractions as a loop's
    (``np.subtract.accumulate`` is sequential), and ``left - w >= 0`` exactly when ``w <= left``."""
    chosen = np.zeros(len(value), dtype=bool)
    left = capacity
    candidates = np.argsort(-value / weight, kind="stable")
    while len(candidates := candidates[weight[candidates] <= left]):
        after = np.subtract.accumulate(np.concatenate(([left], weight[candidates])))[1:]
        negative = np.flatnonzero(after < 0)  # the first unit that no longer fits (the first one always does)
        stop = int(negative[0]) if len(negative) else len(after)
        chosen[candidates[:stop]] = True
        left = float(after[stop - 1])
        candidates = candidates[stop + 1 :]
    return chosen


def _dp_core(problem: Problem, side: np.ndarray, core: np.ndarray) -> tuple[np.ndarray, bool, float] | None:
    """Exact dynamic programme over the core when weights are whole numbers after scaling by 10^0..10^3
    (e.g. ``0.15·len + 33.7`` costs), in units of their greatest common divisor; None when they are not or
    the table would be too large."""
    fixed = side.copy()
    fixed[core] = False
    weight = problem.weight[core]
    for scale in (1, 10, 100, 1000):
        scaled = np.rint(weight * scale)
        if np.allclose(scaled, weight * scale, rtol=0, atol=1e-6) and not np.any((scaled == 0) & (weight > 0)):
            break  # whole numbers, none of them a positive weight rounded to nothing
    else:
        return None
    if not len(scaled) or scaled.max() > 2**53:  # beyond whole-number floats (costs near 1e308)
        return None
    step = int(np.gcd.reduce(scaled.astype(np.int64))) or 1  # 0.15·len + 33.7 s: every weight is a multiple of 0.05
    scaled = scaled / step
    room = (problem.capacity - problem.weight[fixed].sum()) * scale / step
    capacity = int(np.floor(room * (1 + 1e-14)))  # 0.3 / 0.1 is 2.9999999999999996 units; 1.9999999999995 is 1
    if capacity < 0 or len(core) * (capacity + 1) > _DP_CELLS:
        return None
    best = np.zeros(capacity + 1)
    took = np.zeros((len(core), capacity + 1), dtype=bool)
    for j, (w, v) in enumerate(zip(scaled.astype(int), problem.value[core])):
        if w <= capacity:
            candidate = best[: capacity + 1 - w] + v
            took[j, w:] = candidate > best[w:] + 1e-12
            best[w:] = np.where(took[j, w:], candidate, best[w:])
    chosen, left = fixed.copy(), int(np.argmax(best))
    for j in range(len(core) - 1, -1, -1):
        if took[j, left]:
            chosen[core[j]] = True
            left -= int(scaled[j])
    core_value = float(problem.value[core][chosen[core]].sum())
    return chosen, True, core_value


def _global_bound(problem: Problem, side: np.ndarray, core: np.ndarray, core_bound: float, lower: float) -> float:
    """Any solution better than ``lower`` keeps every non-core unit at its LP side: bound it by fixed + core."""
    fixed = side.copy()
    fixed[core] = False
    return max(lower, float(problem.value[fixed].sum()) + core_bound)


def _solve_core(
    problem: Problem,
    side: np.ndarray,
    core: np.ndarray,
    warm: np.ndarray | None,
    solver: str,
    deadline: float,
    gap_abs: float,
    seed: int,
) -> tuple[np.ndarray, bool, float | None] | None:
    """MILP over ``core`` with every other unit at its LP side: (chosen, proven optimal, core bound) or None.

    ``gap_abs`` is the absolute gap the whole problem may keep (tolerance x global bound), so the solver
    stops as soon as the *global* relative gap is within tolerance, not the core's.
    """
    import pulp

    value, weight = problem.value, problem.weight
    fixed = side.copy()
    fixed[core] = False
    capacity = problem.capacity - float(weight[fixed].sum())
    if capacity < -1e-9 * max(1.0, problem.capacity):
        return None
    model = pulp.LpProblem("precomet_knapsack", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{j}", cat="Binary") for j in range(len(core))]
    model += pulp.lpDot(value[core].tolist(), x)
    row = capacity if capacity > 0 else 1.0  # the budget row in units of its room: CBC's presolve called a
    model += pulp.lpDot((weight[core] / row).tolist(), x) <= capacity / row  # 3e8-unit row infeasible (x = 0 fits)
    if problem.group is not None:
        groups = len(problem.counts) if problem.counts is not None else int(problem.group.max()) + 1
        ones = np.bincount(problem.group[fixed], minlength=groups)
        sizes = np.bincount(problem.group, minlength=groups)
        k = None if problem.counts is not None else pulp.LpVariable("k", 0, int(sizes.min()), cat="Integer")
        for g in range(groups):
            members = [x[j] for j in np.flatnonzero(problem.group[core] == g)]
            target = problem.counts[g] if problem.counts is not None else k  # k is None exactly when counts is not
            model += pulp.lpSum(members) + int(ones[g]) == target
    if warm is not None:
        for j, unit in enumerate(core):
            x[j].setInitialValue(int(warm[unit]))
        if problem.group is not None and problem.counts is None:
            assert k is not None  # made above whenever there are groups and no counts
            k.setInitialValue(int((warm & (problem.group == 0)).sum()))
    seconds = max(1.0, deadline - time.perf_counter())
    with tempfile.TemporaryDirectory(prefix="precomet-knapsack-") as tmp:
        log_path = Path(tmp) / "solver.log"
        options: dict[str, Any] = {"msg": False, "timeLimit": seconds, "gapAbs": gap_abs, "warmStart": warm is not None}
        if solver == "cbc":
            options.update(logPath=str(log_path), options=[f"randomCbcSeed {seed + 1}"])
        model.solve(pulp.getSolver(SOLVERS[solver], **options))
        solver_log = log_path.read_text(errors="replace") if log_path.exists() else ""
    if model.sol_status not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return None
    chosen = fixed.copy()
    chosen[core] = np.array([(v.value() or 0.0) > 0.5 for v in x], dtype=bool)
    core_value = float(value[chosen & ~fixed].sum())
    optimal = model.sol_status == pulp.LpSolutionOptimal
    core_bound = _cbc_bound(solver_log, core_value, gap_abs)
    if core_bound is None and optimal:  # a log we cannot read: trust the optimum within the gapAbs we asked for
        core_bound = core_value + gap_abs
    return chosen, optimal, core_bound


def _cbc_bound(text: str, core_value: float, gap_abs: float) -> float | None:
    """An upper bound on the core optimum from CBC's log; None when the log says nothing usable.

    CBC prints the final bound with three decimals, so half a unit of the last digit is added.
    """
    result = re.search(r"^Result - (.*)$", text, flags=re.MULTILINE)
    if result and result.group(1).strip() == "Optimal solution found":
        return core_value
    match = re.search(r"^(?:Upper|Lower) bound:\s+([-+0-9.eE]+)", text, flags=re.MULTILINE)
    parsed = abs(float(match.group(1))) + 5e-4 if match else None
    if result and "gap tolerance" in result.group(1):
        within = core_value + gap_abs
        return within if parsed is None else min(within, parsed)
    return parsed
