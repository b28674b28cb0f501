"""``train()``: target rows + a config -> a checkpoint directory (callable from tests and the demo).

:func:`train` is a short sequence of steps, each a function that can be read and tested alone (the
lightning-hydra-template ``train(cfg)`` layout): :func:`split_rows` (rows -> train/dev :class:`Split`),
:func:`build_network` (encoder + head), :func:`encode_rows` (token ids, or cached features for a frozen
encoder), :func:`build_datamodule`, :func:`checkpoint_meta` and :func:`build_module`, :func:`build_trainer`
(callbacks, Trainer, gradient accumulation), :func:`fit`, :func:`best_metrics` and :func:`export_best`
(the checkpoint directory files, ``precomet.json`` written once). The data steps live in
:mod:`precomet.estimator.inputs`, the Lightning ones in :mod:`precomet.estimator.fitting`."""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from scipy.stats import kendalltau, pearsonr

from precomet.campaign import HUMAN, Campaign
from precomet.encoders import SentenceEncoder, get_encoder
from precomet.errors import PrecometError
from precomet.estimator.backbone import EnsembleHead, FeatureHead, encode_split
from precomet.estimator.checkpoint import HEAD, META, read_meta, write_meta
from precomet.estimator.config import load_config
from precomet.estimator.coverage import fit_coverage, write_coverage
from precomet.estimator.fitting import (
    best_metrics,
    build_module,
    build_network,
    build_trainer,
    check_trainer_settings,
    checkpoint_meta,
    export_best,
    export_best_head,
    fit,
)
from precomet.estimator.inputs import Network, Split, build_datamodule, encode_rows, split_rows
from precomet.estimator.targets import build_targets
from precomet.io.atomic import output_set
from precomet.io.output_paths import check_output


@dataclass(frozen=True)
class TrainResult:
    """Where the checkpoint went and how training went (``history``: one dict per validation epoch)."""

    checkpoint_dir: Path
    best_ckpt: Path | None
    dev_metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """``pytorch_lightning.seed_everything(seed)`` for the block; Python's, numpy's and torch's global random
    generators and Lightning's seed variables are restored on exit, so training leaves the caller's state alone."""
    import pytorch_lightning as pl
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    variables = {name: os.environ.get(name) for name in ("PL_GLOBAL_SEED", "PL_SEED_WORKERS")}
    with torch.random.fork_rng(devices=list(range(torch.cuda.device_count()))):
        pl.seed_everything(seed, workers=True, verbose=False)
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)
            for name, value in variables.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def train(
    train_rows: str | Path | Sequence[dict[str, Any]],
    *,
    out_dir: str | Path,
    dev_rows: str | Path | Sequence[dict[str, Any]] | None = None,
    config: str | Path | None = None,
    overrides: dict[str, Any] | None = None,
    progress: bool | None = None,
    feature_cache: dict[str, Any] | None = None,
) -> TrainResult:
    """Train an estimator on target rows (``precomet build-targets`` output) and write ``out_dir`` in the
    checkpoint directory format. Without ``dev_rows`` a dev split is taken by document or campaign.
    ``config`` and ``overrides``: docs/estimator.md, "Configuration".

    ``feature_cache`` ({source text: pooled features}) is read and filled when the encoder is frozen, so
    several runs with the same encoder, pooling and max length encode each source once.

    The steps below (rows, network, inputs, data module, module, trainer, fit, export) can each be called
    alone; this function runs them in order, seeding once before the network is built (:func:`seeded`: the
    caller's random generators are restored afterwards)."""
    started = time.perf_counter()
    check_output(out_dir, directory=True)
    cfg = load_config(config, overrides)
    check_trainer_settings(cfg, out_dir=Path(out_dir))
    seed = int(cfg["seed_everything"])
    encoder = _backbone_encoder(cfg["model"]["backbone"]) if cfg["model"]["backbone"] else None
    split = split_rows(train_rows, dev_rows, data=cfg["data"], seed=seed)
    final_dir = Path(out_dir)
    if encoder is not None:
        return _train_backbone(cfg, encoder, split, final_dir, started=started, progress=progress)
    with seeded(seed), output_set() as out:  # a failed or interrupted run leaves nothing; a finished one everything
        network = build_network(cfg["model"], max_length=int(cfg["data"]["max_length"]))
        inputs = encode_rows(
            network,
            split,
            freeze_encoder=bool(cfg["model"]["freeze_encoder"]),
            accelerator=cfg["trainer"]["accelerator"],
            feature_cache=feature_cache,
            progress=progress,
        )
        data = build_datamodule(split, inputs, pad_id=network.pad_id, data=cfg["data"], seed=seed)
        module = build_module(network, cfg["model"], meta=checkpoint_meta(cfg, split, network))
        work = out.directory(final_dir)
        trainer, history = build_trainer(cfg, out_dir=work, has_dev=bool(split.dev), progress=progress)
        fit(trainer, module, data)
        dev_metrics = best_metrics(history, cfg["early_stopping"], has_dev=bool(split.dev))
        best = export_best(trainer, work, dev_metrics=dev_metrics, history=history)
    return TrainResult(
        checkpoint_dir=final_dir,
        best_ckpt=final_dir / "lightning" / best.name,  # where it was moved
        dev_metrics=dev_metrics,
        history=history,
        seconds=time.perf_counter() - started,
    )


def _backbone_encoder(spec: str) -> SentenceEncoder:
    """The registered sentence encoder ``model.backbone`` names, resolved before any row is read."""
    try:
        return get_encoder(spec)
    except PrecometError as err:
        raise PrecometError(f"model.backbone {spec!r}: {err}") from None


def _train_backbone(
    cfg: dict[str, Any],
    encoder: SentenceEncoder,
    split: Split,
    final_dir: Path,
    *,
    started: float,
    progress: bool | None,
) -> TrainResult:
    """:func:`train` on a registered sentence encoder (``model.backbone``): vectors once, then the head; with
    ``model.ensemble`` K > 1, K heads (seeds ``seed_everything`` + 0 … K−1) combined in one checkpoint
    (:func:`combine_members`)."""
    data = cfg["data"]
    inputs = encode_split(encoder, (split.train, split.dev), cache_dir=data["cache_dir"] or None, progress=progress)
    members = int(cfg["model"]["ensemble"])
    seed = int(cfg["seed_everything"])
    with output_set() as out:  # all files or none, as train()
        work = out.directory(final_dir)
        runs = []
        for member in range(members):
            member_dir = work if members == 1 else work / f"member-{member}"
            member_dir.mkdir(exist_ok=True)
            member_cfg = {**cfg, "seed_everything": seed + member}
            runs.append(_train_head(member_cfg, encoder, split, inputs, member_dir, progress=progress))
        dev_metrics, history, best, global_zero = runs[0]
        if members > 1 and global_zero:
            dev_metrics = combine_members(work, [work / f"member-{m}" for m in range(members)], inputs, split)
            best = work / "lightning" / best.name
        if global_zero:  # where the training sources lie, for predict's far-from-training warning
            vectors = np.concatenate([part.numpy() for part in inputs if part.ndim == 2])
            write_coverage(work, fit_coverage(vectors, seed=seed))
    return TrainResult(
        checkpoint_dir=final_dir,
        best_ckpt=final_dir / "lightning" / best.name,
        dev_metrics=dev_metrics,
        history=history,
        seconds=time.perf_counter() - started,
    )


def _train_head(
    cfg: dict[str, Any],
    encoder: SentenceEncoder,
    split: Split,
    inputs: list[Any],
    work: Path,
    *,
    progress: bool | None,
) -> tuple[dict[str, float], list[dict[str, float]], Path, bool]:
    """Train one head on the encoder's vectors ``inputs`` (train, dev) into ``work``: ``(dev metrics, history,
    best Lightning checkpoint, whether this is the main process)``."""
    model, data, seed = cfg["model"], cfg["data"], int(cfg["seed_everything"])
    with seeded(seed):
        head = FeatureHead(encoder.dim, hidden_sizes=model["hidden_sizes"], dropout=float(model["dropout"]))
        head.fit_scaling(inputs[0])
        network = Network(model=head, tokenizer=None, max_length=0, pad_id=0)  # type: ignore[arg-type]
        datamodule = build_datamodule(split, (inputs[0], inputs[1]), pad_id=0, data=data, seed=seed)
        meta = checkpoint_meta(cfg, split, network, backbone={"spec": model["backbone"], **encoder.identity()})
        module = build_module(network, {**model, "freeze_encoder": True, "freeze_fraction": 0.0}, meta=meta)
        trainer, history = build_trainer(cfg, out_dir=work, has_dev=bool(split.dev), progress=progress)
        fit(trainer, module, datamodule)
        dev_metrics = best_metrics(history, cfg["early_stopping"], has_dev=bool(split.dev))
        best = export_best_head(trainer, work, meta={**meta, "dev_metrics": dev_metrics, "history": history})
    return dev_metrics, history, best, trainer.is_global_zero


def combine_members(work: Path, member_dirs: Sequence[Path], inputs: Sequence[torch.Tensor], split: Any) -> dict:
    """Write the ensemble checkpoint into ``work`` from the member checkpoints in ``member_dirs`` (removed after):
    ``head.safetensors`` with every member's tensors under ``members.I.``, ``precomet.json`` with ``ensemble``
    (members, seeds, scaling, each member's dev metrics), the first member's Lightning logs. Returns the
    ensemble's dev metrics (Pearson and Kendall with the dev targets)."""
    metas = [read_meta(d) for d in member_dirs]
    heads = [load_file(str(d / HEAD)) for d in member_dirs]
    members, scaling = [], []
    for meta, state in zip(metas, heads):
        member = FeatureHead(len(state["feature_mean"]), hidden_sizes=meta["hidden_sizes"], dropout=meta["dropout"])
        member.load_state_dict(state, strict=True)
        with torch.inference_mode():
            train_out = member.eval().score_features(inputs[0].float())
        scaling.append([float(train_out.mean()), max(float(train_out.std()), 1e-8)])
        members.append(member)
    ensemble = EnsembleHead(members, scaling)
    dev_metrics: dict[str, float] = {}
    if split.dev:
        with torch.inference_mode():
            predicted = ensemble.score_features(inputs[1].float()).double().numpy()
        target = split.standardised(split.dev)
        dev_metrics = {
            "val_pearson": float(pearsonr(predicted, target)[0]),
            "val_kendall": float(kendalltau(predicted, target)[0]),
        }
    save_file({f"members.{i}.{k}": v for i, state in enumerate(heads) for k, v in state.items()}, str(work / HEAD))
    meta = {k: v for k, v in metas[0].items() if k not in ("dev_metrics", "history")}
    meta["config"] = {**meta["config"], "seed_everything": metas[0]["config"]["seed_everything"]}
    meta["ensemble"] = {
        "members": len(member_dirs),
        "seeds": [m["config"]["seed_everything"] for m in metas],
        "combination": "mean of member outputs standardised by their predictions on the training sources",
        "scaling": scaling,
        "member_dev_metrics": [m.get("dev_metrics", {}) for m in metas],
    }
    meta["dev_metrics"] = dev_metrics
    write_meta(work / META, meta)
    shutil.move(str(member_dirs[0] / "lightning"), str(work / "lightning"))
    for folder in member_dirs:
        shutil.rmtree(folder)
    return dev_metrics


def train_on_campaigns(
    campaigns: Sequence[Campaign],
    *,
    out_dir: str | Path,
    method: str = "metric_var",
    metric: str = HUMAN,
    encoder: str = "minilm",
    max_epochs: int = 30,
    seed: int = 0,
    progress: bool | None = None,
) -> TrainResult:
    """Quick estimator for the demo: targets from ``campaigns`` (z-scored per campaign), frozen ``encoder``
    with cached features, head trained with lr 1e-3; dev = whole documents."""
    rows = build_targets(campaigns, method=method, metric=metric, normalisation="zscore", seed=seed)
    overrides = {
        "seed_everything": seed,
        "model.encoder": encoder,
        "model.freeze_encoder": True,
        "model.head_lr": 1e-3,
        "model.dropout": 0.1,
        "data.batch_size": 64,
        "data.effective_batch_size": 64,
        "data.max_length": 128,
        "trainer.max_epochs": max_epochs,
        "trainer.accelerator": "cpu",
        "early_stopping.patience": 5,
    }
    return train(rows, out_dir=out_dir, overrides=overrides, progress=progress)
