"""Encoder names -> classes; ``hf:DIR`` names any Hugging Face model directory."""

from __future__ import annotations

from collections.abc import Callable

from precomet.encoders.base import SentenceEncoder
from precomet.encoders.e5 import E5Small
from precomet.encoders.surface import Length, Surface
from precomet.encoders.transformer import MiniLM, TransformerEncoder
from precomet.errors import PrecometError

ENCODERS: dict[str, Callable[[], SentenceEncoder]] = {
    "e5-small": E5Small,
    "minilm": MiniLM,
    "surface": Surface,
    "length": Length,
}
"""Registered encoders by name; a new backbone is one module and one line here."""

HF_PREFIX = "hf:"


def get_encoder(name: str) -> SentenceEncoder:
    """The encoder called ``name`` (a key of :data:`ENCODERS` or ``hf:/path/to/model``); unknown names list
    the valid ones."""
    if name.startswith(HF_PREFIX):
        return TransformerEncoder(name[len(HF_PREFIX) :])
    if name not in ENCODERS:
        raise PrecometError(f"unknown encoder {name!r}; valid: {', '.join(ENCODERS)} or hf:/path/to/model-directory")
    return ENCODERS[name]()
