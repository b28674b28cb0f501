"""The encoder interface and the per-text vector cache (in-process, then on disk)."""

from __future__ import annotations

import hashlib
import logging
import zipfile
import zlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.lib.npyio import NpzFile

from precomet.encoders.memory import MEMORY, limit_bytes
from precomet.errors import PrecometError
from precomet.io.atomic import atomic_write
from precomet.progress import announce
from precomet.progress import progress as progress_bar

log = logging.getLogger(__name__)


class SentenceEncoder(ABC):
    """A frozen text -> vector map. Subclasses set :attr:`name`, :attr:`languages` and implement
    :meth:`_encode_batch`; :meth:`identity` names the exact weights so that a checkpoint can refuse others."""

    name: ClassVar[str]
    languages: ClassVar[str]
    batch_size: ClassVar[int] = 64
    max_tokens: ClassVar[int | None] = None
    """Tokens of a text the encoder reads (longer texts are truncated); ``None``: no limit (surface features)."""

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


def _read_cache(path: Path, *, dim: int, warn: bool = True) -> tuple[dict[str, np.ndarray], bool]:
    """``(cached vectors, damaged)`` of the cache file ``path`` (``{}, False`` when there is none). A file that is
    not a complete cache of ``dim``-long finite float vectors (truncated, garbage, another shape or dtype, an
    object array: never unpickled) is damaged: reported once (with ``warn``) and ignored, so that it is rewritten."""
    if not path.exists():
        return {}, False
    if not path.is_file():
        raise PrecometError(f"{path}: the embedding cache file is a folder or a special file; remove or rename it")
    try:
        problem, cached = _load_cache(path, dim=dim)
    except NPZ_UNREADABLE as err:
        problem, cached = f"unreadable: {type(err).__name__}: {' '.join(str(err).split())[:200]}", {}
    if problem:
        if warn:
            log.warning("%s: damaged embedding cache (%s); it is recomputed and rewritten", path, problem)
        return {}, True
    return cached, False


NPZ_UNREADABLE = (OSError, ValueError, KeyError, TypeError, IndexError, EOFError, zipfile.BadZipFile, zlib.error)
"""What ``np.load`` raises on a truncated, garbage or pickle-bearing file (``allow_pickle=False``)."""


def _load_cache(path: Path, *, dim: int) -> tuple[str, dict[str, np.ndarray]]:
    """``("", vectors)`` for a valid cache file, else ``(what is wrong, {})``."""
    stored = np.load(path, allow_pickle=False)
    if not isinstance(stored, NpzFile):
        return f"a single {type(stored).__name__}, not an .npz archive", {}
    with stored:
        if set(stored.files) == {"keys", "vectors"}:
            return "written without a checksum, by precomet 0.7 or earlier", {}
        if set(stored.files) != {"check", "keys", "vectors"}:
            return f"arrays {sorted(stored.files)}, expected ['check', 'keys', 'vectors']", {}
        keys, vectors, check = stored["keys"], stored["vectors"], stored["check"]
    if keys.ndim != 1 or keys.dtype.kind != "U" or not all(len(k) == 40 for k in keys.tolist()):
        return f"keys of shape {keys.shape} and dtype {keys.dtype}, expected text hashes", {}
    if vectors.dtype.kind != "f" or vectors.ndim != 2 or len(vectors) != len(keys):
        return f"vectors of shape {vectors.shape} and dtype {vectors.dtype} for {len(keys)} keys", {}
    if dim and vectors.shape[1] != dim:
        return f"vectors of length {vectors.shape[1]}, the encoder's are {dim} long", {}
    if not np.isfinite(vectors).all():
        return "non-finite vectors", {}
    if not np.array_equal(check, _cache_check(path.stem, keys, vectors)):
        return "its checksum does not match its keys and vectors (edited, reordered or another encoder's)", {}
    return "", dict(zip(keys.tolist(), vectors.astype(np.float32)))


def _cache_check(encoder_key: str, keys: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """sha256 of the encoder's cache key, the text keys in order and the vectors' bytes: a cache whose vectors were
    rescaled, reordered against their keys, or moved under another encoder's name fails it."""
    digest = hashlib.sha256(encoder_key.encode() + b"\0" + "\n".join(keys.tolist()).encode() + b"\0")
    digest.update(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
    return np.frombuffer(digest.digest(), dtype=np.uint8)


def _check_cache_dir(cache_dir: Path) -> None:
    """Refuse a cache folder that is a file (or lies under one) before any work."""
    folder = cache_dir.absolute()
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        which = "is a file" if folder == cache_dir.absolute() else f"lies under {folder}, a file"
        raise PrecometError(f"cache folder {cache_dir} {which}, not a folder")


CHUNK = 2048
"""Texts encoded between two saves of the on-disk cache."""
ANNOUNCE_FROM = 1000
"""Encoding at least this many texts is announced on stderr before it starts (it takes tens of seconds)."""


def _write_cache(path: Path, cached: dict[str, np.ndarray], *, dim: int, warn: bool = True) -> None:
    """Merge with what another process saved meanwhile, then replace ``path`` atomically."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PrecometError(f"cannot create the cache folder {path.parent}: {err.strerror or err}") from None
    for key, vector in _read_cache(path, dim=dim, warn=warn)[0].items():
        cached.setdefault(key, vector)
    keys = np.array(list(cached), dtype=str)
    vectors = np.stack(list(cached.values())).astype(np.float32)
    with atomic_write(path, "wb") as handle:
        np.savez(handle, keys=keys, vectors=vectors, check=_cache_check(path.stem, keys, vectors))


def encode_cached(
    encoder: SentenceEncoder,
    texts: Sequence[str],
    *,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    """:meth:`SentenceEncoder.encode` of ``texts`` with each distinct text encoded once per process: looked up in
    the in-process cache (:mod:`precomet.encoders.memory`), then with ``cache_dir`` in ``cache_dir/<encoder
    key>.npz`` (merged with what another process saved, written atomically every :data:`CHUNK` texts, so an
    interrupted run resumes); only texts found in neither are encoded. Returns a new array on every call."""
    texts = [str(t) for t in texts]
    unique = list(dict.fromkeys(texts))
    keys = [_text_key(t) for t in unique]
    encoder_key = f"{encoder.name}-{encoder.cache_key()}"
    path = None
    if cache_dir is not None:
        _check_cache_dir(Path(cache_dir))
        path = Path(cache_dir) / f"{encoder_key}.npz"
    limit = limit_bytes()
    known = MEMORY.get(encoder_key, keys) if limit else {}
    missing = len(known) < len(keys)
    stored, damaged = _read_cache(path, dim=encoder.dim) if path is not None and missing else ({}, False)
    todo = [i for i, k in enumerate(keys) if k not in known and k not in stored]
    if len(todo) >= ANNOUNCE_FROM:
        announce(f"encoding {len(todo):,} texts with {encoder.name} ({len(unique) - len(todo):,} from the cache)")
    step = len(todo) if path is None else CHUNK
    for start in range(0, len(todo), max(step, 1)):  # with a cache, saved chunk by chunk: an interrupt keeps work done
        part = todo[start : start + step]
        fresh = encoder.encode([unique[i] for i in part], progress=progress)
        stored.update(zip((keys[i] for i in part), fresh))
        if path is not None:
            _write_cache(path, stored, dim=encoder.dim, warn=not damaged)  # a damaged file is reported once
    log.info("encoded %d distinct texts with %s (%d from cache)", len(unique), encoder.name, len(unique) - len(todo))
    if not texts:
        return np.empty((0, encoder.dim), dtype=np.float32)
    new = {k: stored[k] for k in keys if k not in known}
    if limit:
        MEMORY.put(encoder_key, new, limit=limit)
    position = {text: i for i, text in enumerate(unique)}
    table = np.stack([known[k] if k in known else new[k] for k in keys]).astype(np.float32)
    return table[[position[t] for t in texts]]
