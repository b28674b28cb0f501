"""``precomet.json`` as a validated model: :class:`CheckpointMeta` (pydantic) holds every field an estimator reads,
with its type and range; :func:`check_meta` validates a metadata dict and names the file and the field when one is
wrong. Fields precomet records for people (``history``, ``ensemble``, ``training_data``, …) are kept as they are."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from precomet.errors import PrecometError

FORMAT_VERSION = 1
DIRECTIONS = ("higher_first", "lower_first")
"""``direction``: whether a higher standardised prediction means annotate first (``lower_first`` is negated)."""
MACHINE_LOCAL = ("encoder_path",)
"""Fields that name a place on the machine that trained (a Lightning ``.ckpt`` keeps them, ``precomet.json`` not)."""


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("a finite number")
    return value


def _positive(value: float) -> float:
    if value <= 0:
        raise ValueError("a finite number > 0")
    return value


Finite = Annotated[float, AfterValidator(_finite)]
Counts = dict[str, Annotated[int, Field(ge=0)]]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class Target(_Strict):
    method: str
    normalisation: list[str] = Field(default_factory=list)


class Standardisation(_Strict):
    mean: Finite
    std: Annotated[Finite, AfterValidator(_positive)]


class EncoderPackage(_Strict):
    name: str
    weights_sha256: str


class Backbone(_Strict):
    name: str
    engines: list[str] | None = None


class LanguageProfile(_Strict):
    counts: Counts
    sample: Annotated[int, Field(ge=0)] | None = None
    sources: Annotated[int, Field(ge=0)] | None = None
    shares: dict[str, Annotated[Finite, Field(ge=0, le=1)]] = Field(default_factory=dict)


class CheckpointMeta(_Strict):
    """The fields of ``precomet.json`` that loading and predicting read."""

    format_version: Literal[1] = 1  # read_meta checks it first, with its own message
    target: Target
    direction: Literal["higher_first", "lower_first"]
    standardisation: Standardisation
    pooling: str
    hidden_sizes: list[Annotated[int, Field(ge=1)]]
    max_length: Annotated[int, Field(ge=0)]
    dropout: Annotated[Finite, Field(ge=0, lt=1)] = 0.1
    encoder: str | None = None
    encoder_path: str | None = None
    encoder_package: EncoderPackage | None = None
    backbone: Backbone | None = None
    training_languages: LanguageProfile | None = None
    training_domains: Counts | None = None

    @model_validator(mode="after")
    def _tokens_without_backbone(self) -> CheckpointMeta:
        if self.backbone is None and self.max_length < 1:
            raise ValueError("max_length: an integer >= 1 (tokens per source) when the encoder reads tokens")
        return self


EXPECTED = {
    "target": 'an object {"method": NAME, "normalisation": [...]}',
    "target.method": "a name",
    "target.normalisation": "a list of names",
    "direction": f"one of {list(DIRECTIONS)}",
    "standardisation": 'an object {"mean": NUMBER, "std": NUMBER}',
    "standardisation.mean": "a finite number",
    "standardisation.std": "a finite number > 0",
    "pooling": "a name (mean, mix or sentence-encoder)",
    "hidden_sizes": "a list of positive integers (layer widths)",
    "max_length": "an integer >= 0 (tokens per source)",
    "dropout": "a number in [0, 1)",
    "encoder": "a model name or directory (text)",
    "encoder_path": "a model name or directory (text)",
    "encoder_package": 'null or an object {"name": ..., "weights_sha256": ...}',
    "backbone": "an object with the encoder's name",
    "training_languages": 'an object {"counts": {language: sources}, "sample": N, "sources": N, ...}',
    "training_languages.counts": "an object {language: sources}",
    "training_languages.sample": "an integer >= 0",
    "training_languages.sources": "an integer >= 0",
    "training_languages.shares": "an object {language: share in [0, 1]}",
    "training_domains": "null or an object {domain: number of rows}",
}
"""What each field must be, in the words of the error message (the field the error is about, or its parent)."""


def check_meta(meta: dict[str, Any], *, where: Any) -> CheckpointMeta:
    """``meta`` validated as :class:`CheckpointMeta`; otherwise a :class:`PrecometError` naming ``where``, the
    field, what it must be and what it is."""
    try:
        return CheckpointMeta.model_validate(meta)
    except ValidationError as err:
        error = err.errors()[0]
        parts = [str(p) for p in error["loc"] if not isinstance(p, int)]
        if error["type"] == "value_error" and not parts:  # the model-level rule
            field, _, expected = str(error["ctx"]["error"]).partition(": ")
            raise PrecometError(f"{where}: field {field!r} must be {expected}, got {meta.get(field)!r}") from None
        while len(parts) > 1 and ".".join(parts) not in EXPECTED:
            parts.pop()  # a key of a counts object: the message is about the object
        field = ".".join(parts)
        value: Any = meta
        for part in parts:
            value = value.get(part) if isinstance(value, dict) else None
        if error["type"] == "missing" and len(parts) == 1:
            raise PrecometError(f"{where}: missing field(s) {[field]}") from None
        raise PrecometError(
            f"{where}: field {field!r} must be {EXPECTED.get(field, error['msg'].lower())}, got {value!r}"[:400]
        ) from None


def portable(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` without the fields that name places on the training machine (:data:`MACHINE_LOCAL`)."""
    return {k: v for k, v in meta.items() if k not in MACHINE_LOCAL}
