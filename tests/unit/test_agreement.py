"""precomet.agreement, the one pairwise agreement of two system orderings: hand-computed tie rules and pair sets,
and each caller (metaeval's pairwise accuracy, rank's flipped pairs, metric_cons' pairwise) against a brute-force
loop of the definition it had before it called the module.

Shares of counted pairs are compared with ``==``: the module promises ``agreeing / n`` (one correctly rounded
division), so they are exact on any machine.
"""

from __future__ import annotations

import numpy as np
import pytest

from precomet.agreement import (
    OVER,
    TIE_RULES,
    agreement,
    disagreement,
    mean_agreement,
    pair_differences,
    pair_indices,
    wrong_pairs,
)
from precomet.campaign import HUMAN, Campaign
from precomet.metaeval import evaluate_orderings, full_reference, pairwise_accuracy
from precomet.rank.agreement import _flips, full_data_agreement
from precomet.utilities import compute_utility
from precomet.utilities.metric import pairwise_rows

# --------------------------------------------------------------------------- hand-computed pair differences
# pair:           0   1  2   3  4  5   6
ESTIMATED = [1.0, -1, 0, 0, 2, 0, -3]
TRUTH = [1.0, 1, 1, -1, 0, 0, 0]
# 0 same order; 1 opposite; 2 estimate ties a truth a > b; 3 estimate ties a truth a < b;
# 4 truth ties, estimate a > b; 5 both tie; 6 truth ties, estimate a < b.
# subset2evaluate compares (a < b) only: pair 2 agrees (neither), pair 3 disagrees, pair 6 disagrees (truth 0 reads
# as a > b).
WRONG = {
    "strict": [0, 1, 1, 1, 0, 0, 0],
    "agree": [0, 1, 0, 0, 0, 0, 0],
    "coin": [0, 1, 0.5, 0.5, 0, 0, 0],
    "subset2evaluate": [0, 1, 0, 1, 0, 0, 1],
}
SEPARATED = [True, True, True, True, False, False, False]
# over "all": (7 − Σ wrong) / 7; over "separated": the first 4 pairs only
ALL = {"strict": 4 / 7, "agree": 6 / 7, "coin": 5 / 7, "subset2evaluate": 4 / 7}
SEPARATE = {"strict": 1 / 4, "agree": 3 / 4, "coin": 2 / 4, "subset2evaluate": 2 / 4}


@pytest.mark.parametrize("ties", TIE_RULES)
def test_disagreement_per_pair_hand_computed(ties):
    wrong, separated = disagreement(np.array(ESTIMATED), np.array(TRUTH), ties=ties)
    assert wrong.tolist() == WRONG[ties]
    assert separated.tolist() == SEPARATED
    assert wrong_pairs(np.array(ESTIMATED), np.array(TRUTH), ties=ties) == sum(WRONG[ties])


@pytest.mark.parametrize("ties", TIE_RULES)
def test_agreement_over_all_and_separated_hand_computed(ties):
    assert agreement(ESTIMATED, TRUTH, ties=ties) == ALL[ties]
    assert agreement(ESTIMATED, TRUTH, ties=ties, over="all") == ALL[ties]
    assert agreement(ESTIMATED, TRUTH, ties=ties, over="separated") == SEPARATE[ties]
    assert isinstance(agreement(ESTIMATED, TRUTH, ties=ties), float)


def test_a_share_is_the_agreeing_count_over_the_pairs_bit_for_bit():
    # 1 − 1/3 = 0.6666666666666667 but 2/3 = 0.6666666666666666: the share is agreeing / n, as np.mean of booleans
    assert mean_agreement([1.0, 2, 3], [1.0, 3, 2], ties="strict") == 2 / 3
    assert mean_agreement([1.0, 2, 3], [1.0, 3, 2], ties="subset2evaluate") == np.mean([True, True, False])


def test_per_pair_width():
    # pair 2 (truth 1) now lies within its width 2: tied in the truth, never wrong (but subset2evaluate's)
    width = np.array([0.0, 0, 2, 0, 0, 0, 0])
    wrong, separated = disagreement(ESTIMATED, TRUTH, ties="strict", width=width)
    assert separated.tolist() == [True, True, False, True, False, False, False]
    assert wrong.tolist() == [0, 1, 0, 1, 0, 0, 0]
    assert agreement(ESTIMATED, TRUTH, ties="strict", width=width) == 5 / 7
    assert agreement(ESTIMATED, TRUTH, ties="strict", over="separated", width=width) == 1 / 3
    assert agreement(ESTIMATED, TRUTH, ties="coin", over="separated", width=width) == 1.5 / 3
    assert agreement(ESTIMATED, TRUTH, ties="agree", over="separated", width=width) == 2 / 3
    # subset2evaluate ignores the truth's ties: width changes only which pairs "separated" counts
    assert agreement(ESTIMATED, TRUTH, ties="subset2evaluate", width=width) == 4 / 7
    assert agreement(ESTIMATED, TRUTH, ties="subset2evaluate", over="separated", width=width) == 1 / 3
    # one number for every pair: |truth| = 1 is within width 1
    assert disagreement(ESTIMATED, TRUTH, ties="strict", width=1.0)[1].tolist() == [False] * 7


@pytest.mark.parametrize("ties", TIE_RULES)
def test_no_pair_counted_is_full_agreement(ties):
    # nothing separated (every |truth| ≤ width) or fewer than two systems: nothing is ordered wrong
    assert agreement(ESTIMATED, TRUTH, ties=ties, over="separated", width=1.0) == 1.0
    assert agreement([0.0, 5, -2], [0.0, 0, 0], ties=ties, over="separated") == 1.0
    assert mean_agreement([3.0], [1.0], ties=ties) == 1.0
    assert mean_agreement([3.0], [1.0], ties=ties, over="separated") == 1.0
    assert wrong_pairs(pair_differences([3.0]), pair_differences([1.0]), ties=ties) == 0


# --------------------------------------------------------------------------- system means, four systems
# estimated means 3 1 1 2, truth 4 2 3 3; pairs (0,1) (0,2) (0,3) (1,2) (1,3) (2,3)
EST_MEANS = np.array([3.0, 1, 1, 2])
TRUE_MEANS = np.array([4.0, 2, 3, 3])
# differences 2 2 1 0 −1 −1 and 2 1 1 −1 −1 0: pair (1,2) is an estimated tie of a truth a < b, pair (2,3) a truth
# tie that the estimate orders a < b
MEANS_ALL = {"strict": 5 / 6, "agree": 1.0, "coin": 5.5 / 6, "subset2evaluate": 4 / 6}
MEANS_SEPARATED = {"strict": 4 / 5, "agree": 1.0, "coin": 4.5 / 5, "subset2evaluate": 4 / 5}
MEANS_WRONG = {"strict": 1, "agree": 0, "coin": 0.5, "subset2evaluate": 2}


def test_pair_order_and_differences():
    a, b = pair_indices(4)
    assert list(zip(a.tolist(), b.tolist())) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert pair_differences(EST_MEANS).tolist() == [2, 2, 1, 0, -1, -1]
    assert pair_differences(TRUE_MEANS).tolist() == [2, 1, 1, -1, -1, 0]
    assert pair_differences(np.stack([EST_MEANS, TRUE_MEANS])).shape == (2, 6)


@pytest.mark.parametrize("ties", TIE_RULES)
def test_mean_agreement_of_four_systems_hand_computed(ties):
    assert mean_agreement(EST_MEANS, TRUE_MEANS, ties=ties) == MEANS_ALL[ties]
    assert mean_agreement(EST_MEANS, TRUE_MEANS, ties=ties, over="separated") == MEANS_SEPARATED[ties]
    est, truth = pair_differences(EST_MEANS), pair_differences(TRUE_MEANS)
    assert wrong_pairs(est, truth, ties=ties) == MEANS_WRONG[ties]


@pytest.mark.parametrize("over", OVER)
@pytest.mark.parametrize("ties", TIE_RULES)
def test_vectorised_over_leading_axes(ties, over):
    rng = np.random.default_rng(7)
    estimated = rng.integers(0, 3, size=(2, 3, 4)).astype(float)  # (2, 3) orderings of 4 systems, many ties
    shares = mean_agreement(estimated, TRUE_MEANS, ties=ties, over=over)
    assert isinstance(shares, np.ndarray) and shares.shape == (2, 3)
    for index in np.ndindex(2, 3):
        assert shares[index] == mean_agreement(estimated[index], TRUE_MEANS, ties=ties, over=over)
    wrong = wrong_pairs(pair_differences(estimated), pair_differences(TRUE_MEANS), ties=ties)
    assert wrong.shape == (2, 3)
    # the truth may vary along the leading axes too (broadcast against each other)
    truths = np.stack([TRUE_MEANS, TRUE_MEANS[::-1], EST_MEANS])
    both = mean_agreement(estimated, truths, ties=ties, over=over)
    assert both.shape == (2, 3)
    assert both[1, 2] == mean_agreement(estimated[1, 2], EST_MEANS, ties=ties, over=over)


def test_unknown_rule_or_pairs_names_the_valid_ones():
    with pytest.raises(ValueError, match="strict, agree, coin, subset2evaluate"):
        agreement(ESTIMATED, TRUTH, ties="half")
    with pytest.raises(ValueError, match="all, separated"):
        agreement(ESTIMATED, TRUTH, ties="strict", over="decided")
    with pytest.raises(ValueError, match="unknown tie rule"):
        disagreement(ESTIMATED, TRUTH, ties="")


# --------------------------------------------------------------------------- callers against their old definitions
def _random_means(rng: np.random.Generator, n_systems: int) -> np.ndarray:
    """Integer-valued means on a small range (ties in most draws), sometimes scaled to a non-integer grid."""
    means = rng.integers(0, 4, size=n_systems).astype(float)
    return means / 7 if rng.random() < 0.5 else means


def _old_pairwise_accuracy(sub: np.ndarray, full: np.ndarray) -> float:
    pairs = [(i, j) for i in range(len(full)) for j in range(i + 1, len(full))]
    return sum((sub[i] < sub[j]) == (full[i] < full[j]) for i, j in pairs) / len(pairs)


def _old_flips(a: np.ndarray, b: np.ndarray) -> int:
    return sum((a[i] - a[j]) * (b[i] - b[j]) < 0 for i in range(len(a)) for j in range(i + 1, len(a)))


def _old_pairwise_row(row: np.ndarray, target: np.ndarray) -> float:
    decided = [(i, j) for i in range(len(target)) for j in range(i + 1, len(target)) if target[i] != target[j]]
    if not decided:
        return 0.0
    return sum(np.sign(row[i] - row[j]) * np.sign(target[i] - target[j]) > 0 for i, j in decided) / len(decided)


def test_pairwise_accuracy_equals_its_old_loop():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n_systems = int(rng.integers(2, 7))
        sub, full = _random_means(rng, n_systems), _random_means(rng, n_systems)
        assert pairwise_accuracy(sub, full) == _old_pairwise_accuracy(sub, full)


def test_batched_pairwise_accuracy_equals_its_old_loop():
    rng = np.random.default_rng(1)
    n_items, n_systems = 14, 5
    campaign = Campaign.build(
        ids=[f"i{i}" for i in range(n_items)],
        src=[f"s{i}" for i in range(n_items)],
        systems=[f"m{s}" for s in range(n_systems)],
        scores={HUMAN: rng.integers(0, 3, size=(n_items, n_systems)).astype(float)},
    )
    ref = full_reference(campaign, permutations=20)
    orders = [rng.permutation(n_items) for _ in range(25)]
    sizes = [2, 3, 5, 9, 14]
    found = evaluate_orderings(ref, orders, sizes, measures=["pairwise_accuracy"])[:, :, 0]
    ties_seen = 0
    for b, order in enumerate(orders):
        for q, k in enumerate(sizes):
            means = np.round(ref.matrix[np.sort(order[:k])].mean(axis=0), 10)
            ties_seen += len(np.unique(means)) < n_systems
            assert found[b, q] == _old_pairwise_accuracy(means, ref.means)
    assert ties_seen > 0  # the check covered estimated ties


def test_flips_equal_their_old_loop():
    rng = np.random.default_rng(2)
    for _ in range(300):
        n_systems = int(rng.integers(1, 7))
        a, b = _random_means(rng, n_systems), _random_means(rng, n_systems)
        flips = _flips(a, b)
        assert isinstance(flips, int) and flips == _old_flips(a, b)


def test_full_data_agreement_flips_equal_their_old_loop():
    rng = np.random.default_rng(3)
    systems = ("m0", "m1", "m2", "m3", "m4")
    full = Campaign.build(
        ids=[f"i{i}" for i in range(10)],
        src=[f"s{i}" for i in range(10)],
        systems=list(systems),
        scores={HUMAN: rng.integers(0, 3, size=(10, 5)).astype(float)},
    )
    for _ in range(20):
        means, reweighted = _random_means(rng, 5), _random_means(rng, 5)
        found = full_data_agreement(systems, means, full, subset_ids=["i0", "i1"], reweighted=reweighted)
        assert found.flipped == _old_flips(means, found.full_means)
        assert found.flipped_reweighted == _old_flips(reweighted, found.full_means)


def test_pairwise_rows_equal_their_old_loop():
    rng = np.random.default_rng(4)
    for _ in range(100):
        n_systems = int(rng.integers(1, 7))
        matrix = rng.integers(0, 3, size=(6, n_systems)).astype(float)
        target = _random_means(rng, n_systems)
        found = pairwise_rows(matrix, target)
        assert found.shape == (6,)
        assert found.tolist() == [_old_pairwise_row(row, target) for row in matrix]


def test_pairwise_rows_without_a_distinct_target_pair_is_zero():
    # the target orders no pair: 0.0 per row ("no information"), not agreement's 1.0
    matrix = np.array([[1.0, 2, 3], [3.0, 3, 3]])
    assert pairwise_rows(matrix, np.array([2.0, 2, 2])).tolist() == [0.0, 0.0]
    assert pairwise_rows(matrix[:, :1], np.array([2.0])).tolist() == [0.0, 0.0]
    # one decided pair (systems 0 and 2, target 1 < 2): row 0 orders it the same way, row 1 ties it
    assert pairwise_rows(matrix, np.array([1.0, 1, 2])).tolist() == [1.0, 0.0]


def test_metric_cons_pairwise_equals_its_old_loop():
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 3, size=(12, 4)).astype(float)
    campaign = Campaign.build(
        ids=[f"i{i}" for i in range(12)],
        src=[f"s{i}" for i in range(12)],
        systems=["a", "b", "c", "d"],
        scores={HUMAN: scores},
    )
    found = compute_utility(campaign, "metric_cons", metric=HUMAN, options={"correlation": "pairwise"})
    target = scores.mean(axis=0)
    assert np.asarray(found).tolist() == [_old_pairwise_row(row, target) for row in scores]
