"""Issue 52: one door to embeddings. The source strata and the utilities embed through
:func:`precomet.utilities.embed.embed_texts`, so one normalisation rule and one table of defaults serve both."""

from __future__ import annotations

import numpy as np
import pytest

from precomet.campaign import Campaign
from precomet.encoders import ENCODERS, SentenceEncoder
from precomet.errors import PrecometError
from precomet.utilities.embed import DEFAULT_ENCODERS, embed_texts, unit_rows

TEXTS = ["a cat", "aaaa", "the dog barks", "a", "bb b"]


class Shape(SentenceEncoder):
    """Vectors that are not unit length (characters, 'a's, spaces + 1): a door that skipped the rule would show."""

    name = "shape-stub"
    languages = "any"

    @property
    def dim(self) -> int:
        return 3

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.array([[len(t), t.count("a"), t.count(" ") + 1] for t in texts], dtype=np.float32)


class Length(Shape):
    name = "length-stub"

    @property
    def dim(self) -> int:
        return 1

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.array([[len(t)] for t in texts], dtype=np.float32)


@pytest.fixture
def shape(monkeypatch):
    monkeypatch.setitem(ENCODERS, "shape", Shape)
    monkeypatch.setitem(ENCODERS, "length-1d", Length)
    return "shape"


def test_the_normalisation_rule():
    """Every row divided by its L2 norm, in float64; a zero row stays zero."""
    vectors = np.array([[3.0, 4.0], [0.0, 0.0], [0.0, -2.0]], dtype=np.float32)
    unit = unit_rows(vectors)
    assert unit.dtype == np.float64
    np.testing.assert_allclose(unit, [[0.6, 0.8], [0.0, 0.0], [0.0, -1.0]], atol=1e-12)
    assert vectors[0, 0] == 3.0  # the caller's array is left as it was


@pytest.mark.parametrize("kind", ["registered", "callable"])
def test_every_encoder_goes_through_the_rule(shape, kind):
    encoder = shape if kind == "registered" else (lambda texts: Shape()._encode_batch(list(texts)))
    vectors = embed_texts([*TEXTS, "aaaa"], encoder=encoder)
    raw = Shape()._encode_batch([*TEXTS, "aaaa"])
    assert vectors.dtype == np.float64 and vectors.shape == (6, 3)
    np.testing.assert_allclose(vectors, unit_rows(raw), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-12)


def test_a_one_number_encoder_is_refused_by_name(shape):
    """L2-normalised, one number per text is the same vector for every text: refused, not clustered."""
    with pytest.raises(PrecometError, match="encoder 'length-1d' gives one number per text"):
        embed_texts(TEXTS, encoder="length-1d")


def test_one_table_of_defaults():
    from precomet.selection import strata
    from precomet.utilities import embed

    assert DEFAULT_ENCODERS == {"utilities": "minilm", "strata": "e5-small"}
    assert strata.DEFAULT_ENCODER == DEFAULT_ENCODERS["strata"]
    assert embed.DEFAULT_ENCODER == DEFAULT_ENCODERS["utilities"]
    with pytest.raises(PrecometError, match="embedding use 'nope' is not one of utilities, strata"):
        embed_texts(TEXTS, use="nope")


def test_a_use_without_an_encoder_gets_its_default(monkeypatch):
    asked = []
    monkeypatch.setattr("precomet.utilities.embed.get_encoder", lambda name, **_: asked.append(name) or Shape())
    embed_texts(TEXTS, use="strata")
    embed_texts(TEXTS)
    assert asked == ["e5-small", "minilm"]


def test_strata_and_the_utilities_share_the_door(shape, monkeypatch):
    """The strata, k-means on sources, k-means on outputs and diversity see the same vectors for the same texts."""
    from precomet.selection.strata import strata_selector
    from precomet.utilities import cluster, compute_utility, diversity

    seen: dict[str, np.ndarray] = {}

    def fit_kmeans(vectors, *, k, seed, n_init=3):
        seen.setdefault(tag, np.array(vectors))
        return np.arange(len(vectors)) % k, np.zeros((k, vectors.shape[1]))

    def mean_pairwise_cosine(vectors):
        seen["diversity"] = np.array(vectors)
        return np.zeros(len(vectors))

    monkeypatch.setattr(cluster, "fit_kmeans", fit_kmeans)
    monkeypatch.setattr(diversity, "mean_pairwise_cosine", mean_pairwise_cosine)
    outputs = {"x": TEXTS, "y": TEXTS}
    campaign = Campaign.build(src=TEXTS, systems=["x", "y"], outputs=outputs, scores={"human": [[0, 1]] * 5})
    tag = "strata"
    strata_selector(np.arange(5.0), TEXTS, encoder=shape)(2)
    tag = "kmeans"
    compute_utility(campaign, "kmeans", budget=2, options={"encoder": shape})
    tag = "kmeans_outputs"
    compute_utility(campaign, "kmeans_outputs", budget=2, options={"encoder": shape})
    compute_utility(campaign, "diversity", options={"encoder": shape})

    expected = unit_rows(Shape()._encode_batch(TEXTS))
    np.testing.assert_array_equal(seen["strata"], expected)
    np.testing.assert_array_equal(seen["kmeans"], expected)
    np.testing.assert_array_equal(seen["diversity"][:, 0], expected)
    np.testing.assert_array_equal(seen["diversity"][:, 1], expected)
    np.testing.assert_allclose(seen["kmeans_outputs"] * np.sqrt(2), np.hstack([expected, expected]), atol=1e-12)
