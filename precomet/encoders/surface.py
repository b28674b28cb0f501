"""Language-agnostic surface features of a source (no model): they read every script, and the ``length``
encoder is the control every learned estimator is compared with (seed 002 and our own tables: the human
spread across systems grows with source length)."""

from __future__ import annotations

import math
import unicodedata

import numpy as np

from precomet.encoders.base import SentenceEncoder

_SENTENCE_END = set(".!?。！？")
_CJK = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")

FEATURES = (
    "log characters",
    "log whitespace tokens",
    "log sentence ends",
    "digit share",
    "punctuation share",
    "upper-case share of letters",
    "non-ASCII share of letters",
    "CJK share",
    "whitespace share",
    "symbol share",
    "log mean token length",
    "distinct-character share",
)


def surface_features(text: str) -> list[float]:
    """The :data:`FEATURES` of one text (shares are of its characters unless said otherwise)."""
    n = max(len(text), 1)
    letters = [c for c in text if c.isalpha()]
    n_letters = max(len(letters), 1)
    tokens = text.split()
    categories = [unicodedata.category(c) for c in text]
    cjk = sum(1 for c in text if ord(c) > 0x2E7F and any(s in unicodedata.name(c, "") for s in _CJK))
    return [
        math.log1p(len(text)),
        math.log1p(len(tokens)),
        math.log1p(sum(c in _SENTENCE_END for c in text)),
        sum(c.isdigit() for c in text) / n,
        sum(cat.startswith("P") for cat in categories) / n,
        sum(c.isupper() for c in letters) / n_letters,
        sum(ord(c) > 127 for c in letters) / n_letters,
        cjk / n,
        sum(c.isspace() for c in text) / n,
        sum(cat.startswith("S") for cat in categories) / n,
        math.log1p(sum(len(t) for t in tokens) / max(len(tokens), 1)),
        len(set(text)) / n,
    ]


class Surface(SentenceEncoder):
    name = "surface"
    shared_cache = False
    languages = "any (character-level features)"
    batch_size = 1024

    @property
    def dim(self) -> int:
        return len(FEATURES)

    def known_dim(self) -> int:
        return len(FEATURES)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.array([surface_features(t) for t in texts], dtype=np.float32).reshape(len(texts), self.dim)


class Length(SentenceEncoder):
    name = "length"
    shared_cache = False
    languages = "any"
    batch_size = 4096

    @property
    def dim(self) -> int:
        return 1

    def known_dim(self) -> int:
        return 1

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        return np.log1p(np.array([[len(t)] for t in texts], dtype=np.float32)).reshape(len(texts), 1)
