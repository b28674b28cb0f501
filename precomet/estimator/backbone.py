"""Estimators on a registered sentence encoder (:mod:`precomet.encoders`): the encoder stays frozen outside
the network, its vectors are computed once (and cached on disk with ``data.cache_dir``), and only an MLP
head is trained with Lightning. Chosen with ``model.backbone`` in the training config (``e5-small`` reads
about 100 languages offline; ``surface`` and ``length`` need no model). The checkpoint holds ``precomet.json``
(with ``backbone``: the encoder's name and version, checked on load) and ``head.safetensors`` — never the
encoder, which comes from its installed package."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from precomet.encoders import SentenceEncoder, encode_cached, get_encoder
from precomet.errors import PrecometError
from precomet.estimator.metadata import Backbone
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


class EnsembleHead(nn.Module):
    """K :class:`FeatureHead` members trained with different seeds, predicting together: each member's output is
    standardised by the mean and standard deviation of its predictions on the training sources (``scaling``, K × 2,
    recorded in ``precomet.json``), the mean is taken and put back on the members' average scale. So no single
    seed decides the ranking."""

    scaling: torch.Tensor

    def __init__(self, members: Sequence[FeatureHead], scaling: Sequence[Sequence[float]]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.register_buffer("scaling", torch.tensor(scaling, dtype=torch.float32), persistent=False)

    def score_features(self, features: torch.Tensor) -> torch.Tensor:
        outputs = torch.stack([member.score_features(features) for member in self.members])  # type: ignore[operator]
        mean, std = self.scaling[:, :1], self.scaling[:, 1:]
        return ((outputs - mean) / std).mean(dim=0) * std.mean() + mean.mean()


def backbone_encoder(recorded: Backbone, *, where: Any) -> SentenceEncoder:
    """The registered encoder a checkpoint names, refused when its identity (version, weights) differs."""
    name = recorded.name
    try:
        encoder = get_encoder(recorded.spec or name)
    except PrecometError as err:
        raise PrecometError(f"{where}: field 'backbone' names encoder {name!r}, which cannot be used: {err}") from None
    if encoder.identity() != recorded.identity():
        raise PrecometError(
            f"{where}: the installed encoder {name!r} is {encoder.identity()}, but this estimator was trained on"
            f" {recorded.model_dump(exclude_unset=True)}; install that version or retrain"
        )
    accepted = recorded.engines  # absent: any engine of these weights (checkpoints before 0.13)
    if accepted is not None and encoder.engine not in accepted:
        raise PrecometError(
            f"{where}: this estimator reads {name!r} with the engines {accepted}, not {encoder.engine!r}"
        )
    return encoder


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
