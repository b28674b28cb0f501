"""Token ids of texts through a fast tokenizer, with the texts that were truncated counted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenizers import Tokenizer

from precomet.errors import PrecometError


def token_ids(tokenizer: Any, texts: Sequence[str], *, max_length: int) -> tuple[list[list[int]], int]:
    """Token ids per text, truncated to ``max_length`` (special tokens included); returns the ids and the
    number of texts that were truncated. Uses a private copy of the fast tokenizer's backend."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise PrecometError(
            f"tokenizer {type(tokenizer).__name__} is not a fast tokenizer; save one with tokenizer.json"
        )
    local = Tokenizer.from_str(backend.to_str())
    local.no_padding()
    local.enable_truncation(max_length=max_length)
    encodings = local.encode_batch(list(texts))
    return [e.ids for e in encodings], sum(1 for e in encodings if e.overflowing)
