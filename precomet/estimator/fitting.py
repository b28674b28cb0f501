"""The Lightning side of :func:`~precomet.estimator.training.train`: the checkpoint metadata and the
``EstimatorModule`` (:func:`checkpoint_meta`, :func:`build_module`), the Trainer (:func:`build_trainer`,
:func:`check_trainer_settings`), :func:`fit`, and the export of the best epoch (:func:`best_metrics`,
:func:`export_best`)."""

from __future__ import annotations

import logging
import math
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytorch_lightning as pl
import torch
from pytorch_lightning.utilities.exceptions import MisconfigurationException

from precomet.encoders.registry import model_folder
from precomet.errors import PrecometError
from precomet.estimator.backbone import POOLING
from precomet.estimator.checkpoint import export_lightning, packaged_encoder
from precomet.estimator.config import EarlyStoppingConfig, ModelConfig, TrainConfig, recorded_config
from precomet.estimator.data import TargetDataModule
from precomet.estimator.inputs import Split, TrainingInputs
from precomet.estimator.languages import training_profile
from precomet.estimator.leakage import SourceFingerprint
from precomet.estimator.model import EstimatorNetwork
from precomet.estimator.module import EstimatorModule
from precomet.estimator.targets import rows_hash
from precomet.progress import progress_enabled
from precomet.quiet import quiet_third_party

logger = logging.getLogger(__name__)


def _campaigns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every campaign a row came from (merged rows list several under ``campaigns``)."""
    return sorted({name for r in rows for name in r.get("campaigns", [r["campaign"]])})


def training_domains(rows: Sequence[dict[str, Any]]) -> dict[str, int] | None:
    """How many rows come from each ``domain`` (most first), or ``None`` when no row has one."""
    counts: dict[str, int] = {}
    for row in rows:
        if row.get("domain") is not None:
            counts[str(row["domain"])] = counts.get(str(row["domain"]), 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0]))) or None


def _history_callback(history: list[dict[str, float]]):
    class History(pl.Callback):
        def on_train_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
            logged = trainer.callback_metrics.items()
            metrics = {k: float(v) for k, v in logged if k.startswith(("val_", "train_loss_epoch"))}
            history.append({"epoch": trainer.current_epoch, **metrics})

    return History()


# ---------------------------------------------------------------------------------------------- module
def checkpoint_meta(cfg: TrainConfig, split: Split, inputs: TrainingInputs) -> dict[str, Any]:
    """The checkpoint metadata known before training (``precomet.json`` without ``dev_metrics`` and
    ``history``, which :func:`export_best` adds); stored in every Lightning ``.ckpt``. A registered encoder is
    recorded as ``backbone`` (its identity); a Hugging Face encoder read by tokens as ``encoder`` (the
    ``model.backbone`` given), with the installed package it was frozen from or the folder the export copies it
    from."""
    backbone = inputs.backbone
    package = None if backbone else packaged_encoder(inputs.spec, frozen=not inputs.fine_tune)
    encoder = (
        {"backbone": backbone}
        if backbone
        else {
            "encoder": inputs.spec,
            "encoder_package": package,
            "encoder_path": None if package else str(model_folder(inputs.spec).resolve()),
        }
    )
    return {
        "target": {"method": split.method, "normalisation": split.normalisations},
        "direction": "higher_first",
        "standardisation": {"mean": split.mean, "std": split.std},
        "pooling": POOLING if inputs.pooling == "encoder" else inputs.pooling,
        "hidden_sizes": list(cfg.model.hidden_sizes),
        "dropout": cfg.model.dropout,
        "max_length": inputs.max_length,
        **encoder,
        "training_sources": SourceFingerprint.of(r["src"] for part in (split.train, split.dev) for r in part).to_json(),
        "training_languages": training_profile(r["src"] for part in (split.train, split.dev) for r in part),
        "training_domains": training_domains([*split.train, *split.dev]),
        "training_data": {
            "hash": rows_hash(split.train),
            "rows": len(split.train),
            "dev_rows": len(split.dev),
            "campaigns": _campaigns(split.train),
            "dev_campaigns": _campaigns(split.dev),
        },
        "seed": cfg.seed_everything,
        "config": recorded_config(cfg),
    }


def build_module(
    network: EstimatorNetwork, model: ModelConfig, *, fine_tune: bool, meta: dict[str, Any]
) -> EstimatorModule:
    """The ``EstimatorModule`` (loss, optimiser groups, freezing) around ``network``; the encoder learning-rate
    settings apply only when ``fine_tune``."""
    return EstimatorModule(
        network,
        encoder_lr=model.encoder_lr,
        head_lr=model.head_lr,
        layerwise_decay=model.layerwise_decay,
        weight_decay=model.weight_decay,
        freeze_fraction=model.freeze_fraction if fine_tune else 0.0,
        fine_tune=fine_tune,
        meta=meta,
    )


# ---------------------------------------------------------------------------------------------- trainer
def build_trainer(
    cfg: TrainConfig,
    *,
    out_dir: Path,
    has_dev: bool,
    progress: bool | None = None,
) -> tuple[pl.Trainer, list[dict[str, float]]]:
    """``(pl.Trainer, history)``: the Trainer from ``cfg.trainer`` with the best-epoch checkpoint (under
    ``out_dir/lightning``), early stopping when there is a dev set, and gradient accumulation up to
    ``data.effective_batch_size``; ``history`` is filled with one dict per epoch during fitting. Settings
    Lightning refuses raise :class:`PrecometError`."""
    es = cfg.early_stopping
    monitor = es.monitor if has_dev else None
    history: list[dict[str, float]] = []
    ckpt = pl.callbacks.ModelCheckpoint(
        dirpath=out_dir / "lightning", filename="best-{epoch}", monitor=monitor, mode=es.mode, save_top_k=1
    )
    callbacks = [ckpt, _history_callback(history)]
    if monitor:
        callbacks.append(pl.callbacks.EarlyStopping(monitor=monitor, mode=es.mode, patience=es.patience))
    settings = cfg.trainer.model_dump()
    if settings["enable_progress_bar"] is None:
        settings["enable_progress_bar"] = progress_enabled(progress)
    settings = {k: v for k, v in settings.items() if v is not None}
    try:
        with quiet_third_party():
            trainer = pl.Trainer(
                **settings,
                callbacks=callbacks,
                logger=False,
                enable_model_summary=False,
                use_distributed_sampler=False,
                num_sanity_val_steps=0,
                default_root_dir=out_dir / "lightning",
            )
    except (MisconfigurationException, ModuleNotFoundError, ValueError, TypeError) as err:  # bad trainer.* values
        raise PrecometError(f"trainer settings {settings} are refused by Lightning: {err}") from None
    per_step = cfg.data.batch_size * max(trainer.world_size, 1)
    trainer.accumulate_grad_batches = max(1, math.ceil(cfg.data.effective_batch_size / per_step))
    return trainer, history


def check_trainer_settings(cfg: TrainConfig, *, out_dir: Path) -> None:
    """Refuse ``trainer.*`` settings that Lightning or this machine cannot run (an accelerator without its
    hardware, a device count of 0, an unknown precision or strategy, a strategy that spawns or forks its
    processes) before any data or encoder is loaded: a Trainer is built and dropped (it writes nothing)."""
    accelerator = str(cfg.trainer.accelerator)
    if accelerator in ("gpu", "cuda") and not torch.backends.cuda.is_built():
        raise PrecometError(
            f"trainer.accelerator {accelerator}: this torch build has no CUDA (torch {torch.__version__} is"
            " CPU-only); use trainer.accelerator cpu or auto"
        )
    trainer, _ = build_trainer(cfg, out_dir=out_dir, has_dev=True, progress=False)
    start = getattr(trainer.strategy, "_start_method", "popen")  # DDP's: "popen" re-runs the command per process
    if start != "popen":
        raise PrecometError(
            f"trainer.strategy {cfg.trainer.strategy} starts its processes with multiprocessing ({start}), which"
            " does not bring the epoch history back to precomet; use trainer.strategy ddp (from the command line or"
            " a script: the other processes re-run it)"
        )


# ---------------------------------------------------------------------------------------------- fit
def fit(trainer: pl.Trainer, module: EstimatorModule, data: TargetDataModule) -> None:
    """``trainer.fit``; Lightning's answer to Ctrl-C (``sys.exit(1)``) becomes a ``KeyboardInterrupt`` and the
    SIGINT handler it replaces is put back."""
    logger.info(
        "training on %d rows (dev %d), gradient accumulation %d",
        len(data.train_set),
        len(data.dev_set),
        trainer.accumulate_grad_batches,
    )
    main_thread = threading.current_thread() is threading.main_thread()
    sigint = signal.getsignal(signal.SIGINT) if main_thread else None
    try:
        with quiet_third_party():
            trainer.fit(module, datamodule=data)
    except SystemExit:  # Lightning turns Ctrl-C into sys.exit(1) after its own shutdown: report the interrupt
        raise KeyboardInterrupt from None
    finally:
        if main_thread and signal.getsignal(signal.SIGINT) is not sigint:  # Lightning ignores SIGINT after one
            signal.signal(signal.SIGINT, sigint)


# ---------------------------------------------------------------------------------------------- export
def best_metrics(
    history: list[dict[str, float]], early_stopping: EarlyStoppingConfig, *, has_dev: bool
) -> dict[str, float]:
    """The history entry of the best epoch by ``early_stopping.monitor`` (empty without a dev set)."""
    monitor = early_stopping.monitor
    scored = [h for h in history if monitor in h] if has_dev else []
    if not scored:
        return {}
    pick = max if early_stopping.mode == "max" else min
    return pick(scored, key=lambda h: h[monitor])


def best_checkpoint(trainer: pl.Trainer) -> str:
    """Path of the best epoch's ``.ckpt``; an error when training wrote none."""
    # the trainer is built with a ModelCheckpoint (Lightning types the property as the base class or None)
    best = cast("pl.callbacks.ModelCheckpoint", trainer.checkpoint_callback).best_model_path
    if not best:
        raise PrecometError("training produced no checkpoint (zero training batches?)")
    return best


def export_best(trainer: pl.Trainer, out_dir: Path, *, extra_meta: dict[str, Any]) -> Path:
    """Write the checkpoint directory files of the best ``.ckpt`` into ``out_dir`` (the temporary directory of
    an output set: ``precomet.json`` is written once, complete with ``extra_meta`` — ``dev_metrics`` and
    ``history`` —, and moved into place with the rest) through the one export,
    :func:`~precomet.estimator.checkpoint.export_lightning`. Only the global-zero process writes. Returns the
    ``.ckpt`` path."""
    best = best_checkpoint(trainer)
    if trainer.is_global_zero:
        with quiet_third_party():
            export_lightning(best, out_dir, extra_meta=extra_meta)
    return Path(best)
