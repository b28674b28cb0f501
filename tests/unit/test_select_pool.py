"""Selection at pool scale: the linear-time pieces equal the straightforward sort-based ones they replace."""

from __future__ import annotations

import numpy as np
import pulp
import pytest

from precomet.errors import PrecometError
from precomet.selection import SubsetPlan, knapsack, select_subset
from precomet.selection.units import build_units, factorize, smallest


def reference_dual(problem: knapsack.Problem, lam: float) -> tuple[float, float, np.ndarray]:
    """The Lagrangian dual by a full lexsort per call (the implementation before pool scale)."""
    r = problem.value - lam * problem.weight
    group = problem.group
    sizes = np.bincount(group)
    order = np.lexsort((-r, group))
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    rank = np.empty(len(r), dtype=int)
    rank[order] = np.arange(len(r)) - np.repeat(starts, sizes)
    r_sorted = r[order]
    if problem.counts is not None:
        n = problem.counts.astype(int)
    else:
        k_max = int(sizes.min())
        prefix = np.zeros(k_max + 1)
        for start in starts:
            prefix[1:] += np.cumsum(r_sorted[start : start + k_max])
        n = np.full(len(sizes), int(np.argmax(prefix)))
    take = rank < n[group]
    upper_end = np.where(n > 0, r_sorted[starts + np.maximum(n - 1, 0)], np.inf)
    lower_end = np.where(n < sizes, r_sorted[np.minimum(starts + n, len(r) - 1)], -np.inf)
    return float(r[take].sum()), float(problem.weight[take].sum()), upper_end, lower_end


def random_problem(rng: np.random.Generator, *, counts: bool) -> knapsack.Problem:
    m = int(rng.integers(2, 200))
    value = rng.integers(1, 6, m).astype(float)  # few values: many ties at the thresholds
    weight = rng.integers(1, 4, m).astype(float)
    group = np.unique(rng.integers(0, int(rng.integers(1, 6)), m), return_inverse=True)[1]
    sizes = np.bincount(group)
    wanted = np.array([rng.integers(0, s + 1) for s in sizes]) if counts else None
    return knapsack.Problem(value, weight, float(weight.sum() / 3), group=group, counts=wanted)


@pytest.mark.parametrize("counts", [True, False])
def test_dual_matches_the_lexsort_dual_with_ties(counts):
    rng = np.random.default_rng(0)
    for _ in range(200):
        problem = random_problem(rng, counts=counts)
        lam = float(rng.choice([0.0, 0.5, 1.0, rng.uniform(0, 3)]))
        gain, weight, upper_end, lower_end = reference_dual(problem, lam)
        dual, taken, mu = knapsack._dual(problem, knapsack._Layout.of(problem), lam)
        assert dual == pytest.approx(lam * problem.capacity + gain, rel=1e-12, abs=1e-12)
        assert taken == weight  # whole weights: the same set, whatever the summation order
        finite = np.isfinite(upper_end) & np.isfinite(lower_end)
        if counts:
            np.testing.assert_array_equal(mu[finite], ((upper_end + lower_end) / 2)[finite])


def test_greedy_equals_the_item_by_item_loop():
    rng = np.random.default_rng(1)
    for _ in range(200):
        m = int(rng.integers(1, 300))
        value, weight = rng.integers(1, 5, m).astype(float), rng.uniform(0.1, 3, m).round(1)
        capacity = float(rng.uniform(0, weight.sum()))
        expected, left = np.zeros(m, dtype=bool), capacity
        for i in np.argsort(-value / weight, kind="stable"):
            if weight[i] <= left:
                expected[i], left = True, left - weight[i]
        np.testing.assert_array_equal(knapsack._greedy(value, weight, capacity), expected)


def test_smallest_is_the_head_of_a_stable_argsort():
    rng = np.random.default_rng(2)
    for _ in range(300):
        values = rng.integers(0, 4, int(rng.integers(1, 60))).astype(float)
        k = int(rng.integers(0, len(values) + 2))
        expected = np.sort(np.argsort(values, kind="stable")[:k])
        np.testing.assert_array_equal(smallest(values, k), expected)


@pytest.mark.parametrize(
    "values",
    [
        ["news", "chat", "news", "speech"],
        ["b", "a", 1, "1"],  # not all strings: the general path merges 1 and "1"
        [f"d{i}" for i in range(100)],  # more distinct values than equality scans are used for
    ],
)
def test_factorize_matches_unique_of_the_strings(values):
    column = np.empty(len(values), dtype=object)
    column[:] = values
    names, codes = factorize(column)
    expected_names, expected_codes = np.unique(column.astype(str), return_inverse=True)
    assert names == list(expected_names)
    np.testing.assert_array_equal(codes, expected_codes)


def test_units_give_back_items_in_unit_order():
    utility, weight = np.arange(5.0), np.ones(5)
    items = build_units(utility, weight, level="item", doc=None, domain=None)
    np.testing.assert_array_equal(items.items(np.array([3, 0])), [3, 0])
    doc = np.array(["b", "a", "b", "c", "a"], dtype=object)
    docs = build_units(utility, weight, level="doc", doc=doc, domain=None)
    np.testing.assert_array_equal(docs.items(np.array([1, 0])), [1, 4, 0, 2])


def plain_ilp(problem: knapsack.Problem) -> float | None:
    """The whole problem handed to CBC: its optimum, None when infeasible."""
    model = pulp.LpProblem("plain", pulp.LpMaximize)
    x = [pulp.LpVariable(f"x{i}", cat="Binary") for i in range(len(problem.value))]
    model += pulp.lpDot(problem.value.tolist(), x)
    model += pulp.lpDot(problem.weight.tolist(), x) <= problem.capacity
    if problem.group is not None:
        k = pulp.LpVariable("k", 0, len(x), cat="Integer")
        for g in range(int(problem.group.max()) + 1):
            target = k if problem.counts is None else int(problem.counts[g])
            model += pulp.lpSum(x[i] for i in np.flatnonzero(problem.group == g)) == target
    model.solve(pulp.PULP_CBC_CMD(msg=False))
    return float(pulp.value(model.objective)) if model.status == pulp.LpStatusOptimal else None


@pytest.mark.parametrize("kind", ["plain", "equal counts", "counts"])
def test_core_solve_reaches_the_plain_ilp_optimum(kind):
    rng = np.random.default_rng({"plain": 3, "equal counts": 4, "counts": 5}[kind])
    for _ in range(12):
        m = int(rng.integers(5, 40))
        value, weight = rng.uniform(0.1, 1, m), rng.integers(1, 20, m) + rng.uniform(0, 1, m)
        group = None if kind == "plain" else np.unique(rng.integers(0, 3, m), return_inverse=True)[1]
        counts = np.minimum(np.bincount(group), 2) if kind == "counts" else None
        problem = knapsack.Problem(value, weight, float(weight.sum() / 2), group=group, counts=counts)
        best = plain_ilp(problem)
        if best is None:
            with pytest.raises(PrecometError, match="no selection satisfies"):
                knapsack.solve(problem)
            continue
        solution = knapsack.solve(problem)
        assert solution.status == "optimal"
        assert solution.objective == pytest.approx(best, rel=1e-4)
        assert weight[solution.chosen].sum() <= problem.capacity + 1e-9


def test_pool_of_50k_items_with_five_domains_is_certified():
    rng = np.random.default_rng(6)
    n = 50_000
    length = rng.integers(10, 400, n).astype(float)
    domain = rng.choice(np.array(["news", "social", "speech", "literary", "user_review"], dtype=object), n)
    utility = rng.normal(size=n)
    sel = select_subset(
        utility, SubsetPlan(proportion=0.2, balance="domain"), cost=0.15 * length + 33.7, domain=domain, length=length
    )
    assert sel.status == "optimal" and sel.gap <= 1e-4
    assert len(set(sel.domains.values())) == 1 and sum(sel.domains.values()) == len(sel)
    top = select_subset(np.round(utility, 1), SubsetPlan(budget=5000))  # rounded: many ties, broken by position
    np.testing.assert_array_equal(top.indices, np.argsort(-np.round(utility, 1), kind="stable")[:5000])


def test_a_pool_of_many_identical_items_stops_at_the_gap_tolerance(monkeypatch):
    """A pool sampled with replacement repeats each source a hundred times: thousands of items share each reduced
    cost, so every item stays free of the LP bound's test although the first incumbent is already within the gap
    tolerance. The knapsack returns that incumbent with the LP bound (one solver call) instead of handing CBC a
    symmetric MILP over the whole pool, which ran far past its time limit on 400,000 such items (here the limit
    on free items is lowered so that 30,000 items show it)."""
    monkeypatch.setattr(knapsack, "_LARGEST_OPEN_CORE", 1000)
    rng = np.random.default_rng(0)
    pick = rng.integers(0, 300, 30_000)
    value, weight = rng.uniform(0.1, 1.0, 300)[pick], rng.integers(20, 400, 300).astype(float)[pick]
    problem = knapsack.Problem(value, weight, 0.2 * float(weight.sum()), group=rng.integers(0, 5, 30_000))
    solution = knapsack.solve(problem, time_limit=10)
    assert solution.status == "optimal" and solution.solver_calls == 1
    assert solution.bound == pytest.approx(solution.lp_bound) and solution.objective >= solution.bound * (1 - 1e-4)
    chosen = solution.chosen
    assert weight[chosen].sum() <= problem.capacity and len(set(np.bincount(problem.group[chosen]))) == 1
