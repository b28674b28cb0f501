"""Artificial crowd (seed 002 §4.2, Table 4): crowds, evaluation on the remaining systems, reuse, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precomet.benchmark import BENCH_MEASURES, top_k
from precomet.benchmark import crowd as cr
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io import write_jsonl
from precomet.metaeval import evaluate_orderings, full_reference
from precomet.simulate import simulate_campaign
from precomet.utilities import compute_utility


@pytest.fixture(scope="module")
def campaign():
    return simulate_campaign(n_items=80, n_systems=6, seed=4)


def test_draw_crowds_seeded_distinct_and_checked(campaign):
    crowds = cr.draw_crowds(campaign.systems, k=3, runs=20, seed=1)
    assert crowds == cr.draw_crowds(campaign.systems, k=3, runs=20, seed=1)
    assert crowds != cr.draw_crowds(campaign.systems, k=3, runs=20, seed=2)
    assert all(len(set(c)) == 3 and set(c) <= set(campaign.systems) for c in crowds)
    assert len(set(crowds)) > 5
    with pytest.raises(PrecometError, match="at least 2 systems must remain"):
        cr.draw_crowds(campaign.systems, k=5, runs=1)


def test_values_equal_the_direct_computation_on_the_remaining_systems(campaign):
    metric = sorted(set(campaign.scores) - {"human"})[0]
    props = [0.1, 0.25, 0.5]
    result = cr.run_crowd_benchmark(
        campaign,
        methods=["metric_var", "random"],
        crowd=2,
        runs=3,
        metric=metric,
        props=props,
        seeds=4,
        permutations=200,
        seed=0,
    )
    sizes = [8, 20, 40]
    random_spa, var_spa = [], []
    for members in result.crowds:
        rest = [s for s in campaign.systems if s not in members]
        ref = full_reference(campaign.restrict_systems(rest), permutations=200, seed=0)  # no reuse: from scratch
        orders = [top_k(np.random.default_rng([0, r]).random(80), 40) for r in range(4)]
        random_spa.append(evaluate_orderings(ref, orders, sizes, measures=BENCH_MEASURES).mean(axis=0)[:, 0].mean())
        u = compute_utility(campaign, "metric_var", metric=metric, systems=members)
        var_spa.append(evaluate_orderings(ref, [top_k(u, 40)], sizes, measures=BENCH_MEASURES)[0, :, 0].mean())
    assert result.random["spa"] == pytest.approx(np.mean(random_spa), abs=1e-12)
    assert result.methods["metric_var"]["spa"] == pytest.approx(np.mean(var_spa), abs=1e-12)
    assert result.methods["metric_var"]["spa_minus_random"] == pytest.approx(
        np.mean(var_spa) - np.mean(random_spa), abs=1e-12
    )
    assert result.signature["crowd"] == 2 and result.signature["data_hash"] == campaign.data_hash()
    json.dumps(result.to_dict())


def test_system_free_utilities_computed_once(campaign, monkeypatch):
    calls = []
    real = cr.compute_utility
    monkeypatch.setattr(cr, "compute_utility", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    metric = sorted(set(campaign.scores) - {"human"})[0]
    cr.run_crowd_benchmark(
        campaign,
        methods=["random", "metric_avg"],
        crowd=2,
        runs=5,
        metric=metric,
        props=[0.2],
        seeds=2,
        permutations=100,
    )
    assert calls.count("random") == 1
    assert calls.count("metric_avg") == len(set(map(tuple, cr.draw_crowds(campaign.systems, k=2, runs=5))))


def test_cli_crowd(campaign, tmp_path, capsys):
    data = tmp_path / "c.jsonl"
    write_jsonl(campaign, data)
    metric = sorted(set(campaign.scores) - {"human"})[0]
    out = tmp_path / "crowd.json"
    base = [
        "benchmark",
        "--data",
        str(data),
        "--methods",
        "metric_var",
        "--metric",
        metric,
        "--props",
        "0.2,0.4",
        "--seeds",
        "3",
        "--permutations",
        "100",
        "-o",
        str(out),
    ]
    assert main(base + ["--crowd", "2", "--crowd-runs", "4"]) == 0
    assert "artificial crowd" in capsys.readouterr().out
    result = json.loads(out.read_text())
    assert result["runs"] == 4 and len(result["crowds"]) == 4
    assert result["signature"]["tool"] == "precomet benchmark --crowd"
    assert main(base + ["--crowd", "2", "--budget-unit", "cost"]) == 2
    assert "--budget-unit cost" in capsys.readouterr().err
    assert main(base + ["--crowd", "6"]) == 2
