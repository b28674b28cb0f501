"""The benchmark's headroom oracle (greedy on human scores, seed 002 Eq. 13): brute force on tiny campaigns,
determinism, nested prefixes, and the flagged row in the benchmark JSON, table and figure."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pytest

from precomet import benchmark as bm
from precomet.benchmark.oracle import greedy_oracle_order, oracle_utility
from precomet.cli import main
from precomet.io import write_jsonl
from precomet.metaeval import evaluate_indices, full_reference
from precomet.simulate import simulate_campaign


@pytest.fixture(scope="module")
def small():
    return simulate_campaign(n_items=10, n_systems=4, seed=5)


@pytest.fixture(scope="module")
def campaign():
    return simulate_campaign(n_items=120, n_systems=5, seed=3)


def _spa(ref, idx):
    return evaluate_indices(ref, np.asarray(idx), measures=("spa",))["spa"]


def test_first_step_is_the_brute_force_best_subset(small):
    ref = full_reference(small, permutations=200)
    for k in (2, 3):  # C(10, k) ≤ candidates: the oracle tries every extension
        order = greedy_oracle_order(ref, candidates=1000, step=k)
        best = max(_spa(ref, c) for c in combinations(range(10), k))
        assert _spa(ref, order[:k]) == pytest.approx(best, abs=1e-12)


def test_each_greedy_step_is_optimal_given_the_previous(small):
    ref = full_reference(small, permutations=200)
    order = greedy_oracle_order(ref, candidates=1000, step=2)
    assert sorted(order) == list(range(10))
    for start in (2, 4, 6):
        rest = [i for i in range(10) if i not in order[:start]]
        best = max(_spa(ref, [*order[:start], *c]) for c in combinations(rest, 2))
        assert _spa(ref, order[: start + 2]) == pytest.approx(best, abs=1e-12)


def test_seeded_and_beats_random(campaign):
    ref = full_reference(campaign, permutations=200)
    a = greedy_oracle_order(ref, candidates=20, step=5, seed=1)
    assert np.array_equal(a, greedy_oracle_order(ref, candidates=20, step=5, seed=1))
    assert not np.array_equal(a, greedy_oracle_order(ref, candidates=20, step=5, seed=2))
    rng = np.random.default_rng(0)
    random_spa = np.mean([_spa(ref, rng.permutation(120)[:12]) for _ in range(30)])
    assert _spa(ref, a[:12]) > random_spa


def test_oracle_utility_ranks_in_order():
    u = oracle_utility(np.array([2, 0, 1]))
    assert list(bm.top_k(u, 3)) == [2, 0, 1]


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
def test_benchmark_row_flagged_not_usable(campaign, tmp_path):
    result = bm.run_benchmark(
        campaign,
        bm.BenchmarkPlan(props=[0.1, 0.3], seeds=5, permutations=200, oracle_candidates=20, oracle_step=5),
        external={"flat": np.zeros(len(campaign))},
    )
    row = result.oracle
    assert "oracle" not in result.methods and row["usable"] is False and row["uses"] == "human"
    assert "NOT a usable selector" in row["description"] and row["candidates"] == 20 and row["step"] == 5
    ref = full_reference(campaign, permutations=200)
    order = greedy_oracle_order(ref, candidates=20, step=5, seed=0)
    assert row["spa_by_prop"][0] == pytest.approx(_spa(ref, order[:12]))
    assert row["spa"] > result.random["spa"]
    assert result.signature["oracle"] is True and result.signature["oracle_step"] == 5
    assert "oracle (not usable)" in bm.summary_table(result)
    bm.plot_benchmark(result, tmp_path / "b.png")
    assert (
        "oracle"
        not in bm.run_benchmark(
            campaign,
            bm.BenchmarkPlan(props=[0.3], seeds=2, permutations=100, oracle=False),
            external={"flat": np.zeros(len(campaign))},
        ).to_dict()
    )


def test_cli_oracle_flags(campaign, tmp_path, capsys):
    data = tmp_path / "c.jsonl"
    write_jsonl(campaign, data)
    out = tmp_path / "b.json"
    base = [
        "benchmark",
        "--data",
        str(data),
        "--methods",
        "random",
        "--props",
        "0.2",
        "--seeds",
        "3",
        "--permutations",
        "100",
        "-o",
        str(out),
    ]
    assert main(base + ["--oracle-candidates", "5", "--oracle-step", "4"]) == 0
    assert "oracle (not usable)" in capsys.readouterr().out
    assert json.loads(out.read_text())["oracle"]["step"] == 4
    assert main(base + ["--no-oracle"]) == 0
    assert "oracle" not in json.loads(out.read_text())
