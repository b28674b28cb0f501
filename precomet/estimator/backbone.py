"""A registered encoder as a checkpoint names it (:func:`backbone_encoder`: its identity checked on load) and the
vectors of a training split (:func:`encode_split`: each distinct source once, cached). A checkpoint on a registered
encoder read as registered holds ``precomet.json`` (with ``backbone``) and ``head.safetensors`` — never the encoder,
which comes from its installed package."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from precomet.encoders import SentenceEncoder, encode_cached, get_encoder
from precomet.encoders.transformer import TransformerEncoder
from precomet.environment import VariableError
from precomet.errors import PrecometError
from precomet.estimator.metadata import Backbone

logger = logging.getLogger(__name__)

POOLING = "sentence-encoder"
"""``pooling`` of a backbone checkpoint: the encoder returns one vector per source."""


def token_encoder(location: Path, *, pooling: str, max_length: int) -> TransformerEncoder:
    """The Hugging Face model at ``location`` read by tokens and pooled as ``pooling`` says — the one mapping of
    training's ``model.pooling`` and a checkpoint's ``pooling`` to vectors: ``mean``, the last layer's token mean;
    ``mix``, every layer's (for a trained scalar mix); ``encoder`` (recorded as :data:`POOLING`), the last layer's
    mean L2-normalised, as registered."""
    layers = "all" if pooling == "mix" else "last"
    normalise = pooling in ("encoder", POOLING)
    return TransformerEncoder(location, layers=layers, normalise=normalise, max_length=max_length)


def backbone_encoder(recorded: Backbone, *, where: Any) -> SentenceEncoder:
    """The registered encoder a checkpoint names, refused when its identity (version, weights) differs."""
    name = recorded.name
    try:
        encoder = get_encoder(recorded.spec or name)
    except VariableError:  # the environment's fault (PRECOMET_E5_ENGINE=onnx), not the checkpoint's
        raise
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
