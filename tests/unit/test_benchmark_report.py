"""benchmark's answer in the user's units: recommendation, parity interval, cost lines, circular guard, optional -o."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precomet import benchmark as bm
from precomet.campaign import Campaign
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io import write_jsonl

N_FLAT, N_INFORMATIVE, SYSTEMS = 40, 40, 4


@pytest.fixture(scope="module")
def campaign():
    """80 items × 4 systems: on the first 40 the human scores are noise (they tell nothing about the ranking), the
    last 40 order the systems by quality (s0 best). A method that picks the informative items first beats random;
    one that picks the noise first cannot reach random's accuracy below 50 % of the items."""
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 1, (N_FLAT, SYSTEMS))
    informative = (SYSTEMS - 1 - np.arange(SYSTEMS, dtype=float)) + rng.normal(0, 1.5, (N_INFORMATIVE, SYSTEMS))
    human = np.vstack([noise, informative])
    metric = human + rng.normal(0, 0.1, human.shape)
    src = [f"source sentence number {i}" for i in range(N_FLAT + N_INFORMATIVE)]
    return Campaign.build(src=src, systems=[f"s{j}" for j in range(SYSTEMS)], scores={"human": human, "m": metric})


def _informative(campaign):
    return np.r_[np.zeros(N_FLAT), np.ones(N_INFORMATIVE)]


KW = {"props": [0.1, 0.2, 0.3, 0.4, 0.5], "seeds": 20, "permutations": 200, "oracle": False, "progress": False}


def test_recommendation_names_the_method_that_beats_random(campaign):
    good = _informative(campaign)
    result = bm.run_benchmark(campaign, external={"good": good, "bad": 1 - good}, **KW)
    rec = result["recommendation"]
    assert rec["method"] == "good" and rec["unit"] == "items"
    assert result["methods"]["good"]["parity"] < 1 < result["methods"]["bad"]["parity"]
    assert rec["text"].startswith(
        f"good: random's accuracy with {100 * rec['parity']:.0f} % of the items (90 % interval"
    )
    assert "not clearly" not in rec["text"]
    assert json.loads(json.dumps(result.to_dict()))["recommendation"] == rec  # goes into the JSON as it is
    assert "recommendation: good: random's accuracy" in bm.summary_table(result)


def test_recommendation_when_no_method_beats_random(campaign):
    bad = 1 - _informative(campaign)
    result = bm.run_benchmark(campaign, external={"bad": bad}, **KW)
    rec = result["recommendation"]
    assert rec["method"] is None and rec["parity"] > 1
    assert rec["text"].startswith("no method beats random here: annotate a random sample (the best, bad, needs")
    # the "random" utility method is a random sample, never the advice
    result = bm.run_benchmark(campaign, methods=["random"], **KW)
    assert result["recommendation"]["method"] is None


def test_recommendation_under_a_cost_budget_speaks_of_time(campaign):
    good = _informative(campaign)
    result = bm.run_benchmark(campaign, external={"good": good}, budget_unit="cost", time_limit=5, **KW)
    rec = result["recommendation"]
    assert rec["method"] == "good" and rec["unit"] == "annotation time"
    assert "of the annotation time" in rec["text"] and "min per hour of random annotation" in rec["text"]
    assert result["cost"] == {
        "total_seconds": pytest.approx(campaign.cost.sum()),
        "source": "estimated from source length",
    }
    table = bm.summary_table(result)
    assert "annotation cost: " in table and "(estimated from source length)" in table and " min" in table


def test_parity_interval_contains_the_estimate_and_comes_from_the_run(campaign):
    good = _informative(campaign)
    result = bm.run_benchmark(campaign, external={"good": good, "bad": 1 - good, "flat": np.zeros(80)}, **KW)
    for name, row in result["methods"].items():
        low, high = row["parity_ci90"]
        assert low <= row["parity"] <= high, name
        assert low < high or min(row["parity_by_prop"]) == max(row["parity_by_prop"]), name
    # the same run reproduces the interval; another resampling seed (= another run seed) moves it
    again = bm.run_benchmark(campaign, external={"good": good}, **KW)
    assert again["methods"]["good"]["parity_ci90"] == result["methods"]["good"]["parity_ci90"]


def test_replayed_position_equals_the_search_and_interpolates_between_known_points():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(20, 200))
        curve = np.maximum.accumulate(rng.random(n + 1))
        curve[n] = 1.0
        memo: dict[int, float] = {}

        def spa_at(g, memo=memo, curve=curve):
            memo[g] = float(curve[g])
            return memo[g]

        target = float(rng.uniform(curve[2], 1.0))
        found = bm.parity_search(spa_at, target, n_items=n, grid=16)
        asked = len(memo)
        assert bm.replayed_position(spa_at, memo, target, n_items=n, grid=16) == found
        assert len(memo) == asked  # nothing new evaluated for the search's own target
        # a nearby target: an answer between two evaluated positions, without new subsets inside the bracket
        other = bm.replayed_position(spa_at, memo, min(target + 0.01, 1.0), n_items=n, grid=16)
        assert found <= other <= n


def test_parity_interval_by_hand():
    """Two budgets, two seeds; parity = position / budget with position = target × 100: the bootstrap mean of
    resampled targets and budgets stays inside the per-budget range."""
    runs = np.array([[0.2, 0.4], [0.4, 0.6]])  # seeds × budgets

    def position_for(target):
        return 100 * target

    low, high = bm.parity_interval(position_for, runs, lambda g, q: g / [30, 50][q], seed=0, resamples=2000)
    per_budget = [100 * runs[:, 0] / 30, 100 * runs[:, 1] / 50]
    assert min(per_budget[0].min(), per_budget[1].min()) <= low < high <= max(per_budget[0].max(), per_budget[1].max())
    assert bm.parity_interval(position_for, runs, lambda g, q: g / [30, 50][q], seed=0, resamples=2000) == (low, high)


def test_circular_guard(campaign):
    with pytest.raises(PrecometError, match="circular evaluation.*allow_circular=True"):
        bm.run_benchmark(campaign, methods=["metric_var"], metric="human", **KW)
    allowed = bm.run_benchmark(campaign, methods=["metric_var"], metric="human", allow_circular=True, **KW)
    assert allowed["signature"]["allow_circular"] is True and allowed["signature"]["circular"] is True
    # a utility that reads no score is not circular, whatever --metric says; another metric is fine
    assert bm.circular_reason(["kmeans", "random"], "human", "human") is None
    assert bm.circular_reason(["metric_var"], "m", "human") is None
    assert "metric_avg" in bm.circular_reason(["metric_avg", "kmeans"], "coherence", "coherence")


@pytest.fixture
def data(tmp_path, campaign):
    path = tmp_path / "items.jsonl"
    write_jsonl(campaign, path)
    return path


BASE = ["--props", "0.2,0.4", "--seeds", "3", "--permutations", "50", "--no-oracle"]


def test_cli_circular_guard_and_allow_circular(data, tmp_path, capsys):
    cmd = ["benchmark", "--data", str(data), "--methods", "metric_var", "--metric", "human", *BASE]
    assert main(cmd) == 2
    err = capsys.readouterr().err
    assert "circular evaluation" in err and "--allow-circular" in err
    assert main([*cmd, "--allow-circular"]) == 0
    assert main([*cmd, "--crowd", "2", "--crowd-runs", "2"]) == 2
    assert "--allow-circular" in capsys.readouterr().err
    assert main([*cmd, "--crowd", "2", "--crowd-runs", "2", "--allow-circular"]) == 0
    assert main(["benchmark", "--data", str(data), "--methods", "metric_var", "--metric", "m", *BASE]) == 0


def test_cli_without_output_prints_and_writes_nothing(data, tmp_path, capsys):
    before = sorted(tmp_path.rglob("*"))
    assert main(["benchmark", "--data", str(data), "--methods", "metric_avg", "--metric", "m", *BASE]) == 0
    out = capsys.readouterr().out
    assert sorted(tmp_path.rglob("*")) == before
    assert "annotation cost: " in out and "parity = the share of the budget" in out and "recommendation: " in out
    assert "wrote" not in out


def test_cli_output_and_the_old_json_spelling(data, tmp_path, capsys):
    cmd = ["benchmark", "--data", str(data), "--methods", "metric_avg", "--metric", "m", *BASE]
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    assert main([*cmd, "-o", str(new)]) == 0
    captured = capsys.readouterr()
    assert f"wrote {new}" in captured.out and "deprecated" not in captured.err
    assert main([*cmd, "--json", str(old)]) == 0
    assert "--json is deprecated" in capsys.readouterr().err
    first, second = json.loads(new.read_text()), json.loads(old.read_text())
    for row in (first, second):
        del row["methods"]["metric_avg"]["seconds"]  # wall time
    assert first["methods"] == second["methods"] and first["recommendation"] == second["recommendation"]
    with pytest.raises(SystemExit):  # one spelling at a time (argparse's usage error)
        main([*cmd, "-o", str(new), "--json", str(old)])


def test_paths_lists_output_and_plot(data, tmp_path):
    from precomet.cli import build_parser
    from precomet.commands import benchmark as command

    args = build_parser().parse_args(
        ["benchmark", "--data", str(data), "--methods", "metric_avg", "-o", "o.json", "--plot", "p.png"]
    )
    assert [str(p) for p in command.paths(args).outputs if p] == ["o.json", "p.png"]
