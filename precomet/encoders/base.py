"""The encoder interface and the per-text vector cache."""

from __future__ import annotations

import hashlib
import logging
import zipfile
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from precomet.errors import PrecometError
from precomet.io.atomic import atomic_write
from precomet.progress import progress as progress_bar

log = logging.getLogger(__name__)


class SentenceEncoder(ABC):
    """A frozen text -> vector map. Subclasses set :attr:`name`, :attr:`languages` and implement
    :meth:`_encode_batch`; :meth:`identity` names the exact weights so that a checkpoint can refuse others."""

    name: ClassVar[str]
    languages: ClassVar[str]
    batch_size: ClassVar[int] = 64

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length of every vector."""

    @abstractmethod
    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float vectors of one batch."""

    def identity(self) -> dict[str, Any]:
        """What a checkpoint records about this encoder (name plus version or weight hash)."""
        return {"name": self.name}

    def encode(self, texts: Sequence[str], *, progress: bool | None = None) -> np.ndarray:
        """``(len(texts), dim)`` float32 vectors in input order, in batches (with a progress bar)."""
        texts = [str(t) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        starts = range(0, len(texts), self.batch_size)
        for start in progress_bar(starts, desc=f"encode ({self.name})", unit="batch", enabled=progress):
            batch = texts[start : start + self.batch_size]
            vectors = np.asarray(self._encode_batch(batch), dtype=np.float32)
            if vectors.shape != (len(batch), self.dim):
                raise PrecometError(f"encoder {self.name!r} returned shape {vectors.shape} for {len(batch)} texts")
            out[start : start + len(batch)] = vectors
        if not np.isfinite(out).all():
            raise PrecometError(f"encoder {self.name!r} returned non-finite vectors")
        return out

    def cache_key(self) -> str:
        """File-name-safe key of :meth:`identity` for the on-disk cache."""
        return hashlib.sha1(repr(sorted(self.identity().items())).encode("utf-8")).hexdigest()[:16]


def _text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def _read_cache(path: Path) -> dict[str, np.ndarray]:
    """The cached vectors in ``path``; an unreadable file is reported and ignored (it is rewritten)."""
    if not path.exists():
        return {}
    try:
        with np.load(path) as stored:
            return dict(zip(stored["keys"].tolist(), stored["vectors"]))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as err:
        log.warning("%s: unreadable embedding cache (%s); it is recomputed", path, err)
        return {}


CHUNK = 2048
"""Texts encoded between two saves of the on-disk cache."""


def _write_cache(path: Path, cached: dict[str, np.ndarray]) -> None:
    """Merge with what another process saved meanwhile, then replace ``path`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for key, vector in _read_cache(path).items():
        cached.setdefault(key, vector)
    with atomic_write(path, "wb") as handle:
        np.savez(handle, keys=np.array(list(cached)), vectors=np.stack(list(cached.values())))


def encode_cached(
    encoder: SentenceEncoder,
    texts: Sequence[str],
    *,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    """:meth:`SentenceEncoder.encode` of ``texts`` with each distinct text encoded once; with ``cache_dir``
    the vectors are kept in ``cache_dir/<encoder key>.npz`` (merged with what another process saved, written
    atomically every :data:`CHUNK` texts, so an interrupted run resumes) and read back on the next call."""
    texts = [str(t) for t in texts]
    unique = list(dict.fromkeys(texts))
    keys = [_text_key(t) for t in unique]
    path = None if cache_dir is None else Path(cache_dir) / f"{encoder.name}-{encoder.cache_key()}.npz"
    cached = {} if path is None else _read_cache(path)
    todo = [i for i, k in enumerate(keys) if k not in cached]
    step = len(todo) if path is None else CHUNK
    for start in range(0, len(todo), max(step, 1)):  # with a cache, saved chunk by chunk: an interrupt keeps work done
        part = todo[start : start + step]
        fresh = encoder.encode([unique[i] for i in part], progress=progress)
        cached.update(zip((keys[i] for i in part), fresh))
        if path is not None:
            _write_cache(path, cached)
    log.info("encoded %d distinct texts with %s (%d from cache)", len(unique), encoder.name, len(unique) - len(todo))
    if not texts:
        return np.empty((0, encoder.dim), dtype=np.float32)
    position = {text: i for i, text in enumerate(unique)}
    table = np.stack([cached[k] for k in keys]).astype(np.float32)
    return table[[position[t] for t in texts]]
