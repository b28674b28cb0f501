"""The steps of ``precomet.estimator.training.train`` one by one (tiny random-init XLM-R, CPU), the metadata
written once and atomically, and ``train`` reproducible for a fixed seed."""

from __future__ import annotations

import io
import json
import math
import signal
from pathlib import Path

import numpy as np
import pytest
import torch

from precomet.errors import PrecometError
from precomet.estimator.config import EarlyStoppingConfig, TrainConfig, load_config
from precomet.estimator.fitting import (
    best_metrics,
    build_module,
    build_trainer,
    checkpoint_meta,
    export_best,
    fit,
)
from precomet.estimator.inputs import Split, TrainingInputs, build_datamodule, split_rows
from precomet.estimator.leakage import normalise_source
from precomet.estimator.targets import write_targets
from precomet.estimator.training import train
from tests.conftest import history_rows

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "configs" / "tiny.yaml"


def _rows(n_items: int = 16) -> list[dict]:
    return history_rows(n_campaigns=2, n_items=n_items, n_systems=3, seed=5, normalisation="zscore")


@pytest.fixture(scope="module")
def encoder(tmp_path_factory) -> Path:
    from precomet.estimator.tiny import build_tiny_encoder

    return build_tiny_encoder(tmp_path_factory.mktemp("tiny") / "encoder", texts=[r["src"] for r in _rows()], seed=0)


@pytest.fixture
def cfg(encoder) -> dict:
    return load_config(TINY, {"model.backbone": str(encoder), "trainer.max_epochs": 1})


def _with(cfg: TrainConfig, **changes) -> TrainConfig:
    """``cfg`` with ``section__key=value`` changes (a new config; ``cfg`` is left as it is)."""
    sections: dict = {}
    for name, value in changes.items():
        section, key = name.split("__")
        sections.setdefault(section, {})[key] = value
    return cfg.model_copy(update={s: getattr(cfg, s).model_copy(update=v) for s, v in sections.items()})


def _split(cfg: TrainConfig) -> Split:
    return split_rows(_rows(), None, data=cfg.data, seed=0)


# ---------------------------------------------------------------------------------------------- rows
def test_split_rows_by_document_with_training_statistics(cfg):
    rows = _rows()
    split = split_rows(rows, None, data=_with(cfg, data__dev_fraction=0.25).data, seed=3)
    assert len(split.train) + len(split.dev) == len(rows) and split.dev
    docs = {(r["campaign"], r["doc"]) for r in split.dev}
    assert not docs & {(r["campaign"], r["doc"]) for r in split.train}  # whole documents on one side
    assert not {normalise_source(r["src"]) for r in split.dev} & {normalise_source(r["src"]) for r in split.train}
    y = np.array([r["target"] for r in split.train])
    assert (split.mean, split.std) == (pytest.approx(float(y.mean())), pytest.approx(float(y.std())))
    assert split.method == "neg_avg" and split.normalisations == ["zscore"]
    z = split.standardised(split.train)
    assert z.mean() == pytest.approx(0.0, abs=1e-12) and z.std() == pytest.approx(1.0)
    assert split_rows(rows, None, data=_with(cfg, data__dev_fraction=0.25).data, seed=3) == split  # seeded


def test_targets_that_teach_nothing_are_refused_and_huge_ones_standardise(cfg):
    rows = _rows()
    data = _with(cfg, data__dev_fraction=0.0).data
    with pytest.raises(PrecometError, match=r"training targets are all 0\.5: constant targets teach nothing"):
        split_rows([{**r, "target": 0.5} for r in rows], None, data=data, seed=0)
    with pytest.raises(PrecometError, match="at least 2 targets"):
        split_rows(rows[:1], None, data=data, seed=0)
    dev = [{**r, "target": 0.5} for r in rows[20:]]
    with pytest.raises(PrecometError, match=r"the 12 dev target\(s\) are all 0\.5: the dev Pearson .* undefined"):
        split_rows(rows[:20], dev, data=data, seed=0)
    nearly = [{**r, "target": 0.5 + 1e-17 * i} for i, r in enumerate(dev)]
    with pytest.raises(PrecometError, match=r"dev target\(s\) are all 0\.5 \(to 12 digits\)"):
        split_rows(rows[:20], nearly, data=data, seed=0)
    subnormal = [{**r, "target": 5e-324 * (1 + i % 2)} for i, r in enumerate(dev)]  # equal once standardised
    with pytest.raises(PrecometError, match=r"dev target\(s\) are all 4\.94066e-324 \(to 12 digits\)"):
        split_rows(rows[:20], subnormal, data=data, seed=0)
    for far in (1e308, 1e12):
        spread = [{**r, "target": far * (1 + 0.5 * (i % 2))} for i, r in enumerate(dev)]
        with pytest.raises(PrecometError, match="training standard deviations from the training mean"):
            split_rows(rows[:20], spread, data=data, seed=0)
    huge = [{**r, "target": 1e308 if i % 2 else -1e308} for i, r in enumerate(rows)]
    split = split_rows(huge, None, data=data, seed=0)  # numpy's own std is inf here: z-scores of 0 and nan
    assert (split.mean, split.std) == (0.0, pytest.approx(1e308))
    assert np.array_equal(split.standardised(split.train), np.where(np.arange(len(rows)) % 2, 1.0, -1.0))


def test_dev_target_errors_name_the_dev_file(cfg, tmp_path):
    rows = _rows()
    write_targets([{**r, "target": 0.5} for r in rows[20:]], tmp_path / "dev.jsonl")
    with pytest.raises(PrecometError, match=r"dev.jsonl: the 12 dev target\(s\) are all 0\.5"):
        split_rows(rows[:20], tmp_path / "dev.jsonl", data=cfg.data, seed=0)


def test_split_rows_explicit_dev_no_dev_and_a_targets_file(cfg, tmp_path, caplog):
    rows = _rows()
    split = split_rows(rows[:20], rows[15:25], data=cfg.data, seed=0)
    assert split.dev == rows[15:25] and split.train == rows[:15]  # the five shared sources left training
    assert "dropped 5 training rows" in caplog.text
    whole = split_rows(rows, None, data=_with(cfg, data__dev_fraction=0.0).data, seed=0)
    assert whole.train == rows and whole.dev == [] and whole.standardised(whole.dev).shape == (0,)
    write_targets(rows, tmp_path / "targets.jsonl")
    from_file = split_rows(tmp_path / "targets.jsonl", None, data=cfg.data, seed=0)
    assert [r["id"] for r in from_file.train] == [r["id"] for r in _split(cfg).train]


def test_split_rows_refuses_mixed_methods_and_a_dev_set_covering_training(cfg):
    rows = _rows()
    with pytest.raises(PrecometError, match="mix several utility methods"):
        split_rows(rows[:2] + [{**rows[2], "method": "other"}], None, data=cfg.data, seed=0)
    with pytest.raises(PrecometError, match="every training row shares its source text"):
        split_rows(rows[:4], rows[:4], data=cfg.data, seed=0)


# ---------------------------------------------------------------------------------------------- network
def test_training_inputs_build_a_seeded_network_over_the_encoder_and_cap_its_length(cfg):
    kind = TrainingInputs(_with(cfg, data__max_length=1000))
    assert kind.max_length == 128 and kind.fine_tune  # the tiny tokenizer's model_max_length
    assert TrainingInputs(_with(cfg, data__max_length=16)).max_length == 16
    assert kind.pad_id == kind.encoder.tokenizer.pad_token_id == 0
    torch.manual_seed(1)
    first = kind.network(cfg, ([], []))
    torch.manual_seed(1)
    second = TrainingInputs(cfg).network(cfg, ([], []))
    assert first.training and first.encoder.training  # dropout on for training
    heads = first.head_state(), second.head_state()
    assert heads[0].keys() == heads[1].keys() and all(torch.equal(heads[0][k], heads[1][k]) for k in heads[0])
    assert not any(k.startswith("encoder.") for k in heads[0])  # the head file holds no encoder weight


# ---------------------------------------------------------------------------------------------- inputs
def test_training_inputs_are_token_ids_when_fine_tuned_and_cached_vectors_when_frozen(cfg, monkeypatch):
    from precomet.encoders.transformer import TransformerEncoder

    split = _split(cfg)
    short = _with(cfg, data__max_length=8)
    train_ids, dev_ids = TrainingInputs(short).encode(split, progress=False)
    assert len(train_ids) == len(split.train) and len(dev_ids) == len(split.dev)
    assert all(2 <= len(ids) <= 8 and ids[0] == 2 for ids in train_ids)  # <s> first, truncated to 8

    encoded: list[int] = []
    real = TransformerEncoder._encode_batch
    monkeypatch.setattr(
        TransformerEncoder, "_encode_batch", lambda self, texts: encoded.append(len(texts)) or real(self, texts)
    )
    frozen = _with(short, model__fine_tune=False)
    kind = TrainingInputs(frozen)
    train_x, dev_x = kind.encode(split, progress=False)
    assert train_x.shape == (len(split.train), 32) and dev_x.shape == (len(split.dev), 32)
    assert sum(encoded) == len({r["src"] for r in split.train + split.dev})  # each source once
    again = TrainingInputs(frozen).encode(split, progress=False)
    assert sum(encoded) == len({r["src"] for r in split.train + split.dev})  # from the cache: nothing encoded again
    assert torch.equal(again[0], train_x) and torch.equal(again[1], dev_x)
    mixed = TrainingInputs(_with(frozen, model__pooling="mix"))
    layers = mixed.encode(split, progress=False)[0]
    assert mixed.mix_layers == 3 and layers.shape == (len(split.train), 3 * 32)  # tiny: embeddings + 2 layers
    assert torch.allclose(layers[:, -32:], train_x, atol=1e-5)  # the last layer's mean is the plain pooling


def test_build_datamodule_standardised_batches(cfg):
    split = _split(cfg)
    kind = TrainingInputs(cfg)
    data = build_datamodule(
        split,
        kind.encode(split, progress=False),
        pad_id=kind.pad_id,
        data=_with(cfg, data__batch_size=5).data,
        seed=0,
    )
    batches = list(data.train_dataloader())
    assert sum(len(b["target"]) for b in batches) == len(split.train) and max(len(b["target"]) for b in batches) == 5
    targets = torch.cat([b["target"] for b in batches]).double().numpy()
    np.testing.assert_allclose(np.sort(targets), np.sort(split.standardised(split.train)), rtol=1e-6)
    dev = next(iter(data.val_dataloader()))
    assert set(dev) == {"input_ids", "attention_mask", "target"}
    assert dev["input_ids"].shape == dev["attention_mask"].shape


# ---------------------------------------------------------------------------------------------- module
def test_checkpoint_meta_and_module(cfg, encoder):
    from precomet.estimator.metadata import FORMAT_VERSION, check_meta

    split = _split(cfg)
    kind = TrainingInputs(cfg)
    network = kind.network(cfg, ([], []))
    meta = checkpoint_meta(cfg, split, kind)
    check_meta({"format_version": FORMAT_VERSION, **meta}, where="meta")
    assert meta["standardisation"] == {"mean": split.mean, "std": split.std} and meta["max_length"] == 64
    assert meta["target"] == {"method": "neg_avg", "normalisation": ["zscore"]} and meta["seed"] == 0
    assert meta["training_data"]["rows"] == len(split.train) and meta["training_data"]["dev_rows"] == len(split.dev)
    assert meta["encoder_package"] is None and meta["encoder_path"] == str(encoder.resolve())  # the .ckpt only
    assert "cache_dir" not in meta["config"]["data"] and "ensemble" not in meta["config"]["model"]  # fine-tuned
    assert meta["training_sources"]["count"] == len({normalise_source(r["src"]) for r in split.train + split.dev})
    json.dumps(meta)  # plain JSON types: stored in every .ckpt
    module = build_module(network, cfg.model, fine_tune=True, meta=meta)
    assert module.model is network and module.meta == meta
    assert (module.head_lr, module.encoder_lr, module.freeze_fraction) == (1e-3, 1e-4, 0.5)


# ---------------------------------------------------------------------------------------------- trainer
def test_build_trainer_callbacks_accumulation_and_refusals(cfg, tmp_path):
    import pytorch_lightning as pl

    cfg = _with(cfg, data__batch_size=8, data__effective_batch_size=20)
    trainer, history = build_trainer(cfg, out_dir=tmp_path, has_dev=True, progress=False)
    assert trainer.accumulate_grad_batches == 3 and history == [] and not trainer.progress_bar_callback
    assert any(isinstance(c, pl.callbacks.EarlyStopping) for c in trainer.callbacks)
    assert Path(trainer.checkpoint_callback.dirpath) == tmp_path / "lightning"
    assert trainer.checkpoint_callback.monitor == "val_pearson"
    alone, _ = build_trainer(cfg, out_dir=tmp_path, has_dev=False, progress=False)
    assert not any(isinstance(c, pl.callbacks.EarlyStopping) for c in alone.callbacks)
    assert alone.checkpoint_callback.monitor is None  # no dev set: the last epoch is kept
    assert cfg.trainer.enable_progress_bar is None  # the config is not changed
    bad = _with(cfg, trainer__precision="nope")
    with pytest.raises(PrecometError, match="refused by Lightning"):
        build_trainer(bad, out_dir=tmp_path, has_dev=True, progress=False)


def test_best_metrics_follow_monitor_and_mode():
    history = [
        {"epoch": 0, "val_pearson": 0.2, "val_loss": 0.9},
        {"epoch": 1, "val_pearson": 0.5, "val_loss": 1.1},
        {"epoch": 2, "val_pearson": 0.4, "val_loss": 0.8},
    ]
    pearson, loss = (
        EarlyStoppingConfig(monitor="val_pearson", mode="max"),
        EarlyStoppingConfig(monitor="val_loss", mode="min"),
    )
    assert best_metrics(history, pearson, has_dev=True)["epoch"] == 1
    assert best_metrics(history, loss, has_dev=True)["epoch"] == 2
    assert best_metrics(history, pearson, has_dev=False) == {}
    assert best_metrics([{"epoch": 0}], pearson, has_dev=True) == {}


def test_fit_reports_lightnings_exit_as_an_interrupt_and_restores_sigint():
    class Exiting:
        accumulate_grad_batches = 1

        def fit(self, module, datamodule):
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # as Lightning does on Ctrl-C
            raise SystemExit(1)

    data = type("Data", (), {"train_set": [0] * 3, "dev_set": [0]})()
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        fit(Exiting(), None, data)
    assert signal.getsignal(signal.SIGINT) is handler


# ---------------------------------------------------------------------------------------------- fit + export
@pytest.mark.slow
def test_steps_fit_and_export_a_loadable_checkpoint(cfg, tmp_path):
    import pytorch_lightning as pl

    from precomet.estimator import load_estimator, predict_sources

    split = _split(cfg)
    pl.seed_everything(0, workers=True, verbose=False)
    kind = TrainingInputs(cfg)
    data = build_datamodule(split, kind.encode(split, progress=False), pad_id=kind.pad_id, data=cfg.data, seed=0)
    network = kind.network(cfg, ([], []))
    module = build_module(network, cfg.model, fine_tune=True, meta=checkpoint_meta(cfg, split, kind))
    trainer, history = build_trainer(cfg, out_dir=tmp_path, has_dev=True, progress=False)
    fit(trainer, module, data)
    assert [h["epoch"] for h in history] == [0] and math.isfinite(history[0]["val_pearson"])
    dev_metrics = best_metrics(history, cfg.early_stopping, has_dev=True)
    best = export_best(trainer, tmp_path, extra_meta={"dev_metrics": dev_metrics, "history": history})
    assert best.is_file() and best.parent == tmp_path / "lightning"
    estimator = load_estimator(tmp_path)
    recorded = estimator.meta.as_dict()
    assert recorded["history"] == history and recorded["dev_metrics"] == dev_metrics
    assert np.isfinite(predict_sources(estimator, [r["src"] for r in split.dev])).all()


@pytest.mark.slow
def test_train_twice_with_one_seed_gives_identical_checkpoints(encoder, tmp_path):
    from safetensors.torch import load_file

    overrides = {"model.backbone": str(encoder), "trainer.max_epochs": 2, "seed_everything": 7}
    results = [
        train(_rows(), out_dir=tmp_path / name, config=TINY, overrides=overrides, progress=False) for name in ("a", "b")
    ]
    assert results[0].dev_metrics == results[1].dev_metrics and results[0].history == results[1].history
    assert len(results[0].history) == 2
    heads = [load_file(str(tmp_path / name / "head.safetensors")) for name in ("a", "b")]
    assert heads[0].keys() == heads[1].keys() and all(torch.equal(heads[0][k], heads[1][k]) for k in heads[0])
    metas = [json.loads((tmp_path / name / "precomet.json").read_text()) for name in ("a", "b")]
    assert metas[0] == metas[1] and metas[0]["seed"] == 7
    other = train(
        _rows(), out_dir=tmp_path / "c", config=TINY, overrides={**overrides, "seed_everything": 8}, progress=False
    )
    assert other.history != results[0].history  # the seed matters


@pytest.mark.slow
def test_precomet_json_written_once_into_the_temporary_directory(encoder, tmp_path, monkeypatch):
    """``precomet.json`` is opened for writing exactly once per run, complete, inside the output set's
    temporary directory (never at its final path), and renamed into place: a fresh directory or over an
    existing checkpoint."""
    writes: list[Path] = []
    real_open = io.open

    def recording_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file).name == "precomet.json" and set(mode) & set("wax+"):
            writes.append(Path(file).absolute())
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", recording_open)
    monkeypatch.setattr(io, "open", recording_open)
    out = tmp_path / "ckpt"
    overrides = {"model.backbone": str(encoder), "trainer.max_epochs": 1}
    for run in (1, 2):  # the second run replaces an existing checkpoint
        result = train(_rows(), out_dir=out, config=TINY, overrides=overrides, progress=False)
        assert len(writes) == run
        assert writes[-1].parent != out.absolute() and writes[-1].parent.parent.parent.name.startswith(".precomet-")
        meta = json.loads((out / "precomet.json").read_text())
        assert meta["history"] == result.history and meta["dev_metrics"] == result.dev_metrics
        assert meta["config"]["trainer"]["max_epochs"] == 1 and meta["format_version"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # no temporary left


def test_train_leaves_the_callers_random_generators_alone(encoder, tmp_path):
    import os
    import random

    import numpy as np

    from precomet.estimator.tiny import build_tiny_encoder

    random.seed(123)
    np.random.seed(123)
    torch.manual_seed(123)
    before = (
        random.getstate(),
        np.random.get_state()[1].copy(),
        torch.get_rng_state().clone(),
        os.environ.get("PL_GLOBAL_SEED"),
    )
    overrides = {"model.backbone": str(encoder), "trainer.max_epochs": 1, "seed_everything": 7}
    train(_rows(), out_dir=tmp_path / "run", config=TINY, overrides=overrides, progress=False)
    build_tiny_encoder(tmp_path / "enc", texts=["one two", "three four"], seed=5)
    after = (random.getstate(), np.random.get_state()[1], torch.get_rng_state(), os.environ.get("PL_GLOBAL_SEED"))
    assert before[0] == after[0]
    assert np.array_equal(before[1], after[1])
    assert torch.equal(before[2], after[2])
    assert before[3] == after[3]


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean", "mix"])
def test_an_ensemble_on_a_frozen_hugging_face_encoder_trains_and_loads(encoder, tmp_path, pooling):
    """The members' heads (with their mix) combine, and the encoder the checkpoint carries survives the members."""
    from precomet.estimator import load_estimator, predict_sources

    overrides = {"model.backbone": str(encoder), "model.fine_tune": False, "model.pooling": pooling}
    train(_rows(), out_dir=tmp_path / "o", config=TINY, overrides={**overrides, "model.ensemble": 2}, progress=False)
    estimator = load_estimator(tmp_path / "o")
    assert estimator.meta.ensemble is not None and estimator.meta.ensemble.members == 2
    assert (tmp_path / "o" / "encoder").is_dir() and not list((tmp_path / "o").glob("member-*"))
    assert np.isfinite(predict_sources(estimator, [r["src"] for r in _rows()[:5]])).all()


@pytest.mark.slow
def test_switching_a_frozen_config_to_fine_tuning_trains_one_network_whatever_its_ensemble(encoder, tmp_path):
    """``model.ensemble`` is a frozen encoder's key: a file's, left unread by ``--model.fine_tune true``, is unread."""
    frozen = tmp_path / "frozen.yaml"
    frozen.write_text(TINY.read_text().replace("fine_tune: true", "fine_tune: false\n  ensemble: 3"))
    overrides = {"model.backbone": str(encoder), "model.fine_tune": "true", "trainer.max_epochs": 1}
    train(_rows(), out_dir=tmp_path / "o", config=frozen, overrides=overrides, progress=False)
    meta = json.loads((tmp_path / "o" / "precomet.json").read_text())
    assert "ensemble" not in meta and "ensemble" not in meta["config"]["model"] and meta["config"]["model"]["fine_tune"]
    assert (tmp_path / "o" / "encoder").is_dir() and not list((tmp_path / "o").glob("member-*"))
