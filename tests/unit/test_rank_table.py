"""``rank --table``: the ranking as CSV or LaTeX to paste."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from precomet.campaign import Campaign
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io.jsonl import write_jsonl
from precomet.rank import rank_systems
from precomet.rank.table_export import ranking_as_table, ranking_csv, ranking_latex


@pytest.fixture(scope="module")
def ranking():
    """Three clearly separated systems (three clusters), one name with LaTeX's special characters."""
    rng = np.random.default_rng(0)
    human = np.stack([rng.normal(3, 0.1, 60), rng.normal(2, 0.1, 60), rng.normal(1, 0.1, 60)], axis=1)
    campaign = Campaign.build(
        ids=[str(i) for i in range(60)],
        src=[f"source {i}" for i in range(60)],
        systems=["A_1 & co", "B%", "C"],
        scores={"human": human},
    )
    return campaign, rank_systems(campaign, rounds=50, seed=0)


def test_csv_has_one_row_per_system_in_ranking_order(ranking):
    _, result = ranking
    rows = list(csv.DictReader(io.StringIO(ranking_csv(result))))
    assert [row["system"] for row in rows] == ["A_1 & co", "B%", "C"]
    assert [row["cluster"] for row in rows] == ["1", "2", "3"]
    assert float(rows[0]["mean"]) == pytest.approx(result.means[0]) and rows[0]["n_rated"] == "60"
    assert float(rows[0]["ci_low"]) <= float(rows[0]["mean"]) <= float(rows[0]["ci_high"])


def test_latex_escapes_names_and_rules_between_clusters(ranking):
    _, result = ranking
    text = ranking_latex(result)
    assert r"A\_1 \& co" in text and r"B\%" in text and "A_1 &" not in text
    body = text.split(r"\midrule", 1)[1].split(r"\bottomrule")[0]
    assert body.count(r"\midrule") == 2  # three clusters
    assert r"\begin{tabular}{rlrc}" in text and "on 60 items" in text


def test_the_suffix_chooses_the_format_and_other_suffixes_are_refused(ranking, tmp_path, capsys):
    campaign, result = ranking
    assert ranking_as_table(result, "r.CSV").startswith("rank,cluster,system")
    with pytest.raises(PrecometError, match="give a .csv or .tex"):
        ranking_as_table(result, "r.xlsx")
    write_jsonl(campaign, tmp_path / "c.jsonl")
    rank = ["rank", "--data", str(tmp_path / "c.jsonl"), "--rounds", "50"]
    assert main([*rank, "--table", str(tmp_path / "r.tex")]) == 0
    assert (tmp_path / "r.tex").read_text().startswith(r"\begin{table}")
    assert main([*rank, "--table", str(tmp_path / "r.xlsx")]) == 2
    assert "--table" in capsys.readouterr().err and not (tmp_path / "r.xlsx").exists()


def test_the_figure_title_says_what_the_subset_is_a_subset_of(ranking):
    from precomet.rank.report import figure_title

    campaign, result = ranking
    assert figure_title(result).endswith(": 60 items, 3 significance clusters")
    subset = rank_systems(campaign.take(np.arange(30)), rounds=20, test_set=campaign)
    assert ": a subset of 30 of 60 items," in figure_title(subset)


def test_csv_names_that_a_spreadsheet_would_run_as_formulas_are_escaped():
    human = np.array([[3.0, 1.0], [3.1, 1.2], [2.9, 0.8]])
    campaign = Campaign.build(
        ids=["a", "b", "c"], src=["x", "y", "z"], systems=['=HYPERLINK("http://x")', "@cmd"], scores={"human": human}
    )
    rows = list(csv.DictReader(io.StringIO(ranking_csv(rank_systems(campaign, rounds=20)))))
    assert [row["system"] for row in rows] == ['\'=HYPERLINK("http://x")', "'@cmd"]
