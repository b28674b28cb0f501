"""The encoder interface and :func:`encode_cached`, every embedding's one path (in-process cache, disk cache)."""

from __future__ import annotations

import hashlib
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from precomet.encoders.disk import ENV as DISK_ENV
from precomet.encoders.disk import (
    CacheMeta,
    cached_dim,
    discard,
    holds_vectors,
    read_vectors,
    record_use,
    shared_cache_dir,
    usable_folder,
    write_meta,
    write_segment,
)
from precomet.encoders.memory import MEMORY, limit_bytes
from precomet.errors import PrecometError
from precomet.progress import announce
from precomet.progress import progress as progress_bar

log = logging.getLogger(__name__)


class SentenceEncoder(ABC):
    """A frozen text -> vector map. Subclasses set :attr:`name`, :attr:`languages` and implement
    :meth:`_encode_batch`; :meth:`identity` names the exact weights so that a checkpoint can refuse others."""

    name: ClassVar[str]
    languages: ClassVar[str]
    batch_size: int = 64
    """Texts per call of :meth:`_encode_batch` (an instance may change it, e.g. for its device)."""
    engines: ClassVar[tuple[str, ...]] = ()
    """Interchangeable ways of running the same weights (see :mod:`precomet.encoders.e5`); a checkpoint records them
    and reads its vectors with any; ``()``: one way."""
    max_tokens: ClassVar[int | None] = None
    """Tokens of a text the encoder reads (longer texts are truncated); ``None``: no limit (surface features)."""
    max_chars: ClassVar[int | None] = None
    """Characters of a text the encoder reads, for encoders that otherwise read every token (e5-small's windows): a
    longer text is cut to its first ``max_chars`` with a warning, so that one huge source (a 2 MB line) costs
    seconds and bounded memory; ``None``: the whole text (surface features measure it; truncating encoders stop
    at :attr:`max_tokens` anyway)."""
    shared_cache: ClassVar[bool] = True
    """Whether vectors go to the cache every command shares (not for features cheaper to compute than to read)."""

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length of every vector (may load the model)."""

    def known_dim(self) -> int | None:
        """The length of every vector when it is known without loading a model (a constant, the model's config
        file); ``None`` when only the loaded model can tell. :func:`encode_cached` asks this, and :attr:`dim` only
        when it must encode a text or the cache cannot tell either, so that a run whose texts are all cached loads
        no model."""
        return None

    @abstractmethod
    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` float vectors of one batch."""

    def identity(self) -> dict[str, Any]:
        """What a checkpoint records about this encoder (name plus version or weight hash)."""
        return {"name": self.name}

    @property
    def engine(self) -> str | None:
        """Which of :attr:`engines` runs this instance; ``None`` for an encoder with one way of running."""
        return None

    def to(self, device: str) -> SentenceEncoder:
        """Run on ``device`` where this encoder can (e5-small's torch engine); the others keep their own device.
        Returns the encoder."""
        return self

    def batched(self, batch_size: int) -> SentenceEncoder:
        """This encoder, set to ``batch_size`` texts per batch where a caller sizes them (a Hugging Face model on a
        GPU; the instance changes: call it on an encoder you own); an encoder that sizes its own batches (e5-small's
        windows) keeps them. Returns the encoder."""
        return self

    def int8(self) -> SentenceEncoder:
        """A copy that runs in dynamic int8 on the CPU where the encoder allows it; otherwise the encoder itself."""
        return self

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many of ``texts`` the encoder reads only in part (more than :attr:`max_tokens` tokens); 0 for an
        encoder that reads every token."""
        return 0

    def bounded(self, texts: Sequence[str]) -> list[str]:
        """``texts`` cut to :attr:`max_chars`, with one warning counting the texts that were cut."""
        texts = [str(t) for t in texts]
        bound = self.max_chars
        if bound is None:
            return texts
        cut = sum(len(t) > bound for t in texts)
        if cut:
            log.warning(
                "%d text(s) longer than %s characters: %s reads the first %s of each (a bound on time and memory)",
                cut,
                f"{bound:,}",
                self.name,
                f"{bound:,}",
            )
        return [t[:bound] for t in texts]

    def encode(self, texts: Sequence[str], *, progress: bool | None = None) -> np.ndarray:
        """``(len(texts), dim)`` float32 vectors in input order, in batches (with a progress bar); texts longer than
        :attr:`max_chars` are read up to it (:meth:`bounded`). Batches hold texts of similar length (sorted by
        characters), so a padded batch wastes little: twice the texts/s of input-order batches for MiniLM on WMT
        outputs; a vector differs from another batching's in float rounding only."""
        texts = self.bounded(texts)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = np.argsort(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), kind="stable")
        starts = range(0, len(texts), self.batch_size)
        for start in progress_bar(starts, desc=f"encode ({self.name})", unit="batch", enabled=progress):
            rows = order[start : start + self.batch_size]
            batch = [texts[i] for i in rows]
            vectors = np.asarray(self._encode_batch(batch), dtype=np.float32)
            if vectors.shape != (len(batch), self.dim):
                raise PrecometError(f"encoder {self.name!r} returned shape {vectors.shape} for {len(batch)} texts")
            out[rows] = vectors
        if not np.isfinite(out).all():
            raise PrecometError(f"encoder {self.name!r} returned non-finite vectors")
        return out

    def cache_key(self) -> str:
        """File-name-safe key of :meth:`identity` for the on-disk cache."""
        return hashlib.sha1(repr(sorted(self.identity().items())).encode("utf-8")).hexdigest()[:16]


def _text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


CHUNK = 2048
"""Texts encoded between two saves to the on-disk cache (one segment each; at least one call of the encoder's
``batch_size``, so a GPU gets full batches): an interrupt keeps the work done."""
ANNOUNCE_FROM = 1000
"""Encoding at least this many texts is announced on stderr before it starts (it takes tens of seconds)."""


def _from_disk(
    encoder: SentenceEncoder, folder: Path, *, encoder_key: str, dim: int | None, wanted: set[str]
) -> tuple[dict[str, np.ndarray], int | None]:
    """The vectors of the ``wanted`` text keys that ``folder`` holds, and the vectors' length: ``dim`` (the
    encoder's own, when it knows it without its model), else the folder's metadata; a folder without metadata (of an
    earlier precomet) is checked against :attr:`SentenceEncoder.dim` (a model loaded once) and gets its metadata."""
    recorded = cached_dim(folder, encoder_key=encoder_key, dim=dim)
    if dim is None:
        dim = recorded if recorded is not None else (encoder.dim or None) if holds_vectors(folder) else None
    stored = read_vectors(folder, encoder_key=encoder_key, dim=dim or 0, wanted=wanted)
    lengths = {len(vector) for vector in stored.values()}
    if recorded is None and len(lengths) == 1:  # checked against dim, or checksummed as this encoder's alone
        write_meta(folder, CacheMeta(encoder_key, encoder.identity(), dim or lengths.pop()))
    return stored, dim


def encode_cached(
    encoder: SentenceEncoder,
    texts: Sequence[str],
    *,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
) -> np.ndarray:
    """:meth:`SentenceEncoder.encode` of ``texts`` with each distinct text encoded once: looked up in the
    in-process cache (:mod:`precomet.encoders.memory`), then on disk (:mod:`precomet.encoders.disk`: ``cache_dir``
    when given, else the cache every command shares, unless :func:`~precomet.encoders.disk.no_disk_cache`); only
    texts found in neither are encoded, and saved every :data:`CHUNK` texts (the encoder's ``batch_size`` when
    larger), so an interrupted run resumes. The model is loaded only when a text must be encoded: the vectors'
    length comes from :meth:`SentenceEncoder.known_dim`, else from the caches' metadata. Returns a new array on
    every call. Texts longer than the encoder's :attr:`~SentenceEncoder.max_chars` are cut first, so that the cache
    keys the text the vector was computed from."""
    texts = encoder.bounded(texts)
    unique = list(dict.fromkeys(texts))
    keys = [_text_key(t) for t in unique]
    encoder_key = f"{encoder.name}-{encoder.cache_key()}"
    root, explicit = None, cache_dir is not None or bool(os.environ.get(DISK_ENV, "").strip())
    if cache_dir is not None:
        root = usable_folder(Path(cache_dir), explicit=True)
    elif encoder.shared_cache and (shared := shared_cache_dir()) is not None:
        root = usable_folder(shared, explicit=explicit)
    folder = None if root is None else usable_folder(root / encoder_key, explicit=explicit)
    limit = limit_bytes()
    known = MEMORY.get(encoder_key, keys) if limit else {}
    missing = {k for k in keys if k not in known}
    dim = encoder.known_dim()  # None: only the model knows, unless a cache does
    stored: dict[str, np.ndarray] = {}
    if folder is not None and missing:
        stored, dim = _from_disk(encoder, folder, encoder_key=encoder_key, dim=dim, wanted=missing)
    todo = [i for i, k in enumerate(keys) if k not in known and k not in stored]
    if todo and dim is not None and encoder.dim and encoder.dim != dim:  # the model is needed now anyway
        if folder is not None:
            discard(folder, f"its vectors are {dim} long, {encoder.name}'s are {encoder.dim}")
        MEMORY.forget(encoder_key)
        known, stored, dim = {}, {}, encoder.dim
        todo = list(range(len(keys)))
    record_use(encoder=encoder.name, folder=root, looked_up=keys, encoded=[keys[i] for i in todo])
    if len(todo) >= ANNOUNCE_FROM:
        announce(f"encoding {len(todo):,} texts with {encoder.name} ({len(unique) - len(todo):,} from the cache)")
    step = len(todo) if folder is None else max(CHUNK, encoder.batch_size)
    for start in range(0, len(todo), max(step, 1)):
        part = todo[start : start + step]
        fresh = dict(zip((keys[i] for i in part), encoder.encode([unique[i] for i in part], progress=progress)))
        stored.update(fresh)
        if folder is not None and not write_segment(
            folder, fresh, encoder_key=encoder_key, explicit=explicit, identity=encoder.identity()
        ):
            folder = None  # the default folder cannot take them: the rest is encoded without saving
    log.info("encoded %d distinct texts with %s (%d from cache)", len(unique), encoder.name, len(unique) - len(todo))
    if not texts:
        empty_dim = dim or MEMORY.dim(encoder_key)
        if empty_dim is None and folder is not None:
            empty_dim = cached_dim(folder, encoder_key=encoder_key, dim=None)
        return np.empty((0, empty_dim or encoder.dim), dtype=np.float32)
    new = {k: stored[k] for k in keys if k not in known}
    vectors = [known[k] if k in known else new[k] for k in keys]
    if len({len(v) for v in vectors}) > 1:
        raise PrecometError(
            f"encoder {encoder.name!r} returned vectors of another length than those its caches hold under the same"
            f" identity; remove {folder or 'the cache folder'} (or run with --no-cache)"
        )
    if limit:
        MEMORY.put(encoder_key, new, limit=limit)
    position = {text: i for i, text in enumerate(unique)}
    table = np.stack(vectors).astype(np.float32)
    return table[[position[t] for t in texts]]
