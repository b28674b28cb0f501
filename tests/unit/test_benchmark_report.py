"""benchmark's answer in the user's units and in words that match the evidence: recommendation, p-value, parity
interval, cost lines, circular guard, optional -o."""

from __future__ import annotations

import json
from dataclasses import replace

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


PLAN = bm.BenchmarkPlan(props=[0.1, 0.2, 0.3, 0.4, 0.5], seeds=20, permutations=200, oracle=False)


def test_recommendation_names_the_method_that_beats_random(campaign):
    good = _informative(campaign)
    result = bm.run_benchmark(campaign, PLAN, external={"good": good, "bad": 1 - good}, progress=False)
    rec = result.recommendation
    assert rec["method"] == "good" and rec["unit"] == "items"
    assert result.methods["good"]["parity"] < 1 < result.methods["bad"]["parity"]
    assert rec["p_value"] == result.methods["good"]["p_value"] < bm.SIGNIFICANCE
    assert rec["text"].startswith(
        f"good saves {100 - round(100 * rec['parity'])} % of the items: random's accuracy with"
        f" {100 * rec['parity']:.0f} % (90 % interval"
    )
    assert f"p = {rec['p_value']:.3f} against {bm.NULL_ORDERINGS} random orderings" in rec["text"]
    assert json.loads(json.dumps(result.to_dict()))["recommendation"] == result.to_dict()["recommendation"]
    assert "recommendation: good saves" in bm.summary_table(result)


def test_recommendation_when_no_method_beats_random_orderings(campaign):
    bad = 1 - _informative(campaign)
    result = bm.run_benchmark(campaign, PLAN, external={"bad": bad}, progress=False)
    rec = result.recommendation
    assert rec["method"] is None and rec["parity"] > 1 and rec["p_value"] > 0.5
    assert rec["text"].startswith("indistinguishable from random orderings (p = ")
    assert "annotate a random sample (bad needs" in rec["text"]
    null = result.methods["bad"]["null"]  # the parity is set beside what luck alone gives
    band = f"random orderings alone reach {100 * null['parity_p05']:.0f} %–{100 * null['parity_p95']:.0f} %)"
    assert rec["text"].endswith(band)
    # the "random" utility method is a random sample, never the advice
    result = bm.run_benchmark(campaign, replace(PLAN, methods=["random"]), progress=False)
    assert result.recommendation["method"] is None


def test_a_lucky_random_ordering_below_100_percent_is_not_called_a_saving(campaign):
    """Among random utilities, one whose parity is below 100 % by luck but whose p-value is not below 0.05 gets
    "indistinguishable" — the words follow the p-value, not the point value of parity."""
    lucky = None
    for seed in range(40):
        utility = np.random.default_rng([seed, 5]).random(len(campaign))
        result = bm.run_benchmark(campaign, PLAN, external={"noise": utility}, progress=False)
        row = result.methods["noise"]
        if row["parity"] < 1 and row["p_value"] >= bm.SIGNIFICANCE:
            lucky = result
            break
    assert lucky is not None, "no random utility with a parity below 100 % in 40 draws"
    assert lucky.recommendation["method"] is None
    assert "saves" not in lucky.recommendation["text"]
    assert lucky.recommendation["text"].startswith("indistinguishable from random orderings")


def test_recommendation_without_a_null_claims_no_saving(campaign):
    good = _informative(campaign)
    result = bm.run_benchmark(campaign, replace(PLAN, null_orderings=0), external={"good": good}, progress=False)
    row = result.methods["good"]
    assert row["p_value"] is None and row["parity_ci90"] is None and row["null"] is None
    assert result.null_orderings == 0 and "null" not in result.to_dict()
    assert result.recommendation["method"] is None
    assert "no saving is claimed" in result.recommendation["text"]
    table = bm.summary_table(result)
    assert "no null of random orderings" in table
    with pytest.raises(PrecometError, match="whole number ≥ 0") as err:
        bm.run_benchmark(campaign, replace(PLAN, null_orderings=-1), external={"good": good}, progress=False)
    assert err.value.params == ("null_orderings",)


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
def test_recommendation_under_a_cost_budget_speaks_of_time(campaign):
    good = _informative(campaign)
    result = bm.run_benchmark(
        campaign, replace(PLAN, budget_unit="cost", time_limit=5), external={"good": good}, progress=False
    )
    rec = result.recommendation
    assert rec["method"] == "good" and rec["unit"] == "annotation time"
    assert "of the annotation time" in rec["text"] and "min per hour of random annotation" in rec["text"]
    assert result.cost == {
        "total_seconds": pytest.approx(campaign.cost.sum() * len(campaign.systems)),
        "judgements": len(campaign) * len(campaign.systems),
        "source": "estimated from source length",
    }
    table = bm.summary_table(result)
    assert "annotation cost: " in table and "(estimated from source length)" in table and " min" in table


def test_parity_interval_is_the_parity_with_the_null_luck_taken_out(campaign):
    good = _informative(campaign)
    result = bm.run_benchmark(
        campaign, PLAN, external={"good": good, "bad": 1 - good, "flat": np.zeros(80)}, progress=False
    )
    null = np.asarray(result.null["parity"])
    p05, p95 = np.percentile(null, [5, 95])
    for name, row in result.methods.items():
        low, high = row["parity_ci90"]
        assert low == pytest.approx(max(0.0, row["parity"] - (p95 - 1))), name
        assert high == pytest.approx(row["parity"] - (p05 - 1)), name
        assert row["null"]["parity_p05"] == pytest.approx(p05) and row["null"]["parity_p95"] == pytest.approx(p95)
    # the same run reproduces the null; another seed draws other orderings
    again = bm.run_benchmark(campaign, PLAN, external={"good": good}, progress=False)
    assert again.null["parity"] == result.null["parity"]
    other = bm.run_benchmark(campaign, replace(PLAN, seed=1), external={"good": good}, progress=False)
    assert other.null["parity"] != result.null["parity"]


def test_circular_guard(campaign):
    with pytest.raises(PrecometError, match="circular evaluation.*allow_circular=True"):
        bm.run_benchmark(campaign, replace(PLAN, methods=["metric_var"], metric="human"), progress=False)
    allowed = bm.run_benchmark(
        campaign, replace(PLAN, methods=["metric_var"], metric="human", allow_circular=True), progress=False
    )
    assert allowed.signature["allow_circular"] is True and allowed.signature["circular"] is True
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


def test_cli_output_and_the_removed_json_spelling(data, tmp_path, capsys):
    cmd = ["benchmark", "--data", str(data), "--methods", "metric_avg", "--metric", "m", *BASE]
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    assert main([*cmd, "-o", str(new)]) == 0
    assert f"wrote {new}" in capsys.readouterr().out
    again = tmp_path / "again.json"
    assert main([*cmd, "--output", str(again)]) == 0
    first, second = json.loads(new.read_text()), json.loads(again.read_text())
    for row in (first, second):
        del row["methods"]["metric_avg"]["seconds"]  # wall time
    assert first["methods"] == second["methods"] and first["recommendation"] == second["recommendation"]
    with pytest.raises(SystemExit):  # --json was removed in 0.6.0
        main([*cmd, "--json", str(old)])
    assert "unrecognized arguments: --json" in capsys.readouterr().err and not old.exists()


def test_paths_lists_output_and_plot(data, tmp_path):
    from precomet.cli import build_parser
    from precomet.commands import benchmark as command

    args = build_parser().parse_args(
        ["benchmark", "--data", str(data), "--methods", "metric_avg", "-o", "o.json", "--plot", "p.png"]
    )
    assert [str(p) for p in command.paths(args).outputs if p] == ["o.json", "p.png"]


def test_cli_json_contract_of_the_null(data, tmp_path, capsys):
    """Other tools read it: every row of methods and controls has p_value in (0, 1] and the null's band; the top
    level has null_orderings. --null-orderings 0 switches the null off; a negative count is refused."""
    out = tmp_path / "b.json"
    cmd = ["benchmark", "--data", str(data), "--methods", "metric_avg", "--metric", "m", *BASE, "-o", str(out)]
    assert main([*cmd, "--null-orderings", "50"]) == 0
    table = capsys.readouterr().out
    written = json.loads(out.read_text())
    assert written["null_orderings"] == 50 and len(written["null"]["parity"]) == 50
    rows = [*written["methods"].values(), *written["controls"].values()]
    assert len(rows) == 2
    for row in rows:
        assert 0 < row["p_value"] <= 1 and isinstance(row["p_value"], float)
        assert set(row["null"]) >= {"orderings", "parity_median", "parity_p05", "parity_p95"}
        assert row["null"]["orderings"] == 50
        assert row["null"]["parity_p05"] <= row["null"]["parity_median"] <= row["null"]["parity_p95"]
    assert "null: 50 random orderings scored like a method" in table
    assert written["signature"]["null_orderings"] == 50
    assert main([*cmd, "--null-orderings", "0"]) == 0
    assert "no null of random orderings" in capsys.readouterr().out
    off = json.loads(out.read_text())
    assert off["null_orderings"] == 0 and off["methods"]["metric_avg"]["p_value"] is None
    with pytest.raises(SystemExit):
        main([*cmd, "--null-orderings", "-1"])
    assert "--null-orderings" in capsys.readouterr().err


def test_the_null_default_in_help_is_the_librarys_and_costs_no_import():
    import subprocess
    import sys

    from precomet.commands import benchmark as command

    assert command.NULL_ORDERINGS_HELP == bm.NULL_ORDERINGS
    code = "import sys, precomet.commands.benchmark; print('precomet.benchmark' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"
