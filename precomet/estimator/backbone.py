"""Estimators on a registered sentence encoder (:mod:`precomet.encoders`): the encoder stays frozen outside
the network, its vectors are computed once (and cached on disk with ``data.cache_dir``), and only an MLP
head is trained with Lightning. Chosen with ``model.backbone`` in the training config (``e5-small`` reads
about 100 languages offline; ``surface`` and ``length`` need no model). The checkpoint holds ``precomet.json``
(with ``backbone``: the encoder's name and version, checked on load) and ``head.safetensors`` — never the
encoder, which comes from its installed package."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from precomet.encoders import SentenceEncoder, encode_cached, get_encoder
from precomet.errors import PrecometError
from precomet.estimator.model import mlp_head

logger = logging.getLogger(__name__)

POOLING = "sentence-encoder"
"""``pooling`` of a backbone checkpoint: the encoder returns one vector per source."""


class FeatureHead(nn.Module):
    """Standardise the encoder's vector with the training statistics, then an MLP (tanh, dropout) to one
    value. ``encoder`` is an empty stand-in: the encoder lives outside, frozen (the Lightning module treats
    every parameter here as head)."""

    feature_mean: torch.Tensor
    feature_std: torch.Tensor

    def __init__(self, dim: int, *, hidden_sizes: Sequence[int], dropout: float) -> None:
        super().__init__()
        self.encoder = nn.Identity()
        self.register_buffer("feature_mean", torch.zeros(dim))
        self.register_buffer("feature_std", torch.ones(dim))
        self.head = mlp_head(dim, hidden_sizes, dropout)

    def fit_scaling(self, features: torch.Tensor) -> None:
        """Set the input standardisation from the training features (constant features get std 1)."""
        std = features.std(dim=0)
        self.feature_mean.copy_(features.mean(dim=0))
        self.feature_std.copy_(torch.where(std > 1e-8, std, torch.ones_like(std)))

    def score_features(self, features: torch.Tensor) -> torch.Tensor:
        return self.head((features - self.feature_mean) / self.feature_std).squeeze(-1)

    def head_state(self) -> dict[str, torch.Tensor]:
        return {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}


def backbone_encoder(meta: dict[str, Any], *, where: Any) -> SentenceEncoder:
    """The registered encoder a checkpoint names, refused when its identity (version, weights) differs."""
    recorded = meta.get("backbone")
    if not isinstance(recorded, dict) or not isinstance(recorded.get("name"), str):
        raise PrecometError(f"{where}: 'backbone' must be an object with the encoder's name, got {recorded!r}")
    name = recorded["name"]
    try:
        encoder = get_encoder(str(recorded.get("spec") or name))
    except PrecometError as err:
        raise PrecometError(f"{where}: field 'backbone' names encoder {name!r}, which cannot be used: {err}") from None
    if encoder.identity() != {k: v for k, v in recorded.items() if k != "spec"}:
        raise PrecometError(
            f"{where}: the installed encoder {name!r} is {encoder.identity()}, but this estimator was trained on"
            f" {recorded}; install that version or retrain"
        )
    return encoder


@dataclass(frozen=True)
class BackboneEstimator:
    """A loaded backbone checkpoint: the frozen encoder, the head (eval mode) and the metadata."""

    encoder: SentenceEncoder
    model: FeatureHead
    meta: dict[str, Any]
    path: Path | None = None

    def to_utility(self, standardised: torch.Tensor) -> torch.Tensor:
        from precomet.estimator.checkpoint import to_utility

        return to_utility(self.meta, standardised)

    def predict(
        self, sources: Sequence[str], *, cache_dir: str | Path | None = None, progress: bool | None = None
    ) -> np.ndarray:
        """Utility (higher = annotate first) of each source, in input order."""
        from precomet.estimator.checkpoint import check_predictions

        features = encode_cached(self.encoder, list(sources), cache_dir=cache_dir, progress=progress)
        with torch.inference_mode():
            values = self.model.eval().score_features(torch.from_numpy(features).float())
        utilities = self.to_utility(values.double()).numpy()
        return check_predictions(utilities, sources, checkpoint=self.path or f"on backbone {self.encoder.name!r}")


def load_backbone_estimator(path: Path, meta: dict[str, Any], head: dict[str, torch.Tensor]) -> BackboneEstimator:
    """Rebuild a :class:`BackboneEstimator` from its metadata and ``head.safetensors`` tensors."""
    from precomet.estimator.checkpoint import check_max_length

    encoder = backbone_encoder(meta, where=path / "precomet.json")
    check_max_length(meta, encoder.max_tokens, where=path / "precomet.json", encoder=repr(encoder.name))
    try:
        model = FeatureHead(encoder.dim, hidden_sizes=meta["hidden_sizes"], dropout=float(meta.get("dropout", 0.1)))
    except (TypeError, ValueError, RuntimeError) as err:
        raise PrecometError(
            f"{path / 'precomet.json'}: hidden_sizes {meta.get('hidden_sizes')!r}, dropout {meta.get('dropout')!r} do"
            f" not describe a head ({err})"
        ) from None
    try:
        model.load_state_dict(head, strict=True)
    except RuntimeError as err:
        detail = " ".join(str(err).split())[:300]
        raise PrecometError(
            f"{path / 'head.safetensors'}: weights do not match the head in precomet.json ({detail})"
        ) from None
    if not all(torch.isfinite(v).all() for v in head.values()):
        raise PrecometError(
            f"{path / 'head.safetensors'}: the head holds non-finite weights; the checkpoint is damaged"
        )
    bad_std = int((model.feature_std <= 0).sum())
    if bad_std:  # training stores standard deviations, floored at 1e-8 and set to 1 below it: never <= 0
        raise PrecometError(
            f"{path / 'head.safetensors'}: feature_std holds {bad_std} value(s) <= 0, which no training writes (a"
            " standard deviation is positive); the checkpoint is damaged"
        )
    return BackboneEstimator(encoder=encoder, model=model.eval(), meta=meta, path=path)


def encode_split(
    encoder: SentenceEncoder, parts: Sequence[Sequence[dict[str, Any]]], *, cache_dir: Any, progress: bool | None
) -> list[torch.Tensor]:
    """The encoder's vectors of every row's source, one tensor per part (each distinct source encoded once)."""
    texts = [r["src"] for part in parts for r in part]
    vectors = torch.from_numpy(encode_cached(encoder, texts, cache_dir=cache_dir, progress=progress)).float()
    out, start = [], 0
    for part in parts:
        out.append(vectors[start : start + len(part)] if part else torch.empty(0))
        start += len(part)
    return out
