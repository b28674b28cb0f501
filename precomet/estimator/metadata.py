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


def _field(description: str, default: Any = ..., **kwargs: Any) -> Any:
    """A field whose ``description`` is what an error message says the field must be."""
    return Field(default, description=description, **kwargs)


class Target(_Strict):
    method: str = _field("a name")
    normalisation: list[str] = Field(default_factory=list, description="a list of names")


class Standardisation(_Strict):
    mean: Finite = _field("a finite number")
    std: Annotated[Finite, AfterValidator(_positive)] = _field("a finite number > 0")


class EncoderPackage(_Strict):
    name: str = _field("a name")
    weights_sha256: str = _field("a sha256 (text)")


class Backbone(_Strict):
    """The registered encoder a head reads: its identity (name, version, weights), as the encoder reports it."""

    name: str = _field("a name")
    spec: str | None = _field("null or the encoder name training was given (e.g. hf:/path)", None)
    engines: list[str] | None = _field("null or a list of engine names", None)

    def identity(self) -> dict[str, Any]:
        """The recorded identity, without what only selects how to run the encoder (``spec``, ``engines``)."""
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if k not in ("spec", "engines")}


class LanguageProfile(_Strict):
    counts: Counts = _field("an object {language: sources}")
    sample: Annotated[int, Field(ge=0)] | None = _field("an integer >= 0", None)
    sources: Annotated[int, Field(ge=0)] | None = _field("an integer >= 0", None)
    shares: dict[str, Annotated[Finite, Field(ge=0, le=1)]] = Field(
        default_factory=dict, description="an object {language: share in [0, 1]}"
    )


_ENSEMBLE = 'an object {"members": N >= 2, "scaling": [[mean, std > 0], ...] one per member}'


class Ensemble(_Strict):
    """An ensemble checkpoint's heads: how many, and each one's ``[mean, std]`` on the training sources."""

    members: Annotated[int, Field(ge=2)] = _field(_ENSEMBLE)
    scaling: list[Annotated[list[Finite], Field(min_length=2, max_length=2)]] = _field(_ENSEMBLE)

    @model_validator(mode="after")
    def _one_scaling_per_member(self) -> Ensemble:
        if len(self.scaling) != self.members or any(std <= 0 for _, std in self.scaling):
            raise ValueError(f"ensemble: {_ENSEMBLE}")
        return self


class CheckpointMeta(_Strict):
    """The fields of ``precomet.json`` that loading and predicting read; each field's description is what an error
    message says it must be. Fields precomet records for people (``history``, ``config``, …) are kept as extras."""

    format_version: Literal[1] = 1  # read_meta checks it first, with its own message
    target: Target = _field('an object {"method": NAME, "normalisation": [...]}')
    direction: Literal["higher_first", "lower_first"] = _field(f"one of {list(DIRECTIONS)}")
    standardisation: Standardisation = _field('an object {"mean": NUMBER, "std": NUMBER}')
    pooling: str = _field("a name (mean, mix or sentence-encoder)")
    hidden_sizes: list[Annotated[int, Field(ge=1)]] = _field("a list of positive integers (layer widths)")
    max_length: Annotated[int, Field(ge=0)] = _field("an integer >= 0 (tokens per source)")
    dropout: Annotated[Finite, Field(ge=0, lt=1)] = _field("a number in [0, 1)", 0.1)
    encoder: str | None = _field("a model name or directory (text)", None)
    encoder_path: str | None = _field("a model name or directory (text)", None)
    encoder_package: EncoderPackage | None = _field('null or an object {"name": ..., "weights_sha256": ...}', None)
    backbone: Backbone | None = _field("an object with the encoder's name", None)
    ensemble: Ensemble | None = _field(_ENSEMBLE, None)
    training_languages: LanguageProfile | None = _field(
        'an object {"counts": {language: sources}, "sample": N, "sources": N, ...}', None
    )
    training_domains: Counts | None = _field("null or an object {domain: number of rows}", None)
    training_sources: dict[str, Any] | None = _field("null or an object (the training sources' fingerprint)", None)

    @model_validator(mode="after")
    def _tokens_without_backbone(self) -> CheckpointMeta:
        if self.backbone is None and self.max_length < 1:
            raise ValueError("max_length: an integer >= 1 (tokens per source) when the encoder reads tokens")
        return self

    def as_dict(self) -> dict[str, Any]:
        """The metadata as ``precomet.json`` holds it (plain JSON values), for what reads fields by name."""
        return self.model_dump(mode="json", exclude_unset=True)


def _described(parts: list[str]) -> tuple[list[str], str | None]:
    """The longest prefix of the field path ``parts`` that names a field of :class:`CheckpointMeta` (or of a model
    inside it), and that field's description."""
    model: Any = CheckpointMeta
    found: tuple[list[str], str | None] = ([], None)
    for depth, part in enumerate(parts):
        field = model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if field is None:
            break
        found = (parts[: depth + 1], field.description)
        inner = [a for a in getattr(field.annotation, "__args__", (field.annotation,)) if a is not type(None)]
        model = inner[0] if len(inner) == 1 else None
    return found


def check_meta(meta: dict[str, Any], *, where: Any) -> CheckpointMeta:
    """``meta`` validated as :class:`CheckpointMeta`; otherwise a :class:`PrecometError` naming ``where``, the
    field, what it must be and what it is."""
    try:
        return CheckpointMeta.model_validate(meta)
    except ValidationError as err:
        error = err.errors()[0]
        parts = [str(p) for p in error["loc"] if not isinstance(p, int)]
        if error["type"] == "value_error" and (not parts or parts == ["ensemble"]):  # a model-level rule
            field, _, expected = str(error["ctx"]["error"]).partition(": ")
            raise PrecometError(f"{where}: field {field!r} must be {expected}, got {meta.get(field)!r}"[:400]) from None
        named, description = _described(parts)  # a key of a counts object: the message is about the object
        field = ".".join(named or parts)
        value: Any = meta
        for part in named or parts:
            value = value.get(part) if isinstance(value, dict) else None
        if error["type"] == "missing" and len(parts) == 1:
            raise PrecometError(f"{where}: missing field(s) {[field]}") from None
        raise PrecometError(
            f"{where}: field {field!r} must be {description or error['msg'].lower()}, got {value!r}"[:400]
        ) from None


def portable(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` without the fields that name places on the training machine (:data:`MACHINE_LOCAL`)."""
    return {k: v for k, v in meta.items() if k not in MACHINE_LOCAL}
