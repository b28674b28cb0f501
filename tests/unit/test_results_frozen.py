"""The promise of docs/names.md and precomet.record: results (and the campaign, and the cached meta-evaluation
reference) never change — not their arrays, not their mappings, not their lists — and comparing two never raises."""

from __future__ import annotations

import numpy as np
import pytest

from precomet.benchmark import BenchmarkPlan, run_benchmark
from precomet.errors import CampaignError
from precomet.metaeval import evaluate_indices, full_reference
from precomet.rank import rank_systems
from precomet.selection import SubsetPlan, select_subset
from precomet.simulate import simulate_campaign


@pytest.fixture(scope="module")
def campaign():
    return simulate_campaign(n_items=40, n_systems=4, seed=2)


def _cannot_write(array: np.ndarray) -> None:
    with pytest.raises(ValueError):
        array[0] = 0
    with pytest.raises(ValueError):  # a read-only view of a read-only array cannot be unlocked
        array.setflags(write=True)


def test_a_selection_cannot_be_changed():
    picked = select_subset(np.arange(10.0), SubsetPlan(budget=3, balance="domain"), domain=["a", "b"] * 5)
    _cannot_write(picked.indices)
    with pytest.raises(TypeError):
        picked.budget["items"] = 99  # type: ignore[index]
    with pytest.raises(TypeError):
        picked.domains["a"] = 0  # type: ignore[index]
    assert picked.to_dict()["indices"] == [int(i) for i in picked.indices]
    assert picked == picked and picked != select_subset(np.arange(10.0), SubsetPlan(budget=3)) and hash(picked)


def test_a_ranking_cannot_be_changed(campaign):
    ranking = rank_systems(campaign, rounds=50)
    for array in (ranking.means, ranking.ci_low, ranking.win_probability, ranking.adjacent_pvalues):
        _cannot_write(array)
    with pytest.raises(AttributeError):
        ranking.clusters.append(["bogus"])  # type: ignore[attr-defined]
    assert isinstance(ranking.clusters[0], tuple) and ranking.to_dict()["clusters"][0] == list(ranking.clusters[0])
    assert ranking == ranking and hash(ranking)


def test_the_cached_reference_cannot_be_changed_so_later_subsets_are_measured_right(campaign):
    ref = full_reference(campaign, permutations=100)
    before = evaluate_indices(ref, np.arange(20))
    for array in (ref.means, ref.pvalues, ref.matrix, ref.signs):
        _cannot_write(array)
    assert full_reference(campaign, permutations=100) is ref and evaluate_indices(ref, np.arange(20)) == before


def test_a_benchmark_result_cannot_be_changed(campaign):
    result = run_benchmark(
        campaign,
        BenchmarkPlan(
            methods=["metric_avg"],
            metric="MetricSim",
            props=[0.2, 0.4],
            seeds=3,
            permutations=50,
            null_orderings=5,
            oracle=False,
            controls=False,
        ),
    )
    row = result.methods["metric_avg"]
    with pytest.raises(TypeError):
        row["parity"] = 0.01  # type: ignore[index]
    with pytest.raises(AttributeError):
        row["spa_by_prop"].append(1.0)
    assert isinstance(result.props, tuple) and result.to_dict()["props"] == [0.2, 0.4]


def test_campaign_columns_cannot_be_unlocked(campaign):
    for column in (campaign.cost, campaign.ids, campaign.score("human"), *campaign.outputs.values()):
        _cannot_write(column)


def test_take_refuses_what_would_make_a_wrong_campaign(campaign):
    mask = np.zeros(len(campaign), dtype=bool)
    mask[[3, 5]] = True
    assert list(campaign.take(mask).ids) == [campaign.ids[3], campaign.ids[5]]  # a mask selects, not indexes 0/1
    with pytest.raises(CampaignError, match="needs 40 entries"):
        campaign.take(mask[:5])
    with pytest.raises(CampaignError, match="whole numbers"):
        campaign.take([2.9])
    with pytest.raises(CampaignError, match="given 2 times"):
        campaign.take([1, 1])
    with pytest.raises(CampaignError, match="given 2 times"):
        campaign.take_ids([campaign.ids[0], campaign.ids[0]])
    with pytest.raises(CampaignError, match="list of system names"):
        campaign.restrict_systems(campaign.systems[0])
    with pytest.raises(CampaignError, match="more than once"):
        campaign.restrict_systems([campaign.systems[0]] * 2)
    assert len(campaign.take([])) == 0
