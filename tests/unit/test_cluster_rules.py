"""The two cluster rules (metaeval.CLUSTER_RULES): Algorithm 1 ("paper") and mt-metrics-eval's AssignRanks ("wmt")
on hand-computed cases, on given p-value matrices against an AssignRanks oracle, batched, in rank (with missing
ratings), through the CLI options, and on the real WMT campaigns."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from precomet import metaeval as me
from precomet.campaign import HUMAN, Campaign
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.rank import rank_systems, ranking_table

# Three systems on 5 items. s1 − s0 = (−1, −2, −3, −4, +0.5) and s2 − s1 = (−4.5, −3.25, −2.75, +0.25, −1.5): one
# positive difference of the smallest magnitude each, R+ = 1, exact p = P(R+ ≤ 1) = 2/32. s2 − s0 = (−5.5, −5.25,
# −5.75, −3.75, −1): all negative, R+ = 0, p = 1/32. Algorithm 1 tests only the adjacent pairs (1/16, 1/16): one
# cluster; the WMT rule also tests s2 against s0, still in s2's cluster: 1/32 ≤ 0.05 opens a new one.
S0 = [10.0, 10.0, 10.0, 10.0, 10.0]
S1 = [9.0, 8.0, 7.0, 6.0, 10.5]
S2 = [4.5, 4.75, 4.25, 6.25, 9.0]
DIFFER = np.array([S0, S1, S2]).T


def _campaign(matrix) -> Campaign:
    matrix = np.asarray(matrix, dtype=float)
    n, s = matrix.shape
    return Campaign.build(
        ids=[f"i{i}" for i in range(n)],
        src=[f"src {i}" for i in range(n)],
        systems=[f"m{j}" for j in range(s)],
        scores={HUMAN: matrix},
    )


def _assign_ranks(sig: np.ndarray, pval: float) -> list[int]:
    """mt-metrics-eval's AssignRanks, restated: rank of each position of a matrix sorted best first."""
    ranks, rank, start = [], 1, 0
    for i in range(len(sig)):
        if any(sig[a, i] <= pval for a in range(start, i)):
            rank, start = rank + 1, i
        ranks.append(rank)
    return ranks


def _ranks_of(groups: list[list[int]], order) -> list[int]:
    rank = {s: r for r, members in enumerate(groups, start=1) for s in members}
    return [rank[int(s)] for s in order]


# --------------------------------------------------------------------------- hand-computed score matrices
def test_hand_computed_pvalues_of_the_differing_case():
    p = me.ordered_pvalues(DIFFER)
    np.testing.assert_allclose([p[0, 1], p[1, 2], p[0, 2]], [1 / 16, 1 / 16, 1 / 32])
    for a, b in ((0, 1), (1, 2), (0, 2)):
        assert p[a, b] == pytest.approx(stats.wilcoxon(DIFFER[:, b] - DIFFER[:, a], alternative="less").pvalue)
    assert (p[np.tril_indices(3)] == 1.0).all()


def test_rules_differ_when_a_system_is_worse_only_than_an_earlier_member():
    assert me.clusters(DIFFER) == [[0, 1, 2]]  # the default: Algorithm 1
    assert me.clusters(DIFFER, rule="paper") == [[0, 1, 2]]
    assert me.clusters(DIFFER, rule="wmt") == [[0, 1], [2]]
    # columns in another order: the clusters are about systems, not positions
    assert me.clusters(DIFFER[:, [2, 0, 1]], rule="wmt") == [[1, 2], [0]]


def test_rules_agree_when_every_adjacent_pair_is_significant_or_none_is():
    steps = np.array([S0, np.subtract(S0, 1), np.subtract(S0, 2)]).T  # diffs all −1: p = 1/32 for every pair
    assert me.clusters(steps, rule="paper") == me.clusters(steps, rule="wmt") == [[0], [1], [2]]
    close = np.array([S0, S1]).T  # one pair, p = 1/16
    assert me.clusters(close, rule="paper") == me.clusters(close, rule="wmt") == [[0, 1]]


def test_wmt_never_has_fewer_splits_than_algorithm_1():
    # the previous system is always a member of the current cluster, so every Algorithm 1 split is a WMT split
    rng = np.random.default_rng(0)
    differ = 0
    for _ in range(40):
        matrix = np.round(rng.normal(size=(25, 6)) + np.linspace(0, 1.2, 6), 1)
        paper, wmt = me.clusters(matrix, rule="paper"), me.clusters(matrix, rule="wmt")
        starts = [{members[0] for members in groups} for groups in (paper, wmt)]
        assert starts[0] <= starts[1]
        differ += len(wmt) > len(paper)
    assert differ > 0  # the rules are not the same rule on these matrices


def test_unknown_rule_is_refused():
    with pytest.raises(PrecometError, match="unknown cluster rule 'wmt24'; valid: paper, wmt"):
        me.clusters(DIFFER, rule="wmt24")
    with pytest.raises(PrecometError, match="unknown cluster rule"):
        me.full_reference(_campaign(DIFFER), cluster_rule="WMT")


# --------------------------------------------------------------------------- the pure grouping functions
def test_wmt_grouping_tests_every_member_of_the_current_cluster_only():
    p = np.ones((4, 4))
    p[1, 3] = 0.01  # position 3 is worse than position 1, a member that is neither first nor previous
    assert me.split_clusters_wmt([7, 5, 6, 4], p) == [[7, 5, 6], [4]]
    np.testing.assert_allclose(me.wmt_cluster_pvalues(p), [1.0, 1.0, 0.01])
    q = np.ones((4, 4))
    q[0, 2] = q[0, 3] = q[1, 3] = 0.01  # 2 opens a cluster; 3 is then tested against 2 alone
    assert me.split_clusters_wmt([0, 1, 2, 3], q) == [[0, 1], [2, 3]]
    np.testing.assert_allclose(me.wmt_cluster_pvalues(q), [1.0, 0.01, 1.0])
    # only the upper triangle is read
    assert me.split_clusters_wmt([0, 1, 2, 3], np.triu(q) + np.tril(np.zeros((4, 4)), -1)) == [[0, 1], [2, 3]]


def test_threshold_at_alpha_as_each_source_has_it():
    # Algorithm 1: p < alpha opens a cluster; AssignRanks: p <= alpha
    assert me.split_clusters([0, 1], [0.05]) == [[0, 1]]
    p = np.ones((2, 2))
    p[0, 1] = 0.05
    assert me.split_clusters_wmt([0, 1], p) == [[0], [1]]
    assert me.split_clusters_wmt([0, 1], p, alpha=0.04) == [[0, 1]]


def test_wmt_grouping_equals_assign_ranks_on_random_matrices():
    rng = np.random.default_rng(1)
    for _ in range(200):
        s = int(rng.integers(2, 9))
        sig = np.triu(rng.choice([0.001, 0.03, 0.05, 0.2, 0.7], size=(s, s)), 1)
        order = rng.permutation(s)
        groups = me.split_clusters_wmt(order, sig)
        assert _ranks_of(groups, order) == _assign_ranks(sig, 0.05)
        assert [s for members in groups for s in members] == order.tolist()


# --------------------------------------------------------------------------- batched meta-evaluation
def test_batched_wmt_clusters_equal_the_scalar_function():
    rng = np.random.default_rng(2)
    matrix = np.round(rng.normal(size=(70, 6)) + np.linspace(0, 1.0, 6), 1)
    matrix[:, 5] = matrix[:, 4]  # identical systems
    campaign = _campaign(matrix)
    ref = me.full_reference(campaign, permutations=50, cluster_rule="wmt")
    assert ref.cluster_rule == "wmt" and ref.clusters == tuple(map(tuple, me.clusters(matrix, rule="wmt")))
    assert me.full_reference(campaign, permutations=50) is not ref  # cached per rule
    orders = [rng.permutation(70) for _ in range(12)]
    sizes = [6, 13, 30, 70]
    got = me.evaluate_orderings(ref, orders, sizes, measures=("clusters", "top1_dice"))
    counts = {"paper": 0, "wmt": 0}
    for b, order in enumerate(orders):
        for q, k in enumerate(sizes):
            sub = matrix[np.sort(order[:k])]
            found = me.clusters(sub, rule="wmt")
            assert got[b, q, 0] == len(found), (b, k)
            assert got[b, q, 1] == pytest.approx(me.dice(found[0], ref.clusters[0]))
            counts["wmt"] += len(found)
            counts["paper"] += len(me.clusters(sub))
    assert counts["wmt"] > counts["paper"]  # the option reaches the batch: the counts differ here


def test_evaluate_subset_weighted_and_cluster_count_follow_the_rule():
    campaign = _campaign(DIFFER)
    ids = list(campaign.ids)
    assert me.cluster_count(campaign) == 1 and me.cluster_count(campaign, rule="wmt") == 2
    assert me.evaluate_subset(campaign, ids, permutations=32, measures=("clusters",))["clusters"] == 1
    wmt = me.evaluate_subset(campaign, ids, permutations=32, measures=("clusters",), cluster_rule="wmt")
    assert wmt["clusters"] == 2
    ref = me.full_reference(campaign, permutations=32, cluster_rule="wmt")
    assert me.evaluate_weighted(ref, np.arange(5), np.ones(5))["clusters"] == 2


# --------------------------------------------------------------------------- rank
def test_rank_defaults_to_wmt_and_records_the_rule():
    campaign = _campaign(DIFFER)
    wmt = rank_systems(campaign, rounds=20)
    paper = rank_systems(campaign, rounds=20, cluster_rule="paper")
    assert wmt.clusters == (("m0", "m1"), ("m2",)) and paper.clusters == (("m0", "m1", "m2"),)
    np.testing.assert_allclose(wmt.adjacent_pvalues, [1 / 16, 1 / 16])
    np.testing.assert_allclose(paper.adjacent_pvalues, [1 / 16, 1 / 16])
    np.testing.assert_allclose(wmt.cluster_pvalues, [1 / 16, 1 / 32])  # min over {m0, m1} for m2
    np.testing.assert_allclose(paper.cluster_pvalues, paper.adjacent_pvalues)
    assert wmt.rank_ranges() == ["1-2", "1-2", "3"]
    result = wmt.to_dict()
    assert result["cluster_rule"] == "wmt" and result["signature"]["cluster_rule"] == "wmt"
    assert "WMT rule" in result["signature"]["method"]
    assert [row["p_vs_cluster"] for row in result["systems"]] == [None, 1 / 16, 1 / 32]
    assert paper.to_dict()["signature"]["cluster_rule"] == "paper"
    assert "p(clus)" in ranking_table(wmt) and "p <= 0.05" in ranking_table(wmt)
    assert "p(prev)" in ranking_table(paper) and "Algorithm 1" in ranking_table(paper)
    with pytest.raises(PrecometError, match="unknown cluster rule"):
        rank_systems(campaign, cluster_rule="assign_ranks")


def test_rank_with_missing_ratings_tests_each_pair_on_its_common_items():
    # an extra item rated for m0 (0) and m2 (10) only: m2 − m0 gains +10, the largest |d| of 6, R+ = 6,
    # p = #{subsets of 1..6 with sum ≤ 6} / 64 = 14/64: m2 is no longer significantly worse than m0
    extra = np.vstack([DIFFER, [0.0, np.nan, 10.0]])
    ranking = rank_systems(_campaign(extra), rounds=20)
    assert ranking.signature["complete"] is False
    assert ranking.systems == ("m0", "m1", "m2")  # means 50/6, 40.5/5, 38.75/6
    assert ranking.clusters == (("m0", "m1", "m2"),)
    np.testing.assert_allclose(ranking.adjacent_pvalues, [1 / 16, 1 / 16])  # the pairs share items 0-4 only
    np.testing.assert_allclose(ranking.cluster_pvalues, [1 / 16, 1 / 16])  # min(m0: 14/64, m1: 1/16)
    assert stats.wilcoxon(extra[:, 2] - extra[:, 0], alternative="less").pvalue == pytest.approx(14 / 64)
    # the same item with m2 below m0 there: all 6 differences negative, p = 1/64, a new cluster
    below = np.vstack([DIFFER, [10.0, np.nan, 0.0]])
    ranking = rank_systems(_campaign(below), rounds=20)
    assert ranking.clusters == (("m0", "m1"), ("m2",))
    np.testing.assert_allclose(ranking.cluster_pvalues, [1 / 16, 1 / 64])


# --------------------------------------------------------------------------- CLI
def test_cli_rank_cluster_rule(tmp_path):
    from precomet.io.jsonl import write_jsonl

    data = tmp_path / "items.jsonl"
    write_jsonl(_campaign(DIFFER), data)
    out = {}
    for rule in (None, "paper", "wmt"):
        path = tmp_path / f"{rule}.json"
        assert (
            main(
                ["rank", "--data", str(data), "--rounds", "20", "-o", str(path)]
                + (["--cluster-rule", rule] if rule else [])
            )
            == 0
        )
        out[rule] = json.loads(path.read_text())
    assert out[None]["clusters"] == out["wmt"]["clusters"] == [["m0", "m1"], ["m2"]]
    assert out["paper"]["clusters"] == [["m0", "m1", "m2"]]
    assert out["paper"]["signature"]["cluster_rule"] == "paper" and out[None]["signature"]["cluster_rule"] == "wmt"


def test_run_benchmark_records_and_uses_the_rule():
    from precomet.benchmark import BenchmarkPlan, run_benchmark

    rng = np.random.default_rng(5)
    matrix = np.round(rng.normal(size=(60, 5)) + np.linspace(0, 1.0, 5), 1)
    campaign = _campaign(matrix)
    first = {"first": -np.arange(60.0)}  # top-k = the first k items
    plan = BenchmarkPlan(props=[0.5], seeds=3, permutations=20, oracle=False)
    paper = run_benchmark(campaign, plan, external=first, progress=False)
    wmt = run_benchmark(campaign, replace(plan, cluster_rule="wmt"), external=first, progress=False)
    assert paper.signature["cluster_rule"] == "paper" and wmt.signature["cluster_rule"] == "wmt"
    assert paper.methods["first"]["clusters"] == len(me.clusters(matrix[:30])) == 1
    assert wmt.methods["first"]["clusters"] == len(me.clusters(matrix[:30], rule="wmt")) == 3
    assert wmt.methods["first"]["spa"] == paper.methods["first"]["spa"]  # only the clusters change


def test_crowd_uses_and_records_the_rule(tmp_path):
    from precomet.cli import main as cli_main
    from precomet.io.jsonl import write_jsonl

    rng = np.random.default_rng(5)
    data = tmp_path / "items.jsonl"
    write_jsonl(_campaign(np.round(rng.normal(size=(60, 5)) + np.linspace(0, 1.0, 5), 1)), data)
    out = {}
    for rule in ("paper", "wmt"):
        path = tmp_path / f"{rule}.json"
        args = ["benchmark", "--data", str(data), "--methods", "random", "--crowd", "1", "--crowd-runs", "3"]
        assert cli_main([*args, "--seeds", "3", "--cluster-rule", rule, "-o", str(path)]) == 0
        out[rule] = json.loads(path.read_text())
    assert [out[r]["signature"]["cluster_rule"] for r in ("paper", "wmt")] == ["paper", "wmt"]
    assert out["wmt"]["random"]["spa"] == out["paper"]["random"]["spa"]  # only the clusters change
    assert out["wmt"]["random"]["clusters"] > out["paper"]["random"]["clusters"]


# --------------------------------------------------------------------------- real data
@pytest.mark.realdata
@pytest.mark.parametrize(
    ("name", "wmt", "paper"), [("wmt23/en-de", 7, 7), ("wmt23/zh-en", 10, 10), ("wmt22/zh-en", 7, 5)]
)
def test_full_data_mqm_cluster_counts(raw_data, name, wmt, paper):
    from precomet.io import load

    campaign = load(raw_data / "mt-metrics-eval-v2", campaign=name, human="mqm")
    assert me.cluster_count(campaign, rule="wmt") == wmt
    assert me.cluster_count(campaign, rule="paper") == paper
    assert len(rank_systems(campaign, rounds=10).clusters) == wmt  # rank's default


@pytest.mark.parametrize("missing", [0.0, 0.3])
def test_rank_tests_only_the_pairs_the_wmt_rule_reads(missing):
    """rank computes the WMT rule lazily (the open cluster's members only): same clusters and placing p-values as
    from every pair's p-value."""
    from precomet.rank import _cluster_tests, _pair_tests

    rng = np.random.default_rng(11)
    for trial in range(20):
        matrix = np.round(rng.normal(size=(40, 7)) + np.sort(rng.uniform(0, 1.5, 7))[::-1], 1)
        matrix[rng.random(matrix.shape) < missing] = np.nan
        order = rng.permutation(7)
        groups, adjacent, placed = _cluster_tests(matrix, order, rule="wmt", alpha=0.05, complete=missing == 0)
        better, worse = np.triu_indices(7, 1)
        every = np.ones((7, 7))
        every[better, worse] = _pair_tests(matrix, order[better], order[worse])
        assert groups == me.split_clusters_wmt(order, every), trial
        assert np.allclose(placed, me.wmt_cluster_pvalues(every)) and np.allclose(adjacent, np.diagonal(every, 1))
