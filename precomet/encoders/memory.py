"""The in-process embedding cache: every vector this process has encoded or read from disk, by encoder and text.

:func:`precomet.encoders.encode_cached` (the one path of every embedding: sources, outputs, the estimator, strata)
looks texts up here first, then in the on-disk cache (``cache_dir``), and encodes only what neither holds; it stores
here whatever it read from disk or encoded. So a benchmark that computes a utility once per budget, seed or crowd
encodes each text once per process. A call whose texts are all in memory does not open ``cache_dir``: the file
receives the texts this process encodes, not those it already held.

- Key: the encoder's cache key (its name and :meth:`~precomet.encoders.SentenceEncoder.identity`: model, weights;
  a sentence-transformers model by its name or path, always L2-normalised) and the SHA-1 of the text.
- Bound: at most ``PRECOMET_EMBEDDING_CACHE_MB`` MiB of vectors (read at each call; default
  :data:`DEFAULT_MB`; keys and bookkeeping add about 20 % for 384-d vectors); beyond it the least recently used
  vectors are dropped. ``0`` disables the cache; ``inf`` removes the bound.
- Safety: vectors are kept as read-only copies and every call returns a new array, so a caller that modifies its
  result does not change the next one.
- :func:`clear_embedding_cache` empties it (tests do so before each test).
- Metadata: the length of each encoder's vectors (:meth:`VectorMemory.dim`), so that a call with no text to encode
  needs neither the model nor the disk to shape its (empty) result.

A cached vector is the one its first encoding gave: a campaign embedded again gets bit-identical vectors. Texts
encoded in another batch composition can differ in the last float bits (about 1e-7; k-means ties are settled by
:data:`precomet.utilities.cluster.TIE_TOLERANCE`): the on-disk cache behaves the same way.
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np

from precomet.environment import variable

ENV = "PRECOMET_EMBEDDING_CACHE_MB"
DEFAULT_MB = 512.0
"""Default bound: 512 MiB, about 350,000 384-d float32 vectors."""


def limit_bytes() -> int:
    """The bound in bytes from :data:`ENV` (default :data:`DEFAULT_MB`); 0 disables the cache, ``inf`` has none."""
    given = variable(ENV)  # a value other than a number >= 0 (or inf) is refused naming the variable
    mb = DEFAULT_MB if given is None else float(given)
    return sys.maxsize if math.isinf(mb) else int(mb * 2**20)


class VectorMemory:
    """Vectors by ``(encoder key, text key)``, least recently used first, with their total size in bytes."""

    def __init__(self) -> None:
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._dims: dict[str, int] = {}
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._vectors)

    def get(self, encoder: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The vectors of ``keys`` held for ``encoder`` (marked as recently used); missing keys are left out."""
        found = {}
        for key in keys:
            vector = self._vectors.get((encoder, key))
            if vector is not None:
                self._vectors.move_to_end((encoder, key))
                found[key] = vector
        return found

    def put(self, encoder: str, vectors: Mapping[str, np.ndarray], *, limit: int) -> None:
        """Keep read-only copies of ``vectors`` for ``encoder``, then drop the least recently used beyond ``limit``
        bytes."""
        for key, vector in vectors.items():
            kept = np.array(vector, dtype=np.float32)
            kept.flags.writeable = False
            old = self._vectors.pop((encoder, key), None)
            self.nbytes += kept.nbytes - (0 if old is None else old.nbytes)
            self._vectors[(encoder, key)] = kept
            self._dims[encoder] = kept.shape[-1]
        while self.nbytes > limit:
            self.nbytes -= self._vectors.popitem(last=False)[1].nbytes

    def dim(self, encoder: str) -> int | None:
        """The length of the vectors last held for ``encoder`` (kept when they are dropped); ``None`` if none was."""
        return self._dims.get(encoder)

    def forget(self, encoder: str) -> None:
        """Forget every vector of ``encoder`` (its cache turned out to hold another encoder's vectors)."""
        for pair in [pair for pair in self._vectors if pair[0] == encoder]:
            self.nbytes -= self._vectors.pop(pair).nbytes
        self._dims.pop(encoder, None)

    def clear(self) -> None:
        """Forget every vector."""
        self._vectors.clear()
        self._dims.clear()
        self.nbytes = 0


MEMORY = VectorMemory()
"""The process's embedding cache."""


def clear_embedding_cache() -> None:
    """Empty the in-process embedding cache (the on-disk caches are left alone)."""
    MEMORY.clear()
