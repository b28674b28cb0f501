"""Far from the training sources: the coverage an estimator records and the warning predict/select give."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from precomet.encoders import SentenceEncoder
from precomet.errors import PrecometError
from precomet.estimator.checkpoint import HEAD
from precomet.estimator.coverage import (
    FAR_SHARE,
    LEGACY,
    RADIUS_FLOOR,
    coverage_warning,
    far_share,
    fit_coverage,
    read_coverage,
    report_coverage,
    write_coverage,
)


def _clusters(n: int, *, shift: float = 0.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = np.eye(8)[:4] * 5 + shift * np.eye(8)[7] * 5
    return centres[rng.integers(0, 4, n)] + rng.normal(scale=0.3, size=(n, 8))


def test_sources_like_the_training_ones_are_near_and_others_far():
    coverage = fit_coverage(_clusters(2000), clusters=8)
    assert coverage["centroids"].shape == (8, 8) and coverage["centroids"].dtype == np.float32
    assert far_share(_clusters(1000, seed=1), coverage) < FAR_SHARE  # about 1 % by construction
    assert far_share(_clusters(1000, shift=3.0, seed=2), coverage) > 0.9
    assert far_share(_clusters(1000, seed=1) * 7.5, coverage) == far_share(_clusters(1000, seed=1), coverage)  # scale


def test_training_sources_read_again_are_near_when_each_is_its_own_centre():
    """With no more distinct training sources than centres the 99 % radius would be 0, and float rounding (another
    batch, float32 centres) put the training sources themselves "far"; the radius has a floor."""
    training = _clusters(20)  # fewer than CLUSTERS: each vector its own centre
    coverage = fit_coverage(training)
    again = training.astype(np.float32) * (1 + 1e-6 * np.random.default_rng(0).standard_normal(training.shape))
    assert far_share(again, coverage) == 0.0 and float(coverage["radius"][0]) == pytest.approx(RADIUS_FLOOR)
    assert far_share(_clusters(20, shift=3.0, seed=9), coverage) > 0.9  # other sources are still far


def test_warning_only_from_the_threshold():
    assert coverage_warning(FAR_SHARE / 2, 100) is None
    message = coverage_warning(0.4, 2000, what="checkpoint ck")
    assert message is not None and message.startswith("40 % of the sources scored by checkpoint ck (of 2,000 measured)")
    assert "extrapolations" in message


def test_written_read_back_absent_and_damaged(tmp_path: Path):
    assert read_coverage(tmp_path) is None and read_coverage(None) is None
    coverage = fit_coverage(_clusters(300), clusters=4)
    write_coverage(tmp_path, coverage)
    back = read_coverage(tmp_path)
    assert back is not None and np.array_equal(back["centroids"], coverage["centroids"])
    (tmp_path / HEAD).write_bytes(b"not safetensors")
    with pytest.raises(PrecometError, match="not a readable safetensors file"):
        read_coverage(tmp_path)
    (tmp_path / HEAD).unlink()
    write_coverage(tmp_path, {"centroids": coverage["centroids"], "radius": np.array([7.0], dtype=np.float32)})
    with pytest.raises(PrecometError, match="one distance in"):
        read_coverage(tmp_path)


def test_the_coverage_lives_in_the_head_file_beside_the_weights_and_the_old_file_still_reads(tmp_path: Path):
    """Training writes the coverage into ``head.safetensors`` under ``coverage.`` (the head's tensors stay as they
    were); a checkpoint from before 0.14 kept it in ``coverage.safetensors``, which is still read."""
    import torch
    from safetensors.numpy import save_file
    from safetensors.torch import load_file
    from safetensors.torch import save_file as save_torch

    coverage = fit_coverage(_clusters(300), clusters=4)
    weights = {"layer.weight": torch.ones(2, 3)}
    save_torch(weights, str(tmp_path / HEAD))
    write_coverage(tmp_path, coverage)
    stored = load_file(str(tmp_path / HEAD))
    assert sorted(stored) == ["coverage.centroids", "coverage.radius", "layer.weight"]
    assert torch.equal(stored["layer.weight"], weights["layer.weight"]) and not (tmp_path / LEGACY).exists()
    old = tmp_path / "old"
    old.mkdir()
    save_torch(weights, str(old / HEAD))
    save_file(coverage, str(old / LEGACY))
    back = read_coverage(old)
    assert back is not None and np.array_equal(back["radius"], coverage["radius"])


class _Encoder(SentenceEncoder):
    name, languages = "toy", "any"

    @property
    def dim(self) -> int:
        return 8

    def cache_key(self) -> str:
        return "toy-1"

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts, *, progress=None) -> np.ndarray:
        shifts = [3.0 if text.startswith("far") else 0.0 for text in texts]
        return np.stack([_clusters(1, shift=shift, seed=i)[0] for i, shift in enumerate(shifts)])


def test_report_warns_with_the_share_and_is_silent_without_coverage(tmp_path: Path, caplog):
    import torch

    from precomet.estimator.estimator import Estimator, Reader
    from precomet.estimator.metadata import CheckpointMeta
    from tests.bad_inputs.cases_models import GOOD_META

    meta = CheckpointMeta.model_validate({**GOOD_META, "max_length": 0, "backbone": {"name": "toy"}})
    estimator = Estimator(Reader(encoder=_Encoder(), network=torch.nn.Identity()), meta=meta, path=tmp_path)
    near = [f"near {i}" for i in range(95)]
    assert report_coverage(estimator, near, what="ck") is None  # no coverage: nothing to say
    write_coverage(tmp_path, fit_coverage(_clusters(2000), clusters=8))
    with caplog.at_level(logging.WARNING, logger="precomet.estimator.coverage"):
        quiet = report_coverage(estimator, near, what="ck")
        assert quiet is not None and quiet["far_share"] < FAR_SHARE and not caplog.records
        loud = report_coverage(estimator, near[:60] + [f"far {i}" for i in range(40)], what="ck")
    assert loud is not None and loud["far_share"] >= 0.39 and loud["measured"] == 100
    assert "of the sources scored by ck (of 100 measured) lie farther" in caplog.records[-1].getMessage()


def test_the_sample_is_kept_in_the_encoder_cache_as_it_is_encoded(tmp_path, monkeypatch):
    """The coverage sample (up to 2,000 sources) is encoded before predict's first chunk: an interrupt in it keeps
    every part already encoded, as --chunk-size promises, instead of losing up to 2,000 encodings."""
    from precomet.encoders.memory import MEMORY
    from precomet.estimator.coverage import SAVED_EVERY, encode_sample
    from tests.conftest import Counting

    monkeypatch.setenv("PRECOMET_CACHE", str(tmp_path / "cache"))
    MEMORY.clear()
    sources = [f"source {i} " + "a" * (i % 7) for i in range(2 * SAVED_EVERY + 10)]
    interrupted = Counting()

    def encode_then_stop(texts):
        if len(interrupted.seen) >= SAVED_EVERY + 1:  # inside the second part
            raise KeyboardInterrupt
        return Counting._encode_batch(interrupted, texts)

    monkeypatch.setattr(interrupted, "_encode_batch", encode_then_stop)
    with pytest.raises(KeyboardInterrupt):
        encode_sample(interrupted, sources)
    MEMORY.clear()
    again = Counting()
    vectors = encode_sample(again, sources)
    assert sorted(again.seen) == sorted(sources[SAVED_EVERY:])  # the first part came from the disk cache
    np.testing.assert_array_equal(vectors[:, 0], [len(s) for s in sources])
    MEMORY.clear()
