"""Token ids of texts through a fast tokenizer, with the texts that were truncated counted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenizers import Tokenizer

from precomet.errors import PrecometError


def truncating(tokenizer: Any, *, max_length: int) -> Tokenizer:
    """A private copy of a fast tokenizer's backend that truncates to ``max_length`` tokens (special tokens included)
    and does not pad: build it once and reuse it (copying the backend costs more than tokenising a chunk)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise PrecometError(
            f"tokenizer {type(tokenizer).__name__} is not a fast tokenizer; save one with tokenizer.json"
        )
    local = Tokenizer.from_str(backend.to_str())
    local.no_padding()
    local.enable_truncation(max_length=max_length)
    return local


def token_ids(tokenizer: Any, texts: Sequence[str], *, max_length: int) -> tuple[list[list[int]], int]:
    """Token ids per text, truncated to ``max_length`` (special tokens included); returns the ids and the
    number of texts that were truncated. ``tokenizer``: a fast tokenizer, or a :func:`truncating` copy of one."""
    local = tokenizer if isinstance(tokenizer, Tokenizer) else truncating(tokenizer, max_length=max_length)
    encodings = local.encode_batch(list(texts))
    return [e.ids for e in encodings], sum(1 for e in encodings if e.overflowing)
