"""The estimator shipped in checkpoints/ (MetricCons^src): usable on a fresh clone with no training step
(offline encoder from the installed package, head and metadata from git)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precomet.cli import main
from precomet.errors import PrecometError

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "metric-cons-minilm"
SOURCES = [
    "The government announced new measures on Tuesday.",
    "lol that's so true 😂",
    "Click here to reset your password.",
]


def test_shipped_checkpoint_is_small_and_names_its_encoder():
    meta = json.loads((SHIPPED / "precomet.json").read_text())
    assert not (SHIPPED / "encoder").exists() and (SHIPPED / "head.safetensors").stat().st_size <= 2 * 2**20
    assert meta["encoder_package"]["name"] == "minilm" and meta["target"]["method"] == "metric_cons"
    assert meta["training_sources"]["count"] > 7000  # the distinct WMT21-WMT23 English sources


def test_shipped_estimator_predicts_offline_and_deterministically():
    from precomet.estimator import load_estimator, predict_sources

    estimator = load_estimator(SHIPPED)
    first, again = predict_sources(estimator, SOURCES), predict_sources(estimator, SOURCES[::-1])[::-1]
    assert np.isfinite(first).all() and np.allclose(first, again, atol=1e-5) and np.ptp(first) > 0


def test_shipped_estimator_refuses_an_installed_encoder_with_other_weights(monkeypatch):
    from precomet.estimator import checkpoint

    monkeypatch.setattr(checkpoint, "weights_digest", lambda path: "0" * 64)
    with pytest.raises(PrecometError, match="other weights than the one this estimator was trained on"):
        checkpoint.load_estimator(SHIPPED)


@pytest.mark.realdata
def test_shipped_estimator_knows_its_training_sources(raw_data, tmp_path, capsys):
    from precomet.io import load

    seen = list(load(raw_data / "wmt-news-systems", campaign="wmt22/en-de").src[:5])
    text = tmp_path / "sources.txt"
    text.write_text("\n".join(seen + SOURCES) + "\n")
    out = tmp_path / "pred.jsonl"
    assert main(["predict", "--checkpoint", str(SHIPPED), "--data", str(text), "-o", str(out)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["signature"]["seen_in_training"] == 5
    assert (
        main(
            ["predict", "--checkpoint", str(SHIPPED), "--data", str(text), "--strict", "-o", str(tmp_path / "s.jsonl")]
        )
        == 2
    )
    assert "5 of 8 sources" in capsys.readouterr().err and not (tmp_path / "s.jsonl").exists()
