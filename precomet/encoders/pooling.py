"""The one pooling of a Hugging Face encoder's token vectors (torch): mean over the tokens of the last layer, or of
every layer (for a layer-wise scalar mix), optionally L2-normalised. :class:`TokenVectors` is the module that the
registered :class:`~precomet.encoders.transformer.TransformerEncoder` runs frozen and that an estimator fine-tunes,
so that a fine-tuned encoder, saved, is again a registered encoder giving the same vectors."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

LAYERS = ("last", "all")
"""``last``: the last layer's token vectors; ``all``: every hidden state (embeddings included), one mean per layer
(``(B, L, H)``), for :class:`ScalarMix`."""


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Average of the token vectors where ``mask`` is 1: (..., T, H) with a broadcastable (..., T) mask."""
    m = mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * m).sum(dim=-2) / m.sum(dim=-2).clamp(min=1.0)


class TokenVectors(nn.Module):
    """A Hugging Face model and its pooling: ``(input_ids, attention_mask)`` -> ``(B, H)`` mean of the last layer
    (``layers="last"``) or ``(B, L, H)`` means of every layer (``layers="all"``), L2-normalised per vector when
    ``normalise``."""

    def __init__(self, model: Any, *, layers: str = "last", normalise: bool = True) -> None:
        super().__init__()
        if layers not in LAYERS:
            raise ValueError(f"layers must be one of {LAYERS}, got {layers!r}")
        self.model, self.layers, self.normalise = model, layers, normalise

    @property
    def config(self) -> Any:
        """The Hugging Face model's config (``num_hidden_layers``, ``hidden_size``)."""
        return self.model.config

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        every = self.layers == "all"
        out = self.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=every)
        if every:
            pooled = mean_pool(torch.stack(out.hidden_states, dim=1), attention_mask.unsqueeze(1))
        else:
            pooled = mean_pool(out.last_hidden_state, attention_mask)
        return nn.functional.normalize(pooled, dim=-1) if self.normalise else pooled


class ScalarMix(nn.Module):
    """Softmax-normalised weights over the hidden-state layers times a scalar gamma (ELMo / COMET): ``(B, L, H)`` or
    its flattened ``(B, L·H)`` -> ``(B, H)``."""

    def __init__(self, n_layers: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        layers = layers.reshape(len(layers), len(self.weights), -1)
        w = torch.softmax(self.weights, dim=0).view(1, -1, 1)
        return self.gamma * (w * layers).sum(dim=1)
