"""Estimators on a registered backbone (model.backbone): trained with Lightning on frozen vectors, saved without
the encoder, refused when the installed encoder differs, and used by predict like any checkpoint."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch
from scipy.stats import pearsonr

from precomet.errors import PrecometError
from precomet.estimator import load_estimator, predict_sources, train
from precomet.estimator.checkpoint import COVERAGE_PREFIX
from precomet.estimator.estimator import Reader

QUICK = {
    "model.backbone": "surface",
    "model.hidden_sizes": [16],
    "model.head_lr": 3e-3,
    "data.batch_size": 32,
    "data.effective_batch_size": 32,
    "trainer.max_epochs": 30,
    "trainer.accelerator": "cpu",
    "early_stopping.patience": 30,
    "seed_everything": 3,
}


def _source(rng: random.Random, i: int) -> tuple[str, float]:
    words = [rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(rng.randint(3, 12))]
    digits = rng.randint(0, 8)
    text = " ".join(words) + " " + "7" * digits + f" w{i}"
    return text, digits / 8  # the target is the number of digits: a surface feature the head can learn


def _rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        src, target = _source(rng, i)
        rows.append({"src": src, "target": target, "campaign": f"c{i % 2}", "doc": f"d{i}", "id": str(i)})
    return [{**r, "method": "metric_var", "normalisation": "zscore"} for r in rows]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("backbone") / "ckpt"
    train(_rows(300, 0), out_dir=out, overrides=QUICK, progress=False)
    return out


def test_learns_the_target_and_predicts_new_sources(checkpoint):
    estimator = load_estimator(checkpoint)
    assert isinstance(estimator.reader, Reader)
    test = _rows(100, 1)
    predicted = predict_sources(estimator, [r["src"] for r in test])
    assert pearsonr(predicted, [r["target"] for r in test])[0] > 0.8


def test_checkpoint_names_the_backbone_and_holds_no_encoder(checkpoint):
    meta = json.loads((checkpoint / "precomet.json").read_text())
    assert meta["backbone"] == {"name": "surface", "spec": "surface"} and meta["pooling"] == "sentence-encoder"
    assert not (checkpoint / "encoder").exists() and meta["training_sources"]["count"] == 300


def test_another_installed_encoder_version_is_refused(checkpoint, tmp_path):
    import shutil

    copy = tmp_path / "ckpt"
    shutil.copytree(checkpoint, copy)
    meta = json.loads((copy / "precomet.json").read_text())
    meta["backbone"]["version"] = "9.9"
    (copy / "precomet.json").write_text(json.dumps(meta))
    with pytest.raises(PrecometError, match="trained on"):
        load_estimator(copy)


def test_a_head_with_nan_is_refused(checkpoint, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    copy = tmp_path / "ckpt"
    shutil.copytree(checkpoint, copy)
    head = load_file(str(copy / "head.safetensors"))
    name = next(k for k in head if k.startswith("head."))
    head[name][0] = float("nan")
    save_file(head, str(copy / "head.safetensors"))
    with pytest.raises(PrecometError, match="non-finite"):
        load_estimator(copy)


def test_every_prediction_path_runs_a_backbone_estimator(checkpoint):
    """Issue 33: int8 and a device work with a sentence-encoder backbone as with a Hugging Face encoder: the
    same utilities whatever the batch size, int8 close to fp32."""
    sources = [r["src"] for r in _rows(23, 3)]
    plain = predict_sources(checkpoint, sources, batch_size=2)
    assert np.ptp(plain) > 0
    np.testing.assert_array_equal(predict_sources(checkpoint, sources, device="cpu", batch_size=7), plain)
    int8 = predict_sources(checkpoint, sources, precision="int8")
    assert pearsonr(int8, plain)[0] > 0.95 and not np.array_equal(int8, plain)


@pytest.mark.slow  # two spawned processes: ~10 s
def test_lightning_devices_run_a_backbone_estimator(checkpoint):
    """Issue 33: Lightning's devices (two spawned CPU processes, gloo) give a backbone estimator's utilities."""
    sources = [r["src"] for r in _rows(23, 3)]
    plain = predict_sources(checkpoint, sources, batch_size=2)
    spawned = predict_sources(checkpoint, sources, batch_size=2, devices=2, accelerator="cpu", strategy="ddp_spawn")
    np.testing.assert_allclose(spawned, plain, atol=1e-6)


def test_vectors_come_from_the_cache_on_a_second_run(tmp_path, monkeypatch):
    from precomet.encoders.surface import Surface

    calls: list[int] = []
    original = Surface._encode_batch
    monkeypatch.setattr(Surface, "_encode_batch", lambda self, texts: calls.append(len(texts)) or original(self, texts))
    overrides = {**QUICK, "trainer.max_epochs": 1, "data.cache_dir": str(tmp_path / "cache")}
    train(_rows(60, 2), out_dir=tmp_path / "a", overrides=overrides, progress=False)
    first = sum(calls)
    train(_rows(60, 2), out_dir=tmp_path / "b", overrides=overrides, progress=False)
    assert first == 60 and sum(calls) == 60
    assert np.isfinite(predict_sources(tmp_path / "b", ["x y z"])).all()


def test_training_records_where_its_sources_lie_and_predict_warns_far_from_them(checkpoint, tmp_path, caplog):
    import logging

    from precomet.cli import main
    from precomet.estimator.coverage import LEGACY, read_coverage

    coverage = read_coverage(checkpoint)
    assert not (checkpoint / LEGACY).exists() and coverage is not None  # in head.safetensors
    assert coverage["centroids"].shape[1] == load_estimator(checkpoint).reader.encoder.dim
    like = tmp_path / "like.txt"
    like.write_text("\n".join(r["src"] for r in _rows(60, 2)) + "\n")
    unlike = tmp_path / "unlike.txt"  # long lines of one repeated symbol: nothing like the training sources
    unlike.write_text("\n".join("%" * (200 + 40 * i) + f" {i}" for i in range(60)) + "\n")
    found = {}
    for data in (like, unlike):
        out = tmp_path / f"{data.stem}.jsonl"
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="precomet.estimator.coverage"):
            assert main(["predict", "--checkpoint", str(checkpoint), "--data", str(data), "-o", str(out)]) == 0
        signature = json.loads(out.read_text().splitlines()[0])["signature"]
        found[data.stem] = (signature["source_coverage"]["far_share"], [r.getMessage() for r in caplog.records])
    assert found["like"][0] < 0.05 and found["like"][1] == []
    assert found["unlike"][0] > 0.5 and "lie farther from its training sources" in found["unlike"][1][0]


@pytest.fixture(scope="module")
def ensemble_checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("ensemble") / "ckpt"
    result = train(_rows(300, 0), out_dir=out, overrides={**QUICK, "model.ensemble": 3}, progress=False)
    return out, result


@pytest.mark.slow  # over 2 s (make test-fast leaves it to make test)
def test_an_ensemble_checkpoint_holds_every_member_and_predicts_their_standardised_mean(ensemble_checkpoint, tmp_path):
    """Issue 31: model.ensemble K trains K heads (seeds seed_everything + 0..K-1) into one checkpoint; the first
    member is the single head of the same seed, and the prediction is the mean of the standardised members."""
    import json

    from safetensors.torch import load_file

    from precomet.estimator.model import EnsembleHead

    out, result = ensemble_checkpoint
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "head.safetensors", "lightning", "precomet.json"
    ]  # fmt: skip
    meta = json.loads((out / "precomet.json").read_text())
    assert meta["ensemble"]["members"] == 3 and meta["ensemble"]["seeds"] == [3, 4, 5]
    assert set(result.dev_metrics) == {"val_pearson", "val_kendall"} and result.dev_metrics["val_pearson"] > 0.8
    estimator = load_estimator(out)
    assert isinstance(estimator.model, EnsembleHead) and len(estimator.model.members) == 3
    test = [r["src"] for r in _rows(60, 1)]
    features = torch.from_numpy(estimator.reader.encoder.encode(test)).float()
    with torch.inference_mode():
        outputs = torch.stack([m.score_features(features) for m in estimator.model.members]).double().numpy()
    scaling = np.array(meta["ensemble"]["scaling"])
    expected = ((outputs - scaling[:, :1]) / scaling[:, 1:]).mean(0) * scaling[:, 1].mean() + scaling[:, 0].mean()
    std = meta["standardisation"]
    np.testing.assert_allclose(
        predict_sources(estimator, test), expected * std["std"] + std["mean"], rtol=1e-5, atol=1e-6
    )
    single = tmp_path / "single"
    train(_rows(300, 0), out_dir=single, overrides=QUICK, progress=False)
    heads = {"first": out / "head.safetensors", "alone": single / "head.safetensors"}  # the coverage aside
    weights = {
        name: {k: v for k, v in load_file(str(p)).items() if not k.startswith(COVERAGE_PREFIX)}
        for name, p in heads.items()
    }
    first = {k.removeprefix("members.0."): v for k, v in weights["first"].items()}
    alone = weights["alone"]
    assert all(torch.equal(first[k], alone[k]) for k in alone) and len(first) == 3 * len(alone)  # seed 3 = member 0


def test_a_damaged_ensemble_field_is_refused_by_name(ensemble_checkpoint, tmp_path):
    import json
    import shutil

    out, _ = ensemble_checkpoint
    for broken in ({"members": 3, "scaling": [[0, 1]] * 2}, {"members": 3, "scaling": [[0, 0]] * 3}, "three"):
        copy = tmp_path / f"c{len(list(tmp_path.iterdir()))}"
        shutil.copytree(out, copy)
        meta = json.loads((copy / "precomet.json").read_text())
        meta["ensemble"] = broken
        (copy / "precomet.json").write_text(json.dumps(meta))
        with pytest.raises(
            PrecometError, match=r"field 'ensemble(\.scaling)?' must be an object \{\"members\": N >= 2"
        ):
            load_estimator(copy)


def test_an_ensemble_of_fine_tuned_encoders_is_refused(tmp_path):
    overrides = {"model.backbone": "minilm", "model.fine_tune": True, "model.ensemble": 2}
    with pytest.raises(PrecometError, match=r"model.ensemble does not apply to a fine-tuned encoder.*fine_tune false"):
        train(_rows(20, 0), out_dir=tmp_path / "o", overrides=overrides, progress=False)
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # two CPU processes started by Lightning's ddp launcher: ~30 s
def test_train_on_two_ddp_processes_from_the_command_line(tmp_path):
    """``precomet train --trainer.devices 2 --trainer.strategy ddp``: 40 rows make one batch of 128, fewer batches than
    processes (each got none: "training produced no checkpoint"); the checkpoint and its epoch history are written
    once, the main process alone reports, and Lightning's advice to sync epoch metrics across devices is not shown."""
    import os
    import subprocess
    import sys

    rows = tmp_path / "t.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in _rows(40, 5)), encoding="utf-8")
    out = tmp_path / "ckpt"
    command = [sys.executable, "-m", "precomet", "--no-progress", "--no-cache", "train", "--train", str(rows)]
    command += ["-o", str(out), "--model.backbone", "surface", "--trainer.max_epochs", "2", "--trainer.devices", "2"]
    command += ["--trainer.accelerator", "cpu", "--trainer.strategy", "ddp"]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "NODE_RANK", "WORLD_SIZE")}
    env = {k: v for k, v in env.items() if not k.startswith(("SLURM_", "MASTER_"))}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("no --config") == 1 and done.stdout.count(f"wrote {out}") == 1, done.stdout
    assert "sync_dist" not in done.stderr and "zero" not in done.stderr, done.stderr
    meta = json.loads((out / "precomet.json").read_text(encoding="utf-8"))
    assert len(meta["history"]) == 2 and "val_pearson" in meta["dev_metrics"]
    assert sorted(p.name for p in out.iterdir()) == ["head.safetensors", "lightning", "precomet.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt", "t.jsonl"]  # no staging folder left behind


def test_precomet_export_writes_a_backbone_checkpoint_through_the_one_export(checkpoint, tmp_path):
    """One export: the best Lightning ``.ckpt`` of a backbone estimator becomes the directory ``train`` wrote."""
    from precomet.estimator import export_checkpoint

    best = next((checkpoint / "lightning").glob("*.ckpt"))
    exported = export_checkpoint(best, tmp_path / "exported")
    assert not (exported / "encoder").exists()  # a registered encoder is never copied
    sources = [r["src"] for r in _rows(40, 2)]
    np.testing.assert_array_equal(predict_sources(exported, sources), predict_sources(checkpoint, sources))
