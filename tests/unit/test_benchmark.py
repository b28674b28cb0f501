"""Benchmark loop: props parsing, random baseline, parity search, JSON schema, CLI and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from precomet import benchmark as bm
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io import write_jsonl
from precomet.metaeval import evaluate_indices, full_reference
from precomet.record import frozen
from precomet.selection.units import budget_items
from precomet.simulate import simulate_campaign


@pytest.fixture(scope="module")
def campaign():
    return simulate_campaign(n_items=120, n_systems=5, seed=3)


def test_parse_props():
    assert bm.parse_props("0.05:0.5:0.05") == pytest.approx(list(bm.DEFAULT_PROPS))
    assert bm.parse_props("0.1, 0.25,1") == [0.1, 0.25, 1.0]
    for bad in ("0:0.5:0.1", "1.5", "0.1,-0.2", "abc", "0.1:0.5:0", ""):
        with pytest.raises(PrecometError):
            bm.parse_props(bad)


def test_budget_items_and_top_k():
    assert budget_items(0.05, 460) == 23 and budget_items(0.15, 460) == 69 and budget_items(0.3, 10) == 3
    assert list(bm.top_k(np.array([0.1, 0.5, 0.5, 0.9]), 3)) == [3, 1, 2]


def test_ci90_hand_computed():
    lo, hi = bm.ci90([1.0, 2.0, 3.0])
    half = stats.t.ppf(0.95, 2) * 1.0
    assert (lo, hi) == pytest.approx((2 - half, 2 + half))
    assert bm.ci90([0.5]) == (0.5, 0.5)


def test_parity_search_matches_linear_scan_on_monotone_curves():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(10, 300))
        curve = np.maximum.accumulate(rng.random(n + 1))  # non-decreasing SPA over positions 0..n
        curve[n] = 1.0
        target = float(rng.uniform(curve[2], 1.0))
        calls = []

        def spa_at(g, calls=calls, curve=curve):
            calls.append(g)
            return curve[g]

        expected = next(g for g in range(2, n + 1) if curve[g] >= target)
        assert bm.parity_search(spa_at, target, n_items=n, grid=16) == expected
        assert len(set(calls)) < 16 + 2 * np.log2(n) + 2


def test_parity_search_finds_first_coarse_crossing():
    # a dip after an early crossing: the coarse pass stops at the first coarse point that reaches the target
    curve = {g: (0.95 if 10 <= g < 20 else 0.9 if g < 60 else 1.0) for g in range(2, 101)}
    assert bm.parity_search(curve.__getitem__, 0.95, n_items=100, grid=100) == 10


def test_parity_searches_in_lockstep_equal_one_search_per_target():
    rng = np.random.default_rng(1)
    for _ in range(30):
        n = int(rng.integers(10, 300))
        curve = rng.random(n + 1)  # not monotone: the coarse crossing and the bisection path must be the same
        targets = [*rng.uniform(0.0, 1.0, 6), 2.0]  # 2.0 is never reached: capped at n
        batches = []

        def spa_of(positions, batches=batches, curve=curve):
            batches.append(positions)
            return [curve[g] for g in positions]

        expected = [bm.parity_search(curve.__getitem__, t, n_items=n, grid=16) for t in targets]
        assert bm.parity_searches(spa_of, targets, n_items=n, grid=16) == expected
        assert len(batches) <= 1 + np.ceil(np.log2(n))  # the coarse grid, then one call per bisection round
        # the coarse grid in two parts (up to `first`, the rest only when a target is beyond it): the same answers
        for first in (2, n // 3, n):
            assert bm.parity_searches(spa_of, targets, n_items=n, grid=16, first=first) == expected
        head = [int(g) for g in bm.coarse_grid(n, grid=16) if g <= n // 2]
        near = list(rng.uniform(0.0, max(curve[g] for g in head), 4))  # every one reached within the head
        batches.clear()
        found = bm.parity_searches(spa_of, near, n_items=n, grid=16, first=n // 2)
        assert found == [bm.parity_search(curve.__getitem__, t, n_items=n, grid=16) for t in near]
        assert max(max(batch) for batch in batches) <= n // 2  # nothing beyond the head was evaluated


def test_random_baseline_deterministic_and_sane(campaign):
    ref = full_reference(campaign, permutations=200)
    select = bm.make_selector(campaign)
    first = bm.random_baseline(ref, select, [0.1, 0.5], seeds=8, seed=1)
    assert first == bm.random_baseline(ref, select, [0.1, 0.5], seeds=8, seed=1)
    assert first != bm.random_baseline(ref, select, [0.1, 0.5], seeds=8, seed=2)
    assert len(first["spa_by_prop"]) == 2 and first["seeds"] == 8
    for (lo, hi), mean in zip(first["spa_ci90_by_prop"], first["spa_by_prop"]):
        assert lo <= mean <= hi
    assert first["spa_by_prop"][0] < first["spa_by_prop"][1] <= 1.0
    # one seed by hand
    utility = np.random.default_rng([1, 0]).random(len(campaign))
    one = bm.random_baseline(ref, select, [0.1], seeds=1, seed=1)
    assert one["spa"] == pytest.approx(evaluate_indices(ref, bm.top_k(utility, 12), measures=("spa",))["spa"])


def test_evaluate_props_unsorted_matches_subsets(campaign):
    ref = full_reference(campaign, permutations=200)
    utility = np.random.default_rng(5).random(len(campaign))
    got = bm.evaluate_props(ref, None, utility, [0.5, 0.1, 0.3])
    for prop, values in zip([0.5, 0.1, 0.3], got):
        assert values == evaluate_indices(
            ref, bm.top_k(utility, budget_items(prop, len(campaign))), measures=bm.BENCH_MEASURES
        )


def test_run_benchmark_schema_and_parity(campaign):
    human = campaign.score("human")
    oracle = np.abs(human - human.mean(axis=1, keepdims=True)).sum(axis=1)  # any fixed ranking will do
    result = bm.run_benchmark(
        campaign,
        bm.BenchmarkPlan(props=[0.1, 0.3, 0.5], seeds=10, permutations=200),
        external={"oracle": oracle, "flat": np.zeros(len(campaign))},
    )
    assert result.props == (0.1, 0.3, 0.5) and result.budgets == (12.0, 36.0, 60.0)  # frozen: tuples
    for key in (
        "spa",
        "spa_by_prop",
        "spa_ci90_by_prop",
        "clusters",
        "clusters_by_prop",
        "corr",
        "corr_by_prop",
        "seeds",
    ):
        assert key in result.random
    for name in ("oracle", "flat"):
        m = result.methods[name]
        assert m["spa"] == pytest.approx(np.mean(m["spa_by_prop"]))
        assert len(m["parity_by_prop"]) == 3 and m["parity"] == pytest.approx(np.mean(m["parity_by_prop"]))
        assert isinstance(m["seconds"], float)  # recorded, never asserted on (wall time)
    # "flat" keeps campaign order (stable ties): its SPA at 30 % is the first 36 items'
    ref = full_reference(campaign, permutations=200)

    def flat_spa(g):
        return evaluate_indices(ref, np.arange(g), measures=("spa",))["spa"]

    assert result.methods["flat"]["spa_by_prop"][1] == pytest.approx(flat_spa(36))
    # parity (Eq. 12) by hand: at each budget B, the parity budget C = parity · B is the first prefix whose SPA
    # reaches random's mean SPA at B (the prefix one item shorter does not)
    flat = result.methods["flat"]
    for budget, target, parity in zip((12, 36, 60), result.random["spa_by_prop"], flat["parity_by_prop"]):
        items = parity * budget
        assert items == pytest.approx(round(items)) and 2 <= round(items) <= 120
        assert flat_spa(round(items)) >= target
        assert round(items) == 2 or flat_spa(round(items) - 1) < target
    sig = result.signature
    assert sig["data_hash"] == campaign.data_hash() and sig["seeds"] == 10 and sig["methods"] == ["oracle", "flat"]
    json.dumps(result.to_dict())


def test_evaluate_method_is_run_benchmarks_row(campaign):
    """The public row evaluator, fed random's runs, gives exactly run_benchmark's row, ticking once per budget."""
    utility = np.random.default_rng(7).random(len(campaign))
    props = [0.1, 0.3, 0.5]
    result = bm.run_benchmark(
        campaign,
        bm.BenchmarkPlan(props=props, seeds=6, permutations=100, oracle=False, controls=False),
        external={"u": utility},
    )
    ref = full_reference(campaign, permutations=100)
    runs = bm.random_runs(ref, None, props, seeds=6)
    ticks = []
    row = bm.evaluate_method(
        ref, campaign, lambda k: utility, random_spa_runs=runs[:, :, 0], props=props, tick=lambda: ticks.append(1)
    )
    assert frozen(row) == {k: v for k, v in result.methods["u"].items() if k in row}
    judged = bm.verdict(row, result.null)  # the verdict against the run's own null of random orderings
    assert frozen(judged) == {k: v for k, v in result.methods["u"].items() if k != "seconds"}
    assert judged["null"]["orderings"] == result.null_orderings == bm.NULL_ORDERINGS
    assert len(ticks) == len(props)


def test_run_benchmark_bad_input(campaign):
    with pytest.raises(PrecometError, match=r"\(0, 1\]"):
        bm.run_benchmark(campaign, bm.BenchmarkPlan(props=[0.0, 0.5]), external={"x": np.zeros(len(campaign))})
    with pytest.raises(PrecometError, match="fewer than 2"):
        bm.run_benchmark(campaign, bm.BenchmarkPlan(props=[0.01]), external={"x": np.zeros(len(campaign))})
    with pytest.raises(PrecometError, match="at least 2 systems"):
        bm.run_benchmark(campaign.restrict_systems(campaign.systems[:1]), external={"x": np.zeros(len(campaign))})
    with pytest.raises(PrecometError, match="at least 2 items, got 1"):  # not "use larger proportions"
        bm.run_benchmark(campaign.take([0]), bm.BenchmarkPlan(props=[1.0]), external={"x": np.zeros(1)})
    with pytest.raises(PrecometError, match=r"proportion 0.02 holds [01] item"):  # 2 items: one document at most
        bm.run_benchmark(
            campaign, bm.BenchmarkPlan(props=[0.02, 0.5], level="doc"), external={"x": np.zeros(len(campaign))}
        )
    with pytest.raises(PrecometError, match="expected 120 utilities"):
        bm.run_benchmark(campaign, external={"x": np.zeros(5)})
    with pytest.raises(PrecometError, match="not finite"):
        bm.run_benchmark(campaign, external={"x": np.full(len(campaign), np.nan)})
    with pytest.raises(PrecometError, match="nothing to benchmark"):
        bm.run_benchmark(campaign)
    with pytest.raises(PrecometError, match="unknown method"):
        bm.run_benchmark(campaign, bm.BenchmarkPlan(methods=["no_such_method"], metric="MetricSim"))
    with pytest.raises(PrecometError, match="unknown level"):
        bm.make_selector(campaign, level="paragraph")


def _write_scores(path, ids, values):
    path.write_text("".join(json.dumps({"id": i, "utility": float(v)}) + "\n" for i, v in zip(ids, values)))


def test_cli_end_to_end(tmp_path, campaign):
    data = tmp_path / "campaign.jsonl"
    write_jsonl(campaign, data)
    scores = tmp_path / "pred.jsonl"
    _write_scores(scores, list(campaign.ids) + ["extra-id"], np.arange(len(campaign) + 1.0))
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    rc = main(
        [
            "benchmark",
            "--data",
            str(data),
            "--utility-file",
            f"pred={scores}",
            "--props",
            "0.2,0.5",
            "--seeds",
            "5",
            "--permutations",
            "100",
            "-o",
            str(out),
            "--plot",
            str(png),
        ]
    )
    assert rc == 0
    result = json.loads(out.read_text())
    assert list(result["methods"]) == ["pred"] and result["random"]["seeds"] == 5
    assert result["signature"]["scores_files"] == [f"pred={scores}"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_bad_input(tmp_path, campaign, capsys):
    data = tmp_path / "campaign.jsonl"
    write_jsonl(campaign, data)
    partial = tmp_path / "partial.jsonl"
    _write_scores(partial, campaign.ids[:100], np.zeros(100))
    base = ["benchmark", "--data", str(data), "-o", str(tmp_path / "o.json"), "--seeds", "2"]
    assert main(base + ["--utility-file", f"p={partial}"]) == 2
    assert "20 of 120 campaign id(s) have no utility" in capsys.readouterr().err
    assert main(base + ["--utility-file", f"p={partial}", "--props", "0.2:1.4:0.4"]) == 2
    assert "(0, 1]" in capsys.readouterr().err
    assert main(base + ["--utility-file", "nofile"]) == 2
    assert "NAME=FILE" in capsys.readouterr().err


def test_random_baseline_batched_equals_subset_by_subset(campaign):
    ref = full_reference(campaign, permutations=200)
    props = [0.3, 0.05, 0.5]  # unsorted; 30 seeds = two batches

    def plain_top_k(utility, prop):
        return bm.top_k(utility, budget_items(prop, len(campaign)))

    batched = bm.random_baseline(ref, None, props, seeds=30, seed=4)
    one_by_one = bm.random_baseline(ref, plain_top_k, props, seeds=30, seed=4)
    for key, value in batched.items():
        assert np.allclose(value, one_by_one[key], rtol=0, atol=1e-12), key


def test_cost_objective_changes_the_subsets_and_is_signed(campaign):
    """Under a cost budget each objective is its own knapsack: the subsets differ from the paper's and equal a
    direct select_subset call; the signature names the objective."""
    from precomet.campaign import source_length
    from precomet.selection import SubsetPlan, select_subset

    utility = campaign.score("MetricSim").mean(axis=1)
    chosen = {}
    for objective in ("rank-length", "paper"):
        select = bm.make_selector(campaign, budget_unit="cost", cost_objective=objective)
        chosen[objective] = sorted(select(utility, 0.2).tolist())
        direct = select_subset(
            utility,
            SubsetPlan(
                budget_cost=0.2 * campaign.cost.sum(), allow_gap=True, time_limit=10.0, cost_objective=objective
            ),
            cost=campaign.cost,
            length=source_length(campaign.src),
        )
        assert chosen[objective] == sorted(direct.indices.tolist())
    assert chosen["rank-length"] != chosen["paper"]
    result = bm.run_benchmark(
        campaign,
        bm.BenchmarkPlan(props=[0.2], seeds=2, permutations=50, budget_unit="cost", cost_objective="rank-cost"),
        external={"u": utility},
    )
    assert result.signature["cost_objective"] == "rank-cost"
    plain = bm.run_benchmark(campaign, bm.BenchmarkPlan(props=[0.2], seeds=2, permutations=50), external={"u": utility})
    assert plain.signature["cost_objective"] is None  # a count budget uses no cost objective


def test_cli_cost_options_need_a_cost_budget(tmp_path, campaign, capsys):
    data = tmp_path / "campaign.jsonl"
    write_jsonl(campaign, data)
    scores = tmp_path / "u.jsonl"
    _write_scores(scores, campaign.ids, np.arange(len(campaign), dtype=float))
    base = [
        "benchmark",
        "--data",
        str(data),
        "--utility-file",
        f"u={scores}",
        "-o",
        str(tmp_path / "o.json"),
        "--seeds",
        "2",
    ]
    assert main(base + ["--cost-objective", "paper"]) == 2
    assert "add --budget-unit cost" in capsys.readouterr().err and not (tmp_path / "o.json").exists()
    run = ["--cost-objective", "paper", "--props", "0.2", "--permutations", "50"]
    assert main(base + ["--budget-unit", "cost", *run]) == 0
    first = json.loads((tmp_path / "o.json").read_text())
    assert first["signature"]["cost_objective"] == "paper" and first["signature"]["budget_unit"] == "cost"
    (tmp_path / "o.json").unlink()
    with pytest.raises(SystemExit):  # 0.4's spelling was removed in 0.6.0
        main(base + ["--budget-cost", *run])
    assert "unrecognized arguments: --budget-cost" in capsys.readouterr().err


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
def test_cli_budget_time_gives_the_budgets_as_shares_of_the_annotation_time(tmp_path, campaign, capsys):
    data = tmp_path / "campaign.jsonl"
    write_jsonl(campaign, data)
    scores = tmp_path / "u.jsonl"
    _write_scores(scores, campaign.ids, np.arange(len(campaign), dtype=float))
    total = float(campaign.cost.sum()) * len(campaign.systems)  # every output judged, at its seconds per output
    base = ["benchmark", "--data", str(data), "--utility-file", f"u={scores}", "--seeds", "2", "--permutations", "50"]
    quarter = f"{total / 4:.6f}s"
    assert main([*base, "--budget-time", f"{quarter},{total / 120:.6f}m", "-o", str(tmp_path / "t.json")]) == 0
    timed = json.loads((tmp_path / "t.json").read_text())
    assert timed["signature"]["budget_unit"] == "cost"
    assert timed["props"] == pytest.approx([0.25, 0.5])
    assert main([*base, "--budget-unit", "cost", "--props", "0.25,0.5", "-o", str(tmp_path / "p.json")]) == 0
    shared = json.loads((tmp_path / "p.json").read_text())
    assert timed["methods"]["u"]["spa_by_prop"] == pytest.approx(shared["methods"]["u"]["spa_by_prop"])
    capsys.readouterr()
    for extra, says in (
        (["--budget-time", "1h", "--props", "0.2"], "drop --props"),
        (["--budget-time", "1h", "--budget-unit", "items"], "drop --budget-unit items"),
        (["--budget-time", f"{total * 2:.0f}s"], "not within the campaign's total annotation time"),
        (["--budget-time", "5"], "--budget-time: not a duration: '5' (give a unit"),
        (["--budget-time", "600s,10m"], "600s, 10m give the same budget twice"),
        (["--budget-time", "1s"], "--budget-time: 1s is"),
        (["--budget-time", "1h", "--crowd", "3"], ", --budget-time"),
    ):
        assert main([*base, *extra, "-o", str(tmp_path / "x.json")]) == 2
        assert says in capsys.readouterr().err and not (tmp_path / "x.json").exists()


def test_budget_dependent_external_is_asked_at_each_budget(campaign):
    human = campaign.score("human")
    fixed = np.abs(human - human.mean(axis=1, keepdims=True)).sum(axis=1)
    asked: list[int] = []

    def at(k: int) -> np.ndarray:
        asked.append(k)
        return fixed

    plan = bm.BenchmarkPlan(props=[0.1, 0.3], seeds=10, permutations=200, oracle=False)
    dynamic = bm.run_benchmark(campaign, plan, external={"m": at}).methods["m"]
    static = bm.run_benchmark(campaign, plan, external={"m": fixed}).methods["m"]
    assert {12, 36} <= set(asked) and len(set(asked)) > 2  # both budgets and the parity search's budgets
    assert dynamic["spa_by_prop"] == static["spa_by_prop"] and dynamic["parity"] == pytest.approx(static["parity"])
    with pytest.raises(PrecometError, match="expected 120 utilities"):
        bm.run_benchmark(campaign, plan, external={"bad": lambda k: np.zeros(3)})


def test_budget_unit_is_checked(campaign):
    with pytest.raises(PrecometError, match=r"unknown budget unit 'seconds'; valid: \['items', 'cost'\]") as err:
        bm.run_benchmark(
            campaign, bm.BenchmarkPlan(budget_unit="seconds"), external={"u": np.arange(len(campaign), dtype=float)}
        )
    assert err.value.param == "budget_unit"


def test_the_result_is_typed_immutable_and_writes_the_json_of_0_4(campaign):
    utility = np.arange(len(campaign), dtype=float)
    result = bm.run_benchmark(
        campaign, bm.BenchmarkPlan(props=[0.2], seeds=2, permutations=20, oracle=False), external={"u": utility}
    )
    assert isinstance(result, bm.BenchmarkResult) and result.n_items == len(campaign) and result.oracle is None
    as_json = json.loads(json.dumps(result.to_dict()))
    assert list(as_json) == [
        "campaign", "items", "systems", "props", "budgets", "random", "methods", "controls", "controls_skipped",
        "null_orderings", "null", "cost", "signature", "recommendation",
    ]  # fmt: skip
    assert as_json["items"] == result.n_items == len(campaign) and "oracle" not in as_json
    assert result.methods["u"] is result.methods["u"] and as_json["props"] == list(result.props) == [0.2]
    tagged = result.with_signature(data="campaign.jsonl")
    assert tagged.signature["data"] == "campaign.jsonl" and "data" not in result.signature
    with pytest.raises(AttributeError):
        result.props = [0.5]  # type: ignore[misc]
    with_oracle = bm.run_benchmark(
        campaign, bm.BenchmarkPlan(props=[0.2], seeds=2, permutations=20), external={"u": utility}
    )
    assert list(with_oracle.to_dict())[9] == "oracle" and with_oracle.oracle["usable"] is False
