"""Issue 52: the options of ``run_benchmark`` and ``select_subset`` are frozen records (``BenchmarkPlan``,
``SubsetPlan``); the old keyword arguments give the same result, with one DeprecationWarning naming the new form,
until 0.20.0."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from precomet import benchmark as bm
from precomet.deprecated import REMOVED_IN
from precomet.errors import PrecometError
from precomet.selection import SubsetPlan, select_subset
from precomet.simulate import simulate_campaign
from tests.conftest import untimed_json


@pytest.fixture(scope="module")
def campaign():
    return simulate_campaign(n_items=60, n_systems=4, seed=7)


def _ours(call):
    """``call()``'s value and the deprecation warnings of precomet's own it gave (pulp has its own)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = call()
    return value, [w for w in caught if f"until precomet {REMOVED_IN}" in str(w.message)]


def _one_warning(call):
    """``call()``'s value and the one deprecation warning it gave (it must give exactly one)."""
    value, ours = _ours(call)
    assert len(ours) == 1, [str(w.message) for w in ours]
    return value, ours[0]


OLD_BENCHMARK = dict(
    methods=["metric_var"],
    metric="MetricSim",
    props=[0.2, 0.4],
    seeds=4,
    permutations=50,
    oracle_candidates=5,
    null_orderings=10,
    method_options={"metric_var": {}},
)


def test_run_benchmark_old_keywords_warn_once_and_give_the_plans_result(campaign):
    external = {"given": np.arange(60.0)[::-1]}
    old, warning = _one_warning(
        lambda: bm.run_benchmark(campaign, external=external, progress=False, workers=1, **OLD_BENCHMARK)
    )
    assert warning.category is DeprecationWarning and warning.filename == __file__  # points at the caller
    message = str(warning.message)
    assert "BenchmarkPlan(methods=..., metric=..., props=..." in message and REMOVED_IN in message
    new, none = _ours(  # the new form warns about nothing
        lambda: bm.run_benchmark(
            campaign, bm.BenchmarkPlan(**OLD_BENCHMARK), external=external, progress=False, workers=1
        )
    )
    assert none == []
    assert untimed_json(old) == untimed_json(new)
    assert new.signature["method_options"] == {"metric_var": {}} and new.signature["null_orderings"] == 10


def test_run_benchmark_old_keywords_keep_their_errors(campaign):
    with pytest.warns(DeprecationWarning), pytest.raises(PrecometError, match="whole number ≥ 0") as err:
        bm.run_benchmark(campaign, external={"x": np.zeros(60)}, null_orderings=-1)
    assert err.value.params == ("null_orderings",)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        bm.run_benchmark(campaign, nope=1)
    with pytest.raises(TypeError, match="both a BenchmarkPlan and the keyword argument"):
        bm.run_benchmark(campaign, bm.BenchmarkPlan(seeds=3), seeds=4)


def test_benchmark_plan_is_frozen_checked_and_owns_its_options():
    options = {"kmeans": {"n_init": 1}}
    plan = bm.BenchmarkPlan(methods=["kmeans"], props=[0.5, 0.25], method_options=options)
    assert plan.props == (0.5, 0.25) and plan.methods == ("kmeans",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.seed = 3  # type: ignore[misc]
    options["random"] = {}
    assert plan.method_options == {"kmeans": {"n_init": 1}}
    assert dataclasses.replace(plan, seed=3).seed == 3 and plan.seed == 0
    assert bm.BenchmarkPlan() == bm.BenchmarkPlan(props=bm.DEFAULT_PROPS)
    for bad, param in (({"props": [0.0]}, "props"), ({"props": [0.2, 0.2]}, "props"), ({"null_orderings": 1.5}, None)):
        with pytest.raises(PrecometError) as err:
            bm.BenchmarkPlan(**bad)
        assert err.value.param == (param or "null_orderings")
    field_names = [f.name for f in dataclasses.fields(bm.BenchmarkPlan)]
    assert "external" not in field_names and "progress" not in field_names and "workers" not in field_names


OLD_SUBSETS = [
    dict(budget=10),
    dict(proportion=0.3, balance="domain"),
    dict(proportion=0.3, cost_objective="paper", seed=2),
    dict(budget_cost=600.0, quotas={"news": 0.5, "social": 0.5}, time_limit=20, gap_tolerance=1e-3),
    dict(proportion=0.25, level="doc", solver="cbc", allow_gap=True),
]


@pytest.mark.parametrize("options", OLD_SUBSETS, ids=lambda o: ",".join(o))
def test_select_subset_old_keywords_warn_once_and_give_the_plans_selection(campaign, options):
    utility = np.random.default_rng(3).normal(size=len(campaign))
    domain = np.array(["news", "social"], dtype=object)[np.arange(len(campaign)) % 2]
    data = dict(campaign=campaign, cost=None if "budget" in options else campaign.cost)
    if "balance" in options or "quotas" in options:
        data["domain"] = domain
    old, warning = _one_warning(lambda: select_subset(utility, **data, **options))
    assert warning.category is DeprecationWarning and warning.filename == __file__
    assert f"SubsetPlan({', '.join(f'{k}=...' for k in options)})" in str(warning.message)
    new, none = _ours(lambda: select_subset(utility, SubsetPlan(**options), **data))
    assert none == []
    assert {**old.to_dict(), "seconds": 0} == {**new.to_dict(), "seconds": 0}


def test_select_subset_old_keywords_keep_their_errors():
    for options, message in (
        ({}, r"give exactly one of budget, proportion, budget_cost \(got none\)"),
        ({"budget": 0}, "budget must be a positive whole number of items, got 0"),
        ({"proportion": 1.5}, r"proportion must lie in \(0, 1\], got 1.5"),
        ({"budget": 2, "balance": "domain", "quotas": {"a": 1}}, "give either balance='domain' or quotas"),
        ({"budget": 2, "cost_objective": "nope"}, "unknown cost objective 'nope'"),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            with pytest.raises(PrecometError, match=message):
                select_subset([1.0, 2.0, 3.0], **options)
        if options:
            with pytest.raises(PrecometError, match=message):
                SubsetPlan(**options)
    with pytest.raises(TypeError, match="unexpected keyword argument 'budgets'"):
        select_subset([1.0, 2.0], budgets=1)
    with pytest.raises(TypeError, match="both a SubsetPlan and the keyword argument"):
        select_subset([1.0, 2.0], SubsetPlan(budget=1), seed=3)


def test_subset_plan_is_frozen_and_owns_its_quotas():
    quotas = {"a": 1, "b": 1}
    plan = SubsetPlan(budget=2, quotas=quotas)
    quotas["c"] = 1
    assert plan.quotas == {"a": 1, "b": 1}
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.budget = 3  # type: ignore[misc]
    assert dataclasses.replace(plan, budget=None, proportion=0.5).proportion == 0.5
    names = {f.name for f in dataclasses.fields(SubsetPlan)}
    assert not names & {"cost", "domain", "doc", "ids", "length", "campaign"}
