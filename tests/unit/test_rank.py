"""precomet.rank and ``precomet rank``: hand-computed means and clusters, bootstrap against a per-round reference
and against exact enumeration, seeded determinism, missing ratings, manifest, CLI JSON signature and figure."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy.stats import wilcoxon

from precomet.campaign import HUMAN, Campaign
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.metaeval import clusters
from precomet.rank import bootstrap_means, rank_systems, ranking_table, read_manifest, win_probabilities
from tests.conftest import FIXTURES


def _campaign(matrix, systems=None, name="t") -> Campaign:
    matrix = np.asarray(matrix, dtype=float)
    n, s = matrix.shape
    systems = systems or [f"m{j}" for j in range(s)]
    return Campaign.build(
        ids=[f"i{i}" for i in range(n)],
        src=[f"src {i}" for i in range(n)],
        systems=systems,
        scores={HUMAN: matrix},
        name=name,
    )


# --------------------------------------------------------------------------- hand-computed
def test_tiny_means_order_and_clusters_by_hand(tiny_campaign):
    # human: a 1 2 3 | b 4 4 4 | c 0 10 5 | d 3 1 2  -> means s1 2.0, s2 4.25, s3 3.5
    ranking = rank_systems(tiny_campaign, rounds=200)
    assert ranking.systems == ("s2", "s3", "s1")
    np.testing.assert_allclose(ranking.means, [4.25, 3.5, 2.0])
    # s3 - s2 = (1, 0, -5, 1): nonzero |d| ranks 1.5, 1.5, 3, R+ = 3, exact enumeration P(R+ <= 3) = 5/8
    # s1 - s3 = (-2, 0, -5, 1): ranks 2, 3, 1, R+ = 1, P(R+ <= 1) = 2/8
    np.testing.assert_allclose(ranking.adjacent_pvalues, [5 / 8, 2 / 8])
    assert ranking.clusters == (("s2", "s3", "s1"),)
    assert ranking.rank_ranges() == ["1-3"] * 3
    np.testing.assert_array_equal(ranking.n_rated, [4, 4, 4])


def test_clusters_split_and_match_metaeval():
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(60, 5)) + np.array([0.0, 0.05, 1.0, 1.1, 3.0])
    ranking = rank_systems(_campaign(matrix), rounds=100)
    expected = tuple(tuple(f"m{j}" for j in members) for members in clusters(matrix, rule="wmt"))  # rank's default
    assert ranking.clusters == expected
    assert [sorted(c) for c in ranking.clusters] == [["m4"], ["m2", "m3"], ["m0", "m1"]]
    assert ranking.rank_ranges() == ["1", "2-3", "2-3", "4-5", "4-5"]
    # the adjacent p-values are scipy's one-sided Wilcoxon
    order = [int(s[1:]) for s in ranking.systems]
    for i in range(4):
        p = wilcoxon(matrix[:, order[i + 1]] - matrix[:, order[i]], alternative="less").pvalue
        assert ranking.adjacent_pvalues[i] == pytest.approx(p, rel=1e-9)


def test_identical_systems_stay_together_and_win_half():
    col = np.arange(10.0)
    ranking = rank_systems(_campaign(np.c_[col, col, col - 5]), rounds=300)
    assert ranking.clusters[0] == ("m0", "m1")
    win = ranking.win_probability
    assert win[0, 1] == 0.5 and win[1, 0] == 0.5
    assert win[0, 2] == 1.0 and win[2, 0] == 0.0  # m2 is below on every item: every resample
    np.testing.assert_allclose(win + win.T, 1.0)


def test_constant_system_has_degenerate_interval():
    ranking = rank_systems(_campaign([[2.0, 1.0], [2.0, 3.0], [2.0, 0.0]]), rounds=50, confidence=0.9)
    i = ranking.systems.index("m0")
    assert ranking.ci_low[i] == ranking.ci_high[i] == 2.0


# --------------------------------------------------------------------------- bootstrap vs references
def test_bootstrap_equals_per_round_reference():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(7, 3))
    boot = bootstrap_means(matrix, rounds=40, seed=11)
    draws = np.random.default_rng(11).integers(0, 7, size=(40, 7))  # the documented stream (one chunk)
    np.testing.assert_allclose(boot, matrix[draws].mean(axis=1), rtol=1e-12, atol=1e-12)


def test_bootstrap_with_missing_equals_nanmean_reference():
    matrix = np.array([[1.0, np.nan], [2.0, 5.0], [np.nan, 1.0], [4.0, 2.0], [0.0, np.nan]])
    boot = bootstrap_means(matrix, rounds=60, seed=2)
    draws = np.random.default_rng(2).integers(0, 5, size=(60, 5))
    expected = np.array(
        [[np.nanmean(matrix[d, j]) if (~np.isnan(matrix[d, j])).any() else np.nan for j in range(2)] for d in draws]
    )
    np.testing.assert_allclose(boot, expected, rtol=1e-12)


def test_win_probability_matches_exact_enumeration():
    matrix = np.array([[3.0, 1.0, 2.0], [0.0, 2.0, 2.5], [2.0, 2.0, 0.0]])
    n = len(matrix)
    exact = np.zeros((3, 3))
    for draw in itertools.product(range(n), repeat=n):  # all 27 equally likely resamples
        means = matrix[list(draw)].mean(axis=0)
        exact += (means[:, None] > means[None, :]) + 0.5 * (means[:, None] == means[None, :])
    exact /= n**n
    win = win_probabilities(bootstrap_means(matrix, rounds=20000, seed=0))
    np.testing.assert_allclose(win, exact, atol=0.015)


def test_seeded_determinism():
    matrix = np.random.default_rng(1).normal(size=(30, 4))
    a = rank_systems(_campaign(matrix), rounds=200, seed=5)
    b = rank_systems(_campaign(matrix), rounds=200, seed=5)
    c = rank_systems(_campaign(matrix), rounds=200, seed=6)
    assert a.to_dict() == b.to_dict()
    assert not np.array_equal(a.ci_low, c.ci_low)
    np.testing.assert_array_equal(a.means, c.means)


def test_level_widens_interval():
    matrix = np.random.default_rng(2).normal(size=(40, 3))
    narrow = rank_systems(_campaign(matrix), rounds=500, confidence=0.5)
    wide = rank_systems(_campaign(matrix), rounds=500, confidence=0.99)
    assert np.all(wide.ci_high - wide.ci_low > narrow.ci_high - narrow.ci_low)
    assert np.all((narrow.ci_low <= narrow.means) & (narrow.means <= narrow.ci_high))


# --------------------------------------------------------------------------- missing ratings
def test_missing_ratings_each_system_over_its_own_items():
    matrix = np.array([[1.0, 2.0], [3.0, np.nan], [5.0, 6.0], [np.nan, np.nan]])
    ranking = rank_systems(_campaign(matrix), rounds=100)
    assert ranking.systems == ("m1", "m0")
    np.testing.assert_allclose(ranking.means, [4.0, 3.0])
    np.testing.assert_array_equal(ranking.n_rated, [2, 3])
    assert ranking.signature["items"] == 3 and ranking.signature["complete"] is False
    # the pair is tested on items 0 and 2 only: diffs m0 - m1 = (-1, -1), exact p = 1/4
    assert ranking.adjacent_pvalues[0] == pytest.approx(0.25)


def test_errors_name_the_problem():
    with pytest.raises(PrecometError, match="no 'human' rating"):
        rank_systems(_campaign([[1.0, np.nan], [2.0, np.nan]]))
    with pytest.raises(PrecometError, match="at least 2 systems"):
        rank_systems(_campaign([[1.0], [2.0]]))
    with pytest.raises(PrecometError, match="no score 'bleu'"):
        rank_systems(_campaign([[1.0, 2.0], [2.0, 1.0]]), score="bleu")
    with pytest.raises(PrecometError, match="confidence must lie in"):
        rank_systems(_campaign([[1.0, 2.0], [2.0, 1.0]]), confidence=95)


# --------------------------------------------------------------------------- output and CLI
def test_table_lists_every_system(tiny_campaign):
    table = ranking_table(rank_systems(tiny_campaign, rounds=50))
    assert all(s in table for s in ("s1", "s2", "s3")) and "95% CI" in table


def test_cli_json_signature_figure_and_manifest(tmp_path, capsys, tiny_campaign):
    from precomet.io.jsonl import write_jsonl

    data = tmp_path / "items.jsonl"
    write_jsonl(tiny_campaign, data)
    subset = tmp_path / "subset.jsonl"
    subset.write_text("".join(json.dumps({"id": i}) + "\n" for i in ("c", "a", "d")), encoding="utf-8")
    (tmp_path / "subset.manifest.json").write_text(
        json.dumps({"method": "metric_var", "parameters": {"proportion": 0.75}, "n_selected": 3, "data_hash": "abc"}),
        encoding="utf-8",
    )
    out, fig = tmp_path / "rank.json", tmp_path / "rank.png"
    code = main(
        [
            "rank",
            "--data",
            str(data),
            "--subset",
            str(subset),
            "--rounds",
            "100",
            "--seed",
            "3",
            "-o",
            str(out),
            "--plot",
            str(fig),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "s2" in printed and "wrote" in printed
    result = json.loads(out.read_text())
    sig = result["signature"]
    expected_hash = tiny_campaign.take_ids(["c", "a", "d"]).data_hash()
    assert sig["tool"] == "precomet rank" and sig["data_hash"] == expected_hash and sig["seed"] == 3
    assert sig["rounds"] == 100 and sig["confidence"] == 0.95 and sig["score"] == "human" and "precomet_version" in sig
    assert sig["manifest"]["method"] == "metric_var" and sig["manifest"]["n_selected"] == 3
    assert [row["system"] for row in result["systems"]] == ["s2", "s3", "s1"]  # c,a,d: s1 4/3, s2 13/3, s3 10/3
    assert result["systems"][0]["mean"] == pytest.approx(13 / 3)
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_keep_incomplete_and_bad_manifest(tmp_path, capsys):
    code = main(
        [
            "rank",
            "--data",
            str(FIXTURES / "tiny.csv"),
            "--keep-incomplete",
            "--rounds",
            "50",
            "-o",
            str(tmp_path / "r.json"),
        ]
    )
    assert code == 0
    rows = {r["system"]: r for r in json.loads((tmp_path / "r.json").read_text())["systems"]}
    assert rows["A"]["n_rated"] == 3 and rows["B"]["n_rated"] == 2
    assert rows["A"]["mean"] == pytest.approx(60.0) and rows["B"]["mean"] == pytest.approx(45.0)
    bad = tmp_path / "m.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    assert main(["rank", "--data", str(FIXTURES / "tiny.csv"), "--manifest", str(bad)]) == 2
    assert "not a precomet subset manifest" in capsys.readouterr().err


def test_read_manifest_records_hash(tmp_path):
    path = tmp_path / "x.manifest.json"
    path.write_text(json.dumps({"method": "random", "seed": 4}), encoding="utf-8")
    record = read_manifest(path)
    assert record["method"] == "random" and record["seed"] == 4 and len(record["sha256"]) == 16


@pytest.mark.parametrize(
    "column", [[5e-324, 5e-324], [5e-324, 1e-323, 5e-324], [5e-324, -0.0, 1e-323], [0.1 + 1e-12, 0.1 + 3e-12]]
)
def test_every_reported_mean_lies_in_its_own_interval_at_the_edge_of_float_precision(column):
    """Subnormal or near-equal scores: the mean (rounded to 10 decimals) fell outside [ci_low, ci_high]."""
    other = [0.5 + 0.01 * i for i in range(len(column))]
    ranking = rank_systems(_campaign(np.array([column, other]).T, systems=["A", "B"]), rounds=200)
    for mean, low, high in zip(ranking.means, ranking.ci_low, ranking.ci_high):
        assert low <= mean <= high
