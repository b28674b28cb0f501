"""The data side of :func:`~precomet.estimator.training.train`: target rows -> train/dev :class:`Split`
(:func:`split_rows`) -> encoder inputs (:func:`encode_rows`: token ids, or cached features for a frozen
encoder) -> the Lightning data module (:func:`build_datamodule`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from precomet.errors import PrecometError
from precomet.estimator.data import TargetDataModule, group_split, tokenize, warn_truncated
from precomet.estimator.leakage import drop_sources
from precomet.estimator.model import UtilityEstimator
from precomet.estimator.predict import compute_features
from precomet.estimator.targets import read_targets, validate_rows
from precomet.stats import mean_std, standardise

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Network:
    """The network to train (encoder + head), its tokenizer, the token limit per source and the padding id."""

    model: UtilityEstimator
    tokenizer: Any
    max_length: int
    pad_id: int


def _rows(value: str | Path | Sequence[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    return read_targets(value) if isinstance(value, (str, Path)) else validate_rows(list(value), where=where)


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
        return standardise([r["target"] for r in rows], self.mean, self.std)


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
    mean, std = _learnable(np.array([r["target"] for r in train_set], dtype=float))
    if dev_set:
        where = f"{dev_rows}: " if isinstance(dev_rows, (str, Path)) else ""  # --dev FILE, named in the errors
        _check_dev(np.array([r["target"] for r in dev_set], dtype=float), mean, std, where=where)
    return Split(
        train=train_set,
        dev=dev_set,
        method=methods[0],
        mean=mean,
        std=std,
        normalisations=sorted({str(r.get("normalisation", "unknown")) for r in rows}),
    )


_FARTHEST_DEV = 1e6
"""How many training standard deviations a dev target may lie from the training mean (float32 keeps it exact
enough); farther, it is a unit or data error, and the dev Pearson would be that one target's."""


def _check_dev(y: np.ndarray, mean: float, std: float, *, where: str = "") -> None:
    """Refuse dev targets that cannot pick an epoch: ones beyond :data:`_FARTHEST_DEV` training standard
    deviations, and (nearly) constant ones, whose Pearson is undefined or noise at the last digit."""
    distance = np.abs(standardise(y, mean, std))
    if not np.all(distance <= _FARTHEST_DEV):
        worst = int(np.argmax(np.where(np.isfinite(distance), distance, np.inf)))
        raise PrecometError(
            f"{where}dev target {y[worst]:.6g} lies {distance[worst]:.3g} training standard deviations from the"
            f" training mean {mean:.6g} (std {std:.6g}): dev and training targets are on other scales (another method,"
            " normalisation or unit?); build both with the same build-targets settings"
        )
    dev_std = mean_std(y)[1] if len(y) > 1 else 0.0
    seen_by_training = standardise(y, mean, std).astype(np.float32)  # as the dev Pearson sees them
    if dev_std <= 1e-12 * float(np.max(np.abs(y))) or dev_std == 0.0 or np.ptp(seen_by_training) == 0:
        raise PrecometError(
            f"{where}the {len(y)} dev target(s) are all {y[0]:.6g}"
            f"{'' if len(set(y.tolist())) == 1 else ' (to 12 digits)'}:"
            " the dev Pearson that picks the best epoch is undefined on constant targets; give dev rows whose"
            " targets differ (a larger data.dev_fraction, or other --dev rows)"
        )


def _learnable(y: np.ndarray) -> tuple[float, float]:
    """The mean and standard deviation of the training targets ``y``; refused when they cannot be learnt from:
    constant targets (a head would learn nothing, and its dev Pearson is undefined) or too few rows."""
    if len(y) < 2:
        raise PrecometError(f"{len(y)} training row(s): an estimator needs at least 2 targets that differ")
    mean, std = mean_std(y)
    if std <= 1e-12 * float(np.max(np.abs(y))) or std == 0.0:
        raise PrecometError(
            f"the {len(y)} training targets are all {y[0]:.6g}: constant targets teach nothing (the utility does not"
            " vary over these items, e.g. every system scored the same); build targets with another method or"
            " from more campaigns"
        )
    return mean, std


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
