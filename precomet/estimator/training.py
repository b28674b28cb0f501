"""``train()``: target rows + a config -> a checkpoint directory (callable from tests and the demo)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from precomet.campaign import HUMAN, Campaign
from precomet.errors import PrecometError
from precomet.estimator.config import load_config
from precomet.estimator.leakage import SourceFingerprint, drop_sources
from precomet.estimator.targets import (
    build_targets,
    read_targets,
    rows_hash,
    validate_rows,
)
from precomet.io.atomic import check_output, output_set
from precomet.quiet import quiet_third_party

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainResult:
    """Where the checkpoint went and how training went (``history``: one dict per validation epoch)."""

    checkpoint_dir: Path
    best_ckpt: Path | None
    dev_metrics: dict[str, float]
    history: list[dict[str, float]] = field(default_factory=list)
    seconds: float = 0.0


def _rows(value: str | Path | Sequence[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    return read_targets(value) if isinstance(value, (str, Path)) else validate_rows(list(value), where=where)


def _campaigns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every campaign a row came from (merged rows list several under ``campaigns``)."""
    return sorted({name for r in rows for name in r.get("campaigns", [r["campaign"]])})


def _history_callback(history: list[dict[str, float]]):
    import pytorch_lightning as pl

    class History(pl.Callback):
        def on_train_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
            metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith(("val_", "train_loss_epoch"))}
            history.append({"epoch": trainer.current_epoch, **metrics})

    return History()


def train(
    train_rows: str | Path | Sequence[dict[str, Any]], *, out_dir: str | Path, dev_rows: str | Path | Sequence[dict[str, Any]] | None = None,
    config: str | Path | None = None, overrides: dict[str, Any] | None = None, progress: bool | None = None,
    feature_cache: dict[str, Any] | None = None,
) -> TrainResult:
    """Train an estimator on target rows (``precomet build-targets`` output) and write ``out_dir`` in the
    checkpoint directory format. Without ``dev_rows`` a dev split is taken by document or campaign.

    ``feature_cache`` ({source text: pooled features}) is read and filled when the encoder is frozen, so
    several runs with the same encoder, pooling and max length encode each source once."""
    import pytorch_lightning as pl
    import torch

    from precomet.estimator.checkpoint import packaged_encoder
    from precomet.estimator.data import (
        TargetDataModule,
        group_split,
        tokenize,
        warn_truncated,
    )
    from precomet.estimator.model import UtilityEstimator, load_encoder, resolve_model
    from precomet.estimator.module import EstimatorModule
    from precomet.estimator.predict import compute_features

    started = time.perf_counter()
    check_output(out_dir, directory=True)
    cfg = load_config(config, overrides)
    mcfg, dcfg, tcfg = cfg["model"], cfg["data"], dict(cfg["trainer"])
    seed = int(cfg["seed_everything"])
    rows = _rows(train_rows, "train")
    methods = sorted({str(r.get("method", "unknown")) for r in rows})
    if len(methods) > 1:
        raise PrecometError(f"targets mix several utility methods {methods}; train one estimator per method")
    if dev_rows is None:
        train_idx, dev_idx = group_split(rows, by=dcfg["group_by"], fraction=float(dcfg["dev_fraction"]), seed=seed) if dcfg["dev_fraction"] > 0 else (np.arange(len(rows)), np.array([], dtype=int))
        train_set, dev_set = [rows[i] for i in train_idx], [rows[i] for i in dev_idx]
    else:
        dev_set = _rows(dev_rows, "dev")
        train_set, dropped = drop_sources(rows, [r["src"] for r in dev_set])
        if dropped:
            logger.warning("dropped %d training rows whose source text is also in the dev rows", dropped)
        if not train_set:
            raise PrecometError("every training row shares its source text with a dev row")
    y = np.array([r["target"] for r in train_set], dtype=float)
    mean, std = float(y.mean()), float(y.std()) or 1.0

    pl.seed_everything(seed, workers=True, verbose=False)
    encoder, tokenizer = load_encoder(mcfg["encoder"])
    model = UtilityEstimator(encoder, pooling=mcfg["pooling"], hidden_sizes=tuple(mcfg["hidden_sizes"]), dropout=float(mcfg["dropout"]))
    limit = getattr(tokenizer, "model_max_length", None)
    max_length = int(min(dcfg["max_length"], limit)) if isinstance(limit, int) and limit < 100_000 else int(dcfg["max_length"])
    pad_id = tokenizer.pad_token_id or 0
    inputs = []
    for part in (train_set, dev_set):
        ids, n_truncated = tokenize(tokenizer, [r["src"] for r in part], max_length=max_length) if part else ([], 0)
        warn_truncated(n_truncated, len(part), max_length)
        inputs.append(ids)
    accelerator = tcfg["accelerator"]
    if mcfg["freeze_encoder"]:  # encode once; only the head (and scalar mix) is trained
        device = "cuda" if accelerator in ("auto", "gpu", "cuda") and torch.cuda.is_available() else "cpu"
        model.to(device)
        cache = {} if feature_cache is None else feature_cache
        for part, ids in zip((train_set, dev_set), inputs):
            first: dict[str, int] = {}  # each distinct uncached source is encoded once
            for i, r in enumerate(part):
                if r["src"] not in cache:
                    first.setdefault(r["src"], i)
            if first:
                fresh = compute_features(model, [ids[i] for i in first.values()], pad_id=pad_id, batch_size=64, device=device, progress=progress)
                cache.update(zip(first, fresh))
        inputs = [torch.stack([cache[r["src"]] for r in part]) if part else torch.empty(0) for part in (train_set, dev_set)]
        model.to("cpu")
    standardise = lambda part: (np.array([r["target"] for r in part], dtype=float) - mean) / std
    data = TargetDataModule(
        train_inputs=inputs[0], train_targets=standardise(train_set), dev_inputs=inputs[1], dev_targets=standardise(dev_set),
        pad_id=pad_id, batch_size=int(dcfg["batch_size"]), bucket_batches=int(dcfg["bucket_batches"]),
        num_workers=int(dcfg["num_workers"]), seed=seed,
    )
    package = packaged_encoder(mcfg["encoder"], frozen=bool(mcfg["freeze_encoder"]))
    meta = {
        "target": {"method": methods[0], "normalisation": sorted({str(r.get("normalisation", "unknown")) for r in rows})},
        "direction": "higher_first", "standardisation": {"mean": mean, "std": std},
        "pooling": mcfg["pooling"], "hidden_sizes": list(mcfg["hidden_sizes"]), "dropout": float(mcfg["dropout"]),
        "max_length": max_length, "encoder": mcfg["encoder"], "encoder_package": package,
        "encoder_path": None if package else str(resolve_model(mcfg["encoder"]).resolve()),
        "training_sources": SourceFingerprint.of(r["src"] for part in (train_set, dev_set) for r in part).to_json(),
        "training_data": {
            "hash": rows_hash(train_set), "rows": len(train_set), "dev_rows": len(dev_set),
            "campaigns": _campaigns(train_set), "dev_campaigns": _campaigns(dev_set),
        },
        "seed": seed, "config": cfg,
    }
    module = EstimatorModule(
        model, encoder_lr=float(mcfg["encoder_lr"]), head_lr=float(mcfg["head_lr"]), layerwise_decay=float(mcfg["layerwise_decay"]),
        weight_decay=float(mcfg["weight_decay"]), freeze_fraction=float(mcfg["freeze_fraction"]),
        freeze_encoder=bool(mcfg["freeze_encoder"]), meta=meta,
    )
    final_dir = Path(out_dir)
    with output_set() as out:  # an interrupted or failed run leaves nothing behind; a finished one everything
        work = out.directory(final_dir)
        result = _fit(module, data, cfg, tcfg, len(train_set), dev_set, work, progress)
    best = final_dir / "lightning" / Path(result.best_ckpt).name  # where ModelCheckpoint wrote it, once moved into place
    return TrainResult(checkpoint_dir=final_dir, best_ckpt=best, dev_metrics=result.dev_metrics, history=result.history,
                       seconds=time.perf_counter() - started)


def _fit(
    module, data, cfg: dict[str, Any], tcfg: dict[str, Any], n_train: int, dev_set: list, out_dir: Path, progress: bool | None,
) -> TrainResult:
    """Fit with Lightning into ``out_dir`` and write the checkpoint files there."""
    import signal
    import threading

    import pytorch_lightning as pl
    from lightning_fabric.utilities.exceptions import MisconfigurationException

    from precomet.estimator.checkpoint import read_lightning_checkpoint, write_checkpoint_files

    dcfg = cfg["data"]
    history: list[dict[str, float]] = []
    es = cfg["early_stopping"]
    monitor = es["monitor"] if dev_set else None
    ckpt = pl.callbacks.ModelCheckpoint(dirpath=out_dir / "lightning", filename="best-{epoch}", monitor=monitor, mode=es["mode"], save_top_k=1)
    callbacks = [ckpt, _history_callback(history)]
    if monitor:
        callbacks.append(pl.callbacks.EarlyStopping(monitor=monitor, mode=es["mode"], patience=int(es["patience"])))
    if tcfg["enable_progress_bar"] is None:
        import sys

        tcfg["enable_progress_bar"] = sys.stderr.isatty() if progress is None else progress
    tcfg = {k: v for k, v in tcfg.items() if v is not None}
    try:
        with quiet_third_party():
            trainer = pl.Trainer(
                **tcfg, callbacks=callbacks, logger=False, enable_model_summary=False, use_distributed_sampler=False,
                num_sanity_val_steps=0, default_root_dir=out_dir / "lightning",
            )
    except (MisconfigurationException, ModuleNotFoundError, ValueError, TypeError) as err:  # bad trainer.* values
        raise PrecometError(f"trainer settings {tcfg} are refused by Lightning: {err}") from None
    per_step = int(dcfg["batch_size"]) * max(trainer.world_size, 1)
    trainer.accumulate_grad_batches = max(1, math.ceil(int(dcfg["effective_batch_size"]) / per_step))
    logger.info("training on %d rows (dev %d), gradient accumulation %d", n_train, len(dev_set), trainer.accumulate_grad_batches)
    main_thread = threading.current_thread() is threading.main_thread()
    sigint = signal.getsignal(signal.SIGINT) if main_thread else None
    try:
        with quiet_third_party():
            trainer.fit(module, datamodule=data)
    except SystemExit:  # Lightning turns Ctrl-C into sys.exit(1) after its own shutdown: report it as the interrupt it was
        raise KeyboardInterrupt from None
    finally:
        if main_thread and signal.getsignal(signal.SIGINT) is not sigint:  # Lightning ignores SIGINT after an interrupt
            signal.signal(signal.SIGINT, sigint)
    best = Path(ckpt.best_model_path) if ckpt.best_model_path else None
    if best is None:
        raise PrecometError("training produced no checkpoint (zero training batches?)")
    dev_metrics: dict[str, float] = {}
    if monitor and history:
        scored = [h for h in history if monitor in h]
        if scored:
            pick = max if es["mode"] == "max" else min
            dev_metrics = pick(scored, key=lambda h: h[monitor])
    if trainer.is_global_zero:
        with quiet_third_party():
            model, tokenizer, meta = read_lightning_checkpoint(best, extra_meta={"dev_metrics": dev_metrics, "history": history})
            write_checkpoint_files(out_dir, model=model, tokenizer=tokenizer, meta=meta)
    return TrainResult(checkpoint_dir=out_dir, best_ckpt=best, dev_metrics=dev_metrics, history=history)


def train_on_campaigns(
    campaigns: Sequence[Campaign], *, out_dir: str | Path, method: str = "metric_var", score: str = HUMAN,
    encoder: str = "minilm", max_epochs: int = 30, seed: int = 0, progress: bool | None = None,
) -> TrainResult:
    """Quick estimator for the demo: targets from ``campaigns`` (z-scored per campaign), frozen ``encoder``
    with cached features, head trained with lr 1e-3; dev = whole documents."""
    rows = build_targets(campaigns, method=method, score=score, normalisation="zscore", seed=seed)
    overrides = {
        "seed_everything": seed, "model.encoder": encoder, "model.freeze_encoder": True, "model.head_lr": 1e-3,
        "model.dropout": 0.1, "data.batch_size": 64, "data.effective_batch_size": 64, "data.max_length": 128,
        "trainer.max_epochs": max_epochs, "trainer.accelerator": "cpu", "early_stopping.patience": 5,
    }
    return train(rows, out_dir=out_dir, overrides=overrides, progress=progress)
