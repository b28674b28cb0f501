"""The data side of :func:`~precomet.estimator.training.train`: target rows -> train/dev :class:`Split`
(:func:`split_rows`) -> what the network reads (:class:`TrainingInputs`: the encoder's vectors, computed once and
cached, when it is frozen; token ids when it is fine-tuned with the head) -> the Lightning data module
(:func:`build_datamodule`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from precomet.encoders import SentenceEncoder, get_encoder
from precomet.encoders.registry import model_folder
from precomet.encoders.tokens import token_ids
from precomet.encoders.transformer import TransformerEncoder
from precomet.errors import PrecometError
from precomet.estimator.backbone import encode_split, token_encoder
from precomet.estimator.config import DataConfig, TrainConfig
from precomet.estimator.data import TargetDataModule, group_split, warn_truncated
from precomet.estimator.leakage import drop_sources
from precomet.estimator.model import EstimatorNetwork
from precomet.estimator.targets import read_targets, validate_rows
from precomet.stats import mean_std, standardise

logger = logging.getLogger(__name__)


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
    data: DataConfig,
    seed: int,
) -> Split:
    """Read and check the rows (a targets JSONL path or row dicts); one utility method only. Without
    ``dev_rows`` the dev split is ``data.dev_fraction`` of the rows by ``data.group_by``
    (:func:`~precomet.estimator.data.group_split`); with them, training rows sharing a dev source, or a sentence
    or long run of one (:func:`~precomet.estimator.leakage.drop_sources`), are dropped."""
    rows = _rows(train_rows, "train")
    methods = sorted({str(r.get("method", "unknown")) for r in rows})
    if len(methods) > 1:
        raise PrecometError(f"targets mix several utility methods {methods}; train one estimator per method")
    if dev_rows is None:
        if data.dev_fraction > 0:
            train_idx, dev_idx = group_split(rows, by=data.group_by, fraction=data.dev_fraction, seed=seed)
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
class TrainingInputs:
    """The encoder a configuration trains on (``model.backbone``), and what the network reads from it.

    Frozen (``model.fine_tune: false``) with ``model.pooling: encoder``, the encoder is the registered one (or a
    Hugging Face model folder or hub id, run as registered) and its own vectors are read; with ``mean`` or ``mix``,
    or fine-tuned, it must be a Hugging Face model, run as a
    :class:`~precomet.encoders.transformer.TransformerEncoder` pooled that way. A frozen encoder's vectors are
    computed once for every member and cached by the encoder's identity (:func:`~precomet.encoders.encode_cached`); a
    fine-tuned encoder reads token ids. An unknown encoder is refused when this is built, before any row is read."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.spec: str = cfg.model.backbone
        self.fine_tune: bool = cfg.model.fine_tune
        self.pooling: str = cfg.model.pooling
        self.registered = not self.fine_tune and self.pooling == "encoder"
        """Whether the checkpoint names a registered encoder (``backbone``) rather than carrying a Hugging Face one."""
        self.encoder: SentenceEncoder = self._registered() if self.registered else self._hugging_face(cfg)
        self.mix_layers = self.encoder.hidden_states() if self.pooling == "mix" else None  # type: ignore[attr-defined]
        self.cache_dir = cfg.data.cache_dir or None
        accelerator = str(cfg.trainer.accelerator)
        self.device = "cuda" if accelerator in ("auto", "gpu", "cuda") and torch.cuda.is_available() else "cpu"
        """Where a Hugging Face encoder read by tokens computes its frozen vectors (a GPU when training may use one)."""

    def _registered(self) -> SentenceEncoder:
        """The registered encoder ``model.backbone`` names, or a Hugging Face model folder or hub id run as
        registered (recorded as ``hf:FOLDER``)."""
        try:
            return get_encoder(self.spec)
        except PrecometError as err:
            try:
                folder = model_folder(self.spec)
            except PrecometError:
                raise PrecometError(f"model.backbone {self.spec!r}: {err}") from None
        self.spec = f"hf:{folder.resolve()}"
        return TransformerEncoder(folder)

    def _hugging_face(self, cfg: TrainConfig) -> TransformerEncoder:
        """``model.backbone`` as a Hugging Face model pooled by ``model.pooling`` (``encoder``: as registered), its
        token limit ``data.max_length`` capped at what the model reads."""
        why = "fine-tuned" if self.fine_tune else f"pooled by model.pooling {self.pooling}"
        try:
            folder = model_folder(self.spec)
        except PrecometError as err:
            raise PrecometError(f"model.backbone {self.spec!r} cannot be {why}: {err}") from None
        max_length = cfg.data.max_length
        limit = TransformerEncoder(folder).token_limit()  # the tokenizer's limit and the position embeddings
        if limit is not None and max_length > limit:
            logger.warning(
                "data.max_length %d is beyond what the encoder reads: capped at %d tokens", max_length, limit
            )
            max_length = limit
        return token_encoder(folder, pooling=self.pooling, max_length=max_length)

    @property
    def backbone(self) -> dict[str, Any] | None:
        """The registered encoder's identity, recorded as ``backbone`` in ``precomet.json``; ``None`` for a Hugging
        Face encoder the checkpoint carries or names (recorded as ``encoder``)."""
        if not self.registered:
            return None
        engines = {"engines": list(self.encoder.engines)} if self.encoder.engines else {}
        return {"spec": self.spec, **self.encoder.identity(), **engines}

    @property
    def pad_id(self) -> int:
        """The padding token of a fine-tuned encoder's batches (0 for vectors)."""
        return int(self.encoder.tokenizer.pad_token_id or 0) if self.fine_tune else 0  # type: ignore[attr-defined]

    @property
    def max_length(self) -> int:
        """Tokens per source a Hugging Face encoder reads (0 for a registered one, which keeps its own)."""
        return 0 if self.registered else int(self.encoder.max_tokens or 0)

    def encode(self, split: Split, *, progress: bool | None) -> tuple[Any, Any]:
        """``(train inputs, dev inputs)``: vectors (a tensor per part) of a frozen encoder, token ids per row of a
        fine-tuned one (truncated sources counted in a warning)."""
        parts = (split.train, split.dev)
        if not self.fine_tune:
            limit = self.encoder.max_tokens
            for part in parts:
                if part and limit is not None:
                    warn_truncated(self.encoder.count_truncated([r["src"] for r in part]), len(part), limit)
            if self.registered:  # run as registered, on its own device
                train, dev = encode_split(self.encoder, parts, cache_dir=self.cache_dir, progress=progress)
                return train, dev
            self.encoder.to(self.device)  # a Hugging Face model read by tokens: on a GPU when training may use one
            try:
                train, dev = encode_split(self.encoder, parts, cache_dir=self.cache_dir, progress=progress)
            finally:
                self.encoder.to("cpu")
            return train, dev
        inputs = []
        for part in parts:
            texts = [r["src"] for r in part]
            tokenizer = self.encoder.tokenizer  # type: ignore[attr-defined]
            ids, n_truncated = token_ids(tokenizer, texts, max_length=self.max_length) if part else ([], 0)
            warn_truncated(n_truncated, len(part), self.max_length)
            inputs.append(ids)
        return inputs[0], inputs[1]

    def network(self, cfg: TrainConfig, inputs: tuple[Any, Any]) -> EstimatorNetwork:
        """A freshly initialised network for one member (inside its seed): over the fine-tuned encoder's module, or
        over the frozen encoder's vectors, standardised by the training vectors' statistics (not under a mix, whose
        layers are weighed during training)."""
        module = self.encoder.module().train() if self.fine_tune else None  # type: ignore[attr-defined]
        network = EstimatorNetwork.over(
            self.encoder,
            hidden_sizes=cfg.model.hidden_sizes,
            dropout=cfg.model.dropout,
            mix_layers=self.mix_layers,
            module=module,
        )
        if not self.fine_tune and self.mix_layers is None:
            network.fit_scaling(inputs[0])
        return network

    def vectors(self, inputs: tuple[Any, Any]) -> np.ndarray | None:
        """The training and dev vectors of a frozen encoder (for the coverage the checkpoint keeps); ``None`` when
        the encoder is fine-tuned (its vectors moved during training)."""
        if self.fine_tune:
            return None
        return np.concatenate([part.numpy() for part in inputs if part.ndim == 2])


# ---------------------------------------------------------------------------------------------- data: module
def build_datamodule(
    split: Split,
    inputs: tuple[Any, Any],
    *,
    pad_id: int,
    data: DataConfig,
    seed: int,
) -> TargetDataModule:
    """The ``TargetDataModule`` over :meth:`TrainingInputs.encode`'s inputs and the standardised targets."""
    return TargetDataModule(
        train_inputs=inputs[0],
        train_targets=split.standardised(split.train),
        dev_inputs=inputs[1],
        dev_targets=split.standardised(split.dev),
        pad_id=pad_id,
        batch_size=data.batch_size,
        bucket_batches=data.bucket_batches,
        num_workers=data.num_workers,
        seed=seed,
    )
