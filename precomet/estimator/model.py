"""The network: a Hugging Face encoder, mean pooling (optionally over a layer-wise scalar mix) and an
MLP head (hidden 2048 -> 1024, tanh, dropout) to one value. No file reading beyond resolving the encoder."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import torch
from torch import nn

from precomet.encoders.registry import ENCODERS, fine_tunable_folder
from precomet.errors import PrecometError
from precomet.quiet import quiet_third_party

logger = logging.getLogger(__name__)


def resolve_model(name: str) -> Path:
    """A local directory for an encoder name: a fine-tunable encoder of the registry (``minilm``, ``hf:DIR``:
    :func:`~precomet.encoders.registry.fine_tunable_folder`), an existing directory, or a hub id (from the local
    cache when offline, downloaded with ``snapshot_download`` when online)."""
    folder = fine_tunable_folder(name)
    if folder is not None:
        return folder
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if name in ENCODERS:
        raise PrecometError(
            f"encoder {name!r} is frozen by design (no Hugging Face weights to fine-tune): use it as model.backbone,"
            " or name a Hugging Face model as model.encoder (minilm, hf:DIR, a hub id)"
        )
    offline = any(os.environ.get(v, "") not in ("", "0") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=offline))
    except Exception as err:  # noqa: BLE001 -- huggingface_hub raises many types (offline, not found, invalid id)
        raise PrecometError(
            f"encoder {name!r} not found {'offline ' if offline else ''}({type(err).__name__}: {err}); provide a local "
            f"directory saved with save_pretrained (model.encoder: hf:/path/to/dir), run "
            f"`huggingface-cli download {name}` on a machine with network access, or use "
            f"model.encoder: minilm (the packaged all-MiniLM-L6-v2)"
        ) from None


def load_encoder(name: str) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from :func:`resolve_model`, safetensors only, in training mode."""
    from transformers import AutoModel, AutoTokenizer

    path = resolve_model(name)
    if not any(path.glob("*.safetensors")):
        raise PrecometError(f"encoder {name!r} at {path}: no *.safetensors weights (pickled weights are refused)")
    from safetensors import SafetensorError

    try:
        with quiet_third_party():
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            try:  # BERT-like encoders: drop the unused pooler (its weights would get no gradient)
                model = AutoModel.from_pretrained(
                    path, local_files_only=True, use_safetensors=True, add_pooling_layer=False
                )
            except TypeError:
                model = AutoModel.from_pretrained(path, local_files_only=True, use_safetensors=True)
    except (OSError, ValueError, TypeError, RuntimeError, KeyError, AttributeError, SafetensorError) as err:
        detail = " ".join(str(err).split())[:300]
        raise PrecometError(
            f"encoder {name!r} at {path}: its files (config.json, tokenizer, *.safetensors) cannot be loaded; the"
            f" encoder is damaged ({type(err).__name__}: {detail})"
        ) from None
    return model.train(), tokenizer  # from_pretrained returns eval mode: dropout must be on for training


class ScalarMix(nn.Module):
    """Softmax-normalised weights over the hidden-state layers times a scalar gamma (ELMo / COMET)."""

    def __init__(self, n_layers: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        """``layers``: (B, L, H) -> (B, H)."""
        w = torch.softmax(self.weights, dim=0).view(1, -1, 1)
        return self.gamma * (w * layers).sum(dim=1)


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Average of the token vectors where ``mask`` is 1: (..., T, H) with a broadcastable (..., T) mask."""
    m = mask.to(hidden.dtype).unsqueeze(-1)
    return (hidden * m).sum(dim=-2) / m.sum(dim=-2).clamp(min=1.0)


def mlp_head(dim: int, hidden_sizes: Sequence[int], dropout: float) -> nn.Sequential:
    """``dim`` -> hidden layers (linear, tanh, dropout) -> one value."""
    sizes = [dim, *hidden_sizes]
    layers: list[nn.Module] = []
    for a, b in pairwise(sizes):
        layers += [nn.Linear(a, b), nn.Tanh(), nn.Dropout(dropout)]
    layers.append(nn.Linear(sizes[-1], 1))
    return nn.Sequential(*layers)


class UtilityEstimator(nn.Module):
    """encoder -> pooled features -> MLP head -> one standardised utility per source."""

    def __init__(
        self,
        encoder: Any,  # a Hugging Face model (an nn.Module with .config and .save_pretrained)
        *,
        pooling: str = "mean",
        hidden_sizes: tuple[int, ...] = (2048, 1024),
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        if pooling not in ("mean", "mix"):
            raise PrecometError(f"pooling must be 'mean' or 'mix', got {pooling!r}")
        self.encoder = encoder
        self.pooling = pooling
        n_layers = encoder.config.num_hidden_layers + 1
        self.mix = ScalarMix(n_layers) if pooling == "mix" else None
        self.head = mlp_head(encoder.config.hidden_size, hidden_sizes, dropout)

    def features(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Pooled encoder output: (B, H) for mean pooling, (B, L, H) per-layer means for ``mix``.

        Mean pooling is linear, so mixing per-layer means equals pooling the mixed layers; that lets a
        frozen encoder's features be cached once and the mix weights still be trained."""
        out = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=self.mix is not None
        )
        if self.mix is None:
            return mean_pool(out.last_hidden_state, attention_mask)
        return mean_pool(torch.stack(out.hidden_states, dim=1), attention_mask.unsqueeze(1))

    def score_features(self, features: torch.Tensor) -> torch.Tensor:
        """Head output (B,) from :meth:`features` (cached or fresh)."""
        pooled = features if self.mix is None else self.mix(features)
        return self.head(pooled).squeeze(-1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.score_features(self.features(input_ids, attention_mask))

    def head_state(self) -> dict[str, torch.Tensor]:
        """Everything except the encoder (head, scalar mix) for ``head.safetensors``."""
        return {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items() if not k.startswith("encoder.")}
