"""Encoder names -> classes; ``hf:DIR`` names any Hugging Face model directory, ``st:NAME`` any sentence-transformers
model (name or path)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from precomet.encoders.base import SentenceEncoder
from precomet.encoders.e5 import E5Small
from precomet.encoders.sentence_transformer import SentenceTransformerEncoder
from precomet.encoders.surface import Length, Surface
from precomet.encoders.transformer import MiniLM, TransformerEncoder
from precomet.errors import PrecometError
from precomet.registration import register

ENCODERS: dict[str, Callable[[], SentenceEncoder]] = {
    "e5-small": E5Small,
    "minilm": MiniLM,
    "surface": Surface,
    "length": Length,
}
"""Registered encoders by name; a new backbone is one module and one :func:`register_encoder` call."""

HF_PREFIX = "hf:"
ST_PREFIX = "st:"


def register_encoder(name: str, factory: Callable[[], SentenceEncoder], *, replace: bool = False) -> None:
    """Register the encoder ``name``: ``factory()`` (usually the :class:`SentenceEncoder` subclass) builds it. From
    then on :func:`get_encoder`, an estimator config's ``encoder`` and ``--strata-encoder`` accept it. A name already
    taken is refused unless ``replace=True``."""
    register(ENCODERS, name, factory, kind="encoder", replace=replace)


ST_BATCH_SIZE = 64
ST_DEVICE = "cpu"
"""The batch size and device of an ``st:NAME`` model unless :func:`get_encoder` is given others."""


def get_encoder(name: str, *, batch_size: int | None = None, device: str | None = None) -> SentenceEncoder:
    """The encoder called ``name`` (a key of :data:`ENCODERS`, ``hf:/path/to/model`` or ``st:NAME``); unknown
    names list the valid ones. ``batch_size`` and ``device`` are an ``st:NAME`` model's (default
    :data:`ST_BATCH_SIZE` texts on :data:`ST_DEVICE`), and refused for an encoder that runs as registered."""
    if name.startswith(ST_PREFIX):
        return SentenceTransformerEncoder(
            name[len(ST_PREFIX) :],
            batch_size=ST_BATCH_SIZE if batch_size is None else batch_size,
            device=device or ST_DEVICE,
        )
    if (batch_size, device) not in ((None, None), (ST_BATCH_SIZE, ST_DEVICE)):
        raise PrecometError(
            f"options batch_size and device apply to a sentence-transformers model (encoder=st:NAME); encoder"
            f" {name!r} runs as registered"
        )
    if name.startswith(HF_PREFIX):
        return TransformerEncoder(name[len(HF_PREFIX) :])
    if name not in ENCODERS and (name.startswith((".", "~", "/")) or Path(name).expanduser().is_dir()):
        found = "a folder" if Path(name).expanduser().is_dir() else "no such folder"
        raise PrecometError(
            f"encoder {name!r}: {found}; a model folder is named hf:{name} (a Hugging Face model) or st:{name} (a"
            " sentence-transformers model)"
        )
    if name not in ENCODERS:
        raise PrecometError(
            f"unknown encoder {name!r}; valid: {', '.join(ENCODERS)}, hf:/path/to/model-directory or st:NAME (a"
            " sentence-transformers model name or folder)"
        )
    return ENCODERS[name]()


def fine_tunable_folder(name: str) -> Path | None:
    """The Hugging Face model folder behind ``name`` when its encoder can be fine-tuned: ``hf:DIR``, or a registered
    :class:`~precomet.encoders.transformer.TransformerEncoder` (``minilm``); ``None`` for any other name (an encoder
    frozen by design, such as e5-small's 4-bit engine, ``surface`` or ``length``, or a name not registered)."""
    if name.startswith(HF_PREFIX):
        return Path(name[len(HF_PREFIX) :]).expanduser()
    if name in ENCODERS:
        encoder = ENCODERS[name]()
        if isinstance(encoder, TransformerEncoder):
            return encoder.location
    return None


def model_folder(name: str) -> Path:
    """A local Hugging Face model folder for ``name``: a fine-tunable encoder of the registry (``minilm``, ``hf:DIR``:
    :func:`fine_tunable_folder`), an existing folder, or a hub id (from the local cache when offline, downloaded with
    ``snapshot_download`` when online)."""
    folder = fine_tunable_folder(name)
    if folder is not None:
        return folder
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if name in ENCODERS or name.startswith(ST_PREFIX):
        raise PrecometError(
            f"encoder {name!r} is frozen by design (no Hugging Face weights to fine-tune or pool by tokens): use it"
            " with model.fine_tune false and model.pooling encoder, or name a Hugging Face model as model.backbone"
            " (minilm, hf:DIR, a folder, a hub id)"
        )
    offline = any(os.environ.get(v, "") not in ("", "0") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=offline))
    except Exception as err:  # noqa: BLE001 -- huggingface_hub raises many types (offline, not found, invalid id)
        raise PrecometError(
            f"encoder {name!r} not found {'offline ' if offline else ''}({type(err).__name__}: {err}); provide a local "
            f"directory saved with save_pretrained (model.backbone: hf:/path/to/dir), run "
            f"`huggingface-cli download {name}` on a machine with network access, or use "
            f"model.backbone: minilm (the packaged all-MiniLM-L6-v2)"
        ) from None
