"""Meta-evaluation measures: hand-computed p-values, brute-force and scipy oracles, order invariance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from precomet import metaeval as me
from precomet import significance
from precomet.campaign import HUMAN, Campaign
from precomet.errors import CampaignError, PrecometError


def _campaign(matrix, ids=None) -> Campaign:
    matrix = np.asarray(matrix, dtype=float)
    n, s = matrix.shape
    return Campaign.build(
        ids=ids, src=[f"source {i}" for i in range(n)], systems=[f"sys{j}" for j in range(s)], scores={HUMAN: matrix}
    )


def _all_sign_patterns(n: int) -> np.ndarray:
    return np.array(list(itertools.product([1, -1], repeat=n)), dtype=np.int8).T  # (n, 2**n)


def test_pvalues_hand_computed(tiny_campaign):
    # pair (s1, s2): d = [-1, 0, -10, 2], observed -9; 12 of the 16 sign patterns give a null sum >= -9
    signs = _all_sign_patterns(4)
    p = significance.pairwise_pvalues(tiny_campaign.score(HUMAN), signs)
    assert p[0] == pytest.approx(12 / 16)
    # pair (s2, s3): d = [-1, 0, 5, -1], observed 3: exactly the patterns that keep +5 reach it
    assert p[2] == pytest.approx(8 / 16)


def test_pvalues_match_brute_force_loop():
    rng = np.random.default_rng(1)
    scores = rng.integers(-5, 1, size=(25, 5)).astype(float)  # integer scores: many exact ties
    signs = significance.item_signs([str(i) for i in range(25)], permutations=200, seed=3)
    p = significance.pairwise_pvalues(scores, signs)
    for k, (a, b) in enumerate(zip(*significance.pair_indices(5))):
        d = scores[:, a] - scores[:, b]
        brute = np.mean([(signs[:, q] * d).sum() >= d.sum() for q in range(200)])
        assert p[k] == pytest.approx(brute)


def test_whole_number_scores_whose_sum_differences_pass_2_to_the_24_are_not_summed_in_float32():
    # column sums below 2**24, but x − y reaches 2**24 + 5: in float32 the flip of the second item (2**24 + 3) and
    # the observed difference round to the same 2**24 + 4, so the batched path counted it and the full set's own
    # SPA came out 0.72
    campaign = _campaign([[2.0**23 + 4, -(2.0**23)], [1.0, 0.0]])
    ref = me.full_reference(campaign, permutations=64)
    assert me.evaluate_orderings(ref, [[0, 1]], [2], measures=("spa",))[0, 0, 0] == 1.0
    assert significance.exact_float32(np.array([[2.0**22 - 1], [0.0]])) is not None  # 2 × 2**22 − 2 < 2**24
    assert significance.exact_float32(np.array([[2.0**23], [0.0]])) is None


@pytest.mark.parametrize("orders,systems,dtype", [(1, 2, np.float64), (8, 5, np.float32), (17, 12, np.float64)])
def test_batch_pvalues_equal_the_single_subset_counts(orders, systems, dtype):
    # buffers reused across rows and systems: a row count that is not a multiple of the pass height, two systems
    rng = np.random.default_rng(orders)
    partial = np.round(rng.normal(size=(orders, systems, 300)) * 4).astype(dtype)  # whole numbers: exact ties
    observed = np.round(rng.normal(size=(orders, systems)) * 4).astype(dtype)
    i, j = significance.pair_indices(systems)
    got = significance.batch_pvalues(partial, observed[:, i] - observed[:, j])
    for b in range(orders):
        expected = significance.pvalues_from_sums(partial[b].astype(float), observed[b].astype(float), 0.0, 300)
        assert np.array_equal(got[b], expected), b  # whole numbers: its 1e-9 tolerance changes no count


def test_spa_full_set_is_one_and_subset_order_irrelevant():
    rng = np.random.default_rng(2)
    campaign = _campaign(rng.normal(size=(60, 6)) + np.linspace(0, 0.6, 6))
    assert me.soft_pairwise_accuracy(campaign, campaign.ids) == 1.0
    subset = list(campaign.ids[rng.choice(60, 20, replace=False)])
    forward = me.soft_pairwise_accuracy(campaign, subset)
    assert me.soft_pairwise_accuracy(campaign, subset[::-1]) == forward
    assert me.soft_pairwise_accuracy(campaign, sorted(subset)) == forward
    assert 0.0 <= forward < 1.0
    # the campaign's own item order does not matter either: signs follow item ids
    order = rng.permutation(60)
    shuffled = campaign.take(order)
    assert me.soft_pairwise_accuracy(shuffled, subset) == pytest.approx(forward, abs=1e-12)


def test_spa_definition_against_pvalue_difference():
    rng = np.random.default_rng(3)
    campaign = _campaign(rng.normal(size=(40, 4)))
    ref = me.full_reference(campaign, permutations=300, seed=5)
    idx = np.arange(0, 40, 3)
    p_sub = significance.pairwise_pvalues(ref.matrix[idx], ref.signs[idx])
    assert me.spa_indices(ref, idx) == pytest.approx(1 - np.abs(p_sub - ref.pvalues).mean())


def test_item_signs_deterministic_balanced_and_per_id():
    ids = [f"item-{i}" for i in range(300)]
    signs = significance.item_signs(ids, permutations=1000, seed=0)
    assert signs.shape == (300, 1000) and signs.dtype == np.int8
    assert set(np.unique(signs)) == {-1, 1}
    assert abs(signs.mean()) < 0.01
    assert np.array_equal(significance.item_signs(ids[100:110], permutations=1000, seed=0), signs[100:110])
    assert not np.array_equal(significance.item_signs(ids, permutations=1000, seed=1), signs)
    # permutations are not trivially correlated across columns
    assert np.abs(np.corrcoef(signs[:, :50].T.astype(float))[np.triu_indices(50, 1)]).max() < 0.3


def test_identical_systems_stay_together_and_have_p_one():
    rng = np.random.default_rng(4)
    base = rng.normal(size=(80, 1))
    matrix = np.hstack([base + 2, base + 2, base - 2])  # sys0 == sys1, sys2 clearly worse
    campaign = _campaign(matrix)
    ref = me.full_reference(campaign)
    assert ref.pvalues[0] == 1.0
    assert me.clusters(matrix) == [[0, 1], [2]]
    assert me.cluster_count(campaign) == 2


def _clusters_reference(matrix: np.ndarray) -> list[list[int]]:
    """Algorithm 1 spelled out with scipy, one pair at a time (the peer's loop without the identical-system split)."""
    order = sorted(range(matrix.shape[1]), key=lambda j: -matrix[:, j].mean())
    result = [[order[0]]]
    for system in order[1:]:
        diff = matrix[:, system] - matrix[:, result[-1][-1]]
        p = 1.0 if not diff.any() else stats.wilcoxon(diff, alternative="less").pvalue
        result.append([system]) if p < 0.05 else result[-1].append(system)
    return result


@pytest.mark.parametrize("n", [8, 30, 51, 120])
def test_clusters_match_scipy_loop(n):
    rng = np.random.default_rng(n)
    for _ in range(5):
        matrix = np.round(rng.normal(size=(n, 7)) + np.linspace(0, 1.5, 7), 1)  # rounding creates ties
        assert me.clusters(matrix) == _clusters_reference(matrix)


def test_wilcoxon_less_matches_scipy_per_column():
    rng = np.random.default_rng(5)
    for n in (5, 9, 14, 30, 60):  # small n with ties/zeros: scipy's exact sign-flip enumeration
        diffs = np.round(rng.normal(size=(n, 4)) - 0.2, 0)
        diffs[:, 3] = rng.normal(size=n)  # no ties: scipy's exact distribution
        got = significance.wilcoxon_less(diffs)
        for k in range(4):
            assert got[k] == pytest.approx(stats.wilcoxon(diffs[:, k], alternative="less").pvalue, rel=1e-10)


def test_system_level_measures_against_scipy():
    rng = np.random.default_rng(6)
    for _ in range(20):
        x = np.round(rng.normal(size=8), 1)
        y = np.round(x + rng.normal(size=8), 1)
        y[:2] = y[2]  # ties
        assert me.kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y, variant="b").statistic)
        assert me.spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
        assert me.pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic)
    assert me.kendall_tau_b(np.ones(4), np.arange(4.0)) == 0.0
    assert me.dice([0, 1], [1, 2, 3]) == pytest.approx(2 / 5)


def test_evaluate_subset_hand_computed(tiny_campaign):
    # full means: s1 2.0, s2 4.25, s3 3.5; subset {a, d}: s1 2.0, s2 1.5, s3 2.5
    out = me.evaluate_subset(tiny_campaign, ["d", "a"])
    assert out["mae"] == pytest.approx((0 + 2.75 + 1.0) / 3)
    assert out["rmse"] == pytest.approx(np.sqrt((0 + 2.75**2 + 1.0) / 3))
    assert out["top1"] == 0.0  # s3 tops the subset, s2 the full set
    # pairs (s1,s2) (s1,s3) (s2,s3): full < : T, T, F; subset < : F, T, T
    assert out["pairwise_accuracy"] == pytest.approx(1 / 3)
    assert out["kendall"] == pytest.approx(stats.kendalltau([2.0, 1.5, 2.5], [2.0, 4.25, 3.5]).statistic)
    # 2 or 4 items cannot reach p < 0.05: one cluster of all three systems on both sides
    assert out["clusters"] == 1.0 and out["top1_dice"] == 1.0
    assert set(out) == set(me.MEASURES)


def test_bad_input(tiny_campaign):
    ref = me.full_reference(tiny_campaign)
    for outside in ([0, 4], [-1, 2]):  # 4 wrapped to nothing, -1 to the last item
        with pytest.raises(CampaignError, match="outside the campaign's 4 items"):
            me.evaluate_indices(ref, outside)
    with pytest.raises(PrecometError, match="not in campaign"):
        me.soft_pairwise_accuracy(tiny_campaign, ["a", "zz"])
    with pytest.raises(CampaignError, match="at least 2 items"):
        me.soft_pairwise_accuracy(tiny_campaign, ["a"])
    with pytest.raises(CampaignError, match="more than once"):
        me.soft_pairwise_accuracy(tiny_campaign, ["a", "a", "b"])
    with pytest.raises(CampaignError, match="at least 2 systems"):
        me.soft_pairwise_accuracy(tiny_campaign.restrict_systems(["s1"]), ["a", "b"])
    with pytest.raises(CampaignError, match="unknown measure"):
        me.evaluate_subset(tiny_campaign, ["a", "b"], measures=("spa", "nope"))
    with pytest.raises(CampaignError, match="missing for item 'b'"):
        me.full_reference(_campaign([[1.0, 2.0], [np.nan, 1.0], [0.0, 1.0]], ids=["a", "b", "c"]))
    with pytest.raises(CampaignError, match="no score"):
        me.soft_pairwise_accuracy(tiny_campaign, ["a", "b"], score="nope")


def test_reference_is_cached_per_campaign(tiny_campaign):
    assert me.full_reference(tiny_campaign) is me.full_reference(tiny_campaign)
    assert me.full_reference(tiny_campaign, seed=1) is not me.full_reference(tiny_campaign)


@pytest.mark.realdata
def test_real_wmt23_en_de(raw_data):
    from precomet.io import load

    campaign = load(raw_data / "mt-metrics-eval-v2", campaign="wmt23/en-de", human="mqm")
    ref = me.full_reference(campaign)
    assert len(ref.clusters) >= 3
    rng = np.random.default_rng(0)
    spa = [me.spa_indices(ref, rng.choice(len(campaign), len(campaign) // 4, replace=False)) for _ in range(5)]
    assert 0.8 < np.mean(spa) < 1.0
    assert me.spa_indices(ref, np.arange(len(campaign))) == 1.0


def test_evaluate_prefixes_equals_evaluate_indices():
    rng = np.random.default_rng(7)
    campaign = _campaign(np.round(rng.normal(size=(90, 5)), 1) + np.linspace(0, 0.5, 5))
    ref = me.full_reference(campaign, permutations=300)
    order = rng.permutation(90)
    sizes = [5, 5, 20, 47, 90]
    got = me.evaluate_prefixes(ref, order, sizes)
    for k, values in zip(sizes, got):
        assert values == me.evaluate_indices(ref, order[:k])
    with pytest.raises(CampaignError, match="increasing"):
        me.evaluate_prefixes(ref, order, [20, 10])
    with pytest.raises(CampaignError, match="distinct"):
        me.evaluate_prefixes(ref, np.r_[order[:3], order[:3]], [2, 6])


@pytest.mark.parametrize("grid", [True, False])
def test_evaluate_orderings_batch_equals_scalar_measures(grid):
    rng = np.random.default_rng(11)
    matrix = np.round(rng.normal(size=(60, 6)) + np.linspace(0, 0.8, 6), 1)  # ties within items
    if not grid:
        matrix = matrix + rng.normal(size=matrix.shape) * 1e-3 * (matrix != 0)  # off the 0.1 grid: float64 path
    matrix[:, 5] = matrix[:, 4]  # identical systems stay in one cluster
    campaign = _campaign(matrix)
    ref = me.full_reference(campaign, permutations=200)
    assert (ref.exact is not None) == grid
    orders = [rng.permutation(60) for _ in range(9)]
    sizes = [4, 12, 12, 33, 60]  # ≤ 13: exact Wilcoxon paths; repeated size: an empty block
    got = me.evaluate_orderings(ref, orders, sizes)
    assert got.shape == (9, 5, len(me.MEASURES))
    for b, order in enumerate(orders):
        for q, k in enumerate(sizes):
            sub = ref.matrix[np.sort(order[:k])]
            means, found = me.system_means(sub), me.clusters(sub)
            expected = {
                "spa": me.spa_indices(ref, order[:k]),
                "pairwise_accuracy": me.pairwise_accuracy(means, ref.means),
                "kendall": me.kendall_tau_b(means, ref.means),
                "spearman": me.spearman(means, ref.means),
                "pearson": me.pearson(means, ref.means),
                "top1": float(ref.means[np.argmax(means)] == ref.means.max()),
                "clusters": len(found),
                "top1_dice": me.dice(found[0], ref.clusters[0]),
                "mae": np.abs(means - ref.means).mean(),
                "rmse": np.sqrt(((means - ref.means) ** 2).mean()),
            }
            for m, name in enumerate(me.MEASURES):
                assert got[b, q, m] == pytest.approx(expected[name], abs=1e-12), (b, k, name)
    with pytest.raises(CampaignError, match="at least 60 positions"):
        me.evaluate_orderings(ref, [orders[0][:30]], sizes)
    with pytest.raises(CampaignError, match="distinct"):
        me.evaluate_orderings(ref, [orders[0], np.r_[orders[0][:3], orders[0][:57]]], [2, 60])
