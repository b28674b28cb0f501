"""``train()``: target rows + a config -> a checkpoint directory (callable from tests and the demo).

:func:`train` is a short sequence of steps, each a function that can be read and tested alone (the
lightning-hydra-template ``train(cfg)`` layout): :func:`split_rows` (rows -> train/dev :class:`Split`),
:func:`build_network` (encoder + head), :func:`encode_rows` (token ids, or cached features for a frozen
encoder), :func:`build_datamodule`, :func:`checkpoint_meta` and :func:`build_module`, :func:`build_trainer`
(callbacks, Trainer, gradient accumulation), :func:`fit`, :func:`best_metrics` and :func:`export_best`
(the checkpoint directory files, ``precomet.json`` written once)."""

from __future__ import annotations

import logging
import math
import os
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

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
from precomet.progress import progress_enabled
from precomet.quiet import quiet_third_party

if TYPE_CHECKING:
    import pytorch_lightning as pl

    from precomet.estimator.data import TargetDataModule
    from precomet.estimator.model import UtilityEstimator
    from precomet.estimator.module import EstimatorModule

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


def _campaigns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Every campaign a row came from (merged rows list several under ``campaigns``)."""
    return sorted({name for r in rows for name in r.get("campaigns", [r["campaign"]])})


def _history_callback(history: list[dict[str, float]]):
    import pytorch_lightning as pl

    class History(pl.Callback):
        def on_train_epoch_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
            logged = trainer.callback_metrics.items()
            metrics = {k: float(v) for k, v in logged if k.startswith(("val_", "train_loss_epoch"))}
            history.append({"epoch": trainer.current_epoch, **metrics})

    return History()


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
    split = split_rows(train_rows, dev_rows, data=cfg["data"], seed=seed)
    final_dir = Path(out_dir)
    if cfg["model"]["backbone"]:
        return _train_backbone(cfg, split, final_dir, started=started, progress=progress)
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


def _train_backbone(
    cfg: dict[str, Any], split: Split, final_dir: Path, *, started: float, progress: bool | None
) -> TrainResult:
    """:func:`train` on a registered sentence encoder (``model.backbone``): vectors once, then the head."""
    from precomet.encoders import get_encoder
    from precomet.estimator.backbone import FeatureHead, encode_split

    model, data = cfg["model"], cfg["data"]
    try:
        encoder = get_encoder(model["backbone"])
    except PrecometError as err:
        raise PrecometError(f"model.backbone {model['backbone']!r}: {err}") from None
    inputs = encode_split(encoder, (split.train, split.dev), cache_dir=data["cache_dir"] or None, progress=progress)
    with seeded(int(cfg["seed_everything"])), output_set() as out:  # all files or none, as train()
        head = FeatureHead(encoder.dim, hidden_sizes=model["hidden_sizes"], dropout=float(model["dropout"]))
        head.fit_scaling(inputs[0])
        network = Network(model=head, tokenizer=None, max_length=0, pad_id=0)  # type: ignore[arg-type]
        datamodule = build_datamodule(
            split, (inputs[0], inputs[1]), pad_id=0, data=data, seed=int(cfg["seed_everything"])
        )
        meta = checkpoint_meta(cfg, split, network, backbone={"spec": model["backbone"], **encoder.identity()})
        module = build_module(network, {**model, "freeze_encoder": True, "freeze_fraction": 0.0}, meta=meta)
        work = out.directory(final_dir)
        trainer, history = build_trainer(cfg, out_dir=work, has_dev=bool(split.dev), progress=progress)
        fit(trainer, module, datamodule)
        dev_metrics = best_metrics(history, cfg["early_stopping"], has_dev=bool(split.dev))
        best = export_best_head(trainer, work, meta={**meta, "dev_metrics": dev_metrics, "history": history})
    return TrainResult(
        checkpoint_dir=final_dir,
        best_ckpt=final_dir / "lightning" / best.name,
        dev_metrics=dev_metrics,
        history=history,
        seconds=time.perf_counter() - started,
    )


# ---------------------------------------------------------------------------------------------- data: rows
@dataclass(frozen=True)
class Split:
    """The training and dev rows of one run (``dev`` may be empty), the utility method they share, the
    normalisations named by the given training rows, and the mean and standard deviation of the training
    targets (the standardisation stored in the checkpoint)."""

    train: list[dict[str, Any]]
    dev: list[dict[str, Any]]
    method: str
    normalisations: list[str]
    mean: float
    std: float

    def standardised(self, rows: Sequence[dict[str, Any]]) -> np.ndarray:
        """Targets of ``rows`` (``self.train`` or ``self.dev``) standardised with the training statistics."""
        return (np.array([r["target"] for r in rows], dtype=float) - self.mean) / self.std


def split_rows(
    train_rows: str | Path | Sequence[dict[str, Any]],
    dev_rows: str | Path | Sequence[dict[str, Any]] | None,
    *,
    data: dict[str, Any],
    seed: int,
) -> Split:
    """Read and check the rows (a targets JSONL path or row dicts); one utility method only. Without
    ``dev_rows`` the dev split is ``data["dev_fraction"]`` of the rows by ``data["group_by"]``
    (:func:`~precomet.estimator.data.group_split`); with them, training rows sharing a dev source, or a sentence
    or long run of one (:func:`~precomet.estimator.leakage.drop_sources`), are dropped."""
    from precomet.estimator.data import group_split

    rows = _rows(train_rows, "train")
    methods = sorted({str(r.get("method", "unknown")) for r in rows})
    if len(methods) > 1:
        raise PrecometError(f"targets mix several utility methods {methods}; train one estimator per method")
    if dev_rows is None:
        if data["dev_fraction"] > 0:
            train_idx, dev_idx = group_split(rows, by=data["group_by"], fraction=float(data["dev_fraction"]), seed=seed)
        else:
            train_idx, dev_idx = np.arange(len(rows)), np.array([], dtype=int)
        train_set, dev_set = [rows[i] for i in train_idx], [rows[i] for i in dev_idx]
    else:
        dev_set = _rows(dev_rows, "dev")
        train_set, dropped = drop_sources(rows, [r["src"] for r in dev_set])
        if dropped:
            logger.warning(
                "dropped %d training rows whose source text, or a sentence or passage of it, is also in the dev rows",
                dropped,
            )
        if not train_set:
            raise PrecometError(
                "every training row shares its source text, or a sentence or passage of it, with a dev row"
            )
    y = np.array([r["target"] for r in train_set], dtype=float)
    return Split(
        train=train_set,
        dev=dev_set,
        method=methods[0],
        mean=float(y.mean()),
        std=float(y.std()) or 1.0,
        normalisations=sorted({str(r.get("normalisation", "unknown")) for r in rows}),
    )


# ---------------------------------------------------------------------------------------------- module: network
@dataclass(frozen=True)
class Network:
    """The network to train (encoder + head), its tokenizer, the token limit per source and the padding id."""

    model: UtilityEstimator
    tokenizer: Any
    max_length: int
    pad_id: int


def build_network(model: dict[str, Any], *, max_length: int) -> Network:
    """Load ``model["encoder"]`` (offline) and put a freshly initialised head on it (seed first, for a
    reproducible head); ``max_length`` is capped by the tokenizer's own limit."""
    from precomet.estimator.checkpoint import encoder_token_limit
    from precomet.estimator.model import UtilityEstimator, load_encoder

    encoder, tokenizer = load_encoder(model["encoder"])
    network = UtilityEstimator(
        encoder, pooling=model["pooling"], hidden_sizes=tuple(model["hidden_sizes"]), dropout=float(model["dropout"])
    )
    limit = encoder_token_limit(encoder, tokenizer)  # the tokenizer's limit and the position embeddings
    if limit is not None and max_length > limit:
        logger.warning("data.max_length %d is beyond what the encoder reads: capped at %d tokens", max_length, limit)
        max_length = limit
    return Network(model=network, tokenizer=tokenizer, max_length=int(max_length), pad_id=tokenizer.pad_token_id or 0)


# ---------------------------------------------------------------------------------------------- data: inputs
def encode_rows(
    network: Network,
    split: Split,
    *,
    freeze_encoder: bool,
    accelerator: str = "cpu",
    feature_cache: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> tuple[Any, Any]:
    """``(train inputs, dev inputs)``: token ids per row (truncated sources counted in a warning); with a
    frozen encoder, pooled features per row instead (a tensor), each distinct source not in ``feature_cache``
    encoded once and added to it. Features are computed on the GPU when ``accelerator`` allows one."""
    import torch

    from precomet.estimator.data import tokenize, warn_truncated
    from precomet.estimator.predict import compute_features

    parts = (split.train, split.dev)
    inputs = []
    for part in parts:
        ids, n_truncated = (
            ([], 0)
            if not part
            else tokenize(network.tokenizer, [r["src"] for r in part], max_length=network.max_length)
        )
        warn_truncated(n_truncated, len(part), network.max_length)
        inputs.append(ids)
    if not freeze_encoder:
        return inputs[0], inputs[1]
    use_gpu = accelerator in ("auto", "gpu", "cuda") and torch.cuda.is_available()
    device = "cuda" if use_gpu else "cpu"
    network.model.to(device)
    cache = {} if feature_cache is None else feature_cache
    for part, ids in zip(parts, inputs):
        first: dict[str, int] = {}  # each distinct uncached source is encoded once
        for i, r in enumerate(part):
            if r["src"] not in cache:
                first.setdefault(r["src"], i)
        if first:
            fresh = compute_features(
                network.model,
                [ids[i] for i in first.values()],
                pad_id=network.pad_id,
                batch_size=64,
                device=device,
                progress=progress,
            )
            cache.update(zip(first, fresh))
    network.model.to("cpu")
    features = [torch.stack([cache[r["src"]] for r in part]) if part else torch.empty(0) for part in parts]
    return features[0], features[1]


# ---------------------------------------------------------------------------------------------- data: module
def build_datamodule(
    split: Split,
    inputs: tuple[Any, Any],
    *,
    pad_id: int,
    data: dict[str, Any],
    seed: int,
) -> TargetDataModule:
    """The ``TargetDataModule`` over :func:`encode_rows`' inputs and the standardised targets."""
    from precomet.estimator.data import TargetDataModule

    return TargetDataModule(
        train_inputs=inputs[0],
        train_targets=split.standardised(split.train),
        dev_inputs=inputs[1],
        dev_targets=split.standardised(split.dev),
        pad_id=pad_id,
        batch_size=int(data["batch_size"]),
        bucket_batches=int(data["bucket_batches"]),
        num_workers=int(data["num_workers"]),
        seed=seed,
    )


# ---------------------------------------------------------------------------------------------- module
def checkpoint_meta(
    cfg: dict[str, Any], split: Split, network: Network, *, backbone: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The checkpoint metadata known before training (``precomet.json`` without ``dev_metrics`` and
    ``history``, which :func:`export_best` adds); stored in every Lightning ``.ckpt``. With ``backbone`` (the
    registered encoder's identity) no Hugging Face encoder is involved."""
    from precomet.estimator.backbone import POOLING
    from precomet.estimator.checkpoint import packaged_encoder
    from precomet.estimator.model import resolve_model

    model = cfg["model"]
    package = None if backbone else packaged_encoder(model["encoder"], frozen=bool(model["freeze_encoder"]))
    encoder = (
        {"backbone": backbone}
        if backbone
        else {
            "encoder": model["encoder"],
            "encoder_package": package,
            "encoder_path": None if package else str(resolve_model(model["encoder"]).resolve()),
        }
    )
    return {
        "target": {"method": split.method, "normalisation": split.normalisations},
        "direction": "higher_first",
        "standardisation": {"mean": split.mean, "std": split.std},
        "pooling": POOLING if backbone else model["pooling"],
        "hidden_sizes": list(model["hidden_sizes"]),
        "dropout": float(model["dropout"]),
        "max_length": network.max_length,
        **encoder,
        "training_sources": SourceFingerprint.of(r["src"] for part in (split.train, split.dev) for r in part).to_json(),
        "training_data": {
            "hash": rows_hash(split.train),
            "rows": len(split.train),
            "dev_rows": len(split.dev),
            "campaigns": _campaigns(split.train),
            "dev_campaigns": _campaigns(split.dev),
        },
        "seed": int(cfg["seed_everything"]),
        "config": cfg,
    }


def build_module(network: Network, model: dict[str, Any], *, meta: dict[str, Any]) -> EstimatorModule:
    """The ``EstimatorModule`` (loss, optimiser groups, freezing) around ``network.model``."""
    from precomet.estimator.module import EstimatorModule

    return EstimatorModule(
        network.model,
        encoder_lr=float(model["encoder_lr"]),
        head_lr=float(model["head_lr"]),
        layerwise_decay=float(model["layerwise_decay"]),
        weight_decay=float(model["weight_decay"]),
        freeze_fraction=float(model["freeze_fraction"]),
        freeze_encoder=bool(model["freeze_encoder"]),
        meta=meta,
    )


# ---------------------------------------------------------------------------------------------- trainer
def build_trainer(
    cfg: dict[str, Any],
    *,
    out_dir: Path,
    has_dev: bool,
    progress: bool | None = None,
) -> tuple[pl.Trainer, list[dict[str, float]]]:
    """``(pl.Trainer, history)``: the Trainer from ``cfg["trainer"]`` with the best-epoch checkpoint (under
    ``out_dir/lightning``), early stopping when there is a dev set, and gradient accumulation up to
    ``data.effective_batch_size``; ``history`` is filled with one dict per epoch during fitting. Settings
    Lightning refuses raise :class:`PrecometError`."""

    import pytorch_lightning as pl
    from pytorch_lightning.utilities.exceptions import MisconfigurationException

    es = cfg["early_stopping"]
    monitor = es["monitor"] if has_dev else None
    history: list[dict[str, float]] = []
    ckpt = pl.callbacks.ModelCheckpoint(
        dirpath=out_dir / "lightning", filename="best-{epoch}", monitor=monitor, mode=es["mode"], save_top_k=1
    )
    callbacks = [ckpt, _history_callback(history)]
    if monitor:
        callbacks.append(pl.callbacks.EarlyStopping(monitor=monitor, mode=es["mode"], patience=int(es["patience"])))
    settings = dict(cfg["trainer"])
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
    per_step = int(cfg["data"]["batch_size"]) * max(trainer.world_size, 1)
    trainer.accumulate_grad_batches = max(1, math.ceil(int(cfg["data"]["effective_batch_size"]) / per_step))
    return trainer, history


def check_trainer_settings(cfg: dict[str, Any], *, out_dir: Path) -> None:
    """Refuse ``trainer.*`` settings that Lightning or this machine cannot run (an accelerator without its
    hardware, a device count of 0, an unknown precision or strategy) before any data or encoder is loaded:
    a Trainer is built and dropped (it writes nothing)."""
    import torch

    accelerator = str(cfg["trainer"]["accelerator"])
    if accelerator in ("gpu", "cuda") and not torch.backends.cuda.is_built():
        raise PrecometError(
            f"trainer.accelerator {accelerator}: this torch build has no CUDA (torch {torch.__version__} is"
            " CPU-only); use trainer.accelerator cpu or auto"
        )
    build_trainer(cfg, out_dir=out_dir, has_dev=True, progress=False)


# ---------------------------------------------------------------------------------------------- fit
def fit(trainer: pl.Trainer, module: EstimatorModule, data: TargetDataModule) -> None:
    """``trainer.fit``; Lightning's answer to Ctrl-C (``sys.exit(1)``) becomes a ``KeyboardInterrupt`` and the
    SIGINT handler it replaces is put back."""
    import signal
    import threading

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
def best_metrics(history: list[dict[str, float]], early_stopping: dict[str, Any], *, has_dev: bool) -> dict[str, float]:
    """The history entry of the best epoch by ``early_stopping["monitor"]`` (empty without a dev set)."""
    monitor: Any = early_stopping["monitor"] if has_dev else None  # a metric name or None
    scored = [h for h in history if monitor in h] if monitor else []
    if not scored:
        return {}
    pick = max if early_stopping["mode"] == "max" else min
    return pick(scored, key=lambda h: h[monitor])


def best_checkpoint(trainer: pl.Trainer) -> str:
    """Path of the best epoch's ``.ckpt``; an error when training wrote none."""
    # the trainer is built with a ModelCheckpoint (Lightning types the property as the base class or None)
    best = cast("pl.callbacks.ModelCheckpoint", trainer.checkpoint_callback).best_model_path
    if not best:
        raise PrecometError("training produced no checkpoint (zero training batches?)")
    return best


def export_best(
    trainer: pl.Trainer,
    out_dir: Path,
    *,
    dev_metrics: dict[str, float],
    history: list[dict[str, float]],
) -> Path:
    """Write the checkpoint directory files of the best ``.ckpt`` into ``out_dir`` (the temporary directory of
    an output set: ``precomet.json`` is written once, complete with ``dev_metrics`` and ``history``, and moved
    into place with the rest). Only the global-zero process writes. Returns the ``.ckpt`` path."""
    from precomet.estimator.checkpoint import read_lightning_checkpoint, write_checkpoint_files

    best = best_checkpoint(trainer)
    if trainer.is_global_zero:
        with quiet_third_party():
            model, tokenizer, meta = read_lightning_checkpoint(
                best, extra_meta={"dev_metrics": dev_metrics, "history": history}
            )
            write_checkpoint_files(out_dir, model=model, tokenizer=tokenizer, meta=meta)
    return Path(best)


def export_best_head(trainer: pl.Trainer, out_dir: Path, *, meta: dict[str, Any]) -> Path:
    """:func:`export_best` for a backbone estimator: the best ``.ckpt``'s head (read with
    ``weights_only=True``) as ``head.safetensors`` and ``meta`` as ``precomet.json``."""
    import torch
    from safetensors.torch import save_file

    from precomet.estimator.checkpoint import HEAD, META, write_meta

    best = best_checkpoint(trainer)
    if trainer.is_global_zero:
        state = torch.load(best, map_location="cpu", weights_only=True)["state_dict"]
        head = {k.removeprefix("model."): v.contiguous() for k, v in state.items() if k.startswith("model.")}
        save_file(head, str(out_dir / HEAD))
        write_meta(out_dir / META, meta)
    return Path(best)


def train_on_campaigns(
    campaigns: Sequence[Campaign],
    *,
    out_dir: str | Path,
    method: str = "metric_var",
    score: str = HUMAN,
    encoder: str = "minilm",
    max_epochs: int = 30,
    seed: int = 0,
    progress: bool | None = None,
) -> TrainResult:
    """Quick estimator for the demo: targets from ``campaigns`` (z-scored per campaign), frozen ``encoder``
    with cached features, head trained with lr 1e-3; dev = whole documents."""
    rows = build_targets(campaigns, method=method, score=score, normalisation="zscore", seed=seed)
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
