"""``train()``: target rows + a config -> a checkpoint directory (callable from tests and the demo).

One pipeline for every encoder. :func:`train` is a short sequence of steps, each a function that can be read and
tested alone (the lightning-hydra-template ``train(cfg)`` layout): :func:`split_rows` (rows -> train/dev
:class:`Split`), the config's :class:`~precomet.estimator.inputs.TrainingInputs` (the encoder's vectors once when
it is frozen, token ids when it is fine-tuned), then per ensemble member :func:`build_datamodule`,
:func:`checkpoint_meta` and :func:`build_module`, :func:`build_trainer` (callbacks, Trainer, gradient
accumulation), :func:`fit`, :func:`best_metrics` and the export (``precomet.json`` written once), and
:func:`combine_members` for several members. The data steps live in
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
import pytorch_lightning as pl
import torch
from safetensors.torch import load_file, save_file
from scipy.stats import kendalltau, pearsonr

from precomet.campaign import HUMAN, Campaign
from precomet.estimator.checkpoint import ENCODER, HEAD, META, head_network, read_meta, write_meta
from precomet.estimator.config import TrainConfig, load_config
from precomet.estimator.coverage import fit_coverage, write_coverage
from precomet.estimator.fitting import (
    best_metrics,
    build_module,
    build_trainer,
    check_trainer_settings,
    checkpoint_meta,
    export_best,
    fit,
)
from precomet.estimator.inputs import Split, TrainingInputs, build_datamodule, split_rows
from precomet.estimator.model import EnsembleHead
from precomet.estimator.targets import build_targets
from precomet.outputs.atomic import output_set
from precomet.outputs.paths import check_output


@dataclass(frozen=True)
class TrainResult:
    """Where the checkpoint went and how training went (``history``: one dict per validation epoch);
    ``main_process`` is false in the other processes of a multi-device run."""

    checkpoint_dir: Path
    best_ckpt: Path | None
    dev_metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0
    main_process: bool = True

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict (paths as text)."""
        best = None if self.best_ckpt is None else str(self.best_ckpt)
        return {
            "checkpoint_dir": str(self.checkpoint_dir),
            "best_ckpt": best,
            "dev_metrics": dict(self.dev_metrics),
            "history": [dict(epoch) for epoch in self.history],
            "seconds": self.seconds,
            "main_process": self.main_process,
        }


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """``pytorch_lightning.seed_everything(seed)`` for the block; Python's, numpy's and torch's global random
    generators and Lightning's seed variables are restored on exit, so training leaves the caller's state alone."""
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
) -> TrainResult:
    """Train an estimator on target rows (``precomet build-targets`` output) and write ``out_dir`` in the
    checkpoint directory format. Without ``dev_rows`` a dev split is taken by document or campaign.
    ``config`` and ``overrides``: docs/estimator.md, "Configuration".

    One pipeline whatever the encoder: the config's :class:`~precomet.estimator.inputs.TrainingInputs` encode the
    rows once (a frozen encoder's vectors are cached by its identity, so runs on the same encoder encode each
    source once), then each of the
    ``model.ensemble`` members (seed ``seed_everything`` + member, :func:`seeded`: the caller's random generators
    are restored afterwards) builds its network, data module, module and trainer, fits and exports; several
    members are combined into one checkpoint (:func:`combine_members`)."""
    started = time.perf_counter()
    check_output(out_dir, directory=True)
    cfg = load_config(config, overrides)
    check_trainer_settings(cfg, out_dir=Path(out_dir))
    kind = TrainingInputs(cfg)  # an unknown encoder is refused before any row is read
    seed = cfg.seed_everything
    members = 1 if cfg.model.fine_tune else cfg.model.ensemble  # an ensemble is of heads on one frozen encoder
    split = split_rows(train_rows, dev_rows, data=cfg.data, seed=seed)
    final_dir = Path(out_dir)
    with output_set() as out:  # a failed or interrupted run leaves nothing; a finished one everything
        work = out.directory(final_dir)
        runs, inputs = [], None  # the inputs are encoded inside the first member's seed (a network may need it)
        for member in range(members):
            member_dir = work if members == 1 else work / f"member-{member}"
            member_dir.mkdir(exist_ok=True)
            with seeded(seed + member):
                if inputs is None:
                    inputs = kind.encode(split, progress=progress)
                member_cfg = cfg.model_copy(update={"seed_everything": seed + member})
                runs.append(_fit_member(member_cfg, kind, split, inputs, member_dir, progress=progress))
        assert inputs is not None  # model.ensemble >= 1 (TrainConfig)
        dev_metrics, history, best, global_zero = runs[0]
        if members > 1 and global_zero:
            dev_metrics = combine_members(work, [work / f"member-{m}" for m in range(members)], inputs, split)
        vectors = kind.vectors(inputs)  # where the training sources lie, for predict's far-from-training warning
        if global_zero and vectors is not None:
            write_coverage(work, fit_coverage(vectors, seed=seed))
    return TrainResult(
        checkpoint_dir=final_dir,
        best_ckpt=final_dir / "lightning" / best.name,  # where it was moved
        dev_metrics=dev_metrics,
        history=history,
        seconds=time.perf_counter() - started,
        main_process=global_zero,
    )


def _fit_member(
    cfg: TrainConfig, kind: TrainingInputs, split: Split, inputs: Any, work: Path, *, progress: bool | None
) -> tuple[dict[str, float], list[dict[str, float]], Path, bool]:
    """Train one network on ``inputs`` (train, dev) into ``work``: ``(dev metrics, history, best Lightning
    checkpoint, whether this is the main process)``."""
    network = kind.network(cfg, inputs)
    data = build_datamodule(split, inputs, pad_id=kind.pad_id, data=cfg.data, seed=cfg.seed_everything)
    meta = checkpoint_meta(cfg, split, kind)
    module = build_module(network, cfg.model, fine_tune=kind.fine_tune, meta=meta)
    trainer, history = build_trainer(cfg, out_dir=work, has_dev=bool(split.dev), progress=progress)
    fit(trainer, module, data)
    dev_metrics = best_metrics(history, cfg.early_stopping, has_dev=bool(split.dev))
    best = export_best(trainer, work, extra_meta={"dev_metrics": dev_metrics, "history": history})
    return dev_metrics, history, best, trainer.is_global_zero


def combine_members(work: Path, member_dirs: Sequence[Path], inputs: Sequence[torch.Tensor], split: Any) -> dict:
    """Write the ensemble checkpoint into ``work`` from the member checkpoints in ``member_dirs`` (removed after):
    ``head.safetensors`` with every member's tensors under ``members.I.``, ``precomet.json`` with ``ensemble``
    (members, seeds, scaling, each member's dev metrics), the first member's Lightning logs. Returns the
    ensemble's dev metrics (Pearson and Kendall with the dev targets)."""
    metas = [read_meta(d) for d in member_dirs]
    heads = [load_file(str(d / HEAD)) for d in member_dirs]
    members, scaling = [], []
    for meta, state, folder in zip(metas, heads, member_dirs):
        member = head_network(state, meta, where=folder / HEAD)
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
    recorded = [m.as_dict() for m in metas]
    combined = {
        "members": len(member_dirs),
        "seeds": [m["config"]["seed_everything"] for m in recorded],
        "combination": "mean of member outputs standardised by their predictions on the training sources",
        "scaling": scaling,
        "member_dev_metrics": [m.get("dev_metrics", {}) for m in recorded],
    }
    first = {k: v for k, v in recorded[0].items() if k not in ("dev_metrics", "history")}  # its config: seed 0's
    write_meta(work / META, {**first, "ensemble": combined, "dev_metrics": dev_metrics})
    shutil.move(str(member_dirs[0] / "lightning"), str(work / "lightning"))
    if (member_dirs[0] / ENCODER).is_dir():  # a Hugging Face encoder the checkpoint carries: the same in every member
        shutil.move(str(member_dirs[0] / ENCODER), str(work / ENCODER))
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
        "model.backbone": encoder,
        "model.pooling": "mean",
        "model.fine_tune": False,
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
