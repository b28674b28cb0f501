"""Every randomised step is a function of its seed: two runs with the same seed agree exactly, the seed is recorded
with the result, and (where cheap) another seed gives another result, so the seed is really used."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precomet.benchmark import BenchmarkPlan, run_benchmark
from precomet.benchmark.crowd import run_crowd_benchmark
from precomet.pairwise.preference import from_scores
from precomet.pairwise.ratings import bootstrap_ratings, elo_ratings
from precomet.rank import rank_systems
from precomet.simulate import simulate_campaign
from precomet.utilities import compute_utility
from precomet.utilities.cluster import kmeans_representatives


def surface(texts: list[str]) -> np.ndarray:
    """A fake encoder: length, vowels and spaces of each text (deterministic, no model)."""
    return np.array([[len(t), sum(c in "aeiou" for c in t), t.count(" ")] for t in texts], dtype=float)


def _json(result) -> str:
    """A result as canonical JSON (exact float repr) without its timings: equal strings mean equal results."""

    def untimed(value):
        if isinstance(value, dict):
            return {k: untimed(v) for k, v in value.items() if not k.endswith("seconds")}
        return [untimed(v) for v in value] if isinstance(value, list) else value

    plain = result.to_dict() if hasattr(result, "to_dict") else result
    text = json.dumps(plain, default=lambda x: x.tolist() if hasattr(x, "tolist") else str(x))
    return json.dumps(untimed(json.loads(text)), sort_keys=True)


@pytest.fixture(scope="module")
def campaign():
    return simulate_campaign(n_items=40, n_systems=5, seed=3)


@pytest.mark.parametrize("method", ["kmeans", "kmeans_outputs"])
def test_kmeans_is_a_function_of_its_seed(campaign, method):
    def run(seed):
        return compute_utility(campaign, method, budget=6, seed=seed, options={"encoder": surface, "n_init": 1})

    first = run(0)
    assert np.array_equal(first, run(0))
    assert not np.array_equal(first, run(1))


def test_kmeans_representative_of_equidistant_items_is_the_first():
    """Both members of a two-item cluster are equidistant from its centre; float rounding must not pick one (it
    did: the embeddings' 1e-7 noise then changed k-means SPA from run to run)."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = np.sort(rng.uniform(0, 1, 2))
        vectors = np.array([[a], [b], [a + 100], [b + 100]])
        chosen, weights, _ = kmeans_representatives(vectors, budget=2, seed=0, n_init=1)
        assert sorted(chosen.tolist()) == [0, 2] and weights.tolist() == [2.0, 2.0]


def test_random_baseline_and_benchmark_are_functions_of_the_seed(campaign):
    def run(seed):
        return run_benchmark(
            campaign,
            BenchmarkPlan(
                methods=["random", "kmeans"],
                seeds=5,
                seed=seed,
                permutations=50,
                props=(0.2, 0.4),
                method_options={"kmeans": {"encoder": surface, "n_init": 1}},
                oracle_candidates=5,
            ),
            progress=False,
        )

    first = run(0)
    assert first.signature["seed"] == 0
    assert _json(first) == _json(run(0))
    assert first.random["spa_by_prop"] != run(1).random["spa_by_prop"]


def test_artificial_crowd_is_a_function_of_its_seed(campaign):
    def run(seed):
        return run_crowd_benchmark(
            campaign, methods=["metric_var"], crowd=3, runs=3, metric="MetricSim", seeds=5, permutations=50, seed=seed
        )

    first = run(0)
    assert first.signature["seed"] == 0
    assert _json(first) == _json(run(0))
    assert _json(first.crowds) != _json(run(1).crowds)


def test_rank_bootstrap_is_a_function_of_its_seed(campaign):
    first = rank_systems(campaign, rounds=200, seed=0)
    assert first.to_dict()["signature"]["seed"] == 0
    assert _json(first.to_dict()) == _json(rank_systems(campaign, rounds=200, seed=0).to_dict())
    assert not np.array_equal(first.ci_low, rank_systems(campaign, rounds=200, seed=1).ci_low)


@pytest.mark.parametrize("method", ["elo", "bt"])
def test_rating_bootstrap_is_a_function_of_its_seed(campaign, method):
    prefs = from_scores(campaign)
    first = bootstrap_ratings(prefs, method=method, rounds=50, seed=0)
    assert first.seed == 0
    assert first.rows() == bootstrap_ratings(prefs, method=method, rounds=50, seed=0).rows()
    assert first.rows() != bootstrap_ratings(prefs, method=method, rounds=50, seed=1).rows()


def test_shuffled_elo_is_a_function_of_its_seed(campaign):
    prefs = from_scores(campaign)
    first = elo_ratings(prefs, order="shuffle", seed=0)
    assert first == elo_ratings(prefs, order="shuffle", seed=0)
    assert first != elo_ratings(prefs, order="shuffle", seed=1)
