"""DiffUse: tree cuts vs scipy, representatives, multi-model equivalence, Algorithm 1, protocol, bad input."""

import json
from itertools import combinations

import numpy as np
import pytest
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import cosine

from precomet.campaign import Campaign
from precomet.cli import main
from precomet.errors import PrecometError
from precomet.io import write_jsonl
from precomet.pairwise.diffuse import (
    difference_vectors,
    diffuse_select,
    diffuse_tree,
    diffuse_utility,
    iterate_order,
    iterate_tree,
    stopping_sf,
)
from precomet.pairwise.protocol import evaluate_pairwise, preference_signs
from precomet.simulate import simulate_campaign
from precomet.utilities.embed import encoder_name, unit_rows


def bag_of_words(texts):
    """A deterministic toy encoder: hashed word counts (no model download, fast)."""
    out = np.zeros((len(texts), 64))
    for row, text in enumerate(texts):
        for word in text.lower().split():
            out[row, sum(map(ord, word)) % 64] += 1.0
    return out


def test_cuts_match_scipy_fcluster_partitions():
    x = np.random.default_rng(0).normal(size=(60, 5))
    tree = diffuse_tree(x)
    z = linkage(x, "ward")
    np.testing.assert_allclose(tree.merges, z, atol=1e-9)
    for n in (1, 2, 3, 7, 20, 60):
        ours = sorted(sorted(tree.members(int(node)).tolist()) for node in tree.clusters(n))
        labels = fcluster(z, n, "maxclust")
        theirs = sorted(sorted(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels))
        assert ours == theirs


def test_float32_vectors_give_the_float64_tree_and_selection():
    x = np.random.default_rng(5).normal(size=(80, 48))
    tree64, tree32 = diffuse_tree(x), diffuse_tree(x.astype(np.float32))
    np.testing.assert_allclose(tree32.merges, tree64.merges, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(tree32.norms, np.linalg.norm(x[tree32.order], axis=1), rtol=1e-5, atol=1e-5)
    for n in (1, 5, 17, 80):
        assert tree32.select(n).tolist() == tree64.select(n).tolist()


def test_representative_is_closest_in_cosine_to_cluster_mean():
    x = np.random.default_rng(1).normal(size=(40, 4))
    tree = diffuse_tree(x)
    for node in tree.clusters(6):
        members = tree.members(int(node))
        centre = x[members].mean(axis=0)
        brute = min(members, key=lambda i: (round(cosine(x[i], centre), 10), i))
        assert tree.representative(int(node)) == brute


def test_hand_computed_two_clusters():
    # group {0,1,2} lies on the y axis: every member has cosine distance 0 to the mean -> lowest index 0.
    # group {3..6}: angles 0, .0196, .0384, .0565 rad; the mean's angle is atan(.15/5.15) = .0291 rad,
    # nearest is item 5 (.0093 away; item 4 is .0095 away). The larger group comes first.
    x = np.array([[0, 1.0], [0, 1.1], [0, 1.2], [5, 0.0], [5.1, 0.1], [5.2, 0.2], [5.3, 0.3]])
    tree = diffuse_tree(x)
    assert tree.select(2).tolist() == [5, 0]
    assert sorted(tree.select(7).tolist()) == list(range(7))


# three groups of items with identical output differences, interleaved: A (diff (2,0,0)) at 2, 4, 5, 8;
# B (diff (0,3,0)) at 1, 6, 7; C (diff (0,0,1)) at 0, 3
GROUPS = {"A": [2, 4, 5, 8], "B": [1, 6, 7], "C": [0, 3]}
DIFFS = {"A": [2.0, 0.0, 0.0], "B": [0.0, 3.0, 0.0], "C": [0.0, 0.0, 1.0]}


def _grouped_embeddings(seed):
    """(9, 2, 3) output embeddings whose *outputs* differ item by item (a random base per item) but whose
    difference (system 0 minus system 1) is the item's group vector."""
    base = np.random.default_rng(seed).normal(scale=50.0, size=(9, 3))
    emb = np.stack([base, base], axis=1)
    for group, items in GROUPS.items():
        emb[items, 0] += DIFFS[group]
    return emb


def _two_system_campaign(n):
    return Campaign.build(
        src=[f"s{i}" for i in range(n)],
        systems=["x", "y"],
        outputs={"x": [f"x{i}" for i in range(n)], "y": [f"y{i}" for i in range(n)]},
    )


@pytest.mark.parametrize("seed", [0, 1])
def test_identical_differences_form_clusters_with_lowest_index_representatives(seed):
    """Hand-computed: the 3-cluster cut is exactly the three groups (identical difference vectors merge at
    distance 0) whatever the outputs themselves are; every member ties on cosine, so each group is represented
    by its lowest index; the largest group comes first. Ward costs n1·n2/(n1+n2)·|c1−c2|²: A–C 20/3 < B–C 12
    < A–B 156/7, so the 2-cluster cut is {A∪C, B}; A∪C's mean (8,0,2)/6 is closest in cosine to A's vector
    (4/√17 against 1/√17), not to the union's lowest index 0 (in C). The single cluster's mean (8,9,2)/9 is
    closest to B's vector (9 > 8 > 2)."""
    campaign, emb = _two_system_campaign(9), _grouped_embeddings(seed)
    assert diffuse_select(campaign, budget=3, embeddings=emb).tolist() == [2, 1, 0]
    assert diffuse_select(campaign, budget=2, embeddings=emb).tolist() == [2, 1]
    assert diffuse_select(campaign, budget=1, embeddings=emb).tolist() == [1]
    tree = diffuse_tree(difference_vectors(emb))
    assert sorted(sorted(tree.members(int(node)).tolist()) for node in tree.clusters(3)) == sorted(GROUPS.values())
    # representatives score 1 + (budget − position)/budget, the others 0.999·|diff| / max |diff| (A 2, B 3, C 1)
    util = diffuse_utility(campaign, budget=3, embeddings=emb)
    expected = np.empty(9)
    expected[GROUPS["A"]], expected[GROUPS["B"]], expected[GROUPS["C"]] = 0.999 * 2 / 3, 0.999, 0.999 / 3
    expected[[2, 1, 0]] = [2.0, 5 / 3, 4 / 3]
    np.testing.assert_allclose(util, expected, rtol=1e-12, atol=1e-12)


def test_selection_is_one_representative_per_scipy_cluster_largest_first():
    """Against scipy's own cut (fcluster, maxclust) on tie-free data: the selection holds exactly one member of
    every cluster, ordered by cluster size (descending)."""
    x = np.random.default_rng(8).normal(size=(45, 6))
    z = linkage(x, "ward")
    tree = diffuse_tree(x)
    for n in (1, 2, 5, 11, 30, 45):
        labels = fcluster(z, n, "maxclust")
        chosen = tree.select(n)
        assert sorted(labels[chosen].tolist()) == sorted(np.unique(labels).tolist())
        sizes = [int((labels == labels[i]).sum()) for i in chosen]
        assert sizes == sorted(sizes, reverse=True)


def test_zero_difference_vectors_do_not_crash():
    tree = diffuse_tree(np.zeros((10, 3)))
    chosen = tree.select(4)
    # every cosine is 0 (undefined): each cluster is represented by its lowest index, one per cluster
    assert sorted(chosen.tolist()) == sorted(int(tree.members(int(node)).min()) for node in tree.clusters(4))
    assert sorted(np.concatenate([tree.members(int(node)) for node in tree.clusters(4)]).tolist()) == list(range(10))
    mixed = np.zeros((12, 3))
    mixed[:3] = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    # the 9 zero rows merge first (distance 0), so each distinct non-zero difference keeps its own cluster;
    # the two zero clusters are represented by their lowest index (3 is the lowest zero row)
    chosen = diffuse_tree(mixed).select(5).tolist()
    assert len(set(chosen)) == 5 and {0, 1, 2, 3} <= set(chosen)


def test_multi_model_representation_equals_all_pairwise_differences_up_to_scale():
    emb = np.random.default_rng(2).normal(size=(30, 4, 6))
    centred = difference_vectors(emb)
    pairwise = np.concatenate([emb[:, i] - emb[:, j] for i, j in combinations(range(4), 2)], axis=1)
    gram_c, gram_p = centred @ centred.T, pairwise @ pairwise.T
    np.testing.assert_allclose(gram_p, 4 * gram_c, atol=1e-9)
    assert diffuse_tree(centred).select(8).tolist() == diffuse_tree(pairwise).select(8).tolist()
    two = emb[:, :2]
    centred_two = (two - two.mean(axis=1, keepdims=True)).reshape(30, -1)
    assert diffuse_tree(centred_two).select(5).tolist() == diffuse_tree(difference_vectors(two)).select(5).tolist()


def test_select_and_utility_on_campaign():
    campaign = simulate_campaign(n_items=40, n_systems=3, seed=0)
    chosen = diffuse_select(campaign, budget=6, systems=["sys00", "sys01"], encoder=bag_of_words)
    assert len(set(chosen.tolist())) == 6
    util = diffuse_utility(campaign, budget=6, encoder=bag_of_words)
    order = diffuse_select(campaign, budget=6, encoder=bag_of_words)
    np.testing.assert_allclose(util[order], 1 + (6 - np.arange(6)) / 6)  # largest cluster first scores 2
    # the other items: 0.999 · the norm of their difference vector over the largest norm (of unit embeddings: the
    # door normalises a callable's vectors as any encoder's)
    embedded = [unit_rows(bag_of_words(campaign.outputs[s])) for s in campaign.systems]
    vectors = difference_vectors(np.stack(embedded, axis=1))
    norms = np.linalg.norm(vectors, axis=1)
    rest = np.setdiff1d(np.arange(40), order)
    # float32 embeddings: about 1e-6 of the [0, 1) scale
    np.testing.assert_allclose(util[rest], 0.999 * norms[rest] / norms.max(), rtol=1e-6, atol=1e-6)


def test_bad_input():
    campaign = simulate_campaign(n_items=10, n_systems=2, seed=0)
    with pytest.raises(PrecometError, match="budget"):
        diffuse_select(campaign, budget=11, encoder=bag_of_words)
    with pytest.raises(PrecometError, match="at least two"):
        diffuse_select(campaign, budget=3, systems=["sys00"], encoder=bag_of_words)
    with pytest.raises(PrecometError, match="unknown system"):
        diffuse_select(campaign, budget=3, systems=["sys00", "nope"], encoder=bag_of_words)
    no_outputs = Campaign.build(src=["a b", "c d"], systems=["x", "y"], scores={"human": [[1, 2], [3, 4]]})
    with pytest.raises(PrecometError, match="no output texts"):
        diffuse_select(no_outputs, budget=1, encoder=bag_of_words)


def test_identical_outputs_campaign_selects_without_error():
    campaign = Campaign.build(
        src=[f"s{i}" for i in range(8)], systems=["x", "y"], outputs={"x": ["same"] * 8, "y": ["same"] * 8}
    )
    chosen = diffuse_select(campaign, budget=3, encoder=bag_of_words)
    assert len(set(chosen.tolist())) == 3
    # every difference is 0: the three representatives score 2, 5/3, 4/3 and every other item 0
    util = diffuse_utility(campaign, budget=3, encoder=bag_of_words)
    expected = np.zeros(8)
    expected[chosen] = [2.0, 5 / 3, 4 / 3]
    np.testing.assert_allclose(util, expected)


def test_stopping_sf_matches_paper_example():
    assert stopping_sf(8, 10, 500) == pytest.approx(0.0529, abs=5e-5)
    assert stopping_sf(0, 0, 500) == 1.0


def test_iterate_order_stops_as_soon_as_sf_below_p():
    answers = ["a"] * 50
    result = iterate_order(range(50), lambda i: answers[i], p=0.1, n_min=2, population=500)
    # smallest n with sf(n-1; 500, 250, n) <= 0.1 when every label is "a"
    expected = next(n for n in range(2, 50) if stopping_sf(n, n, 500) <= 0.1)
    assert result.decided and result.winner == "a" and result.n_annotations == expected == 4


def test_iterate_order_inconclusive_at_max_budget():
    answers = ["a", "b"] * 10
    result = iterate_order(range(20), lambda i: answers[i], p=0.1, n_min=2, max_budget=12)
    assert not result.decided and result.winner is None and result.n_annotations == 12 and result.leader == "tie"


def test_iterate_tree_replaces_split_representative_and_validates_answers():
    x = np.random.default_rng(3).normal(size=(50, 3))
    tree = diffuse_tree(x)
    asked = []
    result = iterate_tree(tree, lambda i: asked.append(i) or ("a" if i % 3 else "b"), p=0.05, n_min=3, max_budget=30)
    assert len(asked) == len(set(asked)) == result.n_annotations <= 30
    k = len(result.decision_items)
    assert sorted(result.decision_items.tolist()) == sorted(tree.select(k).tolist())
    with pytest.raises(PrecometError, match="oracle answered"):
        iterate_tree(tree, lambda i: "maybe", n_min=3)
    with pytest.raises(PrecometError, match="max_budget"):
        iterate_tree(tree, lambda i: "a", n_min=3, max_budget=51)
    assert iterate_tree(tree, lambda i: " A ", n_min=5).winner == "a"


def test_protocol_on_simulated_campaign():
    campaign = simulate_campaign(n_items=60, n_systems=3, seed=4)
    result = evaluate_pairwise(
        campaign, encoder=bag_of_words, budgets=[5, 10, 100], seeds=2, p_values=[0.2], max_budget=40
    )
    assert {r["budget"] for r in result.success} == {5, 10}
    assert all(r["runs"] == 3 * 2 for r in result.success)
    for row in result.iterative:
        assert row["success"] + row["error"] + row["inconclusive"] == pytest.approx(1.0)
        assert 5 <= row["annotations"] <= 40
    assert "| 5 |" in result.to_markdown()


def test_preference_signs_margin():
    assert preference_signs([3, 1, 2.05], [1, 3, 2.0], margin=0.1).tolist() == [1, -1, 0]


@pytest.mark.slow  # loads MiniLM: about 4 s
def test_diffuse_select_records_the_encoder_it_used(tmp_path):
    """``diffuse select -o`` names the encoder in its signature, also the default one (once recorded as null)."""
    data, out = tmp_path / "items.jsonl", tmp_path / "chosen.json"
    write_jsonl(simulate_campaign(n_items=12, n_systems=2, seed=0), data)
    assert main(["diffuse", "select", "--data", str(data), "--budget", "3", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["signature"]["encoder"] == encoder_name(None)
