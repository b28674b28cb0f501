"""The estimator's network, one class whatever the encoder: :class:`EstimatorNetwork` reads an encoder's vectors
(computed outside it by a frozen registered encoder, or by the Hugging Face encoder it fine-tunes), optionally mixes
an encoder's layers (a layer-wise scalar mix), standardises them with the training statistics and puts an MLP head
(hidden layers, tanh, dropout) on them to one value; :class:`EnsembleHead` averages several."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

import torch
from torch import nn

from precomet.encoders.pooling import ScalarMix

if TYPE_CHECKING:
    from precomet.encoders import SentenceEncoder


def mlp_head(dim: int, hidden_sizes: Sequence[int], dropout: float) -> nn.Sequential:
    """``dim`` -> hidden layers (linear, tanh, dropout) -> one value."""
    sizes = [dim, *hidden_sizes]
    layers: list[nn.Module] = []
    for a, b in pairwise(sizes):
        layers += [nn.Linear(a, b), nn.Tanh(), nn.Dropout(dropout)]
    layers.append(nn.Linear(sizes[-1], 1))
    return nn.Sequential(*layers)


class EstimatorNetwork(nn.Module):
    """``[encoder] -> vectors -> [scalar mix] -> standardised -> MLP -> one standardised utility per source``.

    ``dim``: the length of a vector the head reads (after the mix). ``mix_layers``: the number of hidden states a
    layer-wise scalar mix weighs (the vectors are then ``mix_layers × dim`` long); ``None``: no mix. ``encoder``: a
    module ``(input_ids, attention_mask) -> vectors`` trained with the head
    (:class:`~precomet.encoders.pooling.TokenVectors`); without one (an empty stand-in), the vectors come from a
    frozen encoder outside the network. ``head.safetensors`` holds everything but the encoder (:meth:`head_state`)."""

    feature_mean: torch.Tensor
    feature_std: torch.Tensor

    def __init__(
        self,
        dim: int,
        *,
        hidden_sizes: Sequence[int],
        dropout: float,
        mix_layers: int | None = None,
        encoder: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.encoder = encoder if encoder is not None else nn.Identity()
        self.mix = ScalarMix(mix_layers) if mix_layers else None
        self.register_buffer("feature_mean", torch.zeros(dim))
        self.register_buffer("feature_std", torch.ones(dim))
        self.head = mlp_head(dim, hidden_sizes, dropout)

    @classmethod
    def over(
        cls,
        encoder: SentenceEncoder,
        *,
        hidden_sizes: Sequence[int],
        dropout: float,
        mix_layers: int | None = None,
        module: nn.Module | None = None,
    ) -> EstimatorNetwork:
        """A freshly initialised network reading ``encoder``'s vectors: all of each, or with ``mix_layers`` one layer's
        width of the ``mix_layers`` layers the encoder's vector holds; ``module``: the encoder's module to fine-tune."""
        return cls(
            encoder.dim // (mix_layers or 1),
            hidden_sizes=hidden_sizes,
            dropout=dropout,
            mix_layers=mix_layers,
            encoder=module,
        )

    def fit_scaling(self, features: torch.Tensor) -> None:
        """Set the input standardisation from the training vectors (constant features get std 1)."""
        std = features.std(dim=0)
        self.feature_mean.copy_(features.mean(dim=0))
        self.feature_std.copy_(torch.where(std > 1e-8, std, torch.ones_like(std)))

    def score_features(self, features: torch.Tensor) -> torch.Tensor:
        """Head output (B,) from the encoder's vectors (cached or fresh)."""
        pooled = features if self.mix is None else self.mix(features)
        return self.head((pooled - self.feature_mean) / self.feature_std).squeeze(-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.score_features(self.encoder(input_ids, attention_mask))

    def head_state(self) -> dict[str, torch.Tensor]:
        """Everything but the encoder (head, mix, standardisation) for ``head.safetensors``."""
        return {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items() if not k.startswith("encoder.")}


class EnsembleHead(nn.Module):
    """K :class:`EstimatorNetwork` heads trained with different seeds, predicting together: each member's output is
    standardised by the mean and standard deviation of its predictions on the training sources (``scaling``, K × 2,
    recorded in ``precomet.json``), the mean is taken and put back on the members' average scale. So no single
    seed decides the ranking."""

    scaling: torch.Tensor

    def __init__(self, members: Sequence[EstimatorNetwork], scaling: Sequence[Sequence[float]]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.register_buffer("scaling", torch.tensor(scaling, dtype=torch.float32), persistent=False)

    def score_features(self, features: torch.Tensor) -> torch.Tensor:
        outputs = torch.stack([member.score_features(features) for member in self.members])  # type: ignore[operator]
        mean, std = self.scaling[:, :1], self.scaling[:, 1:]
        return ((outputs - mean) / std).mean(dim=0) * std.mean() + mean.mean()
