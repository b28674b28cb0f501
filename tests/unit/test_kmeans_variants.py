"""k-means on output embeddings and weighted k-means (seed 002 App. A), and the weighted meta-evaluation."""

from __future__ import annotations

import numpy as np
import pytest

from precomet.campaign import HUMAN, Campaign
from precomet.encoders import ENCODERS, SentenceEncoder
from precomet.errors import CampaignError, PrecometError
from precomet.metaeval import clusters, evaluate_indices, evaluate_weighted, full_reference, kendall_tau_b
from precomet.selection.representatives import weighted_kmeans
from precomet.significance import pvalues_from_sums
from precomet.simulate import simulate_campaign
from precomet.utilities import UTILITY_METHODS, compute_utility
from precomet.utilities.cluster import kmeans_representatives


class FakeEncoder(SentenceEncoder):
    """Deterministic 3-d vectors: the first letter picks the direction, the length nudges it."""

    name = "fake"
    languages = "x, y and z"
    dim = 3
    shared_cache = False

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        base = {"x": [1.0, 0.0, 0.0], "y": [0.0, 1.0, 0.0], "z": [0.0, 0.0, 1.0]}
        return np.array([np.array(base[t[0]]) + 0.01 * len(t) for t in texts], dtype=np.float32)


@pytest.fixture
def fake_encoder(monkeypatch):
    monkeypatch.setitem(ENCODERS, "fake", FakeEncoder)


def _campaign(outputs_by_item):
    n = len(outputs_by_item)
    return Campaign.build(
        ids=[f"i{i}" for i in range(n)],
        src=["z" * (i + 1) for i in range(n)],
        systems=["A", "B"],
        outputs={"A": [o[0] for o in outputs_by_item], "B": [o[1] for o in outputs_by_item]},
        scores={HUMAN: np.arange(2 * n, dtype=float).reshape(n, 2)},
        name="km",
    )


def test_kmeans_outputs_one_representative_per_output_group(fake_encoder):
    # items 0-2: both systems write "x…"; 3-5: "y…"; sources are all alike ("z…"), so only outputs separate them
    c = _campaign([("x", "xx"), ("xx", "x"), ("x", "x"), ("y", "yy"), ("yy", "y"), ("y", "y")])
    u = compute_utility(c, "kmeans_outputs", budget=2, seed=0, options={"encoder": "fake"})
    chosen = np.flatnonzero(u >= 1)
    assert len(chosen) == 2 and {int(i) // 3 for i in chosen} == {0, 1}
    assert UTILITY_METHODS["kmeans_outputs"].needs_budget and not UTILITY_METHODS["kmeans_outputs"].needs_score


def test_kmeans_outputs_uses_every_system_not_the_average(fake_encoder):
    # (x, y) and (y, x) have the same mean embedding but differ system by system: concatenation separates them
    c = _campaign([("x", "y"), ("x", "y"), ("y", "x"), ("y", "x")])
    u = compute_utility(c, "kmeans_outputs", budget=2, seed=0, options={"encoder": "fake"})
    chosen = np.flatnonzero(u >= 1)
    assert {int(i) // 2 for i in chosen} == {0, 1}


def test_representatives_weights_are_cluster_sizes():
    vectors = np.array([[0, 0], [0, 0.1], [0.1, 0], [0, 0.2], [10, 10], [10, 10.1]], dtype=float)
    chosen, weights, _ = kmeans_representatives(vectors, budget=2, seed=0)
    assert list(weights) == [4.0, 2.0] and chosen[0] < 4 <= chosen[1]


def test_weighted_kmeans_selector(fake_encoder):
    c = _campaign([("x", "x"), ("x", "xx"), ("x", "x"), ("y", "y")])
    chosen, weights = weighted_kmeans(c, budget=2, on="tgt", options={"encoder": "fake"})
    assert weights.sum() == 4 and sorted(weights) == [1.0, 3.0] and 3 in chosen
    with pytest.raises(PrecometError, match="on must be"):
        weighted_kmeans(c, budget=2, on="ref")


def test_weighted_evaluation_equal_weights_is_unweighted():
    campaign = simulate_campaign(n_items=60, n_systems=5, seed=2)
    ref = full_reference(campaign, permutations=300)
    idx = np.arange(0, 60, 3)
    plain = evaluate_indices(ref, idx, measures=("spa", "clusters", "kendall"))
    for w in (1, 3):
        weighted = evaluate_weighted(ref, idx, np.full(len(idx), w))
        assert weighted == pytest.approx(plain, abs=1e-12)


def test_weighted_evaluation_by_hand():
    campaign = simulate_campaign(n_items=40, n_systems=4, seed=7)
    ref = full_reference(campaign, permutations=200)
    idx, w = np.array([1, 5, 9, 20]), np.array([3.0, 1.0, 2.0, 5.0])
    got = evaluate_weighted(ref, idx, w)
    scores = ref.matrix[idx]
    partial = (scores * w[:, None]).T @ ref.signs[idx].astype(float)
    p = pvalues_from_sums(partial, (scores * w[:, None]).sum(0), float(np.abs(scores * w[:, None]).sum()), 200)
    assert got["spa"] == pytest.approx(1 - np.abs(p - ref.pvalues).mean())
    assert got["clusters"] == len(clusters(np.repeat(scores, [3, 1, 2, 5], axis=0)))
    assert got["kendall"] == pytest.approx(kendall_tau_b((scores * w[:, None]).sum(0) / w.sum(), ref.means))
    # a different weighting changes the answer (the weights matter)
    assert evaluate_weighted(ref, idx, np.array([1.0, 9.0, 1.0, 1.0]))["spa"] != got["spa"]
    with pytest.raises(CampaignError, match="whole numbers"):
        evaluate_weighted(ref, idx, np.array([0.5, 1, 1, 1]))
