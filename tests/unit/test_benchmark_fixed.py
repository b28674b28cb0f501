"""``benchmark --subset``: one fixed subset judged against random subsets of its size or cost."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precomet.benchmark.fixed import judge_subset
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io.jsonl import write_jsonl
from precomet.simulate import simulate_campaign


@pytest.fixture(scope="module")
def campaign():
    return simulate_campaign(n_items=120, n_systems=6, seed=4)


def _by_agreement(campaign):
    """Items ordered from the one whose system order most agrees with the full data's to the one least."""
    human = campaign.score("human")
    full = human.mean(axis=0)
    agreement = [np.corrcoef(row, full)[0, 1] for row in human]
    return np.argsort(agreement)[::-1]


def test_a_subset_that_agrees_with_the_full_data_beats_random_subsets_and_its_opposite_loses(campaign):
    order = _by_agreement(campaign)
    best = judge_subset(campaign, order[:20], n_random=200, permutations=200)
    worst = judge_subset(campaign, order[-20:], n_random=200, permutations=200)
    assert best.verdict == "better" and best.p_value["spa"] < 0.05 and best.percentile["spa"] > 95
    assert worst.verdict == "worse" and worst.p_worse["spa"] < 0.05 and worst.percentile["spa"] < 5
    assert set(best.random_sizes.tolist()) == {20} and best.n_subset == 20 and best.n_items == len(campaign)
    record = best.to_dict()
    assert record["verdict"] == "better" and record["random"]["spa"]["ci90"][0] <= record["random"]["spa"]["mean"]


def test_random_subsets_of_the_same_cost_never_spend_more(campaign):
    picked = _by_agreement(campaign)[:15]
    judged = judge_subset(campaign, picked, match="cost", n_random=100, permutations=100)
    assert judged.subset_cost == pytest.approx(campaign.cost[picked].sum() * len(campaign.systems))
    assert judged.random_sizes.min() >= 2 and len(set(judged.random_sizes.tolist())) > 1  # sizes follow the cost
    with pytest.raises(PrecometError, match="at least 2 and fewer than all"):
        judge_subset(campaign, np.arange(len(campaign)))


def test_cli_judges_a_subset_written_by_select(campaign, tmp_path, capsys):
    write_jsonl(campaign, tmp_path / "c.jsonl")
    data = ["--data", str(tmp_path / "c.jsonl")]
    assert main(["select", *data, "--method", "random", "--budget", "30", "-o", str(tmp_path / "s.jsonl")]) == 0
    bench = [
        "benchmark",
        *data,
        "--subset",
        str(tmp_path / "s.jsonl"),
        "--null-orderings",
        "50",
        "--permutations",
        "50",
    ]
    assert main([*bench, "-o", str(tmp_path / "j.json"), "--plot", str(tmp_path / "j.png")]) == 0
    out = capsys.readouterr().out
    assert "subset s.jsonl: 30 of 120 rated items; against 50 random subsets of 30 items" in out
    result = json.loads((tmp_path / "j.json").read_text())
    assert result["n_subset"] == 30 and result["signature"]["tool"] == "precomet benchmark --subset"
    assert (tmp_path / "j.png").stat().st_size > 0
    assert "wrote " in out
    for extra, says in (
        (["--props", "0.2"], "drop --props"),
        (["--methods", "metric_var"], "drop --methods"),
    ):
        assert main([*bench, *extra]) == 2
        assert says in capsys.readouterr().err
    (tmp_path / "one.jsonl").write_text((tmp_path / "s.jsonl").read_text().splitlines()[0] + "\n")
    assert main([*bench[:3], "--subset", str(tmp_path / "one.jsonl")]) == 2
    assert f"--subset {tmp_path / 'one.jsonl'}: 1 of the 120 rated items" in capsys.readouterr().err


def test_keep_incomplete_is_refused_by_name_when_items_are_unrated(tmp_path, capsys):
    from tests.bad_inputs import items, jsonl

    rows = items()
    del rows[2]["scores"]["A"]["human"]
    (tmp_path / "d.jsonl").write_text(jsonl(rows), encoding="utf-8")
    argv = ["benchmark", "--data", str(tmp_path / "d.jsonl"), "--keep-incomplete", "--metric", "m", "--seeds", "2"]
    assert main(argv) == 2
    assert "--keep-incomplete: a benchmark compares subsets on items rated by every system" in capsys.readouterr().err
