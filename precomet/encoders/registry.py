"""Encoder names -> classes; ``hf:DIR`` names any Hugging Face model directory."""

from __future__ import annotations

from collections.abc import Callable

from precomet.encoders.base import SentenceEncoder
from precomet.encoders.e5 import E5Small
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


def register_encoder(name: str, factory: Callable[[], SentenceEncoder], *, replace: bool = False) -> None:
    """Register the encoder ``name``: ``factory()`` (usually the :class:`SentenceEncoder` subclass) builds it. From
    then on :func:`get_encoder`, an estimator config's ``encoder`` and ``--strata-encoder`` accept it. A name already
    taken is refused unless ``replace=True``."""
    register(ENCODERS, name, factory, kind="encoder", replace=replace)


def get_encoder(name: str) -> SentenceEncoder:
    """The encoder called ``name`` (a key of :data:`ENCODERS` or ``hf:/path/to/model``); unknown names list
    the valid ones."""
    if name.startswith(HF_PREFIX):
        return TransformerEncoder(name[len(HF_PREFIX) :])
    if name not in ENCODERS:
        raise PrecometError(f"unknown encoder {name!r}; valid: {', '.join(ENCODERS)} or hf:/path/to/model-directory")
    return ENCODERS[name]()
