"""The length control row of benchmark (and crowd), and the ``length`` utility method for select / utilities."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from precomet import benchmark as bm
from precomet.benchmark.crowd import crowd_table, run_crowd_benchmark
from precomet.campaign import Campaign, source_length
from precomet.cli import main
from precomet.costs import item_seconds
from precomet.io import write_jsonl
from precomet.metaeval import evaluate_indices, full_reference
from precomet.selection import SubsetPlan, select_subset
from precomet.utilities import compute_utility, knapsack_utility

N, SYSTEMS = 40, 4
LENGTHS = [20 + 5 * ((7 * i) % 13) for i in range(N)]  # 13 lengths, each 3 or 4 times: ties at the top
PLAN = bm.BenchmarkPlan(props=[0.2, 0.4], seeds=4, permutations=100, oracle=False)


def _build(src):
    rng = np.random.default_rng(1)
    human = np.arange(SYSTEMS, 0, -1, dtype=float) + rng.normal(0, 2, (len(src), SYSTEMS))
    return Campaign.build(
        src=src,
        systems=[f"s{j}" for j in range(SYSTEMS)],
        scores={"human": human, "m": human + rng.normal(0, 0.5, human.shape)},
        ids=[f"i{k}" for k in range(len(src))],
    )


@pytest.fixture(scope="module")
def campaign():
    return _build(["w" * length for length in LENGTHS[:20]] + ["v" * length for length in LENGTHS[20:]])


def _longest(k):
    """The k longest sources, ties: earlier item first (by hand, not through top_k)."""
    return sorted(range(N), key=lambda i: (-LENGTHS[i], i))[:k]


def _spa(campaign, indices):
    return evaluate_indices(full_reference(campaign, permutations=100), np.asarray(indices), measures=("spa",))["spa"]


def test_count_control_is_the_k_longest_sources(campaign):
    assert len(set(LENGTHS)) < N  # the fixture has ties
    utility = compute_utility(campaign, "length")
    assert list(bm.top_k(utility, 8)) == _longest(8)
    result = bm.run_benchmark(campaign, replace(PLAN, methods=["metric_avg"], metric="m"), progress=False)
    row = result.controls["length"]
    assert row["spa_by_prop"] == pytest.approx([_spa(campaign, _longest(8)), _spa(campaign, _longest(16))])
    low, high = row["parity_ci90"]
    assert low <= row["parity"] <= high and len(row["parity_by_prop"]) == 2
    assert result.controls_skipped == {} and result.signature["controls"] == ["length"]
    assert list(result.methods) == ["metric_avg"]  # the control is not a method row
    json.dumps(result.to_dict())


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
@pytest.mark.parametrize("objective", ["rank-length", "paper"])
def test_cost_control_is_the_knapsack_with_a_constant_utility(campaign, objective):
    """The control goes through the methods' knapsack with the same cost objective: under rank-length the most
    characters, under paper the most (shortest) items. Using another objective, or the length as the utility,
    gives other subsets, so this breaks if the control drifts from the methods' knapsack."""
    total = campaign.cost.sum()

    def subset(utility, cost_objective, prop):
        chosen = select_subset(
            utility,
            SubsetPlan(budget_cost=prop * total, allow_gap=True, time_limit=10.0, cost_objective=cost_objective),
            cost=campaign.cost,
            length=source_length(campaign.src),
        )
        return sorted(chosen.indices.tolist())

    ones, length = np.ones(N), source_length(campaign.src)
    other = "paper" if objective == "rank-length" else "rank-length"
    expected = [_spa(campaign, subset(ones, objective, p)) for p in PLAN.props]
    drifted = [_spa(campaign, subset(ones, other, p)) for p in PLAN.props]
    assert expected != pytest.approx(drifted)
    if objective == "paper":  # the length as the utility: the longest items instead of the most items
        assert expected != pytest.approx([_spa(campaign, subset(length, objective, p)) for p in PLAN.props])
    result = bm.run_benchmark(
        campaign,
        replace(PLAN, methods=["metric_avg"], metric="m", budget_unit="cost", cost_objective=objective),
        progress=False,
    )
    row = result.controls["length"]
    assert row["spa_by_prop"] == pytest.approx(expected)
    assert result.signature["cost_objective"] == objective
    # "length" as a method is the same row (the control is then not repeated)
    as_method = bm.run_benchmark(
        campaign, replace(PLAN, methods=["length"], budget_unit="cost", cost_objective=objective), progress=False
    )
    assert as_method.methods["length"]["spa_by_prop"] == row["spa_by_prop"]
    assert as_method.controls == {} and "benchmarked as a method" in as_method.controls_skipped["length"]


def test_knapsack_utility_is_constant_only_for_length_under_a_cost_budget():
    values = np.array([3.0, 1.0, 2.0])
    assert knapsack_utility("length", values, by_cost=True).tolist() == [1.0, 1.0, 1.0]
    assert knapsack_utility("length", values, by_cost=False) is values
    assert knapsack_utility("metric_avg", values, by_cost=True) is values


def test_table_and_figure_show_the_control(campaign, tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    result = bm.run_benchmark(campaign, replace(PLAN, methods=["metric_avg"], metric="m"), progress=False)
    table = bm.summary_table(result)
    lines = table.splitlines()
    first = [line.split()[0] for line in lines if line.split()[0] in ("random", "length", "metric_avg")]
    assert first == ["random", "length", "metric_avg"] and "length (control)" in table
    figures = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: figures.append(self) or save(self, *a, **k))
    bm.plot_benchmark(result, tmp_path / "b.png")
    (figure,) = figures
    for ax in figure.axes:
        labels = [text.get_text() for text in ax.get_legend().get_texts()]
        assert any(label.startswith("length (control)") for label in labels), labels
        line = next(line for line in ax.get_lines() if line.get_label().startswith("length (control)"))
        assert line.get_linestyle() == "-."


def test_controls_off_and_length_as_a_method(campaign):
    off = bm.run_benchmark(campaign, replace(PLAN, methods=["metric_avg"], metric="m", controls=False), progress=False)
    assert off.controls == {} == off.controls_skipped and off.signature["controls"] == []
    assert "(control)" not in bm.summary_table(off)
    both = bm.run_benchmark(campaign, replace(PLAN, methods=["length", "metric_avg"], metric="m"), progress=False)
    assert both.controls == {} and list(both.methods) == ["length", "metric_avg"]
    assert "length control: left out ('length' is benchmarked as a method)" in bm.summary_table(both)


def _result(best, length, *, p=0.01, length_p=0.01, gains=(0.02, 0.01)):
    null = {"orderings": 99}
    return {
        "signature": {},
        "methods": {
            "metric_avg": {
                "parity": best, "parity_ci90": [best - 0.05, best + 0.05], "spa_gain": gains[0], "p_value": p,
                "null": null,
            }
        },
        "controls": {"length": {"parity": length, "spa_gain": gains[1], "p_value": length_p, "null": null}},
    }  # fmt: skip


def test_recommendation_names_a_utility_that_adds_nothing_beyond_length():
    rec = bm.recommendation(_result(0.80, 0.78, gains=(0.01, 0.02)))
    assert rec["method"] == "metric_avg" and rec["length_parity"] == 0.78 and rec["length_p_value"] == 0.01
    assert rec["text"].startswith("metric_avg saves 20 % of the items: random's accuracy with 80 %")
    assert rec["text"].endswith(
        "; the length control alone does as well (needs 78 %, p = 0.010): the utility adds nothing beyond length here"
    )
    assert "length" not in bm.recommendation(_result(0.60, 0.78))["text"]  # the utility gains more than length
    rec = bm.recommendation(_result(1.10, 0.78, p=0.3))
    assert rec["method"] is None
    assert rec["text"].startswith("indistinguishable from random orderings (p = 0.300 against 99 random orderings)")
    assert rec["text"].endswith(
        "; source length does beat them: select by length (method 'length' needs 78 %, p = 0.010)"
    )
    rec = bm.recommendation(_result(0.70, 0.78, p=0.3, length_p=0.2))  # a parity below 100 % is not a saving alone
    assert rec["method"] is None and "saves" not in rec["text"] and "by length" not in rec["text"]
    assert bm.recommendation({**_result(0.8, 0.7), "controls": {}})["length_parity"] is None


@pytest.fixture
def data(tmp_path, campaign):
    path = tmp_path / "items.jsonl"
    write_jsonl(campaign, path)
    return path


def test_cli_benchmark_row_and_no_controls(data, tmp_path, capsys):
    cmd = ["benchmark", "--data", str(data), "--methods", "metric_avg", "--metric", "m", "--props", "0.2,0.4"]
    cmd += ["--seeds", "3", "--permutations", "50", "--no-oracle", "-o", str(tmp_path / "b.json")]
    assert main(cmd) == 0
    assert "length (control)" in capsys.readouterr().out
    assert list(json.loads((tmp_path / "b.json").read_text())["controls"]) == ["length"]
    assert main([*cmd, "--no-controls"]) == 0
    assert "(control)" not in capsys.readouterr().out
    written = json.loads((tmp_path / "b.json").read_text())
    assert written["controls"] == {} and written["signature"]["controls"] == []


def _subset_ids(path):
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_cli_select_method_length(data, campaign, tmp_path):
    out = tmp_path / "subset.jsonl"
    assert main(["select", "--data", str(data), "--method", "length", "--budget", "6", "-o", str(out)]) == 0
    assert _subset_ids(out) == [f"i{i}" for i in _longest(6)]
    seconds = item_seconds(campaign)  # every output of an item judged
    budget = float(0.3 * seconds.sum())
    assert (
        main(["select", "--data", str(data), "--method", "length", "--budget-cost", str(budget), "-o", str(out)]) == 0
    )
    expected = select_subset(
        np.ones(N),
        SubsetPlan(budget_cost=budget, time_limit=60.0),
        cost=seconds,
        length=source_length(campaign.src),
    )
    assert sorted(_subset_ids(out)) == sorted(f"i{i}" for i in expected.indices)
    assert {json.loads(line)["utility"] for line in out.read_text().splitlines()} == {1.0}  # what the knapsack got
    manifest = json.loads((tmp_path / "subset.manifest.json").read_text())
    assert manifest["method"] == "length" and manifest["parameters"]["cost_objective"] == "rank-length"


def test_cli_utilities_method_length(data, tmp_path):
    out = tmp_path / "u.jsonl"
    assert main(["utilities", "--data", str(data), "--method", "length", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines() if "utility" in json.loads(line)]
    assert [row["utility"] for row in rows] == [float(length) for length in LENGTHS]


def test_crowd_shows_the_length_control(campaign):
    result = run_crowd_benchmark(
        campaign, methods=["metric_avg"], crowd=1, runs=3, metric="m", props=[0.2, 0.4], seeds=2, permutations=50
    )
    row = result.controls["length"]
    assert {"spa", "spa_minus_random", "runs_above_random"} <= set(row)
    assert "length (control)" in crowd_table(result)
    off = run_crowd_benchmark(
        campaign,
        methods=["metric_avg"],
        crowd=1,
        runs=3,
        metric="m",
        props=[0.2, 0.4],
        seeds=2,
        permutations=50,
        controls=False,
    )
    assert off.controls == {} and "length" not in crowd_table(off)
