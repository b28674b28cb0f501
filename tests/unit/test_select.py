"""Subset building: hand-computed top-k, brute-force oracles for the knapsack modes, bad input, CLI."""

from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pytest

from precomet.campaign import source_length
from precomet.cli import main
from precomet.costs import item_seconds
from precomet.errors import PrecometError, SolverGapWarning
from precomet.io.utility_files import utilities_for
from precomet.selection import Selection, SubsetPlan, knapsack, select_subset, subset
from precomet.selection.knapsack import Problem, _lp_relaxation
from precomet.selection.units import normalise
from precomet.simulate import simulate_campaign

DATA = ("cost", "domain", "doc", "ids", "length", "campaign")
"""select_subset's keyword arguments (the data); the other options go into its SubsetPlan."""


def _select(utility, **given):
    """select_subset in the plan form, from the options and the data in one dict (as the parametrised cases give)."""
    plan = SubsetPlan(**{k: v for k, v in given.items() if k not in DATA})
    return select_subset(utility, plan, **{k: v for k, v in given.items() if k in DATA})


# ---------------------------------------------------------------- top-k (hand-computed)
def test_topk_orders_by_utility_and_breaks_ties_by_position():
    sel = select_subset([1.0, 3.0, 3.0, 2.0, 3.0], SubsetPlan(budget=2))
    assert sel.indices.tolist() == [1, 2]
    assert sel.solver == "top-k" and sel.status == "optimal" and sel.gap == 0.0
    assert select_subset([1.0, 3.0, 3.0, 2.0, 3.0], SubsetPlan(proportion=0.6)).indices.tolist() == [1, 2, 4]


def test_topk_balanced_takes_the_same_count_per_domain():
    utility = [9, 8, 7, 6, 1, 2, 3]
    domain = ["a", "a", "a", "a", "b", "b", "b"]
    sel = select_subset(utility, SubsetPlan(budget=5, balance="domain"), domain=domain)  # 5 // 2 = 2 per domain
    assert sel.indices.tolist() == [0, 1, 6, 5]
    assert sel.domains == {"a": 2, "b": 2}


def test_topk_ignores_cost_when_budget_is_an_item_count():
    sel = select_subset([3.0, 2.0, 1.0], SubsetPlan(budget=1), cost=[100.0, 1.0, 1.0])
    assert sel.indices.tolist() == [0] and sel.total_cost == 100.0


def test_doc_level_keeps_documents_whole_and_orders_by_mean():
    utility = [1.0, 5.0, 4.0, 0.0, 10.0]
    doc = ["x", "x", "y", "y", "z"]  # means 3, 2, 10; sizes 2, 2, 1
    sel = select_subset(utility, SubsetPlan(budget=3, level="doc"), doc=doc)  # best: z + x (3 items)
    assert sel.indices.tolist() == [4, 0, 1]


# ---------------------------------------------------------------- brute-force oracle
def brute_force(value, weight, capacity, codes=None, counts=None, equal=False):
    best = -np.inf
    for mask in itertools.product([False, True], repeat=len(value)):
        mask = np.array(mask)
        if weight[mask].sum() > capacity + 1e-9:
            continue
        if codes is not None:
            per = np.bincount(codes[mask], minlength=codes.max() + 1)
            if counts is not None and (per != counts).any():
                continue
            if equal and len(set(per.tolist())) != 1:
                continue
        best = max(best, value[mask].sum())
    return best


def random_case(seed, n=None):
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(4, 12))
    utility = rng.normal(size=n)
    cost = rng.uniform(10, 100, size=n).round(1)
    domain = np.array(["news", "chat", "speech"])[np.r_[0, 1, rng.integers(0, 3, n - 2)]]
    return rng, utility, cost, domain


def lengths_for(seed, n):
    """Source lengths independent of the costs (so rank-length and rank-cost choose differently)."""
    return np.random.default_rng(seed + 1000).integers(0, 400, n).astype(float)


def knapsack_value(objective, utility, cost, length):
    """The value every cost objective gives a unit, written out independently of precomet.selection.objective."""
    from scipy.stats import rankdata

    if objective == "paper":
        return normalise(utility)
    rank = rankdata(utility, method="average") / len(utility)
    return rank * (cost if objective == "rank-cost" else np.maximum(length, 1.0))


OBJECTIVES = ["rank-length", "rank-cost", "paper"]


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("seed", range(12))
def test_cost_aware_matches_brute_force(seed, objective):
    rng, utility, cost, _ = random_case(seed)
    length = lengths_for(seed, len(utility))
    capacity = cost.sum() * rng.uniform(0.15, 0.7)
    sel = select_subset(
        utility, SubsetPlan(budget_cost=capacity, gap_tolerance=0.0, cost_objective=objective), cost=cost, length=length
    )
    value = knapsack_value(objective, utility, cost, length)
    assert sel.objective == pytest.approx(brute_force(value, cost, capacity), abs=1e-9)
    assert sel.objective == pytest.approx(value[sel.indices].sum(), abs=1e-9)
    assert sel.total_cost <= capacity + 1e-9 and sel.status == "optimal"
    assert sel.budget["objective"] == objective


@pytest.mark.parametrize("scale", [1e-9, 1e-300, 5e-324 * 2**20, 1e20])
@pytest.mark.parametrize("seed", range(4))
def test_costs_at_any_scale_stay_within_the_budget_and_match_brute_force(seed, scale):
    """Solvers' absolute tolerances (~1e-7) once let a budget of 1e-9 s be exceeded threefold, and a DP rounded
    such costs to nothing: weights and values are solved in units of the budget and the largest value."""
    rng, utility, cost, _ = random_case(seed)
    cost = cost / cost.max() * scale
    capacity = cost.sum() * rng.uniform(0.15, 0.7)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        sel = select_subset(
            utility, SubsetPlan(budget_cost=capacity, gap_tolerance=0.0, cost_objective="rank-cost"), cost=cost
        )
    value = knapsack_value("rank-cost", utility, cost, None)
    assert cost[sel.indices].sum() <= capacity * (1 + 1e-12) and sel.status == "optimal"
    best = brute_force(value / scale, cost / scale, capacity / scale * (1 + 1e-12))  # its tolerance is absolute
    assert value[sel.indices].sum() / scale == pytest.approx(best, rel=1e-9)


def utility_rank(utility):
    from scipy.stats import rankdata

    return rankdata(utility, method="average") / len(utility)


@pytest.mark.parametrize(
    ("cost", "budget", "extra"),
    [
        ([1.0] * 4, 1.9999999999995, {}),  # top-k: a budget just below two costs holds one
        ([1.0] * 4, 2.999999999999, {"domain": ["a", "b", "a", "b"], "balance": "domain"}),
        ([2e8, 3e8, 3e9, 3e9, 1e9, 3e8, 7e8, 1e8], 299999999.99997, {}),  # CBC's presolve once called x = 0 infeasible
        ([5e-324, 1.5e-323, 1e-323, 5e-324], 1e-323, {}),  # subnormal costs: NaN coefficients once
        ([1e-50, 3e-50, 2e-50, 1e-50], 2e-50, {}),  # "no selection satisfies ... domain constraints" once
        ([0.1] * 5, 0.3, {}),  # three floats nearest 0.1 add up to more than the float nearest 0.3
    ],
)
def test_a_selection_never_costs_more_than_the_budget_summed_exactly(cost, budget, extra):
    cost = np.array(cost)
    utility = np.linspace(0.0, 1.0, len(cost))
    sel = _select(utility, cost=cost, budget_cost=budget, cost_objective="rank-cost", **extra)
    assert len(sel.indices) >= 1 and math.fsum(cost[sel.indices].tolist()) <= budget
    assert sel.total_cost == math.fsum(cost[sel.indices].tolist())
    fitting = [
        value
        for mask in itertools.product([False, True], repeat=len(cost))
        if math.fsum(cost[np.array(mask)].tolist()) <= budget
        for value in [float((utility_rank(utility) * cost)[np.array(mask)].sum())]
    ]
    if not extra:  # the best selection that fits, summed exactly
        assert sel.objective == pytest.approx(max(fitting), rel=1e-9)


def test_a_document_budget_below_the_cheapest_document_names_the_document():
    cost = np.array([1.0, 1e300, 2.0, 1e300])
    with pytest.raises(PrecometError, match=r"below the cheapest document \('d0'"):
        select_subset(np.ones(4), SubsetPlan(budget_cost=2.5, level="doc"), cost=cost, doc=["d0", "d0", "d1", "d1"])
    with pytest.raises(PrecometError, match=r"budget 1 is below the cheapest item \('0', cost 1\)"):
        select_subset(np.ones(4), SubsetPlan(budget_cost=0.9999999999995), cost=np.array([1.0, 3.0, 1.0, 3.0]))


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("seed", range(6))
def test_length_model_costs_match_brute_force(seed, objective):
    """Costs of the length model (0.15·len + 33.7: the exact DP core works in steps of 0.05 s)."""
    rng = np.random.default_rng(seed)
    length = rng.integers(0, 400, int(rng.integers(6, 13))).astype(float)
    utility, cost = rng.normal(size=len(length)), 0.15 * length + 33.7
    capacity = cost.sum() * rng.uniform(0.2, 0.6)
    sel = select_subset(
        utility, SubsetPlan(budget_cost=capacity, gap_tolerance=0.0, cost_objective=objective), cost=cost, length=length
    )
    assert sel.objective == pytest.approx(
        brute_force(knapsack_value(objective, utility, cost, length), cost, capacity), abs=1e-9
    )
    assert sel.total_cost <= capacity + 1e-9 and sel.details["solver_calls"] == 0  # solved by the DP core


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("seed", range(10))
def test_balanced_cost_aware_matches_brute_force(seed, objective):
    rng, utility, cost, domain = random_case(seed)
    length = lengths_for(seed, len(utility))
    capacity = cost.sum() * rng.uniform(0.3, 0.8)
    sel = select_subset(
        utility,
        SubsetPlan(budget_cost=capacity, balance="domain", gap_tolerance=0.0, cost_objective=objective),
        cost=cost,
        domain=domain,
        length=length,
    )
    _, codes = np.unique(domain, return_inverse=True)
    value = knapsack_value(objective, utility, cost, length)
    assert sel.objective == pytest.approx(brute_force(value, cost, capacity, codes, equal=True), abs=1e-9)
    assert len(set(sel.domains.values())) == 1 and len(sel.domains) == len(set(domain))


@pytest.mark.parametrize("seed", range(8))
def test_quota_counts_with_cost_match_brute_force(seed):
    rng, utility, cost, domain = random_case(seed)
    length = lengths_for(seed, len(utility))
    names, codes = np.unique(domain, return_inverse=True)
    counts = np.array([min(1, (codes == g).sum()) for g in range(len(names))])
    capacity = cost.sum() * 0.6
    quotas = {str(d): int(c) for d, c in zip(names, counts)}
    sel = select_subset(
        utility,
        SubsetPlan(budget_cost=capacity, quotas=quotas, gap_tolerance=0.0),
        cost=cost,
        domain=domain,
        length=length,
    )
    value = knapsack_value("rank-length", utility, cost, length)
    assert sel.objective == pytest.approx(brute_force(value, cost, capacity, codes, counts), abs=1e-9)
    assert sel.domains == {k: v for k, v in quotas.items() if v}


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("seed", range(8))
def test_doc_level_matches_brute_force(seed, objective):
    rng, utility, cost, domain = random_case(seed, n=int(np.random.default_rng(seed).integers(8, 20)))
    length = lengths_for(seed, len(utility))
    n_docs = min(len(utility), int(rng.integers(5, 12)))
    doc = np.r_[np.arange(n_docs), rng.integers(0, n_docs, len(utility) - n_docs)].astype(str)
    doc_domain = {d: domain[i] for i, d in reversed(list(enumerate(doc)))}
    domain = np.array([doc_domain[d] for d in doc])
    names = list(dict.fromkeys(doc))
    mean = np.array([utility[doc == d].mean() for d in names])
    weight = np.array([cost[doc == d].sum() for d in names])
    doc_length = np.array([length[doc == d].sum() for d in names])
    capacity = cost.sum() * rng.uniform(0.3, 0.7)
    sel = select_subset(
        utility,
        SubsetPlan(budget_cost=capacity, level="doc", gap_tolerance=0.0, cost_objective=objective),
        cost=cost,
        doc=doc,
        length=length,
    )
    value = knapsack_value(objective, mean, weight, doc_length)
    assert sel.objective == pytest.approx(brute_force(value, weight, capacity), abs=1e-9)
    sizes = select_subset(
        utility, SubsetPlan(proportion=0.5, level="doc", gap_tolerance=0.0), doc=doc
    )  # count budget: weight = size
    counts = np.array([(doc == d).sum() for d in names], dtype=float)
    assert sizes.objective == pytest.approx(brute_force(normalise(mean), counts, round(0.5 * len(doc))), abs=1e-9)
    udomain = np.array([doc_domain[d] for d in names])
    if len(set(udomain)) > 1:
        _, codes = np.unique(udomain, return_inverse=True)
        kwargs = dict(
            cost=cost,
            doc=doc,
            domain=domain,
            budget_cost=capacity,
            level="doc",
            balance="domain",
            cost_objective=objective,
            length=length,
        )
        oracle = brute_force(value, weight, capacity, codes, equal=True)
        if oracle == 0:  # only the empty selection balances: an error, never an empty subset
            with pytest.raises(PrecometError, match="no unit to select"):
                _select(utility, gap_tolerance=0.0, **kwargs)
        else:
            assert _select(utility, gap_tolerance=0.0, **kwargs).objective == pytest.approx(oracle, abs=1e-9)


def test_lp_bound_matches_scipy_linprog():
    from scipy.optimize import linprog

    rng = np.random.default_rng(3)
    for _ in range(10):
        n, groups = 30, 3
        v, w = rng.uniform(0.1, 0.6, n), rng.uniform(30, 100, n)
        codes = np.r_[np.arange(groups), rng.integers(0, groups, n - groups)]
        counts = np.array([int(rng.integers(1, (codes == g).sum() + 1)) for g in range(groups)])
        capacity = float(np.sort(w)[: counts.sum()].sum() * 1.5)
        a_eq = np.stack([codes == g for g in range(groups)]).astype(float)
        res = linprog(-v, A_ub=[w], b_ub=[capacity], A_eq=a_eq, b_eq=counts, bounds=(0, 1), method="highs")
        if res.status != 0:
            continue
        _, upper = _lp_relaxation(Problem(v, w, capacity, group=codes, counts=counts))
        assert upper == pytest.approx(-res.fun, abs=1e-8)


def test_large_instance_is_certified():
    rng = np.random.default_rng(0)
    n = 5000
    utility, cost = rng.normal(size=n), rng.uniform(30, 200, n)
    domain = rng.choice(["a", "b", "c", "d", "e"], n)
    length = rng.integers(1, 600, n)
    sel = select_subset(utility, SubsetPlan(proportion=0.2, balance="domain"), cost=cost, domain=domain, length=length)
    assert sel.status == "optimal" and sel.gap <= 1e-4 and sel.total_cost <= 0.2 * cost.sum() + 1e-6
    assert sel.bound >= sel.objective


def _stopped(problem, **_):
    """A solver stopped at relative gap 1: the first unit, bound twice its value."""
    chosen = np.zeros(len(problem.value), dtype=bool)
    chosen[0] = True
    value = float(problem.value[0])
    return knapsack.Solution(chosen, "feasible", value, value * 2, 1, len(chosen), value * 2)


def test_non_optimal_answer_needs_allow_gap(monkeypatch):
    monkeypatch.setattr(subset, "solve", _stopped)
    with pytest.raises(PrecometError, match="gap 1"):
        select_subset([1.0, 2.0, 3.0], SubsetPlan(budget_cost=3.0, cost_objective="rank-cost"), cost=[1.0, 2.0, 3.0])
    with pytest.warns(UserWarning, match="gap 1"):
        sel = select_subset(
            [1.0, 2.0, 3.0],
            SubsetPlan(budget_cost=3.0, allow_gap=True, cost_objective="rank-cost"),
            cost=[1.0, 2.0, 3.0],
        )
    assert sel.status == "feasible" and sel.gap == pytest.approx(1.0)


def test_gap_warning_has_its_own_category_which_benchmark_silences(monkeypatch, tiny_campaign):
    from precomet.benchmark import make_selector

    monkeypatch.setattr(subset, "solve", _stopped)
    with pytest.warns(SolverGapWarning, match="gap 1"):
        select_subset(
            [1.0, 2.0, 3.0],
            SubsetPlan(budget_cost=3.0, allow_gap=True, cost_objective="rank-cost"),
            cost=[1.0, 2.0, 3.0],
        )
    select = make_selector(tiny_campaign, budget_unit="cost", cost_objective="rank-cost")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert len(select(np.array([4.0, 3.0, 2.0, 1.0]), 0.5)) >= 1
    assert not [w for w in seen if issubclass(w.category, SolverGapWarning)]
    assert not any(f[2] is SolverGapWarning for f in warnings.filters)  # the filter was scoped to the selection


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(cost=[50.0, 60.0, 70.0], budget_cost=40.0), "below the cheapest item .'1', cost 50"),
        (dict(cost=[1.0, 0.0, 2.0], budget_cost=2.0), "cost of item '2' is 0"),
        (dict(cost=[1.0, -1.0, 2.0], budget_cost=2.0), "cost of item '2' is -1"),
        (dict(cost=[1.0, np.nan, 2.0], budget_cost=2.0), "cost of item '2' is nan"),
        (dict(proportion=0.0), r"proportion must lie in \(0, 1\]"),
        (dict(proportion=1.5), r"proportion must lie in \(0, 1\]"),
        (dict(budget=2, proportion=0.5), "exactly one"),
        (dict(), "exactly one"),
        (dict(budget=0), "positive whole number"),
        (
            dict(cost=[1.0, 2.0, 3.0], budget_cost=3.0, solver="nosuch", length=[9, 9, 9]),
            "unknown solver 'nosuch'; choose one of",
        ),
        (dict(cost=[1.0, 2.0, 3.0], budget_cost=3.0), "'rank-length' needs the source length of every item"),
        (dict(budget=2, cost_objective="cheapest"), "unknown cost objective 'cheapest'; choose one of"),
        (dict(cost=[1.0, 2.0, 3.0], budget_cost=3.0, length=[1, 2]), r"length: expected 3 values"),
        (dict(cost=[1.0, 2.0, 3.0], budget_cost=3.0, length=[1, -2, 3]), "length of item '2' is -2"),
        (dict(cost=[1.0, 2.0, 3.0], budget_cost=3.0, length=[1, np.inf, 3]), "length of item '2' is inf"),
        (dict(budget=2, level="page"), "unknown level"),
        (dict(budget=2, balance="domain", domain=["a", "a", "b"], quotas={"a": 1}), "not both"),
        (dict(budget=4, balance="domain", domain=["a", "a", "b"]), "domain 'b' has only 1"),
        (dict(budget=2, quotas={"b": 2}, domain=["a", "a", "b"]), "domain 'b' asks 2 units but the domain has only 1"),
        (dict(budget=2, quotas={"z": 1}, domain=["a", "a", "b"]), "unknown domain"),
        (
            dict(cost=[5.0, 5.0, 1.0], budget_cost=6.0, quotas={"a": 2}, domain=["a", "a", "b"], length=[1, 1, 1]),
            "cost at least 10",
        ),
    ],
)
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(PrecometError, match=message):
        _select([1.0, 2.0, 3.0], ids=["1", "2", "3"], **kwargs)


def test_rank_length_prefers_long_items_and_lists_by_utility():
    """Equal costs: rank x length (2/3·5, 1/3·50, 1·1) takes the two longer sources, the paper's shift the two
    most useful; the output lists the chosen items by utility either way."""
    sel = select_subset([2.0, 1.0, 3.0], SubsetPlan(budget_cost=20.0), cost=[10.0, 10.0, 10.0], length=[5, 50, 1])
    assert sel.indices.tolist() == [0, 1] and sel.objective == pytest.approx(2 / 3 * 5 + 1 / 3 * 50)
    paper = select_subset(
        [2.0, 1.0, 3.0], SubsetPlan(budget_cost=20.0, cost_objective="paper"), cost=[10.0, 10.0, 10.0]
    )
    assert paper.indices.tolist() == [2, 0]
    # a count budget ignores the cost objective: top-k by utility
    assert select_subset([1.0, 2.0, 3.0], SubsetPlan(budget=1), length=[100, 1, 1]).indices.tolist() == [2]


def test_nan_utility_names_the_item():
    with pytest.raises(PrecometError, match="utility of item 'b' is nan"):
        select_subset([1.0, np.nan], SubsetPlan(budget=1), ids=["a", "b"])


def test_utilities_for_checks_ids(tmp_path):
    path = tmp_path / "u.jsonl"
    path.write_text('{"signature": {"method": "x"}}\n{"id": "a", "utility": 1}\n{"id": "b", "utility": 2.5}\n')
    assert utilities_for(path, ["b", "a"]).tolist() == [2.5, 1.0]
    with pytest.raises(PrecometError, match=r"have no utility, e.g. \['c'\]"):
        utilities_for(path, ["a", "b", "c"])
    with pytest.raises(PrecometError, match=r"not in the campaign, e.g. \['b'\]"):
        utilities_for(path, ["a"])
    path.write_text('{"id": "a", "utility": 1}\n{"id": "a", "utility": 2}\n')
    with pytest.raises(PrecometError, match="duplicate id 'a'"):
        utilities_for(path, ["a"])


# ---------------------------------------------------------------- CLI
def test_cli_budget_time_is_a_cost_budget_in_seconds(tmp_path, capsys):
    campaign = simulate_campaign(n_items=40, n_systems=4, seed=1)
    data = tmp_path / "c.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in campaign.iter_items()))
    select = ["select", "--data", str(data), "--keep-incomplete", "--method", "random"]
    assert main([*select, "--budget-time", "6min 30s", "-o", str(tmp_path / "t.jsonl")]) == 0
    assert main([*select, "--budget-cost", "390", "-o", str(tmp_path / "c2.jsonl")]) == 0
    assert (tmp_path / "t.jsonl").read_text() == (tmp_path / "c2.jsonl").read_text()
    manifest = json.loads((tmp_path / "t.manifest.json").read_text())
    assert manifest["budget"]["budget_cost"] == 390 and manifest["budget"]["cost_unit"] == "seconds"
    assert manifest["parameters"]["budget_given_as"] == "duration" and manifest["total_cost"] <= 390
    with pytest.raises(SystemExit):
        main([*select, "--budget-time", "390", "-o", str(tmp_path / "x.jsonl")])
    assert "expected a duration such as 10h" in capsys.readouterr().err
    assert main([*select, "--budget-time", "1d", "-o", str(tmp_path / "all.jsonl")]) == 0
    assert "--budget-time (86,400 s) covers the whole campaign's annotation time" in capsys.readouterr().err


def test_cli_writes_subset_and_manifest(tmp_path, capsys):
    campaign = simulate_campaign(n_items=40, n_systems=4, seed=1)
    data = tmp_path / "c.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in campaign.iter_items()))
    scores = tmp_path / "s.jsonl"
    utility = np.random.default_rng(0).normal(size=len(campaign))
    scores.write_text("".join(json.dumps({"id": i, "utility": u}) + "\n" for i, u in zip(campaign.ids, utility)))
    out = tmp_path / "out" / "subset.jsonl"
    rc = main(
        [
            "select",
            "--data",
            str(data),
            "--keep-incomplete",
            "--utility-file",
            str(scores),
            "--proportion",
            "0.3",
            "--cost-aware",
            "--balance",
            "domain",
            "-o",
            str(out),
        ]
    )
    assert rc == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    manifest = json.loads((tmp_path / "out" / "subset.manifest.json").read_text())
    assert manifest["status"] == "optimal" and manifest["n_selected"] == len(rows)
    assert sum(r["cost"] for r in rows) <= 0.3 * campaign.cost.sum() + 1e-6
    assert set(rows[0]) == {"id", "src", "doc", "domain", "cost", "utility"}
    assert manifest["data_hash"] and manifest["method"] == "scores" and manifest["precomet_version"]
    assert manifest["budget"]["objective"] == manifest["parameters"]["cost_objective"] == "rank-length"
    rc = main(
        [
            "select",
            "--data",
            str(data),
            "--keep-incomplete",
            "--utility-file",
            str(scores),
            "--budget",
            "5",
            "--solver",
            "nosuch",
            "--cost-aware",
            "-o",
            str(out),
        ]
    )
    assert rc == 2


@pytest.mark.realdata
def test_real_wmt23_cost_aware_balanced_documents(raw_data):
    from precomet.io import load

    campaign = load(raw_data / "mt-metrics-eval-v2", campaign="wmt23/en-de", human="mqm")
    utility = -np.nanmean(campaign.score("MetricX-23-c"), axis=1)
    sel = select_subset(
        utility,
        SubsetPlan(proportion=0.25, balance="domain", level="doc"),
        cost=campaign.cost,
        domain=campaign.domain,
        doc=campaign.doc,
        ids=campaign.ids,
        length=source_length(campaign.src),
    )
    assert isinstance(sel, Selection) and sel.status == "optimal"
    assert sel.total_cost <= 0.25 * campaign.cost.sum() + 1e-6
    chosen = set(sel.indices.tolist())
    docs = {campaign.doc[i] for i in chosen}
    assert all((i in chosen) == (campaign.doc[i] in docs) for i in range(len(campaign)))
    assert len({sum(1 for d in docs if campaign.domain[campaign.doc == d][0] == g) for g in set(campaign.domain)}) == 1


def test_share_quotas_under_a_cost_budget_are_shares_of_the_cost_even_with_equal_costs():
    # chat's share is 1.5 cost units: one item of cost 1, whether or not the costs happen to be equal
    domain = np.array(["chat", "chat", "news"], dtype=object)
    for cost in ([1.0, 1.0, 1.0], [1.0, 1.0, 1.0001]):
        selection = select_subset(
            np.array([3.0, 2.0, 1.0]),
            SubsetPlan(budget_cost=3.0, quotas={"chat": 0.5, "news": 0.5}, cost_objective="rank-cost"),
            cost=np.array(cost),
            domain=domain,
        )
        assert selection.indices.tolist() == [0, 2], cost
    counted = select_subset(
        np.array([3.0, 2.0, 1.0]), SubsetPlan(budget=3, quotas={"chat": 0.5, "news": 0.5}), domain=domain
    )
    assert counted.indices.tolist() == [0, 1, 2]  # an item budget rounds shares to counts (largest remainder)


def _same_selection(a: Selection, b: Selection, *, ignore: tuple[str, ...] = ()) -> bool:
    """Equal in everything but the seconds it took (and the fields in ``ignore``)."""
    return a.indices.tolist() == b.indices.tolist() and all(
        getattr(a, name) == getattr(b, name)
        for name in Selection.__dataclass_fields__
        if name not in ("indices", "seconds", *ignore)
    )


@pytest.mark.parametrize(
    "options",
    [
        dict(budget_cost=2000.0),
        dict(budget_cost=2000.0, balance="domain", cost_objective="rank-cost"),
        dict(proportion=0.3, level="doc"),
        dict(budget=8, quotas={"literary": 0.5, "social": 0.5}),
    ],
)
def test_campaign_fills_the_columns_as_the_arrays_would(options):
    campaign = simulate_campaign(n_items=40, n_systems=4, seed=1)
    utility = np.random.default_rng(0).normal(size=len(campaign))
    assert len(set(campaign.domain)) > 1 and len(set(campaign.doc)) > 1
    plan = SubsetPlan(**options)
    arrays = select_subset(
        utility,
        plan,
        cost=item_seconds(campaign) if "budget_cost" in options else None,
        domain=campaign.domain,
        doc=campaign.doc,
        ids=campaign.ids,
        length=source_length(campaign.src),
    )
    filled = select_subset(utility, plan, campaign=campaign)
    assert _same_selection(filled, arrays, ignore=("total_cost",))
    seconds = campaign.cost * len(campaign.systems)  # every output of an item judged, at its cost per output
    assert filled.total_cost == pytest.approx(seconds[filled.indices].sum())  # its seconds, even for a count
    if "budget_cost" in options:  # the campaign's cost is what the budget buys; a given column wins
        assert arrays.budget["unit"] == "cost"
        doubled = select_subset(utility, plan, campaign=campaign, cost=2 * seconds)
        assert doubled.total_cost == pytest.approx(2 * seconds[doubled.indices].sum())
        assert doubled.total_cost <= options["budget_cost"] and len(doubled) < len(arrays)


def test_campaign_must_align_with_the_utilities():
    campaign = simulate_campaign(n_items=10, n_systems=2, seed=0)
    with pytest.raises(PrecometError, match="has 10 items, utility has 9 values"):
        select_subset(np.ones(9), SubsetPlan(budget=2), campaign=campaign)


def test_campaign_without_documents_refuses_doc_level():
    from precomet.campaign import Campaign

    flat = Campaign.build(
        ids=["a", "b", "c"], src=["one", "two", "three"], systems=[], name="flat"
    )  # doc = the item id
    with pytest.raises(PrecometError, match="level='doc': campaign 'flat' has no documents"):
        select_subset(np.ones(3), SubsetPlan(budget=2, level="doc"), campaign=flat)
    documented = simulate_campaign(n_items=10, n_systems=2, seed=0)
    assert len(select_subset(np.ones(10), SubsetPlan(budget=5, level="doc"), campaign=documented)) >= 1


def test_item_budget_counts_what_a_cost_budget_buys_at_the_mean_cost():
    from precomet.selection.units import item_budget

    cost = np.array([1.0, 2.0, 3.0, 6.0])  # mean 3
    assert item_budget(cost, budget=3) == 3
    assert item_budget(cost, proportion=0.5) == 2 and item_budget(cost, proportion=0.1) == 1
    assert item_budget(cost, budget_cost=7.0) == 2 and item_budget(cost, budget_cost=1.0) == 1
    assert item_budget(cost, budget=10) == 4 and item_budget(cost, budget_cost=1000.0) == 4  # all of them, no more


def test_total_cost_is_always_a_cost_n_items_counts_and_to_dict_is_json():
    """Issue 33: ``total_cost`` is the chosen items' annotation cost under a count budget too (from the campaign),
    ``None`` without any cost, never an item count; ``n_items`` counts; ``to_dict`` is the JSON of every field."""
    campaign = simulate_campaign(n_items=20, n_systems=3, seed=0)
    utility = np.arange(20.0)
    counted = select_subset(utility, SubsetPlan(budget=5), campaign=campaign)
    assert counted.n_items == len(counted) == 5
    seconds = campaign.cost[counted.indices].sum() * len(campaign.systems)  # every output judged
    assert counted.total_cost == pytest.approx(seconds) and counted.total_cost != 5
    bare = select_subset(utility, SubsetPlan(budget=5))
    assert bare.total_cost is None and bare.n_items == 5
    written = json.loads(json.dumps(counted.to_dict()))
    assert written["indices"] == counted.indices.tolist() and written["n_items"] == 5
    assert written["total_cost"] == counted.total_cost and written["status"] == counted.status
    assert set(written) == {f for f in Selection.__dataclass_fields__} | {"n_items"}


def test_the_manifest_of_a_count_budget_gives_the_subsets_annotation_seconds(tmp_path):
    campaign = simulate_campaign(n_items=20, n_systems=3, seed=0)
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in campaign.iter_items()))
    out = tmp_path / "subset.jsonl"
    argv = ["select", "--data", str(data), "--method", "metric_var", "--metric", "MetricSim", "--budget", "4"]
    assert main([*argv, "-o", str(out)]) == 0
    manifest = json.loads((tmp_path / "subset.manifest.json").read_text())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert manifest["n_selected"] == 4  # the rows keep the cost per output; the total judges all 3 systems' outputs
    assert manifest["total_cost"] == pytest.approx(3 * sum(r["cost"] for r in rows))


@pytest.mark.parametrize("human", [False, True])
def test_select_with_scores_reads_a_pool_of_sources_once(tmp_path, monkeypatch, human):
    """A pool of sources (no human scores) cannot lose items to completeness, so ``select --utility-file`` reads it once
    (a 1M-source pool took twice as long when read twice); with human scores it is read again in full, so that a
    scores file covering the unrated items still matches."""
    import precomet.io

    items = [{"id": f"p{i}", "src": f"source number {i} with some words"} for i in range(12)]
    if human:
        for item in items:
            item["tgt"] = {"A": "a", "B": "b"}
            item["scores"] = {"A": {"human": 1.0}, "B": {"human": 0.0 if item["id"] != "p3" else None}}
    data, scores = tmp_path / "pool.jsonl", tmp_path / "u.jsonl"
    data.write_text("".join(json.dumps(item) + "\n" for item in items))
    scores.write_text("".join(json.dumps({"id": item["id"], "utility": i}) + "\n" for i, item in enumerate(items)))
    reads = []
    original = precomet.io.load
    monkeypatch.setattr(precomet.io, "load", lambda *a, **k: reads.append(k) or original(*a, **k))
    out = tmp_path / "subset.jsonl"
    argv = ["--no-progress", "select", "--data", str(data), "--utility-file", str(scores), "--budget", "4"]
    assert main([*argv, "-o", str(out)]) == 0
    assert len(reads) == (2 if human else 1)
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["p11", "p10", "p9", "p8"]


def test_the_spellings_renamed_in_0_18_are_refused_with_the_new_name_since_0_19(tmp_path, capsys):
    """0.18.0 renamed ``select --scores`` (a file of utilities, not scores) ``--utility-file`` and ``benchmark
    --target`` ``--score``; the old spellings worked with a warning until 0.19.0 and are now refused, naming the new
    one, before anything is read (cli.RENAMED)."""
    out = tmp_path / "subset.jsonl"
    argv = ["--no-progress", "select", "--data", "pool.jsonl", "--scores", "u.jsonl", "--budget", "2", "-o", str(out)]
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2 and not out.exists()
    assert "--scores was renamed --utility-file in precomet 0.18.0 (docs/names.md)" in capsys.readouterr().err


def test_retired_options_are_found_for_their_command_only():
    from precomet.cli import retired_options

    assert retired_options(["benchmark", "--target=coherence", "--scores", "a=b"]) == [
        "--target was renamed --score in precomet 0.18.0 (docs/names.md)",
        "--scores was renamed --utility-file in precomet 0.18.0 (docs/names.md)",
    ]
    assert retired_options(["waves", "--target", "0.9"]) == []  # waves' own --target
    assert retired_options(["select", "--", "--scores"]) == []


@pytest.mark.parametrize("abbreviation", ["--scor", "--scor=u.jsonl", "--sco"])
def test_an_abbreviation_of_a_retired_option_is_refused_by_name(tmp_path, capsys, abbreviation):
    """Issue 61: ``select --scor FILE`` (argparse takes abbreviations) said "one of --method --utility-file
    --checkpoint is required" and never named ``--scor``."""
    out = tmp_path / "subset.jsonl"
    argv = ["select", "--data", "pool.jsonl", *abbreviation.split("="), "--budget", "2", "-o", str(out)]
    with pytest.raises(SystemExit) as exit_info:
        main(argv if "=" not in abbreviation else [*argv[:3], abbreviation, *argv[5:]])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and not out.exists()
    name = abbreviation.partition("=")[0]
    assert f"{name} (short for --scores, retired) was renamed --utility-file in precomet 0.18.0" in err
    assert "use --utility-file" in err and "is required" not in err


def test_an_abbreviation_of_a_retired_and_a_current_option_asks_for_the_full_name(capsys):
    """``benchmark --scor``: once ``--scores`` (retired) or ``--score``; argparse alone would read it as ``--score``."""
    with pytest.raises(SystemExit) as exit_info:
        main(["benchmark", "--data", "pool.jsonl", "--scor", "human"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--scor (short for --scores, retired) was renamed --utility-file" in err
    assert "for --score write the option in full" in err
