"""One cost unit (issue 60): a campaign's cost is seconds per judgement of one output; an item costs that times the
outputs judged on it, and every command that speaks of time names the judgements it counts."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from precomet.campaign import Campaign
from precomet.cli import main
from precomet.costs import describe_time, item_seconds, judgements_per_item, per_output_cost
from precomet.errors import PrecometError
from precomet.io import load, write_jsonl
from precomet.simulate import simulate_campaign
from precomet.waves.plan import parse_wave_size, unit_sizes


def _campaign(**extra) -> Campaign:
    return Campaign.build(
        ids=["a", "b", "c"],
        src=["x" * 100, "y" * 20, "z" * 40],
        systems=["S1", "S2", "S3"],
        outputs={"S1": ["1", "2", "3"], "S2": ["1", None, "3"], "S3": ["1", "2", "3"]},
        **extra,
    )


def test_an_item_costs_its_seconds_per_output_times_the_outputs_judged_on_it():
    campaign = _campaign(cost=[10.0, 20.0, 30.0])
    assert campaign.judgements().tolist() == [3, 2, 3]  # b has no output of S2: nothing to judge there
    assert item_seconds(campaign).tolist() == [30.0, 40.0, 90.0]
    assert item_seconds(campaign, 5).tolist() == [50.0, 100.0, 150.0]
    scores_only = Campaign.build(src=["p", "q"], systems=["A", "B"], scores={"human": [[1, 2], [3, 4]]}, cost=[7, 8])
    assert item_seconds(scores_only).tolist() == [14.0, 16.0]  # no output texts: every system is judged


def test_sources_alone_need_the_number_of_outputs_to_be_judged():
    sources = Campaign.build(src=["p", "q"], systems=[], cost=[7.0, 8.0])
    with pytest.raises(PrecometError, match=r"outputs_per_item=N"):
        item_seconds(sources)
    assert item_seconds(sources, 4).tolist() == [28.0, 32.0]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="whole number >= 1"):
            judgements_per_item(sources, bad)


def test_a_per_item_cost_is_shared_among_the_items_outputs():
    per_item = _campaign(cost=[90.0, 40.0, 30.0])
    assert per_output_cost(per_item).cost.tolist() == [30.0, 20.0, 10.0]
    assert per_output_cost(per_item, 10).cost.tolist() == [9.0, 4.0, 3.0]


def test_the_printed_time_names_the_judgements_and_their_mean():
    assert describe_time(36_300, 1231) == "≈ 10 h 05 min of annotator time: 1,231 judgements of 29 s"
    assert describe_time(40, 1) == "≈ 40 s of annotator time: 1 judgement of 40 s"
    assert "judgements" in _campaign().summary() and "per judgement of one output" in _campaign().summary()


def test_a_wave_in_seconds_counts_every_drawn_cell_at_its_items_cost_per_output():
    cost = np.array([10.0, 20.0, 40.0])
    open_cells = np.ones((3, 4), dtype=bool)
    q = np.full(4, 0.5)  # half of each item's 4 cells expected
    _, sizes = unit_sizes(np.arange(3), open_cells, q, cost, "seconds")
    assert sizes.tolist() == [20.0, 40.0, 80.0]
    assert parse_wave_size("2h").amount == 7200


def _write(campaign: Campaign, path) -> str:
    write_jsonl(campaign, path)
    return str(path)


def test_select_budget_time_buys_judgements_of_every_output(tmp_path, capsys):
    campaign = simulate_campaign(n_items=60, n_systems=5, seed=3)
    data = _write(campaign, tmp_path / "c.jsonl")
    out = tmp_path / "s.jsonl"
    argv = ["select", "--data", data, "--method", "metric_var", "--metric", "MetricSim", "--budget-time", "30m"]
    assert main([*argv, "-o", str(out)]) == 0
    said = capsys.readouterr().out
    chosen = campaign.index_of(json.loads(line)["id"] for line in out.read_text().splitlines())
    spent = float(campaign.cost[chosen].sum()) * 5
    assert spent <= 1800 and spent + float(campaign.cost.max()) * 5 > 1800  # 30 min within one item
    assert f"{len(chosen) * 5:,} judgements of" in said and "of annotator time" in said


def test_an_appraise_batch_says_what_its_quality_control_adds_to_the_time(tmp_path, capsys):
    campaign = simulate_campaign(n_items=60, n_systems=5, seed=3)
    data = _write(campaign, tmp_path / "c.jsonl")
    batch = tmp_path / "b.json"
    argv = ["select", "--data", data, "--method", "metric_var", "--metric", "MetricSim", "--budget", "20"]
    assert main([*argv, "--batch", str(batch), "--batch-format", "appraise"]) == 0
    controls = sum(item["itemType"] == "BAD" for task in json.loads(batch.read_text()) for item in task["items"])
    assert controls > 0
    assert f"+ {controls:,} quality-control judgements (BAD items)" in capsys.readouterr().out


def test_sources_only_select_asks_for_the_outputs_to_judge_under_a_time_budget(tmp_path, capsys):
    sources = tmp_path / "src.txt"
    sources.write_text("".join(f"source sentence number {i}\n" for i in range(30)), encoding="utf-8")
    utilities = tmp_path / "u.jsonl"
    utilities.write_text("".join(json.dumps({"id": str(i + 1), "utility": float(i)}) + "\n" for i in range(30)))
    argv = ["select", "--data", str(sources), "--utility-file", str(utilities), "--budget-time", "10m"]
    assert main([*argv, "-o", str(tmp_path / "a.jsonl")]) == 2
    assert "--outputs-per-item N" in capsys.readouterr().err
    assert main([*argv, "--outputs-per-item", "4", "-o", str(tmp_path / "b.jsonl")]) == 0
    assert "judgements of" in capsys.readouterr().out


def test_cost_per_item_is_said_by_one_option_and_divided_among_the_outputs(tmp_path, capsys):
    campaign = simulate_campaign(n_items=30, n_systems=3, seed=1)
    per_item = campaign.with_cost(np.full(len(campaign), 90.0))
    data = _write(per_item, tmp_path / "c.jsonl")
    argv = ["select", "--data", data, "--method", "metric_var", "--metric", "MetricSim", "--budget", "4"]
    assert main([*argv, "--cost-per", "item", "-o", str(tmp_path / "a.jsonl")]) == 0
    assert "cost 360 of 2,700 (12 judgements)" in capsys.readouterr().out  # 30 s per output, 3 outputs an item
    assert main([*argv, "-o", str(tmp_path / "b.jsonl")]) == 0
    assert "cost 1,080 of 8,100 (12 judgements)" in capsys.readouterr().out
    estimated = _write(campaign, tmp_path / "e.jsonl")
    argv[2] = estimated
    assert main([*argv, "--cost-per", "item", "-o", str(tmp_path / "c.jsonl")]) == 2
    assert "gives no cost field of its own" in capsys.readouterr().err


@pytest.mark.realdata
def test_select_ten_hours_on_wmt23_en_de_mqm_is_ten_hours_of_twelve_systems_judgements(raw_data, tmp_path, capsys):
    campaign = load(raw_data / "mt-metrics-eval-v2", campaign="wmt23/en-de", human="mqm")
    out = tmp_path / "t.jsonl"
    argv = ["select", "--data", str(raw_data / "mt-metrics-eval-v2"), "--campaign", "wmt23/en-de", "--human", "mqm"]
    argv += ["--method", "metric_var", "--metric", "MetricX-23-c", "--budget-time", "10h", "-o", str(out)]
    assert main(argv) == 0
    chosen = campaign.index_of(json.loads(line)["id"] for line in out.read_text().splitlines())
    seconds = item_seconds(campaign)
    assert len(campaign.systems) == 12 and (campaign.judgements() == 12).all()
    assert 36_000 - seconds.max() < seconds[chosen].sum() <= 36_000
    assert f"{len(chosen) * 12:,} judgements of" in capsys.readouterr().out


def test_a_pool_of_sources_alone_has_no_annotator_time_to_size_a_wave_by(tmp_path, capsys):
    sources = tmp_path / "src.txt"
    sources.write_text("".join(f"source sentence number {i}\n" for i in range(50)), encoding="utf-8")
    assert main(["waves", "--data", str(sources), "--size", "30m", "--batch", str(tmp_path / "w.jsonl")]) == 2
    assert "holds sources without system outputs" in capsys.readouterr().err and not (tmp_path / "w.jsonl").exists()
    given = tmp_path / "given.jsonl"
    given.write_text("".join(json.dumps({"id": str(i), "src": f"s {i}", "cost": 60}) + "\n" for i in range(20)))
    assert main(["waves", "--data", str(given), "--cost-per", "item", "--batch", str(tmp_path / "v.jsonl")]) == 2
    assert "no system outputs to share each item's cost among" in capsys.readouterr().err


def test_every_command_that_speaks_of_time_names_the_unit(tmp_path, capsys):
    """select, benchmark, waves and waves replay: a time without its judgements fails here."""
    campaign = simulate_campaign(n_items=40, n_systems=4, seed=2)
    data = _write(campaign, tmp_path / "c.jsonl")
    base = ["--data", data]
    runs = {
        "select": ["select", *base, "--method", "metric_var", "--metric", "MetricSim", "--budget-time", "20m"],
        "benchmark": ["benchmark", *base, "--method", "metric_var", "--metric", "MetricSim", "--budget-time", "20m"]
        + ["--seeds", "2", "--permutations", "20", "-o", str(tmp_path / "b.json")],
        "waves": ["waves", *base, "--chooser", "random", "--size", "20m", "--batch", str(tmp_path / "w.jsonl")],
        "replay": ["waves", "replay", *base, "--chooser", "random", "--size", "20%", "--runs", "2"],
    }
    runs["select"] += ["-o", str(tmp_path / "s.jsonl")]
    for name, argv in runs.items():
        assert main(argv) == 0, name
        said = capsys.readouterr()
        text = said.out + said.err
        assert "annotator time" in text, (name, text)
        assert re.search(r"[0-9,]+ judgements", text), (name, text)  # the count, not only the word
