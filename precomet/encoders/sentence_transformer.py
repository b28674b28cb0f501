"""Any sentence-transformers model (``st:NAME`` or ``st:/path/to/model``) as a registered encoder, batched by
sentence-transformers itself, on the device it is given; vectors L2-normalised as the model's pipeline does."""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from precomet.encoders.base import SentenceEncoder
from precomet.encoders.transformer import folder_digest
from precomet.errors import PrecometError
from precomet.progress import heartbeat, progress_enabled
from precomet.quiet import quiet_third_party


class SentenceTransformerEncoder(SentenceEncoder):
    """A sentence-transformers model by name or path (loaded once per call of :meth:`encode`: per cache chunk)."""

    name = "sentence-transformers"
    languages = "those of the model"

    def __init__(self, model: str, *, batch_size: int = 64, device: str = "cpu") -> None:
        self.model, self.batch_size_st, self.device = model, batch_size, device
        self._dim: int | None = None
        self._digest: str | None = None

    def identity(self) -> dict[str, Any]:
        """The model's name or path, and for a local folder the digest of all its files' names and contents
        (:func:`~precomet.encoders.transformer.folder_digest`): vectors kept on disk are never those of files that
        changed under the same path, whatever their sizes and times."""
        folder = Path(self.model).expanduser()
        if not folder.is_dir():
            return {"name": self.name, "model": self.model}
        if self._digest is None:  # hashed once per instance: every encode_cached call asks for it
            self._digest = folder_digest(folder)
        return {"name": self.name, "model": self.model, "files_sha256": self._digest}

    @property
    def dim(self) -> int:
        """The vector length: known once the model has encoded, or read from a local model's pooling config
        (0 when unknown), so that a cache of other vectors is recognised before the model is loaded."""
        if self._dim is None:
            self._dim = _pooled_dim(Path(self.model).expanduser())
        return self._dim or 0

    def known_dim(self) -> int | None:
        """:attr:`dim` when known (never loads the model), else ``None``."""
        return self.dim or None

    def encode(self, texts: Sequence[str], *, progress: bool | None = None) -> np.ndarray:
        with heartbeat(f"encode {len(texts)} texts ({Path(self.model).name})", progress=progress):
            vectors = np.asarray(
                _encode(list(texts), model=self.model, batch_size=self.batch_size_st, device=self.device),
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


PICKLED_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
"""Weight files that only unpickling reads (torch.save): a model folder is loaded from safetensors or not at all."""


def refuse_pickled_weights(folder: Path, *, what: str) -> None:
    """Refuse a model folder whose weights are pickled only (no ``*.safetensors`` beside them): loading them could
    run any code the file holds."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    pickled = [p for p in files if p.suffix.lower() in PICKLED_SUFFIXES]
    if pickled and not any(p.suffix == ".safetensors" for p in files):
        raise PrecometError(
            f"{what}: {pickled[0].relative_to(folder)} holds pickled weights and there is no *.safetensors file;"
            " precomet never unpickles model weights (convert them to safetensors)"
        )


def _encode(texts: list[str], *, model: str, batch_size: int, device: str) -> np.ndarray:
    import torch
    from sentence_transformers import SentenceTransformer

    threads = torch.get_num_threads()
    folder = Path(model).expanduser()
    if (model.startswith((".", "~", "/")) or model.count("/") > 1) and not folder.is_dir():
        raise PrecometError(f"sentence encoder {model!r}: no such folder (give a local model folder or a model name)")
    if folder.is_dir():
        refuse_pickled_weights(folder, what=f"sentence encoder {model!r}")
    try:
        with quiet_third_party():
            loaded = SentenceTransformer(model, device=device)
    except (OSError, ValueError, pickle.UnpicklingError) as err:
        if isinstance(err, pickle.UnpicklingError):  # never pass on torch's advice to unpickle untrusted weights
            raise PrecometError(
                f"cannot load sentence encoder {model!r}: its weights are pickled, and precomet never unpickles"
                " (convert them to safetensors)"
            ) from None
        raise PrecometError(f"cannot load sentence encoder {model!r}: {err}") from None
    try:
        vectors = loaded.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=progress_enabled(),
        )
    finally:
        torch.set_num_threads(threads)
    return vectors.astype(np.float32)
